#!/usr/bin/env bash
# featurize's failure policy on a corpus with bad files: each input that fails because of its file
# gets a failure record in the store's `failed` db (read back here with py-lmdb, byte by byte as
# docs/FORMAT.md "Failure record" says), --json lists the failures, --max-failed N or P% decides
# the exit status, a later success under the same config deletes the record (one under another
# config keeps it), and -v names each conversion. Source paths are stored absolute.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# failures STORE: one line per failure record: id, config hex, err, source, reason; and checks
# the time lies in [T0, now] (T0 = $1 ns) and the config is one the store holds.
failures() {
  "$PY" - "$1" "$2" <<'PY'
import struct, sys, time, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
t0 = int(sys.argv[2])
with env.begin() as t:
    meta = env.open_db(b"meta", txn=t, create=False)
    cfgs = {bytes(k)[4:].decode() for k, _ in t.cursor(db=meta) if bytes(k).startswith(b"cfg/")}
    try:
        db = env.open_db(b"failed", txn=t, create=False)
    except lmdb.NotFoundError:
        sys.exit("no failed db")
    for k, v in t.cursor(db=db):
        v = bytes(v)
        cfg = v[:16].hex()
        when, err, slen = struct.unpack_from("<qiI", v, 16)
        src, reason = v[32:32 + slen].decode(), v[32 + slen:].decode()
        assert len(v) == 32 + slen + len(reason.encode()), "lengths"
        assert t0 <= when <= time.time_ns(), f"time {when} not in [{t0}, now]"
        assert cfg in cfgs, f"config {cfg} not in the store's meta"
        print(bytes(k).decode(), cfg, err, src, reason, sep="|")
PY
}
cfg_of() { # STORE PRESET: the 32-hex digest of the stored config of that preset
  "$PY" - "$1" "$2" <<'PY'
import json, sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    meta = env.open_db(b"meta", txn=t, create=False)
    for k, v in t.cursor(db=meta):
        if bytes(k).startswith(b"cfg/") and json.loads(bytes(v)).get("preset") == sys.argv[2]:
            print(bytes(k)[4:].decode())
PY
}

# The corpus: speech, a stereo 44.1 kHz file, an empty and a truncated WAV, an id with no WAV.
mkdir wavs
espeak-ng -w wavs/good.wav "a good file" || { echo "FAIL: espeak-ng failed"; exit 1; }
sox wavs/good.wav -r 44100 -c 2 wavs/stereo.wav || { echo "FAIL: sox failed"; exit 1; }
: >wavs/empty.wav
sox -n -r 22050 -b 16 wavs/tone.wav synth 1 sine 300
head -c 3000 wavs/tone.wav >wavs/trunc.wav
rm wavs/tone.wav
printf '%s\n' 'good|A good file.' 'stereo|In stereo.' 'empty|Empty.' 'trunc|Truncated.' \
  'missing|No file at all.' >metadata.csv
t0=$("$PY" -c 'import time; print(time.time_ns())')

# 1. First run: two stored, three failed and recorded; exit 1 (no --max-failed: any failure).
"$FZ" -v -j1 --device cpu --json --manifest metadata.csv -o st >out 2>err
rc=$?
[ $rc = 1 ] || fail "first run: exit $rc, want 1: $(cat err)"
grep -qx 'featurize: wavs/stereo.wav: stored as stereo ([0-9]* frames, [0-9.]* s; resampled 44100→22050 Hz, 2→1 channels)' err ||
  fail "-v does not name the conversions: $(grep stereo err)"
grep -qx 'featurize: wavs/good.wav: stored as good ([0-9]* frames, [0-9.]* s)' err ||
  fail "-v names a conversion that did not happen: $(grep good err)"
grep -qx 'featurize: done: 2 of 5 (2 new, 0 already stored, 3 failed)' err || fail "summary: $(tail -n 3 err)"
grep -q '; 1 worker, 1 writer, ' err || fail "-v stages: not '1 worker, 1 writer': $(grep stages err)"
grep -qx 'featurize: failure records: 3 written, 0 deleted (stored now)' err || fail "-v records line: $(tail -n 1 err)"
"$PY" - out <<'PY' || fail "--json failures"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["failed"] == 3 and r["processed"] == 2 and r["failures_recorded"] == 3, r
assert r["max_failed"] == "0" and r["failed_allowed"] is False, r
got = {f["id"]: f for f in r["failures"]}
assert set(got) == {"empty", "trunc", "missing"} and r["failures_listed"] == 3, got
assert got["empty"]["line"] == 3 and got["empty"]["source"] == "wavs/empty.wav", got["empty"]
assert got["empty"]["error"].startswith("FC_EEMPTY") and got["empty"]["reason"] == "empty file"
assert got["trunc"]["reason"].startswith("truncated"), got["trunc"]
assert got["missing"]["error"] == "No such file or directory" and got["missing"]["line"] == 5
PY
hifi=$(cfg_of st hifigan)
failures st "$t0" | sort >got
cat >want <<EOF
empty|$hifi|-31904|$tmp/wavs/empty.wav|empty file
missing|$hifi|2|$tmp/wavs/missing.wav|No such file or directory
trunc|$hifi|-31903|$tmp/wavs/trunc.wav|$(grep -o 'truncated: .*' err)
EOF
diff -u want got || fail "failure records differ"

