#!/usr/bin/env bash
# featurize: every kind of broken input gets one `featurize: PATH: reason` line, the good inputs
# are stored, the exit code is 1, nothing is stored for the bad ones and what was stored before
# is untouched. Then --strict (stops at the first bad input) and an unreadable file.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# dump STORE: one line per entry (db, key, facts, value hash); every feat record validated.
dump() {
  "$PY" - "$1" <<'PY'
import struct, sys, lmdb, xxhash
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
bad = 0
for name in (b"meta", b"audio", b"feat"):
    db = env.open_db(name, create=False)
    with env.begin(db=db) as t:
        for k, v in t.cursor():
            v = bytes(v)
            if name == b"feat":
                magic, hsize, dtype, ndim, d0, d1, pb, ph = struct.unpack_from("<4sHBBIIQQ", v)
                hh, = struct.unpack_from("<Q", v, 56)
                ok = (magic == b"FCR1" and hsize == 64 and len(v) == 64 + pb
                      and xxhash.xxh3_64_intdigest(v[:56]) == hh
                      and xxhash.xxh3_64_intdigest(v[64:]) == ph and pb == d0 * d1 * {1: 4, 2: 2, 3: 2}[dtype])
                if not ok:
                    bad += 1
                print("feat", k.hex(), f"{d0}x{d1}", "ok" if ok else "BAD", xxhash.xxh3_64_hexdigest(v))
            elif name == b"audio":
                sr, ch, fr, size, mt = struct.unpack_from("<IIQQq", v, 16)
                print("audio", k.decode(), v[:16].hex(), sr, ch, fr, size, v[48:].decode())
            else:
                print("meta", k.decode(), xxhash.xxh3_64_hexdigest(v))
sys.exit(1 if bad else 0)
PY
}

# Inputs: speech, and each broken kind.
espeak-ng -w good0.wav "this one is stored first" || { echo "FAIL: espeak-ng failed"; exit 1; }
espeak-ng -w good1.wav "good one"
espeak-ng -w good2.wav "the second good file"
mkdir dir.wav
: >empty.wav
sox -n -r 22050 -b 16 tone.wav synth 1 sine 300
head -c 3000 tone.wav >trunc.wav # header: 22050 frames
echo "hello, I am text" >text.wav
"$PY" -c "import soundfile as sf, numpy as np; sf.write('zero.wav', np.zeros(0, np.int16), 22050, subtype='PCM_16')"
sox -n -r 22050 -b 16 long.wav synth 3 sine 440
# a float WAV with a NaN where a sample should be (its features would hold NaN or hide it)
"$PY" -c "import soundfile as sf, numpy as np; x = np.full(22050, 0.1, np.float32); x[5000] = np.nan; sf.write('nan.wav', x, 22050, subtype='FLOAT')"

"$FZ" -q -o st good0.wav 2>err0 || fail "first run: $(cat err0)"
dump st >before || fail "store invalid after the first run"

"$FZ" -j 2 -o st --max-seconds 2 good1.wav missing.wav dir.wav empty.wav trunc.wav text.wav \
  zero.wav long.wav nan.wav good0.wav good2.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "exit $rc, want 1"
[ -s out ] && fail "stdout not empty: $(cat out)"
# Lines of failed inputs come in completion order with -j 2: compare sorted; the summary is last.
sort >want <<'TXT'
featurize: missing.wav: No such file or directory
featurize: dir.wav: Is a directory (featurize reads files, not folders: find DIR -name '*.wav' | featurize -o STORE -)
featurize: empty.wav: empty file
featurize: trunc.wav: truncated: header says 22050 frames, file holds 1478
featurize: text.wav: not an audio file (libsndfile: Format not recognised.)
featurize: zero.wav: no samples
featurize: long.wav: 3.0 s long, over the 2.0 s limit
featurize: nan.wav: damaged float samples: sample 5000 (0.227 s) is NaN
TXT
head -n -1 err | sort >got
diff -u want got || fail "per-input lines differ"
[ "$(tail -n 1 err)" = "featurize: done: 3 of 11 (2 new, 1 already stored, 8 failed)" ] || fail "summary: $(tail -n 1 err)"

