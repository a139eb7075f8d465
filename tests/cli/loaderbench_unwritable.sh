#!/usr/bin/env bash
# loader-bench on a store this user can read but not write (a teammate's dataset): LMDB opens
# lock.mdb for writing even to read, so such a store opens only lock-free. It is refused with a
# line that says why and what to do (exit 2, nothing run), as cache-bench refuses it, and
# --read-only (cache-bench's spelling) reads it: the cache source, the audio source over its
# config, and --compare. As root the permissions bind no one: the runs drop the
# capabilities that let root past them (as_owner.bash).
set -u
LB=${FC_BIN:?}/loader-bench
FZ=$FC_BIN/featurize
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
for i in 1 2 3; do sox -n -r 22050 -b 16 "u$i.wav" synth 0.$((i + 3)) sine $((300 * i)) || fail "sox"; done
printf '%s\n' "$tmp/u1.wav" "$tmp/u2.wav" "$tmp/u3.wav" >list.txt
"$FZ" -q --device cpu -o st u1.wav u2.wav u3.wav || fail "featurize"
chmod 555 st && chmod 444 st/*.mdb
. "$FC_SRC/tests/cli/as_owner.bash"
as=("${as_owner[@]}")
run=(-q --json -b 2 -w 1 --compute-ms 0 --warmup 0)
want="loader-bench: $tmp/st: store is not writable by this user (lock.mdb): LMDB cannot take its reader lock, so a writer elsewhere could change it under the benchmark; pass --read-only to bench it anyway"

# without --read-only: refused, whichever source opens the store
for how in "cache" "audio --manifest $tmp/list.txt" "compare --manifest $tmp/list.txt"; do
  set -- $how
  src=(--source "$1")
  [ "$1" = compare ] && src=(--compare)
  shift
  "${as[@]}" "$LB" "${run[@]}" "${src[@]}" "$@" "$tmp/st" >out 2>err; rc=$?
  [ $rc = 2 ] || fail "$how: exit $rc, want 2 ($(cat err))"
  [ -s out ] && fail "$how: wrote to stdout: $(cat out)"
  [ "$(cat err)" = "$want" ] || fail "$how: stderr
got:  $(cat err)
want: $want"
done

# --read-only reads it: every utterance, in each source
"${as[@]}" "$LB" "${run[@]}" --read-only --epochs 1 "$tmp/st" >out 2>err; rc=$?
[ $rc = 0 ] && [ ! -s err ] || fail "--read-only: exit $rc: $(cat err)"
grep -q '"source":"cache","steps":2,.*"utterances":3' out || fail "--read-only: $(cat out)"
"${as[@]}" "$LB" "${run[@]}" --read-only --source audio --manifest "$tmp/list.txt" "$tmp/st" \
  >out 2>err; rc=$?
[ $rc = 0 ] && [ ! -s err ] || fail "--read-only --source audio: exit $rc: $(cat err)"
"${as[@]}" "$LB" "${run[@]}" --read-only --compare --manifest "$tmp/list.txt" "$tmp/st" \
  >out 2>err; rc=$?
[ $rc = 0 ] && [ ! -s err ] || fail "--read-only --compare: exit $rc: $(cat err)"
grep -q '"same_order":true' out || fail "--read-only --compare: $(cat out)"

# a store this user can write needs no --read-only, and takes it
chmod -R u+w st
"$LB" "${run[@]}" --read-only "$tmp/st" >out 2>err; rc=$?
[ $rc = 0 ] && [ ! -s err ] || fail "--read-only, writable: exit $rc: $(cat err)"
echo ok
