#!/usr/bin/env bash
# cache-bench lists a store's records when it opens it, then runs its passes over that list. A
# process that removes records meanwhile (cache-prune --manifest or --damaged beside the
# benchmark) made every later pass fail at the first record gone: "random cold pass failed:
# FC_ENOTFOUND: not found in the store", exit 1, no numbers. The passes now read the records that
# are there, count the others (JSON gone_records; records is what was read) and say so, naming
# the likely cause; the dump of keys read holds no removed one. The removal comes at a known
# point: cache-bench stopped (FC_FAULT_STOP=store_open:2) reopening the store before its first
# cold pass, the records listed.
set -u
bin=${FC_BIN:?}/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault hooks (-DFC_FAULT_INJECTION=ON)"; exit 77; }
t=$(mktemp -d "$PWD/bench_records_removed.XXXXXX") # the build tree: a disk (--direct)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$t"; }
trap cleanup EXIT
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/s', 20, frames=100)" ||
  fail "fixture"
. "$FC_SRC/tests/cli/stop_site.bash" # stopped PID TRIES

# bench STORE N ARGS...: stopped before the first cold pass, 1 record in N removed, let go on
bench() {
  local store=$1 every=$2
  shift 2
  FC_FAULT_STOP=store_open:2 "$bin" --json --no-probe -p random -s cold -b 4 --duration 0 \
    --dump-order "$t/dump" "$@" "$store" >"$t/out" 2>"$t/err" &
  pid=$!
  stopped $pid 400 || fail "not stopped at store_open:2: $(cat "$t/err")"
  "$FC_PYTHON" - "$store" "$every" >"$t/removed" <<'PY' || fail "the removal"
import sys
import lmdb
env = lmdb.open(sys.argv[1], max_dbs=8)
feat = env.open_db(b"feat")
with env.begin(write=True) as txn:
    keys = [bytes(k) for k, _ in txn.cursor(db=feat)][::int(sys.argv[2])]  # 1 in N
    for k in keys:
        txn.delete(k, db=feat)
for k in keys:
    print(k.hex())
PY
  kill -CONT $pid
  wait $pid
  rc=$?
  pid=
}

check() { # LABEL: exit 0, 2 passes of the 17 records there, 3 gone, said for each pass
  [ $rc = 0 ] || fail "$1: exit $rc: $(cat "$t/err")"
  [ "$(tail -n 1 "$t/err")" = "cache-bench: done: 2 of 2 passes" ] || fail "$1: done line: $(cat "$t/err")"
  [ "$(grep -c "^cache-bench: $t/s\(2\)\?: random cold pass: 3 records listed when the store was opened were not in it any more (removed by another process meanwhile: a cache-prune?), not read$" "$t/err")" = 2 ] ||
    fail "$1: want the removal said for each pass: $(cat "$t/err")"
  "$FC_PYTHON" - "$t/out" "$t/dump" "$t/removed" <<'PY' || fail "$1: $(cat "$t/out")"
import json, sys
passes = [json.loads(l) for l in open(sys.argv[1]) if '"record":"pass"' in l]
assert len(passes) == 2, passes
for p in passes:
    assert p["records"] == 17 and p["gone_records"] == 3 and p["bad_records"] == 0, p
    assert p["stopped"] == "complete", p
    assert p["latency_ms"]["p50"] > 0, p
removed = set(open(sys.argv[3]).read().split())
read = [l.split()[-1] for l in open(sys.argv[2])]
assert len(read) == 34 and not removed & set(read), (len(read), removed & set(read))
PY
}

cp -r "$t/s" "$t/s2"
cp -r "$t/s" "$t/s3"
bench "$t/s" 7 # 3 of the 20
check mmap
# --direct: the same through its O_DIRECT reads (where the filesystem does them)
if dd if="$t/s2/data.mdb" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null; then
  bench "$t/s2" 7 --direct
  check direct
  grep -q '"io":"direct"' "$t/out" || fail "direct: $(cat "$t/out")"
fi

# every record removed: no batch read (not 40 empty ones a second), no pass measured (not a store
# that "delivers 0.0 batches/s" and keeps up at "steps of inf ms")
bench "$t/s3" 1
[ $rc = 0 ] || fail "all removed: exit $rc: $(cat "$t/err")"
"$FC_PYTHON" - "$t/out" "$t/s3" <<'PY' || fail "all removed: $(cat "$t/out")"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
for p in objs[:-1]:
    assert p["records"] == 0 and p["gone_records"] == 20 and p["batches"] == 0, p
    assert p["batches_per_s"] == 0 and p["batch_latency_ms"]["p99"] == 0, p
s = objs[-1]
assert s["record"] == "summary" and s["batches_per_s"] is None and s["keeps_up"] is None, s
assert s["min_step_ms"] is None and s["verdict"].startswith(sys.argv[2] + ": no pass was measured; "), s
PY
echo ok
