#!/usr/bin/env bash
# A split store (featurize --writers N, docs/FORMAT.md "Split stores") holds the same bytes under
# the same keys as a plain store made from the same inputs: the marker's bytes, each part's meta
# part, every id in its fc_store_part_of_id part with its record, the union of the parts' dbs equal to the
# plain store's (and a cache-merge of the parts byte-equal to it); tokenize routes text the same
# way; cache-verify passes on the split store (as one dataset) and on each part alone; the Python
# loader reads the same utterances, mels and tokens; loader-bench, cache-bench and cache-merge read
# it as one; reruns are no-ops; wrong --writers, a part given as -o, and a plain store given more
# writers are usage errors (exit 2) that say why.
set -u
B=${FC_BIN:?}
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# 61 files: 0.3-2 s of tones and noise; dup.wav has the bytes of u007.wav under another id.
"$PY" - <<'PY' || { echo "FAIL: cannot make the test audio (numpy, soundfile: scripts/setup)"; exit 1; }
import shutil, numpy as np, soundfile as sf
rng = np.random.default_rng(11)
with open("meta.csv", "w") as m:
    for i in range(60):
        n = int(rng.integers(6615, 44100))
        t = np.arange(n) / 22050
        x = 0.3 * np.sin(2 * np.pi * rng.uniform(100, 3000) * t) + 0.05 * rng.standard_normal(n)
        sf.write(f"u{i:03d}.wav", x.astype(np.float32), 22050, subtype="PCM_16")
        m.write(f"u{i:03d}|utterance {i} says {'abc' * (i % 7)} here\n")
    shutil.copyfile("u007.wav", "dup.wav")
    m.write("dup|the same audio as seven\n")
PY
ls u*.wav dup.wav >list

"$B/featurize" -q --device cpu -j 2 -o plain - <list || fail "plain featurize failed"
"$B/featurize" --device cpu -j 2 --writers 3 --json -o split - <list >fz.json 2>fz.err ||
  fail "split featurize failed: $(cat fz.err)"
"$PY" -c 'import json,sys; d=json.load(open("fz.json")); sys.exit(0 if d["writers"] == 3 and d["processed"] == 61 else 1)' ||
  fail "--json: want writers 3, processed 61: $(cat fz.json)"
printf 'featcache-split/1 3\n' | cmp -s - split/featcache-split || fail "marker bytes: $(od -c split/featcache-split)"
[ ! -e split/data.mdb ] || fail "the split store's directory holds a data.mdb"

for s in plain split; do
  "$B/tokenize" -q --manifest meta.csv --tokenizer chars --build-vocab -o $s || fail "tokenize $s failed"
done

# The format, read with py-lmdb: parts, routing, and the union equal to the plain store.
"$PY" - <<'PY' || fail "split store bytes/keys differ from the plain store (above)"
import re, sys, lmdb, xxhash
N = 3
def dbs(path):
    env = lmdb.open(path, readonly=True, lock=False, max_dbs=8)
    out = {}
    with env.begin() as t:
        for name in (b"meta", b"audio", b"text", b"feat", b"tok"):
            db = env.open_db(name, txn=t, create=False)
            out[name.decode()] = {bytes(k): when(name, bytes(k), bytes(v)) for k, v in t.cursor(db=db)}
    env.close()
    return out
