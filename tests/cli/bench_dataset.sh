#!/usr/bin/env bash
# cache-bench over several stores read as one dataset (the default), against py-lmdb's own reading
# of the stores and against cache-bench of their cache-merge: the union's records once each (a
# key held by two stores counted once), the loader's store-by-store orders, MB/s over all of
# them, one table and one verdict; an empty shard among others; --separate side by side.
set -u
bin=$FC_BIN/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
# a: 12 records; b: 8 others; c: the first 5 of a's again (same seed: same keys and bytes); e: none
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f
f.make_store('$t/a', 12, frames=100); f.make_store('$t/b', 8, frames=100, seed=2)
f.make_store('$t/c', 5, frames=100); f.make_empty_store('$t/e'); f.make_empty_store('$t/e2')" || fail "fixture"

# the oracle: the stores' keys in key order and payload bytes, read with py-lmdb
"$FC_PYTHON" - "$t" >"$t/oracle" <<'PY' || fail "oracle"
import sys, lmdb
t = sys.argv[1]
seen, seq, payload = set(), [], 0
for s in ("b", "a", "e", "c"):  # the order the stores are given below
    env = lmdb.open(f"{t}/{s}", max_dbs=8, readonly=True, lock=False)
    with env.begin(db=env.open_db(b"feat", create=False)) as txn:
        for k, v in txn.cursor():
            if bytes(k) not in seen:
                seen.add(bytes(k))
                seq.append(bytes(k).hex())
                payload += len(v) - 64
    env.close()
print(len(seq), payload)
print("\n".join(seq))
PY
read -r n payload <"$t/oracle"
[ "$n" = 20 ] || fail "oracle: $n records (want 20: 8 + 12, c's 5 already in a)"
tail -n +2 "$t/oracle" >"$t/want_seq"

# the table: one store line naming the dataset, one set of passes, one verdict
"$bin" -p sequential,random -s warm -b 4 --duration 0 "$t/b" "$t/a" "$t/e" "$t/c" >"$t/out" 2>"$t/err"
rc=$?
[ $rc -eq 0 ] || fail "dataset: exit $rc: $(cat "$t/err")"
[ "$(cat "$t/err")" = "cache-bench: done: 4 of 4 passes" ] || fail "dataset: stderr: $(cat "$t/err")"
fb=$(stat -c %s "$t/b/data.mdb" "$t/a/data.mdb" "$t/e/data.mdb" "$t/c/data.mdb" | awk '{s += $1} END {printf "%.1f MB", s / 1e6}')
want="store: $t/b + $t/a + $t/e + $t/c  (one dataset of 4 stores: 20 records, $(awk -v p="$payload" 'BEGIN{printf "%.1f MB", p/1e6}') payload, data.mdb $fb)"
[ "$(head -1 "$t/out")" = "$want" ] || fail "store line: $(head -1 "$t/out")
want:       $want"
[ "$(grep -c '^pattern ' "$t/out")" = 1 ] || fail "one table"
[ "$(grep -cE '^(sequential|random) +warm' "$t/out")" = 4 ] || fail "rows: $(grep -E '^(seq|ran)' "$t/out")"
[ "$(grep -c ' delivers ' "$t/out")" = 1 ] || fail "one verdict"
grep -qE "^verdict: $t/b \+ $t/a \+ $t/e \+ $t/c (keeps up|is too slow) " "$t/out" || fail "verdict names the dataset"

# --json: every pass reads the whole union once; bytes and MB/s over all the stores; the
# summary lists the stores; --dump-order: sequential and physical go store by store (b, a, c),
# keys in order within each store; every pass is a permutation of the union
"$bin" -q --json -p sequential,physical,random,locality -s cold,warm -b 4 --duration 0 \
  --dump-order "$t/dump" "$t/b" "$t/a" "$t/e" "$t/c" >"$t/json" 2>"$t/err" \
  || fail "json: exit $?: $(cat "$t/err")"
"$FC_PYTHON" - "$t" "$n" "$payload" <<'PY' || fail "json/dump-order"
import json, sys, collections
t, n, payload = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
objs = [json.loads(l) for l in open(f"{t}/json")]
passes = [o for o in objs if o["record"] == "pass"]
summ = [o for o in objs if o["record"] == "summary"]
label = f"{t}/b + {t}/a + {t}/e + {t}/c"
assert len(summ) == 1 and len(passes) == 16, (len(summ), len(passes))
s = summ[0]
assert s["store"] == label and s["stores"] == [f"{t}/{x}" for x in "baec"], s["stores"]
assert s["records"] == n and s["payload_bytes"] == payload, (s["records"], s["payload_bytes"])
for p in passes:
    assert p["store"] == label and p["stopped"] == "complete", p
    assert p["records"] == n and p["bytes"] == payload, (p["records"], p["bytes"])
    assert abs(p["mb_per_s"] - payload / p["seconds"] / 1e6) <= 1e-3 * p["mb_per_s"]
want = open(f"{t}/want_seq").read().split()
by_pass = collections.defaultdict(list)
for line in open(f"{t}/dump"):
    k, pat, state, batch, threads, key = line.split()
    if k == "probe":  # the HDD-or-SSD probe's reads
        continue
    by_pass[(int(k), pat, int(batch))].append(key)
