#!/usr/bin/env bash
# A store written by a newer featcache (meta format featcache/2): every tool refuses it (exit 2,
# nothing written) saying what this build reads and that a newer featcache made it, where they
# said "FC_EVERSION: unknown store format version"; cache-verify also names the version the store
# says it has. docs/FORMAT.md.
set -u
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 1.0 sine 440 || { echo "FAIL: sox"; exit 1; }
printf 'a|one.|one.\n' >m.csv
"$FC_BIN/featurize" -q --device cpu -o st a.wav || fail "featurize"
"$PY" - <<'PY' || fail "rewriting the format"
import lmdb
e = lmdb.open("st", max_dbs=20)
with e.begin(write=True) as t:
    t.put(b"format", b"featcache/2", db=e.open_db(b"meta", txn=t, create=False))
PY
cp st/data.mdb before.mdb
why="FC_EVERSION: a store format version this build does not read (it reads featcache/1 stores, split or not: one made by a newer featcache?)"
for cmd in "featurize -q --device cpu -o st a.wav" "tokenize -q --manifest m.csv --build-vocab -o st" \
  "cache-config st" "cache-prune st" "cache-merge -q -o out st" "loader-bench -q --steps 1 st" \
  "cache-bench -q st"; do
  # shellcheck disable=SC2086 # the command's words
  "$FC_BIN"/$cmd >out 2>err
  rc=$?
  [ $rc = 2 ] || { fail "$cmd: exit $rc, want 2"; cat err; }
  grep -qF "$why" err || { fail "$cmd: stderr"; cat err; }
done
cmp -s st/data.mdb before.mdb || fail "the store changed"
[ -e out/data.mdb ] && fail "cache-merge made its output"
"$FC_BIN/cache-verify" st >out 2>/dev/null
[ $? = 1 ] || fail "cache-verify: want exit 1"
grep -qxF "st: error: meta format: a featcache store of a format version this build does not know (it says featcache/2; it reads featcache/1): made by a newer featcache?" out ||
  { fail "cache-verify: the finding"; cat out; }
[ "$fails" = 0 ] && echo "ok: a newer store refused by every tool, naming the versions"
exit $((fails > 0))
