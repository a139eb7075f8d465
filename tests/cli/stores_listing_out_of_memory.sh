#!/usr/bin/env bash
# Out of memory while the tools list their STOREs (a split store expanded into its parts: the
# shared fc_cli_expand_stores, and cache-verify's own listing): the same exit and words in every
# tool. It was exit 1 with only "... nothing done" (no summary) in cache-bench, cache-prune and
# cache-merge, and exit 2 with a bare "cache-verify: Cannot allocate memory" in cache-verify. Now
# 1 — no usage error: a rerun may get past it — with the summary every exit 1 has:
# "TOOL: Cannot allocate memory while listing the stores: done: 0 of 2 stores (2 not started),
# nothing done"; nothing on stdout, nothing changed.
set -u
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
sox -n -r 22050 -b 16 b.wav synth 0.5 sine 500 || { echo "FAIL: sox failed"; exit 1; }
"$FC_BIN/featurize" -q --device cpu -o st a.wav || fail "featurize st"
"$FC_BIN/featurize" -q --device cpu --writers 2 -o sp a.wav b.wav || fail "featurize sp"
sums() { cat st/data.mdb sp/part-*/data.mdb | md5sum; }
before=$(sums)

want="Cannot allocate memory while listing the stores: done: 0 of 2 stores (2 not started), nothing done"
for cmd in "cache-verify" "cache-verify --json" "cache-prune" "cache-prune --dry-run --json" \
  "cache-bench -s warm -p sequential --duration 0.1" "cache-merge -o mg" "loader-bench -b 2 --steps 2"; do
  tool=${cmd%% *} hit=0
  for n in 1 2 3; do
    rm -rf mg
    # shellcheck disable=SC2086
    FC_FAULT=alloc:$n "$FC_BIN"/$cmd st sp >out 2>err
    rc=$?
    grep -q "while listing the stores" err || continue
    hit=1
    [ $rc = 1 ] || fail "$cmd alloc:$n: exit $rc, want 1"
    grep -qxF "$tool: $want" err || fail "$cmd alloc:$n: stderr: $(cat err)"
    [ ! -s out ] || fail "$cmd alloc:$n: stdout: $(cat out)"
    [ ! -e mg ] || fail "$cmd alloc:$n: made the output store"
  done
  [ $hit = 1 ] || fail "$cmd: no run of alloc:1..3 ran out of memory while listing the stores"
done
[ "$(sums)" = "$before" ] || fail "a store changed"
# the same with --status: nothing said, the same exit
FC_FAULT=alloc:1 "$FC_BIN/cache-verify" --status st sp >out 2>err
rc=$?
[ $rc = 1 ] && [ ! -s out ] && [ ! -s err ] || fail "cache-verify --status alloc:1: exit $rc, $(cat out err)"

[ "$fails" = 0 ] && echo "out of memory while listing the stores: the same in every tool"
exit "$fails"
