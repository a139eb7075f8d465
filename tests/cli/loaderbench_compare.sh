#!/usr/bin/env bash
# loader-bench on real speech: espeak-ng utterances → featurize (hifigan) → --compare, --json,
# --svg, --trace; --source cache alone; a bad audio file; a manifest naming a split of the store
# (both sources read the split); three shards read as one dataset (--compare checks the loader's
# store-by-store order).
set -u
LB=${FC_BIN:?}/loader-bench
FZ=$FC_BIN/featurize
PY=${FC_PYTHON:-python3}
command -v espeak-ng >/dev/null ||
  { echo "FAIL: espeak-ng not installed (scripts/setup installs it)"; exit 1; }
[ -x "$FZ" ] || { echo "FAIL: featurize not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

mkdir -p "$tmp/wavs"
i=0
for t in "The quick brown fox." "Training waits for data." "A cache makes it small." \
         "Hello world." "Speech is fun." "One two three." "Four five six." "Seven eight."; do
  i=$((i + 1))
  espeak-ng -w "$tmp/wavs/u$i.wav" "$t" || { echo "FAIL: espeak-ng failed"; exit 1; }
  echo "u$i|$t" >>"$tmp/meta.csv"
done
"$FZ" -q --preset hifigan -o "$tmp/st" --manifest "$tmp/meta.csv" || { fail "featurize"; exit 1; }

# --compare: a table per source, then the headline
"$LB" --compare --manifest "$tmp/meta.csv" -b 3 --compute-ms 2 --svg "$tmp/c.svg" \
  --trace "$tmp/t.json" "$tmp/st" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] || fail "compare: exit $rc: $(cat "$tmp/err")"
# 8 utterances in batches of 3 = 3 steps, the first one warmup → 2 measured per source
[ "$(cat "$tmp/err")" = "loader-bench: done: 6 of 6 steps (0 utterances failed)" ] ||
  fail "compare: stderr: $(cat "$tmp/err")"
grep -q "^source: audio \[featcache's own C featurizer, on the fly\] (batch 3, workers 2, prefetch 2, 3 steps, 8 utterances)$" "$tmp/out" ||
  fail "compare: audio header"
grep -q '^source: cache (batch 3, workers 2, prefetch 2, 3 steps, 8 utterances)$' "$tmp/out" ||
  fail "compare: cache header"
# (on 8 utterances the featurizer can keep up: the cached phase may be the longer of two tiny ones)
grep -Eq "^against featcache's own C featurizer on the fly, (the cache cut the data phase from [0-9.e+-]+ ms to [0-9.e+-]+ ms per step \(([0-9.]+×|infinitely shorter)\)|the cache did not shorten the data phase: [0-9.e+-]+ ms on the fly, [0-9.e+-]+ ms from the cache per step \([0-9.]+× as long\)); data share [0-9.]+ % → [0-9.]+ %$" "$tmp/out" ||
  fail "compare: headline: $(tail -2 "$tmp/out")"
grep -q '^(that baseline is not your pipeline: .* loader-bench --compare-profiles)$' "$tmp/out" ||
  fail "compare: the baseline is not labelled"
[ "$(grep -c '^verdict: ' "$tmp/out")" = 2 ] || fail "compare: verdicts"

# the chart: valid SVG with both panels; the trace: valid, every step of both sources
"$PY" - "$tmp/c.svg" "$tmp/t.json" <<'PY' || fail "svg/trace"
import json, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
assert "audio" in texts and "cache" in texts, texts
assert any(t and t.startswith("data (waiting") for t in texts)
tr = json.load(open(sys.argv[2]))
ev = tr["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M"}
assert names == {1: "audio", 2: "cache"}, names
for pid in (1, 2):
    steps = sorted(e["args"]["step"] for e in ev if e["pid"] == pid and e["name"] == "step")
    assert steps == [0, 1, 2], steps
    for ph in ("data", "compute"):
        assert sorted(e["args"]["step"] for e in ev if e["pid"] == pid and e["name"] == ph) == [0, 1, 2]
PY

# --json: both sources on the same utterances, shrink_factor = audio mean / cache mean
"$LB" --compare --manifest "$tmp/meta.csv" -b 4 --warmup 0 --compute-ms 1 --json -q "$tmp/st" \
  >"$tmp/json" 2>"$tmp/err" || fail "json: exit $?: $(cat "$tmp/err")"
"$PY" - "$tmp/json" <<'PY' || fail "json"
import json, sys
d = json.load(open(sys.argv[1]))
a, c = d["sources"]
assert a["source"] == "audio" and c["source"] == "cache"
assert a["steps"] == c["steps"] == 2 and a["utterances"] == c["utterances"] == 8
assert d["same_order"] is True and d["baseline"] == "featcache C featurizer on the fly"
assert abs(d["shrink_factor"] - a["data_ms"]["mean"] / c["data_ms"]["mean"]) <= 1e-6 * d["shrink_factor"]
for s in (a, c):
    assert 0 <= s["data_share"] < 1 and "input-bound" in s["verdict"]
    assert s["data_ms"]["p50"] <= s["data_ms"]["p99"] <= s["data_ms"]["max"]
