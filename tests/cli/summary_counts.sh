#!/usr/bin/env bash
# The counts in cache-verify's, cache-merge's, cache-bench's and tokenize's summaries read as
# English and add up: one of a thing is singular ("1 more recorded failure not listed", "1 damaged
# record left out", "1 record (...) checked", "1 thread", "1 record with a bad header was
# skipped", "1 token");
# cache-merge's per-db breakdown names every db it copied, meta included, so its numbers add up to
# the N of "N of M"; inputs that hold nothing are said to hold nothing, not to be "already in" an
# OUT just created. The --json field names stay as they were.
set -u
FZ=${FC_BIN:?}/featurize
V=$FC_BIN/cache-verify
M=$FC_BIN/cache-merge
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# a 1 s sine at 22.05 kHz, 16-bit mono
"$PY" - <<'PY' || { echo "FAIL: cannot write a WAV"; exit 1; }
import math, struct, wave
w = wave.open("a.wav", "wb")
w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i * 0.05))) for i in range(22050)))
w.close()
PY

# 1. cache-verify keeps 10000 recorded failures; the one past them is "1 more recorded failure"
mkdir none
seq -f 'u%05g|x' 1 10001 >m.csv
"$FZ" -q -j1 --device cpu --manifest m.csv --audio-dir none -o f --max-failed 100% 2>/dev/null ||
  fail "featurize of 10001 missing files"
"$V" --manifest m.csv f >out 2>err
grep -qx 'f: 1 more recorded failure not listed' out ||
  fail "verify: $(grep 'not listed' out)"

# 2. cache-merge: a store of meta entries and one failure record: meta is in the breakdown
: >empty.wav
"$FZ" -q --device cpu -o e --max-failed 1 empty.wav 2>/dev/null
"$M" -o m1 e >out 2>err || fail "merge of meta only: exit $?: $(cat err)"
grep -Eqx 'cache-merge: done: 2 of 2 entries in m1 \(0 feat, 0 tok, 0 audio, 0 text, 2 meta copied; 0 already there; 0 duplicate keys stored once\); [0-9.]+ MB in [0-9.]+ s, [0-9]+ MB/s' err ||
  fail "meta in the breakdown: $(cat err)"

# 3. a store that holds no entries at all: nothing is "already in" the OUT made for it
"$FZ" -q --device cpu -o z - </dev/null 2>/dev/null
"$M" --json -o m2 z >out 2>err || fail "merge of an empty store: exit $?: $(cat err)"
[ "$(cat err)" = "cache-merge: nothing to do: the 1 store holds no entries" ] ||
  fail "empty input: $(cat err)"
"$PY" -c 'import json, sys; r = json.load(open("out")); assert r["status"] == "nothing to do" and r["total"] == 0, r' ||
  fail "empty input --json: $(cat out)"
"$FZ" -q --device cpu -o z2 - </dev/null 2>/dev/null
"$M" -o m3 z z2 >out 2>err || fail "merge of two empty stores: exit $?: $(cat err)"
[ "$(cat err)" = "cache-merge: nothing to do: the 2 stores hold no entries" ] ||
  fail "two empty inputs: $(cat err)"

# 4. duplicate keys keep their plural
"$FZ" -q --device cpu -o s1 a.wav 2>/dev/null
cp -r s1 s2
"$M" -o m4 s1 s2 >out 2>err || fail "merge of two copies: exit $?: $(cat err)"
grep -Eq '; 0 already there; [0-9]+ duplicate keys stored once\)' err ||
  fail "several duplicates: $(cat err)"

# 5. one damaged record left out (a payload byte flipped; no other input has the record)
"$FZ" -q --device cpu -o d a.wav 2>/dev/null
"$PY" - <<'PY' || fail "cannot damage the record"
with open("d/data.mdb", "r+b") as f:
    data = f.read()
    at = data.index(b"FCR1") + 64 + 100
    f.seek(at)
    f.write(bytes([data[at] ^ 0xFF]))
PY
"$M" -o m5 d >out 2>err
rc=$?
[ $rc = 1 ] && grep -qx 'cache-merge: done: 3 of 4 entries in m5 (1 failed: 1 damaged record left out)' err ||
  fail "one damaged record: exit $rc: $(cat err)"

# 6. cache-verify's summary of one record checked by one thread
"$V" --threads 1 s1 >out 2>err || fail "verify s1: exit $?: $(cat out err)"
grep -Eq '^s1: 0 errors, 0 warnings; 1 record \([0-9.]+ GB\) checked in [0-9.]+ s \([0-9.]+ GB/s, 1 thread\); 1 audio, 0 text entries; 1 mel, 0 token configs$' out ||
  fail "verify of one record: $(cat out)"

# 7. cache-bench over a store whose one record has a bad header: "1 record ... was skipped"
"$FZ" -q --device cpu -o h a.wav 2>/dev/null
"$PY" - <<'PY' || fail "cannot damage the header"
with open("h/data.mdb", "r+b") as f:
    data = f.read()
    at = data.index(b"FCR1")
    f.seek(at)
    f.write(b"XCR1")
PY
"$FC_BIN/cache-bench" -q --duration 0 -p sequential -s warm -b 1 h >out 2>err
grep -qx 'cache-bench: h: 1 record with a bad header was skipped (run cache-verify)' err ||
  fail "cache-bench, one bad header: $(cat err)"

# 8. tokenize of one line of one symbol: "1 token", and the rerun "all 1 line already stored"
printf 'x|a\n' >one.csv
"$FC_BIN/tokenize" -t chars --build-vocab --manifest one.csv -o t1 >out 2>err || fail "tokenize one line: $(cat err)"
grep -qx 'tokenize: done: 1 of 1 (1 new, 0 already stored, 0 failed, 1 token)' err || fail "tokenize one token: $(cat err)"
"$FC_BIN/tokenize" -t chars --build-vocab --manifest one.csv -o t1 >out 2>err || fail "tokenize rerun: $(cat err)"
grep -q '^tokenize: nothing to do: all 1 line already stored (config [0-9a-f]*)$' err || fail "tokenize rerun of one line: $(cat err)"

if [ $fails -gt 0 ]; then echo "$fails case(s) failed"; exit 1; fi
echo "ok"