# Audio entries hold absolute source paths (as os.path.abspath makes them).
"$PY" - st "$tmp" <<'PY' || fail "source paths are not absolute"
import sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    db = env.open_db(b"audio", txn=t, create=False)
    paths = {bytes(k).decode(): bytes(v)[48:].decode() for k, v in t.cursor(db=db)}
assert paths == {"good": sys.argv[2] + "/wavs/good.wav", "stereo": sys.argv[2] + "/wavs/stereo.wav"}, paths
PY

# 2. --max-failed: N and P% decide the exit status; the same three fail again.
mf() { # WANT_RC WANT_NOTE ARG
  "$FZ" -q -j1 --device cpu --manifest metadata.csv -o st --max-failed "$3" >/dev/null 2>err
  local rc=$?
  [ $rc = "$1" ] && grep -qx "featurize: done: 2 of 5 (0 new, 2 already stored, 3 failed, $2 --max-failed $3)" err ||
    fail "--max-failed $3: exit $rc (want $1): $(tail -n 1 err)"
}
mf 0 "allowed by" 3
mf 1 "more than" 2
mf 0 "allowed by" 60%
mf 1 "more than" 40%
mf 0 "allowed by" 40.1%   # of 5 inputs, rounded up: 3
mf 1 "more than" 0%
mf 0 "allowed by" 100%

# 3. The missing file appears, the empty one is fixed: both stored, their records deleted.
cp wavs/good.wav wavs/missing.wav
espeak-ng -w wavs/empty.wav "no longer empty"
"$FZ" -v -j1 --device cpu --json --manifest metadata.csv -o st --max-failed 1 >out 2>err
rc=$?
[ $rc = 0 ] || fail "after the fixes: exit $rc: $(cat err)"
grep -qx 'featurize: done: 4 of 5 (2 new, 2 already stored, 1 failed, allowed by --max-failed 1)' err ||
  fail "after the fixes: $(grep done: err)"
grep -qx 'featurize: failure records: 1 written, 2 deleted (stored now)' err || fail "records line: $(tail -n 1 err)"
failures st "$t0" | cut -d'|' -f1 >got
[ "$(cat got)" = trunc ] || fail "records left after the fixes: $(cat got)"

# 4. Another config's run: its failure replaces the record; its success under that config alone
#    would delete it, hifigan's never.
"$FZ" -q -j1 --device cpu --preset tacotron2 --manifest metadata.csv -o st --max-failed 1 2>err ||
  fail "tacotron2 run: $(cat err)"
taco=$(cfg_of st tacotron2)
[ "$(failures st "$t0" | cut -d'|' -f1,2)" = "trunc|$taco" ] || fail "tacotron2's record: $(failures st "$t0")"
"$FZ" -q -j1 --device cpu --manifest metadata.csv -o st --max-failed 1 2>err || fail "hifigan rerun: $(cat err)"
[ "$(failures st "$t0" | cut -d'|' -f1,2)" = "trunc|$hifi" ] || fail "hifigan rerun: $(failures st "$t0")"

# 5. An id found stored under the config of its failure record (a record merged in from an older
#    run, say): the rerun skips it and deletes the record.
"$PY" - st "$hifi" <<'PY'
import struct, sys, time, lmdb
env = lmdb.open(sys.argv[1], max_dbs=8)
with env.begin(write=True) as t:
    db = env.open_db(b"failed", txn=t)
    src, why = b"/old/good.wav", b"stale"
    t.put(b"good", bytes.fromhex(sys.argv[2]) + struct.pack("<qiI", time.time_ns(), -31903, len(src)) + src + why, db=db)
PY
"$FZ" -v -j1 --device cpu --manifest metadata.csv -o st --max-failed 1 >/dev/null 2>err
grep -qx 'featurize: failure records: 1 written, 1 deleted (stored now)' err || fail "stale record: $(tail -n 1 err)"
[ "$(failures st "$t0" | cut -d'|' -f1)" = trunc ] || fail "stale record kept: $(failures st "$t0")"

# 6. A relative path with . and .. is stored as the absolute path it names.
mkdir sub
"$FZ" -q -j1 --device cpu -o st2 ./sub/../wavs/good.wav 2>err || fail "relative path: $(cat err)"
"$PY" - st2 "$tmp/wavs/good.wav" <<'PY' || fail "relative path stored as given"
import sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    v = bytes(t.get(b"good", db=env.open_db(b"audio", txn=t, create=False)))
assert v[48:].decode() == sys.argv[2], v[48:]
PY

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
