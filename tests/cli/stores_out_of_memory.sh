#!/usr/bin/env bash
# cache-verify, cache-config and cache-bench out of memory while they open a store (FC_FAULT=alloc:N
# fails the N-th allocation of the library): the store is named and the open said as such,
# "TOOL: STORE: cannot open the store: Cannot allocate memory" (cache-verify said "STORE: Cannot
# allocate memory", cache-bench "cannot open store: ..."), or, once cache-verify's check has begun,
# "cannot check the store: ..."; exit 1 with the `N of M` summary every exit 1 has: out of memory
# is no usage error, a rerun may get past it (it was exit 2 for the only store, as for a store that
# is not there, though loader-bench and every tool's listing of its stores say 1): "done: 0 of 1
# stores clean (1 not checked)", "done: 0 of 1 store listed (1 failed)", "done: 0 of N passes (N
# not started), nothing run"; with two stores, one checked and the other not (cache-verify,
# cache-config), the summary counts it: "done: 1 of 2 stores ...". cache-verify -q says its
# summary all the same (exit 1 comes with it).
set -u
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
"$FC_BIN/featurize" -q --device cpu -o s1 a.wav || fail "featurize s1"
"$FC_BIN/featurize" -q --device cpu -o s2 a.wav || fail "featurize s2"

summary() { # TOOL STORES: the summary line of a run that opened no store
  case $1 in
  cache-verify) echo "cache-verify: done: 0 of 1 stores clean (1 not checked)" ;;
  cache-config) echo "cache-config: done: 0 of 1 store listed (1 failed)" ;;
  cache-bench) echo "cache-bench: done: 0 of 16 passes (16 not started), nothing run" ;;
  esac
}
for tool in cache-verify cache-config cache-bench; do
  opened=0 several=0
  for n in $(seq 1 40); do
    for stores in "s1" "s1 s2"; do
      # shellcheck disable=SC2086
      FC_FAULT=alloc:$n "$FC_BIN/$tool" $stores >out 2>err
      rc=$?
      [ $rc = 0 ] && continue
      if grep -q ": s[12]: Cannot allocate memory$" err; then
        fail "$tool alloc:$n ($stores): a bare out of memory: $(cat err)"
      fi
      if grep -qx "$tool: s[12]: cannot open the store: Cannot allocate memory" err; then
        if [ "$stores" = s1 ]; then
          [ $rc = 1 ] || fail "$tool alloc:$n (s1): exit $rc, want 1: $(cat err)"
          [ "$(tail -n 1 err)" = "$(summary $tool)" ] || fail "$tool alloc:$n (s1): no summary: $(cat err)"
        fi
        opened=1
        if [ "$stores" != s1 ] && [ $tool != cache-bench ] && [ "$(grep -c '^s[12]: ' out)" -ge 1 ]; then
          # the other store was checked or listed: the job ran
          [ $rc = 1 ] || fail "$tool alloc:$n ($stores): exit $rc, want 1: $(cat err)"
          grep -q "done: 1 of 2 stores" err || fail "$tool alloc:$n ($stores): no summary: $(cat err)"
          several=1
        fi
      fi
    done
  done
  [ $opened = 1 ] || fail "$tool: no allocation of a store's open failed in the first 40"
  [ $tool = cache-bench ] || [ $several = 1 ] ||
    fail "$tool: no run of two stores met the failure in one open after the other store"
done

# out of memory in the check of the stores together, after each was checked clean: said as a
# dataset not checked (stdout, the done line), exit 1; it read "done: 2 of 2 stores clean"
hit=0
for n in $(seq 40 200); do
  FC_FAULT=alloc:$n "$FC_BIN/cache-verify" s1 s2 >out 2>err
  rc=$?
  [ $rc = 0 ] && break
  [ "$(grep -c '^s[12]: 0 errors' out)" = 2 ] || continue
  hit=1
  [ $rc = 1 ] && grep -qx "dataset of 2 stores: not checked as one dataset: .*Cannot allocate memory" out &&
    [ "$(tail -n 1 err)" = "cache-verify: done: 2 of 2 stores clean; not checked as one dataset" ] ||
    fail "cache-verify alloc:$n, the dataset's check: exit $rc: $(cat out err)"
done
[ $hit = 1 ] || fail "cache-verify: no allocation of the dataset's check failed"

# cache-verify -q: no done line for a clean run, but exit 1 comes with it
for n in $(seq 1 40); do
  FC_FAULT=alloc:$n "$FC_BIN/cache-verify" -q s1 >out 2>err
  rc=$?
  [ $rc = 0 ] && continue
  grep -q "cannot open the store" err || continue
  [ $rc = 1 ] && [ "$(tail -n 1 err)" = "$(summary cache-verify)" ] ||
    fail "cache-verify -q alloc:$n: exit $rc: $(cat err)"
  break
done
"$FC_BIN/cache-verify" -q s1 >out 2>err && [ ! -s err ] || fail "cache-verify -q s1: $(cat err)"

[ "$fails" = 0 ] && echo "all out-of-memory open checks passed"
exit "$fails"