dump st >after || fail "store invalid after the run with bad inputs"
grep -c '^feat ' after | grep -qx 3 || fail "want 3 feat records: $(grep '^feat ' after)"
[ "$(grep '^audio ' after | cut -d' ' -f2 | tr '\n' ' ')" = "good0 good1 good2 " ] ||
  fail "audio ids: $(grep '^audio ' after | cut -d' ' -f2 | tr '\n' ' ')"
# Everything stored before is byte for byte the same.
while read -r line; do grep -qxF "$line" after || fail "changed or lost: $line"; done <before

# --strict: stop at the first bad input (-j 1 keeps the order), keep what was stored, exit 1.
espeak-ng -w good3.wav "three"
espeak-ng -w good4.wav "four"
"$FZ" -j 1 --strict -o st good3.wav missing.wav good4.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "strict: exit $rc, want 1"
cat >want <<'TXT'
featurize: missing.wav: No such file or directory
featurize: done: 1 of 3 (1 new, 0 already stored, 1 failed), stopped at the first failure (--strict), 1 not started
TXT
diff -u want err || fail "strict: stderr differs"
dump st >after || fail "store invalid after --strict"
grep -q '^audio good3 ' after || fail "strict: good3 (before the bad input) not stored"
grep -q '^audio good4 ' after && fail "strict: good4 (after the bad input) was stored"

# Unreadable file. A process with CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH (root) reads anything,
# so there featurize runs without them (as_owner.bash: setpriv drops them from the bounding set
# before the exec). It keeps its uid, so the checkout and the store may be anywhere.
espeak-ng -w good5.wav "five"
cp good5.wav unread.wav
chmod 000 unread.wav
. "$FC_SRC/tests/cli/as_owner.bash"
run=("${as_owner[@]}")
if [ ${#run[@]} -gt 0 ]; then
  "${run[@]}" cat unread.wav >/dev/null 2>&1 && { echo "FAIL: setpriv did not drop the caps"; exit 1; }
fi
"${run[@]}" "$FZ" -j 1 -o st2 unread.wav good5.wav >out 2>err
rc=$?
cat >want <<'TXT'
featurize: unread.wav: Permission denied
featurize: done: 1 of 2 (1 new, 0 already stored, 1 failed)
TXT
[ $rc = 1 ] || fail "unreadable: exit $rc, want 1"
diff -u want err || fail "unreadable: stderr differs"
dump st2 >after2 || fail "store invalid after the unreadable run"
[ "$(grep '^audio ' after2 | cut -d' ' -f2)" = good5 ] || fail "unreadable: want only good5 stored"

# A store this user may only read that holds the input: checked, exit 0 (featurize_read_only)
chmod -R a-w st2
"${run[@]}" "$FZ" -q -o st2 good5.wav >out 2>err
rc=$?
chmod -R u+w st2
[ $rc = 0 ] && [ ! -s err ] || fail "read-only store: exit $rc, want 0: $(cat err)"
# a new store in a folder this user may only read: the open's refusal
mkdir ro && chmod a-w ro
"${run[@]}" "$FZ" -q -o ro/st good5.wav >out 2>err
rc=$?
[ $rc = 2 ] || fail "read-only folder: exit $rc, want 2"
grep -qxF "featurize: ro/st: cannot create the store: Permission denied" err ||
  fail "read-only folder: $(cat err)"

# A linear mel in float16: a full-scale tone's features pass 65504 (an infinity in f16); that input
# fails with its reason, the quiet one is stored, the store holds no infinity.
sox -n -r 22050 -b 16 loud.wav synth 1 sine 1000 vol 0.99
sox -n -r 22050 -b 16 quiet.wav synth 1 sine 1000 vol 0.1
"$FZ" -j 1 -o st3 --dtype f16 --log none --norm none --power 2 loud.wav quiet.wav >out 2>err
rc=$?
cat >want <<'TXT'
featurize: loud.wav: features past float16's range (65504) at frame 2, bin 26: a linear mel (--log none) this loud needs --dtype f32 or bf16
featurize: done: 1 of 2 (1 new, 0 already stored, 1 failed)
TXT
[ $rc = 1 ] || fail "linear f16: exit $rc, want 1"
diff -u want err || fail "linear f16: stderr differs"
"${FC_BIN}/cache-verify" --finite st3 >/dev/null 2>&1 || fail "linear f16: cache-verify --finite st3 fails"

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