assert len(by_pass) == 16, len(by_pass)
for (k, pat, batch), keys in by_pass.items():
    assert sorted(keys) == sorted(want), f"pass {k} {pat}: not the union once each"
    if pat == "sequential":
        assert keys == want, f"sequential pass {k}: {keys} != {want}"
    if pat in ("physical", "locality"):
        # store by store: b's 8 keys before a's 12 (physical), each batch within one store's span
        pos = {key: i for i, key in enumerate(want)}
        if pat == "physical":
            assert [pos[x] < 8 for x in keys] == [True] * 8 + [False] * 12, keys
print("ok")
PY

# the merge of the same stores: the same records and payload, one store
"$FC_BIN/cache-merge" -q -o "$t/m" "$t/b" "$t/a" "$t/e" "$t/c" || fail "cache-merge"
"$bin" -q --json -p sequential -s warm -b 4 --duration 0 "$t/m" >"$t/mjson" || fail "merged"
"$FC_PYTHON" - "$t/mjson" "$n" "$payload" <<'PY' || fail "merged store differs from the dataset"
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l][0]
assert s["records"] == int(sys.argv[2]) and s["payload_bytes"] == int(sys.argv[3]), s
PY

# --separate: each store on its own, side by side (the empty one is refused, as alone)
"$bin" -q --separate -p physical -s warm -b 2 --duration 0 "$t/a" "$t/e" >"$t/out" 2>"$t/err"
rc=$?
[ $rc -eq 2 ] || fail "--separate with an empty store: exit $rc"
[ "$(cat "$t/err")" = "cache-bench: $t/e: store has no feature records (db feat is empty): nothing to bench" ] \
  || fail "--separate empty: $(cat "$t/err")"
"$bin" -q --separate -p physical -s warm -b 2 --duration 0 "$t/a" "$t/b" >"$t/out" 2>"$t/err" \
  || fail "--separate: exit $?"
grep -q "^\[1\] store: $t/a  (12 records" "$t/out" && grep -q "^\[2\] store: $t/b  (8 records" "$t/out" \
  || fail "--separate store lines: $(grep store: "$t/out")"
[ "$(grep -c ' delivers ' "$t/out")" = 2 ] || fail "--separate: one verdict per store"

# a store on another device (tmpfs beside the disk, where /dev/shm is another file system): said
if [ -d /dev/shm ] && shm=$(mktemp -d /dev/shm/bench_dataset.XXXXXX); then
  trap 'rm -rf "$t" "$shm"' EXIT
  cp -r "$t/b" "$shm/b"
  if [ "$(stat -c %d "$t/a/data.mdb")" != "$(stat -c %d "$shm/b/data.mdb")" ]; then
    "$bin" -p sequential -s warm -b 2 --duration 0 "$t/a" "$shm/b" >"$t/out" 2>"$t/err" \
      || fail "two devices: exit $?: $(cat "$t/err")"
    grep -q "^cache-bench: $shm/b: on another device (.*) than $t/a (.*): one dataset's numbers mix them; --separate benches each store on its own$" "$t/err" \
      || fail "two devices: $(cat "$t/err")"
    grep -q "one dataset of 2 stores: 20 records" "$t/out" || fail "two devices: $(head -1 "$t/out")"
    # the store it names quoted as names are (an escape in it went to the terminal as it was)
    cp -r "$t/a" "$t/a$(printf '\033')x"
    "$bin" -p sequential -s warm -b 2 --duration 0 "$t/a$(printf '\033')x" "$shm/b" >"$t/out" 2>"$t/err"
    grep -q "^cache-bench: $shm/b: on another device (.*) than \"$t/a\\\\033x\" (.*): " "$t/err" ||
      fail "two devices, an odd name: $(cat -v "$t/err")"
  fi
fi

# no store with records: nothing to bench
"$bin" -q "$t/e" "$t/e2" >"$t/out" 2>"$t/err"
rc=$?
[ $rc -eq 2 ] || fail "all empty: exit $rc"
[ "$(cat "$t/err")" = "cache-bench: none of the 2 stores has feature records (db feat is empty): nothing to bench" ] \
  || fail "all empty: $(cat "$t/err")"
# a store given twice (another spelling of the same directory) is refused, in both modes: LMDB
# must not open one environment twice in a process
for mode in "" --separate; do
  "$bin" -q $mode -s warm -b 2 --duration 0 "$t/a" "$t/b" "$t/./a" >"$t/out" 2>"$t/err"
  rc=$?
  [ $rc -eq 2 ] && grep -qx "cache-bench: $t/./a: given twice (also as $t/a): a process must not open a store twice" "$t/err" \
    || fail "store given twice ($mode): exit $rc: $(cat "$t/err")"
done
# a store that cannot be opened is named
"$bin" -q "$t/a" "$t/nope" >"$t/out" 2>"$t/err"
rc=$?
[ $rc -eq 2 ] && [ "$(cat "$t/err")" = "cache-bench: $t/nope: cannot open the store: No such file or directory" ] \
  || fail "missing store: exit $rc: $(cat "$t/err")"
echo ok
