#!/usr/bin/env bash
# Reruns after an utterance changed to content the store already holds a record of: a transcript
# or audio file edited to another utterance's content (its record is there, under the other id),
# then reverted to its first content (its old record is there, an orphan). The record is not made
# again, but the id's entry must be rewritten: otherwise the loader serves the old content's
# features or tokens under the id, and cache-verify does not see it. Checked: the rerun's summary,
# and cache-verify --manifest (transcripts) and --rehash (audio) against the current corpus.
set -u
T=${FC_BIN:?}/tokenize
F=$FC_BIN/featurize
V=$FC_BIN/cache-verify
PY=${FC_PYTHON:-python3}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cd "$d" || exit 1
fails=0
fail() {
  echo "FAIL: $*"
  [ -f err ] && sed 's/^/  stderr: /' err | head -8
  fails=$((fails + 1))
}

# featurize: a.wav rewritten with b.wav's bytes, then with its own again (each a new mtime)
"$PY" - <<'EOF' || exit 1
import math, struct, wave
for name, f in (("a", 440.0), ("b", 660.0)):
    with wave.open(name + ".wav", "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * f * i / 22050)))
                               for i in range(11025)))
EOF
cp a.wav a.orig
printf '%s\n' a.wav b.wav >list
fz() { # fz STEP
  "$F" -q -o sf --manifest list 2>err || fail "featurize, $1: exit $?"
  "$V" -q --rehash --manifest list sf >vout 2>verr ||
    fail "featurize, $1: cache-verify --rehash: $(grep -m1 error vout)"
}
fz "first run"
sleep 0.01
cp b.wav a.wav
fz "a.wav holds b.wav's audio (its record is stored)"
sleep 0.01
cp a.orig a.wav
fz "a.wav reverted (its old record is an orphan)"

# tokenize into the same store (cache-verify --manifest wants audio entries), one vocab for every
# run (the config, and so the record keys, stay the same)
printf '<pad>\n<unk>\n \nd\ne\nh\nl\no\nr\nw\n' >vocab.txt
tok() { # tok STEP MANIFEST-LINES...: write the manifest, tokenize, cache-verify it
  local step=$1
  shift
  printf '%s\n' "$@" >m.csv
  "$T" -o sf --manifest m.csv --vocab vocab.txt >out 2>err || fail "tokenize, $step: exit $?"
  "$V" -q --manifest m.csv --expect-tokens sf >vout 2>verr ||
    fail "tokenize, $step: cache-verify --manifest: $(grep -m1 error vout)"
}
tok "first run" 'a|hello' 'b|world'
tok "a takes b's transcript (its record is stored)" 'a|world' 'b|world'
# its entry was rewritten: not "nothing to do" (it said so, and a user took the edit for unseen)
grep -q "^tokenize: done: 2 of 2 (0 new, 2 already stored, 0 failed" err ||
  fail "a's transcript changed to a stored one: the summary: $(cat err)"
tok "a reverted (its old record is an orphan)" 'a|hello' 'b|world'
tok "a reverted, rerun" 'a|hello' 'b|world'
grep -q "tokenize: nothing to do" err || fail "a reverted, rerun: $(cat err)"

[ $fails = 0 ] || exit 1
echo ok
