#!/usr/bin/env bash
# The loader on a store this user can read but not write (a teammate's dataset): LMDB opens
# lock.mdb for writing even to read, so the open failed with a bare "Permission denied". It says
# why and what to do (nolock), and nolock=True reads every utterance; featcache.get too (it took no
# nolock, so the advice it gave could not be followed: such a store was not readable by get at
# all). As root the permissions
# bind no one: the Python runs without the capabilities that let root past them (as_owner.bash).
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
for i in 1 2 3; do sox -n -r 22050 -b 16 "u$i.wav" synth 0.$((i + 3)) sine $((300 * i)) || fail "sox"; done
"$FZ" -q --device cpu -o st u1.wav u2.wav u3.wav || fail "featurize"
chmod 555 st && chmod 444 st/*.mdb
. "$FC_SRC/tests/cli/as_owner.bash"
as=("${as_owner[@]}")
cat >read.py <<'PY'
import featcache, sys
try:
    with featcache.Loader(sys.argv[1], batch_size=2, nolock=sys.argv[2] == "nolock") as ld:
        print(sum(len(b.ids) for b in ld))
except featcache.FeatcacheError as e:
    print(e)
PY
got=$("${as[@]}" "$PY" read.py "$tmp/st" lock 2>&1)
want="$tmp/st: not writable by this user (lock.mdb): LMDB cannot take its reader lock; open it with nolock (FC_LOADER_NOLOCK, nolock=True) when no one writes it meanwhile"
case "$got" in
*"$want"*) ;;
*) fail "without nolock:
got:  $got
want: $want" ;;
esac
got=$("${as[@]}" "$PY" read.py "$tmp/st" nolock 2>&1)
[ "$got" = 3 ] || fail "nolock: want 3 utterances read, got: $got"
cat >get.py <<'PY'
import featcache, sys
try:
    print(featcache.get(sys.argv[1], "u2", nolock=sys.argv[2] == "nolock").shape[1])
except (featcache.FeatcacheError, TypeError) as e:
    print(e)
PY
got=$("${as[@]}" "$PY" get.py "$tmp/st" lock 2>&1)
case "$got" in
*"$want"*) ;;
*) fail "get without nolock:
got:  $got" ;;
esac
got=$("${as[@]}" "$PY" get.py "$tmp/st" nolock 2>&1)
[ "$got" = 80 ] || fail "get with nolock: want an 80-mel array, got: $got"
echo ok