PY

# the cache alone, views, two epochs: 8 utterances / 4 = 2 batches per epoch
"$LB" --views -b 4 --epochs 2 --warmup 0 --compute-ms 1 -q "$tmp/st" >"$tmp/out" 2>"$tmp/err" ||
  fail "cache: exit $?: $(cat "$tmp/err")"
grep -q '^source: cache (batch 4, workers 2, prefetch 2, 4 steps, 16 utterances)$' "$tmp/out" ||
  fail "cache: $(head -1 "$tmp/out")"

# a bad audio file: warned about with its path, skipped, exit 1 with the summary
cp "$tmp/meta.csv" "$tmp/bad.csv"
echo "not audio" >"$tmp/wavs/zz.wav"
echo "zz|broken" >>"$tmp/bad.csv"
"$LB" --source audio --manifest "$tmp/bad.csv" -b 9 --warmup 0 --compute-ms 1 -q \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] || fail "bad: exit $rc"
grep -q "^loader-bench: $tmp/wavs/zz.wav: " "$tmp/err" || fail "bad: no warning: $(cat "$tmp/err")"
grep -q '^loader-bench: done: 1 of 1 steps (1 utterance failed)$' "$tmp/err" || fail "bad: summary"

# a manifest that lacks one of the store's ids (a split of a store made for the whole corpus):
# the cache reads the manifest's 7 utterances, as the audio run does; the cache alone with
# --manifest reads them too, and without it all 8
grep -v '^u1|' "$tmp/meta.csv" >"$tmp/less.csv"
"$LB" --compare --manifest "$tmp/less.csv" -b 7 --warmup 0 --compute-ms 1 --json -q "$tmp/st" \
  >"$tmp/json" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] || fail "split: exit $rc: $(cat "$tmp/err")"
"$PY" - "$tmp/json" <<'PY' || fail "split: json"
import json, sys
d = json.load(open(sys.argv[1]))
a, c = d["sources"]
assert a["utterances"] == c["utterances"] == 7 and d["same_order"] is True, (a, c)
PY
"$LB" --manifest "$tmp/less.csv" -b 4 --epochs 1 --warmup 0 --compute-ms 1 -q "$tmp/st" \
  >"$tmp/out" 2>"$tmp/err" || fail "split, cache alone: exit $?: $(cat "$tmp/err")"
grep -q '^source: cache (batch 4, workers 2, prefetch 2, 2 steps, 7 utterances)$' "$tmp/out" ||
  fail "split, cache alone: $(head -1 "$tmp/out")"

# several stores (3 shards of the same corpus): the loader yields them store by store, ids in byte
# order within each; --compare runs the audio in that order and checks the cache against it
for k in 0 1 2; do
  "$FZ" -q --preset hifigan --shard $k/3 -o "$tmp/s$k" --manifest "$tmp/meta.csv" || fail "shard $k"
done
"$PY" - "$tmp" <<'PY' || fail "shards: store-by-store order is the global order (pick other ids)"
import lmdb, sys
order = []
for k in (2, 0, 1):  # as given below
    env = lmdb.open(f"{sys.argv[1]}/s{k}", max_dbs=8, readonly=True, lock=False)
    with env.begin(db=env.open_db(b"audio", create=False)) as t:
        order += [bytes(x).decode() for x, _ in t.cursor()]
assert sorted(order) == [f"u{i}" for i in range(1, 9)], order
assert order != sorted(order), order  # else the check below could not tell the orders apart
PY
"$LB" --compare --manifest "$tmp/meta.csv" -b 3 --warmup 0 --compute-ms 1 --json -q \
  "$tmp/s2" "$tmp/s0" "$tmp/s1" >"$tmp/json" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] || fail "shards: exit $rc: $(cat "$tmp/err")"
"$PY" - "$tmp/json" <<'PY' || fail "shards: json"
import json, sys
d = json.load(open(sys.argv[1]))
a, c = d["sources"]
assert a["utterances"] == c["utterances"] == 8 and a["steps"] == c["steps"] == 3, (a, c)
assert d["same_order"] is True
PY
# a split over the shards: the manifest's 7 utterances from each source, in the same order
"$LB" --compare --manifest "$tmp/less.csv" -b 7 --warmup 0 --compute-ms 1 --json -q \
  "$tmp/s2" "$tmp/s0" "$tmp/s1" >"$tmp/json" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] || fail "shards split: exit $rc: $(cat "$tmp/err")"
