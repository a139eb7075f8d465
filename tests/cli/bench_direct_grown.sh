#!/usr/bin/env bash
# cache-bench --direct while another process grows a store's map (a featurize writing into it
# beside the benchmark): the first read transaction after the growth adopts the new size, and LMDB
# maps the file anew, elsewhere. --direct took a value's offset in data.mdb as its pointer minus
# the map's address seen when the store was opened, so its preads went to the wrong offsets: the
# pass failed ("O_DIRECT is not supported on this filesystem") or read other bytes (records with
# a bad header, "run cache-verify"). The address is now the one the pass's transactions hold.
# The growth comes at a known point: two stores read as one dataset, cache-bench stopped
# (FC_FAULT_STOP=store_open:4) while reopening the second before its first cold pass, the first
# already open; a writer then grows the first store's map and fills it past its old size.
set -u
bin=${FC_BIN:?}/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault hooks (-DFC_FAULT_INJECTION=ON)"; exit 77; }
t=$(mktemp -d "$PWD/bench_direct_grown.XXXXXX") # the build tree: a disk (tmpfs has no O_DIRECT)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$t"; }
trap cleanup EXIT
[ "$(stat -f -c %T "$t")" = tmpfs ] && { echo "skipped: the build tree is on tmpfs (no O_DIRECT)"; exit 77; }
for s in 0 1; do
  "$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/s$s', 40, frames=100, seed=$s)" ||
    fail "fixture s$s"
done
. "$FC_SRC/tests/cli/stop_site.bash" # stopped PID TRIES

# opens 1 and 2: the stores; 3 and 4: their reopening before the first cold pass (batch 1)
FC_FAULT_STOP=store_open:4 "$bin" --json --direct --no-probe -p random -s cold -b 4 --duration 0 \
  "$t/s0" "$t/s1" >"$t/out" 2>"$t/err" &
pid=$!
stopped $pid 400 || fail "not stopped at store_open:4: $(cat "$t/err")"
# the writer: s0's map made 4 times larger, and records written until data.mdb passes twice
# the old size (the reader's map then cannot hold the snapshot: it must adopt the new size)
"$FC_PYTHON" - "$t/s0" <<'PY' || fail "the writer"
import os, sys
sys.path.insert(0, os.path.join(os.environ["FC_SRC"], "tests", "reference"))
import lmdb
import numpy as np
import test_bench_fixture as f
env = lmdb.open(sys.argv[1], max_dbs=8, subdir=True)
feat = env.open_db(b"feat")
old = env.info()["map_size"]
env.set_mapsize(old * 4)
pl = np.random.default_rng(5).standard_normal(100 * 80, dtype=np.float32).tobytes()
while (env.info()["last_pgno"] + 1) * env.stat()["psize"] < old * 2:
    with env.begin(write=True) as txn:
        for _ in range(64):
            txn.put(os.urandom(16), f.record(pl, 100, 80, bytes(16)), db=feat)
PY
kill -CONT $pid
wait $pid
rc=$?
pid=
[ $rc = 0 ] || fail "exit $rc: $(cat "$t/err")"
[ "$(tail -n 1 "$t/err")" = "cache-bench: done: 2 of 2 passes" ] || fail "done line: $(cat "$t/err")"
grep -q 'bad header' "$t/err" && fail "records read at wrong offsets: $(cat "$t/err")"
[ "$(grep -c '"record":"pass".*"io":"direct".*"records":80,.*"bad_records":0,' "$t/out")" = 2 ] ||
  fail "want two direct passes of 80 records, none bad: $(cat "$t/out")"
echo ok