def when(db, key, val):  # a config's creation time: when each run made it, compared as well-formed
    if db == b"meta" and key.startswith(b"created/"):
        return b"<time>" if re.fullmatch(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", val) else val
    return val
def shard(i, n):  # fc_store_part_of_id: the low 32 bits of XXH3-64 of the id, x n >> 32
    return ((xxhash.xxh3_64_intdigest(i) & 0xFFFFFFFF) * n) >> 32
plain = dbs("plain")
bad = []
union = {k: {} for k in plain}
for k in range(N):
    p = dbs(f"split/part-{k}")
    if p["meta"].get(b"part") != f"{k}/{N}".encode():
        bad.append(f"part-{k}: meta part is {p['meta'].get(b'part')!r}")
    if p["meta"].get(b"format") != b"featcache/1":
        bad.append(f"part-{k}: meta format {p['meta'].get(b'format')!r}")
    for db in ("audio", "text"):
        for i in p[db]:
            if shard(i, N) != k:
                bad.append(f"part-{k}: {db} {i!r} routes to part {shard(i, N)}")
    for i, e in p["audio"].items():  # its record is in its own part
        for c in (m for m in p["meta"] if m.startswith(b"cfg/")):
            key = xxhash.xxh3_128_intdigest(e[:16] + bytes.fromhex(c[4:].decode())).to_bytes(16, "little")
            if b'"kind":"mel"' in p["meta"][c] and key not in p["feat"]:
                bad.append(f"part-{k}: {i!r} has no feat record in its part")
    for db in p:
        for key, v in p[db].items():
            if db == "meta" and key == b"part":
                continue
            if db in ("feat", "tok", "meta") and key in union[db] and union[db][key] != v:
                bad.append(f"{db} {key!r}: different bytes in two parts")
            union[db][key] = v
for db in plain:
    if union[db] != plain[db]:
        miss = set(plain[db]) ^ set(union[db])
        diff = [k for k in plain[db] if k in union[db] and plain[db][k] != union[db][k]]
        bad.append(f"{db}: {len(miss)} keys differ, {len(diff)} values differ ({sorted(miss)[:3]} {diff[:3]})")
if len(plain["audio"]) != 61 or len(plain["feat"]) != 60 or len(plain["text"]) != 61:
    bad.append(f"plain store: {len(plain['audio'])} audio, {len(plain['feat'])} feat, {len(plain['text'])} text")
print("u007 in part", shard(b"u007", N), "dup in part", shard(b"dup", N), file=sys.stderr)
for b in bad[:10]:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# cache-verify: the split store as one dataset, against the manifest; and each part alone.
"$B/cache-verify" --manifest meta.csv --expect-preset hifigan --expect-tokens=chars split >v.out 2>v.err
rc=$?
[ $rc = 0 ] || fail "cache-verify split: exit $rc: $(cat v.out v.err)"
grep -q '^dataset of 3 stores: 0 errors; 61 audio, 61 text entries' v.out || fail "cache-verify split: $(cat v.out)"
grep -q 'cache-verify: done: 3 of 3 stores clean; one sound dataset' v.err || fail "cache-verify split stderr: $(cat v.err)"
for k in 0 1 2; do
  "$B/cache-verify" -q split/part-$k >/dev/null 2>&1 || fail "cache-verify split/part-$k failed"
done

# The Python loader: the same utterances, mels and tokens from both.
"$PY" - <<'PY' || fail "the loader reads different utterances from the split store"
import sys, numpy as np, featcache
def read(path):
    out = {}
    for b in featcache.Loader(path, batch_size=7, tokens="chars"):
        for i in b.ids:
            m, t = featcache.get(path, i, tokens="chars")
            out[i] = (np.array(m), np.array(t))
    return out
a, b = read("plain"), read("split")
ok = sorted(a) == sorted(b) and len(a) == 61 and all(
    np.array_equal(a[i][0], b[i][0]) and np.array_equal(a[i][1], b[i][1]) for i in a)
print("loader:", len(a), "plain,", len(b), "split", "same" if ok else "DIFFERENT", file=sys.stderr)
sys.exit(0 if ok else 1)
PY

# Reruns: nothing to do (with and without --writers), the store unchanged.
sum_before=$(cat split/part-*/data.mdb | md5sum)
"$B/featurize" --device cpu -o split - <list 2>err || fail "rerun failed"
[ "$(cat err)" = "featurize: nothing to do: all 61 already stored" ] || fail "rerun: $(cat err)"
"$B/featurize" --device cpu --writers 3 -o split - <list 2>err || fail "rerun --writers 3 failed"
[ "$(cat err)" = "featurize: nothing to do: all 61 already stored" ] || fail "rerun --writers 3: $(cat err)"
"$B/tokenize" --manifest meta.csv --tokenizer chars --build-vocab -o split 2>err || fail "tokenize rerun failed"
grep -q 'nothing to do: all 61 lines already stored' err || fail "tokenize rerun: $(cat err)"
[ "$(cat split/part-*/data.mdb | md5sum)" = "$sum_before" ] || fail "a rerun changed the parts"

# Usage errors: exit 2, one line that says why, nothing written.
expect2() { # NAME WANT-STDERR CMD...
  local name=$1 want=$2
  shift 2
  "$@" >out 2>err </dev/null
  local rc=$?
  [ $rc = 2 ] || fail "$name: exit $rc, want 2"
  [ "$(cat err)" = "$want" ] || fail "$name: stderr: $(cat err)"
}
expect2 "--writers 2 on a 3-part store" \
  "featurize: split is split into 3 parts, not 2: give 3 writers or none" \
  "$B/featurize" --device cpu --writers 2 -o split u001.wav
expect2 "--writers 2 on a plain store" \
  "featurize: plain is a store of one part (not split): 2 writers need a new directory" \
  "$B/featurize" --device cpu --writers 2 -o plain u001.wav
expect2 "a part as -o" \
  "featurize: split/part-1 is part 1 of a split store of 3 parts: give the split store's directory" \
  "$B/featurize" --device cpu -o split/part-1 u001.wav
expect2 "--writers 0" "featurize: invalid value '0' for --writers (want an integer in 1..64)
Try 'featurize --help' for more information." \
  "$B/featurize" --device cpu --writers 0 -o new u001.wav
[ ! -e new ] || fail "--writers 0 made a store"
expect2 "cache-merge into a split store" \
  "cache-merge: split: cannot open the output store: FC_ESPLIT: a split store of 3 parts; merge into a plain store" \
  "$B/cache-merge" -q -o split plain
printf 'featcache-split/1 03\n' >bad.marker
mkdir badsplit && cp bad.marker badsplit/featcache-split
expect2 "a bad marker" \
  "cache-verify: badsplit/featcache-split: not a split-store marker (featcache-split/1 N)" \
  "$B/cache-verify" badsplit

# The other tools read the split store as one: cache-merge's output equals the plain store.
"$B/cache-merge" -q -o merged split || fail "cache-merge split failed"
"$PY" - <<'PY' || fail "cache-merge of the parts differs from the plain store"
import re, sys, lmdb
def when(db, key, val):  # a config's creation time: when each run made it, compared as well-formed
    if db == b"meta" and key.startswith(b"created/"):
        return b"<time>" if re.fullmatch(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", val) else val
    return val
def dbs(path):
    env = lmdb.open(path, readonly=True, lock=False, max_dbs=8)
    with env.begin() as t:
        return {n: {bytes(k): when(n, bytes(k), bytes(v))
                    for k, v in t.cursor(db=env.open_db(n, txn=t, create=False))}
                for n in (b"meta", b"audio", b"text", b"feat", b"tok")}
a, b = dbs("plain"), dbs("merged")
sys.exit(0 if a == b else 1)
PY
"$B/loader-bench" -q --steps 3 --json split >lb.json 2>lb.err || fail "loader-bench split: $(cat lb.err)"
"$B/cache-bench" -q --patterns sequential --states warm split >cb.out 2>cb.err ||
  fail "cache-bench split: $(cat cb.out cb.err)"

# cache-verify finds an entry in the wrong part (its record copied along, so only the place is
# wrong): featurize would never find it there, and would store the utterance again in its part.
cp -r split moved
"$PY" - <<'PY' || fail "cannot move an entry between parts with py-lmdb"
import lmdb, xxhash
k = ((xxhash.xxh3_64_intdigest(b"u001") & 0xFFFFFFFF) * 3) >> 32
src = lmdb.open(f"moved/part-{k}", max_dbs=8)
dst = lmdb.open(f"moved/part-{(k + 1) % 3}", max_dbs=8)
with src.begin() as s, dst.begin(write=True) as d:
    e = s.get(b"u001", db=src.open_db(b"audio", txn=s, create=False))
    d.put(b"u001", e, db=dst.open_db(b"audio", txn=d, create=False))
    feat_s, feat_d = src.open_db(b"feat", txn=s, create=False), dst.open_db(b"feat", txn=d, create=False)
    for key, v in s.cursor(db=feat_s):
        d.put(key, v, db=feat_d)
print(f"u001 (part {k}) put into part {(k + 1) % 3}")
PY
"$B/cache-verify" moved >v.out 2>v.err
rc=$?
[ $rc = 1 ] || fail "cache-verify of a misplaced entry: exit $rc, want 1"
grep -Eq '^moved/part-[0-2]: error: audio u001: in part [0-2] of a split store of 3 parts; its id belongs in part [0-2]$' v.out ||
  fail "cache-verify misplaced entry: $(cat v.out)"

# The failed-commit cases are tests/cli/featurize_split_faults.sh (fault-injection builds only).

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
