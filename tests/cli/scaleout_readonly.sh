#!/bin/bash
# Shards read without merging, from a read-only mount (a bind mount remounted ro, made by the
# test as root; what an NFS/Lustre export mounted ro looks like to LMDB: no lock file can be
# written). Over 3 shards of a generated corpus:
#   - cache-verify STORE... checks them as one dataset: clean, lock-free ("nolock":true), the
#     manifest found across the shards; a manifest id no shard has is an error; --separate checks
#     each shard against the manifest alone (each misses the others' ids);
#   - the loader (Python featcache.Loader over the 3 paths) yields every utterance once, with the
#     same mel and token bytes as one plain featurize + tokenize run;
#   - loader-bench and cache-bench --read-only run on the shards;
#   - cache-merge reads them and writes a store equal to the plain run;
#   - nothing under the mount was written (checksums and file lists unchanged).
# Then two shards that disagree on an id: cache-verify reports the conflict.
set -u
[ "$(id -u)" = 0 ] || { echo "skip: needs root for the read-only bind mount"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d /tmp/fc_ro.XXXXXX)
mounted=0
trap '[ $mounted = 1 ] && umount "$T/ro"; rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 45 || exit 1
"$FC_BIN/featurize" -q -j2 -o ref --manifest c/metadata.csv || exit 1
"$FC_BIN/tokenize" -q --build-vocab -o ref c/metadata.csv || exit 1
mkdir rw ro
for k in 0 1 2; do
  "$FC_BIN/featurize" -q -j1 --shard $k/3 -o rw/s$k --manifest c/metadata.csv || fail=1
  "$FC_BIN/tokenize" -q --build-vocab --shard $k/3 -o rw/s$k c/metadata.csv || fail=1
done
if ! mount --bind rw ro 2>err || ! { mounted=1; mount -o remount,bind,ro ro 2>>err; }; then
  echo "skip: cannot make a read-only bind mount here: $(cat err)"; exit 77
fi
touch ro/probe 2>/dev/null && { echo "FAIL the mount is writable"; exit 1; }
before=$(cd rw && find . -type f -printf '%p %s\n' | sort; md5sum s*/data.mdb)

"$FC_BIN/cache-verify" --json --strict --manifest c/metadata.csv ro/s0 ro/s1 ro/s2 >out 2>err; rc=$?
[ $rc = 0 ] || { echo "FAIL cache-verify over the shards: exit $rc"; cat out err; fail=1; }
"$PY" - out <<'PY' || fail=1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 4, lines
for r in lines[:3]:
    assert r["ok"] and r["nolock"] and r["error_count"] == 0, r
d = lines[3]
assert d["dataset"] == ["ro/s0", "ro/s1", "ro/s2"] and d["ok"], d
assert d["entries"] == {"audio": 45, "text": 45} and d["manifest_items"] == 45, d
assert d["mel_configs"] == 1 and d["token_configs"] == 1, d
PY
grep -q "^cache-verify: done: 3 of 3 stores clean; one sound dataset$" err || { echo "FAIL verify summary"; cat err; fail=1; }
# an id no shard holds
cp c/metadata.csv more.csv; echo "LJ999-0001|Nobody has me.|nobody has me." >>more.csv
"$FC_BIN/cache-verify" -q --manifest more.csv ro/s0 ro/s1 ro/s2 >out 2>err; rc=$?
[ $rc = 1 ] || { echo "FAIL missing id: exit $rc"; cat out err; fail=1; }
grep -q "^dataset: error: manifest LJ999-0001: missing: the manifest names it, no store has an audio entry$" out \
  || { echo "FAIL missing id message"; cat out; fail=1; }
[ "$(grep -c '^dataset: error' out)" = 1 ] || { echo "FAIL more than the one missing id"; cat out; fail=1; }
# --separate: each shard alone against the whole manifest misses the other shards' ids
"$FC_BIN/cache-verify" -q --separate --manifest c/metadata.csv ro/s0 ro/s1 ro/s2 >out 2>err; rc=$?
[ $rc = 1 ] && [ "$(grep -c 'missing: manifest line' out)" = 90 ] || { echo "FAIL --separate: exit $rc, $(grep -c 'missing: manifest line' out) missing"; fail=1; }

