#!/usr/bin/env bash
# A split store's crash safety (featurize --writers 3; the pattern of featurize_crash.sh): SIGKILL
# mid-run several times; after each kill every part that exists opens, each says it is part K of
# 3, every record validates, every audio entry has its record in its own part and sits in its
# id's part (fc_store_part_of_id), and the total never goes down. A rerun (without --writers: the marker
# says 3) completes the job with exactly the expected records, a second rerun has nothing to do,
# and cache-verify passes on the split store and on each part.
set -u
B=${FC_BIN:?}
FZ=$B/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

"$PY" - <<'PY' || { echo "FAIL: cannot make the test audio (numpy, soundfile: scripts/setup)"; exit 1; }
import numpy as np, soundfile as sf
rng = np.random.default_rng(7)
for i in range(300):
    n = int(rng.integers(11025, 66150))
    t = np.arange(n) / 22050
    x = 0.3 * np.sin(2 * np.pi * rng.uniform(100, 3000) * t) + 0.05 * rng.standard_normal(n)
    sf.write(f"u{i:03d}.wav", x.astype(np.float32), 22050, subtype="PCM_16")
PY
ls u*.wav >list

# check STORE [EXPECT_N]: prints the number of audio entries over all parts.
check() {
  "$PY" - "$@" <<'PY'
import os, struct, sys, lmdb, xxhash
root, N = sys.argv[1], 3
problems, total = [], 0
marker = os.path.join(root, "featcache-split")
if os.path.exists(marker) and open(marker, "rb").read() != b"featcache-split/1 3\n":
    problems.append(f"marker holds {open(marker, 'rb').read()!r}")
if os.path.exists(os.path.join(root, "data.mdb")):
    problems.append("a data.mdb in the split store's directory")
for k in range(N):
    part = os.path.join(root, f"part-{k}")
    data = os.path.join(part, "data.mdb")
    if not os.path.exists(data) or os.path.getsize(data) == 0:  # killed before it was made
        if os.path.exists(part) and not os.path.exists(marker):
            problems.append(f"part-{k} exists without the marker")
        continue
    env = lmdb.open(part, readonly=True, lock=False, max_dbs=8)
    try:
        meta, audio, feat = (env.open_db(n, create=False) for n in (b"meta", b"audio", b"feat"))
    except lmdb.NotFoundError:  # killed while the part was being created: nothing committed
        continue
    with env.begin() as t:
        mp = t.get(b"part", db=meta)
        if mp is not None and bytes(mp) != f"{k}/{N}".encode():
            problems.append(f"part-{k}: meta part {bytes(mp)!r}")
        cfgs = [bytes(c) for c, _ in t.cursor(db=meta) if bytes(c).startswith(b"cfg/")]
        records = {}
        for key, v in t.cursor(db=feat):
            v = bytes(v)
            magic, hs, dt, nd, d0, d1, pb, ph = struct.unpack_from("<4sHBBIIQQ", v)
            if not (magic == b"FCR1" and len(v) == 64 + pb == 64 + d0 * d1 * 4
                    and xxhash.xxh3_64_intdigest(v[64:]) == ph
                    and xxhash.xxh3_64_intdigest(v[:56]) == struct.unpack_from("<Q", v, 56)[0]):
                problems.append(f"part-{k}: record {bytes(key).hex()} invalid")
            records[bytes(key)] = 1
        n = 0
        for i, v in t.cursor(db=audio):
            n += 1
            if ((xxhash.xxh3_64_intdigest(bytes(i)) & 0xFFFFFFFF) * N) >> 32 != k:
                problems.append(f"part-{k}: {bytes(i)!r} belongs to another part")
            for c in cfgs:
                key = xxhash.xxh3_128_intdigest(bytes(v[:16]) + bytes.fromhex(c[4:].decode())).to_bytes(16, "little")
                if key not in records:
                    problems.append(f"part-{k}: entry {bytes(i).decode()} has no record")
        if len(records) > n:
            problems.append(f"part-{k}: {len(records)} records but {n} entries")
        if records and mp is None:
            problems.append(f"part-{k}: records but no meta part")
        total += n
    env.close()
for p in problems[:10]:
    print(p, file=sys.stderr)
if len(sys.argv) > 2 and total != int(sys.argv[2]):
    print(f"{total} entries, want {sys.argv[2]}", file=sys.stderr)
    sys.exit(1)
print(total)
sys.exit(1 if problems else 0)
PY
}

t0=$(date +%s.%N)
"$FZ" -q --device cpu -j 1 --writers 3 -o scratch - <list 2>/dev/null || fail "clean run failed"
t1=$(date +%s.%N)
rm -rf scratch
last=0
for f in 0.1 0.2 0.3 0.4 0.5 0.6; do
  d=$(echo "($t1 - $t0) * $f" | bc -l)
  "$FZ" -q --device cpu -j 1 --writers 3 -o st - <list >/dev/null 2>err &
  pid=$!
  sleep "$d"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  n=$(check st) || fail "after SIGKILL at ${d}s: split store inconsistent"
  echo "killed after $(printf %.2f "$d") s: ${n:-?} of 300 stored"
  [ "${n:-0}" -ge "$last" ] || fail "entries went down from $last to $n"
  last=${n:-0}
done
if [ -e st/featcache-split ]; then # resumes with the marker's N
  "$FZ" --device cpu -j 2 -o st - <list >out 2>err
else # killed before the marker: a rerun must name the layout again
  "$FZ" --device cpu -j 2 --writers 3 -o st - <list >out 2>err
fi
rc=$?
[ $rc = 0 ] || fail "final rerun: exit $rc: $(cat err)"
check st 300 >/dev/null || fail "final split store is not exactly the 300 records"
"$FZ" --device cpu -o st - <list 2>err
[ "$(cat err)" = "featurize: nothing to do: all 300 already stored" ] || fail "second rerun: $(cat err)"
"$B/cache-verify" -q st >/dev/null 2>err || fail "cache-verify st: $(cat err)"
for k in 0 1 2; do "$B/cache-verify" -q st/part-$k >/dev/null 2>&1 || fail "cache-verify st/part-$k"; done

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
