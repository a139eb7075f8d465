#!/usr/bin/env bash
# cache-bench: the readable table (one store; two side by side with --separate), the verdict and
# the done line.
set -u
bin=$FC_BIN/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/a', 12, frames=100); f.make_store('$t/b', 12, frames=100, seed=2)" \
  || fail "fixture"

"$bin" -p sequential,random -b 4 --duration 1 "$t/a" >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 0 ] || fail "exit $rc: $(cat "$t/err")"
# On tmpfs (/tmp is one on many systems) nothing can be evicted: each cold pass is said not cold.
want_err="cache-bench: done: 8 of 8 passes"
case $(stat -f -c %T "$t") in
  tmpfs|ramfs)
    want_err=$(for p in sequential sequential random random; do
      echo "cache-bench: $t/a: $p cold pass started with 100.0% of data.mdb resident: not cold (tmpfs lives in RAM)"
    done; echo "$want_err") ;;
esac
[ "$(cat "$t/err")" = "$want_err" ] || fail "stderr: $(cat "$t/err")"
[ "$(head -1 "$t/out")" = "store: $t/a  (12 records, 0.4 MB payload, data.mdb $(awk -v s=$(stat -c %s "$t/a/data.mdb") 'BEGIN{printf "%.1f MB", s/1e6}'))" ] \
  || fail "store line: $(head -1 "$t/out")"
grep -qE '^device: ' "$t/out" || fail "no device line"
grep -qx 'pattern    state io     thr batch resident      MB/s     rec/s   batch/s  rec_p50  rec_p95  rec_p99  rec_max  bat_p50  bat_p99 fault  copy  wait other' "$t/out" \
  || fail "column header"
awk '$1 ~ /^(sequential|random)$/ {print $1, $2, $3, $4, $5}' "$t/out" >"$t/rows"
cat >"$t/want" <<'ROWS'
sequential cold mmap 1 1
sequential cold mmap 1 4
sequential warm mmap 1 1
sequential warm mmap 1 4
random cold mmap 1 1
random cold mmap 1 4
random warm mmap 1 1
random warm mmap 1 4
ROWS
diff "$t/want" "$t/rows" || fail "rows"
grep -qE "^verdict: $t/a (keeps up with|is too slow for) 1 GPU at a 50 ms step: it delivers [0-9.]+ batches/s of 4 \(random order, cold, 1 thread(, but not cold: [0-9.]+% of data.mdb was resident)?\) where 20.0/s are needed " "$t/out" \
  || fail "verdict: $(grep delivers "$t/out")"
# the store is 0.4 MB: too small to tell an HDD from an SSD, said so
grep -q "HDD or SSD cannot be told on a store of 0.[0-9] MB" "$t/out" || [ "$(stat -f -c %T "$t")" = tmpfs ] ||
  fail "a tiny store: $(grep delivers "$t/out")"

# -q: no done line; two stores side by side (--separate; without it they are one dataset:
# tests/cli/bench_dataset.sh)
"$bin" -q --separate -p physical -s warm -b 2 --duration 1 "$t/a" "$t/b" >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 0 ] || fail "two stores: exit $rc"
[ -s "$t/err" ] && fail "-q wrote to stderr: $(cat "$t/err")"
grep -q "^\[1\] store: $t/a " "$t/out" && grep -q "^\[2\] store: $t/b " "$t/out" || fail "store lines"
grep -qE '^pattern +state +io +thr +batch +MB/s\[1\] +bat_p99\[1\] +MB/s\[2\] +bat_p99\[2\]$' "$t/out" \
  || fail "side-by-side header: $(grep ^pattern "$t/out")"
[ "$(grep -cE '^physical +warm +mmap +1 +[12] +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$t/out")" -eq 2 ] \
  || fail "side-by-side rows"
[ "$(grep -c ' delivers ' "$t/out")" -eq 2 ] || fail "one verdict per store"

# a store of one record is "1 record" (it said "1 records"), alone and as a dataset's only one
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/one', 1, frames=100); f.make_empty_store('$t/none')" \
  || fail "fixture (one record)"
"$bin" -q -p sequential -s warm -b 1 --duration 1 "$t/one" >"$t/out" 2>"$t/err" || fail "one record: exit $?: $(cat "$t/err")"
head -1 "$t/out" | grep -q "^store: $t/one  (1 record, 0.0 MB payload, data.mdb " || fail "one record: $(head -1 "$t/out")"
"$bin" -q -p sequential -s warm -b 1 --duration 1 "$t/one" "$t/none" >"$t/out" 2>"$t/err" ||
  fail "one record in two stores: exit $?: $(cat "$t/err")"
head -1 "$t/out" | grep -q "^store: $t/one + $t/none  (one dataset of 2 stores: 1 record, 0.0 MB payload, " ||
  fail "one record in two stores: $(head -1 "$t/out")"
echo ok