# the loader over the three read-only shards = one plain run
"$PY" - <<'PY' || fail=1
import featcache, lmdb, numpy as np
def batches(paths, **kw):
    out = {}
    for b in featcache.Loader(paths, batch_size=8, tokens="chars", **kw):
        for i, uid in enumerate(b.ids):
            assert uid not in out, uid
            out[uid] = (np.array(b.mels[i]), np.array(b.tokens[i]))
        b.release()
    return out
shards = batches(["ro/s0", "ro/s1", "ro/s2"], nolock=True)
shards_auto = batches(["ro/s0", "ro/s1", "ro/s2"])   # LMDB itself goes lock-free on a ro mount
whole = batches(["ref"])
assert len(shards) == 45 and set(shards) == set(whole) == set(shards_auto), (len(shards), len(whole))
for uid, (m, t) in whole.items():
    assert np.array_equal(shards[uid][0], m) and np.array_equal(shards[uid][1], t), uid
    assert np.array_equal(shards_auto[uid][0], m), uid
print("loader: 45 utterances from 3 read-only shards, bytes equal to one plain run")
PY

"$FC_BIN/loader-bench" -q --json --steps 4 --warmup 0 --compute-ms 0 -b 8 ro/s0 ro/s1 ro/s2 >out 2>err \
  || { echo "FAIL loader-bench over the shards"; cat out err; fail=1; }
"$FC_BIN/cache-bench" -q --read-only -p sequential,random -s warm --duration 0.2 ro/s0 >out 2>err \
  || { echo "FAIL cache-bench --read-only"; cat out err; fail=1; }
# the three read-only shards as one dataset: every pass reads all 45 records, as the merge holds
"$FC_BIN/cache-bench" -q --json --read-only -p sequential,random -s warm --duration 0 ro/s0 ro/s1 ro/s2 \
  >out 2>err || { echo "FAIL cache-bench --read-only over the shards"; cat out err; fail=1; }
"$PY" - <<'PY' || fail=1
import json
objs = [json.loads(l) for l in open("out")]
s = [o for o in objs if o["record"] == "summary"]
assert len(s) == 1 and s[0]["stores"] == ["ro/s0", "ro/s1", "ro/s2"] and s[0]["records"] == 45, s
assert all(o["records"] == 45 for o in objs if o["record"] == "pass"), "a pass did not read the union"
print("cache-bench: 45 records from 3 read-only shards as one dataset")
PY

"$FC_BIN/cache-merge" -q -o merged ro/s0 ro/s1 ro/s2 >out 2>err || { echo "FAIL cache-merge from the ro mount"; cat err; fail=1; }
same_store ref merged >same.txt || { echo "FAIL merged store differs from one plain run"; cat same.txt; fail=1; }

after=$(cd rw && find . -type f -printf '%p %s\n' | sort; md5sum s*/data.mdb)
[ "$before" = "$after" ] || { echo "FAIL files under the mount changed"; diff <(echo "$before") <(echo "$after"); fail=1; }

# two shards that disagree on an id: reported as one dataset's conflict
head -1 c/metadata.csv | sed 's/|[^|]*|[^|]*$/|Other words.|other words./' >other.csv
"$FC_BIN/tokenize" -q --build-vocab --export-vocab v.txt -o vv c/metadata.csv
"$FC_BIN/tokenize" -q --vocab v.txt -o sx other.csv
"$FC_BIN/cache-verify" -q ref sx >out 2>err; rc=$?
[ $rc = 1 ] || { echo "FAIL conflict: exit $rc"; cat out err; fail=1; }
grep -q "^dataset: error: text LJ001-0001: in ref and sx with different entries: different transcripts: \".*\" vs \"other words.\" (cache-merge would refuse it)$" out \
  || { echo "FAIL conflict message"; cat out; fail=1; }
exit $fail