"$PY" - "$tmp/json" <<'PY' || fail "shards split: json"
import json, sys
d = json.load(open(sys.argv[1]))
a, c = d["sources"]
assert a["utterances"] == c["utterances"] == 7 and d["same_order"] is True, (a, c)
PY
# a shard given twice (--partial: a rerun into another directory beside the original): the loader
# reads an id two stores hold once, from the first, so the audio run decodes each once too and the
# orders agree (it went through s1's ids twice, and said 'the store yields ... where the manifest
# order has ...', exit 1)
cp -r "$tmp/s1" "$tmp/s1-again"
"$LB" --compare --partial --manifest "$tmp/meta.csv" -b 3 --warmup 0 --compute-ms 1 --json -q \
  "$tmp/s2" "$tmp/s0" "$tmp/s1" "$tmp/s1-again" >"$tmp/json" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] || fail "shard twice: exit $rc: $(cat "$tmp/err")"
"$PY" - "$tmp/json" <<'PY' || fail "shard twice: json"
import json, sys
d = json.load(open(sys.argv[1]))
a, c = d["sources"]
assert a["utterances"] == c["utterances"] == 8 and a["steps"] == c["steps"] == 3, (a, c)
assert d["same_order"] is True
PY
# a manifest id in none of the stores is said
cp "$tmp/meta.csv" "$tmp/more.csv"
cp "$tmp/wavs/u1.wav" "$tmp/wavs/u9.wav"
echo "u9|Extra." >>"$tmp/more.csv"
"$LB" --compare --manifest "$tmp/more.csv" -b 3 --warmup 0 --compute-ms 1 -q \
  "$tmp/s2" "$tmp/s0" "$tmp/s1" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] || fail "not stored: exit $rc"
grep -q "^loader-bench: $tmp/more.csv: 1 of 9 utterances are in none of the 3 stores$" "$tmp/err" ||
  fail "not stored: $(cat "$tmp/err")"
# ... and again in the summary, the line a log's reader sees last (it read "0 utterances failed"
# alone beside exit 1)
tail -1 "$tmp/err" | grep -q "^loader-bench: done: [0-9]* of [0-9]* steps (0 utterances failed, 1 of the manifest's not in the stores)$" ||
  fail "not stored: the summary: $(tail -1 "$tmp/err")"

"$LB" --compare --manifest "$tmp/more.csv" -b 3 --warmup 0 --compute-ms 1 -q "$tmp/st" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] || fail "not stored, one store: exit $rc"
grep -q "^loader-bench: $tmp/more.csv: 1 of 9 utterances are not in the store$" "$tmp/err" ||
  fail "not stored, one store: $(cat "$tmp/err")"
tail -1 "$tmp/err" | grep -q "^loader-bench: done: [0-9]* of [0-9]* steps (0 utterances failed, 1 of the manifest's not in the store)$" ||
  fail "not stored, one store: the summary: $(tail -1 "$tmp/err")"
# ... and not an order mismatch: the loader yields the ids it holds, epoch after epoch (a warmup
# step makes the cache run wrap into its second epoch; the order checked was the manifest's,
# the missing id included: 'the store yields u1 where the manifest order has u9')
for stores in "$tmp/st" "$tmp/s2 $tmp/s0 $tmp/s1"; do
  "$LB" --compare --manifest "$tmp/more.csv" -b 3 --compute-ms 1 --json $stores \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc = 1 ] || fail "not stored, wrapping ($stores): exit $rc"
  grep -E "yields|differ" "$tmp/err" && fail "not stored, wrapping ($stores): an order mismatch"
  "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["same_order"] is True, d' \
    "$tmp/out" || fail "not stored, wrapping ($stores): same_order"
done
# a store of two configs, the second made for some utterances only: with --features choosing it,
# the others are not in the store for --compare (the loader cannot yield them), not an order
# mismatch ('the store yields u1 where the manifest order has u2')
cp -r "$tmp/st" "$tmp/two"
head -3 "$tmp/meta.csv" >"$tmp/three.csv"
"$FZ" -q --preset tacotron2 -o "$tmp/two" --manifest "$tmp/three.csv" || fail "featurize tacotron2"
"$LB" --compare --manifest "$tmp/meta.csv" --features tacotron2 -b 2 --compute-ms 1 --json \
  "$tmp/two" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] || fail "two configs: exit $rc: $(cat "$tmp/err")"
grep -q "^loader-bench: $tmp/meta.csv: 5 of 8 utterances are not in the store$" "$tmp/err" ||
  fail "two configs: $(cat "$tmp/err")"
grep -E "yields|differ" "$tmp/err" && fail "two configs: an order mismatch"
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["same_order"] is True, d' \
  "$tmp/out" || fail "two configs: same_order"

[ $fails = 0 ] && echo "ok" || exit 1
