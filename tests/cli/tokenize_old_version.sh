#!/bin/bash
# A phonemes store made before tokenizer_version 5 (espeak-ng's language flags dropped) holds a
# config of version 4, whose ids are out of date. Nothing said so: cache-verify passed it, and the
# rerun of tokenize that stored every line anew under a version 5 config said "made by another
# version of tokenize", which did not say which one was stale; the loader then refused
# tokens="phonemes" naming two digests, neither marked. Now cache-verify warns of the old config
# (with the drop), tokenize says the old one is out of date, the loader marks it among the two,
# and the drop leaves a store cache-verify passes and the loader reads by name.
# The old config is made by this build told to write version 4 (FC_FAULT_TOKENIZER_VERSION: test
# builds only).
set -u
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skip: not a fault-injection build"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
TK="$FC_BIN/tokenize"
printf 'a|Hello world.\nb|Good day, sir.\n' >m.csv
FC_FAULT_TOKENIZER_VERSION=4 "$TK" -q -t phonemes --build-vocab -o st --manifest m.csv || exit 1
old=$("$FC_BIN/cache-config" --json st | "$FC_PYTHON" -c 'import json, sys
c = json.load(sys.stdin)["configs"][0]
assert c["config"]["tokenizer_version"] == 4, c
print(c["digest"])') || { echo "FAIL: the version 4 store"; exit 1; }
warn="st: warning: meta cfg/$old: token config phonemes $old was made by an older tokenize (tokenizer_version 4, where this one's is 5): its ids are out of date; tokenize again stores every line anew under a config of its own, then drop this one (cache-config --drop $old)"
"$FC_BIN/cache-verify" st >out 2>&1 || { echo "FAIL: cache-verify: a warning fails it"; cat out; fail=1; }
grep -qxF "$warn" out || { echo "FAIL: cache-verify: no warning of the old config"; cat out; fail=1; }
"$FC_BIN/cache-verify" --strict st >out 2>&1 && { echo "FAIL: cache-verify --strict passed it"; fail=1; }
# the rerun stores every line anew, and says the old one is out of date
"$TK" -t phonemes --build-vocab -o st --manifest m.csv 2>err || { echo "FAIL: the rerun"; cat err; fail=1; }
new=$("$FC_BIN/cache-config" --json st | "$FC_PYTHON" -c 'import json, sys
print([c["digest"] for c in json.load(sys.stdin)["configs"] if c["digest"] != sys.argv[1]][0])' "$old")
want="tokenize: st: this run's token config phonemes $new is a second one named 'phonemes' beside $old (the old one was made by an older tokenize, tokenizer_version 4, where this run's is 5: its ids are out of date): the loader's tokens=\"phonemes\" cannot tell them apart (give it a digest: tokens=\"$new\" for this one), and cache-verify fails the lines the old one lacks; drop the old one once it is not needed (cache-config --drop $old st)"
[ "$(head -n 1 err)" = "$want" ] || { echo "FAIL: the rerun's line"; cat err; echo "want: $want"; fail=1; }
grep -q '^tokenize: done: 2 of 2 (2 new' err || { echo "FAIL: the rerun's done line"; cat err; fail=1; }
# the loader, given the name, marks the old one among the two
mkdir wavs && sox -n -r 22050 -c 1 wavs/a.wav synth 0.3 sine 440 && cp wavs/a.wav wavs/b.wav &&
  "$FC_BIN/featurize" -q --preset hifigan -o st --manifest m.csv || { echo "FAIL: featurize"; fail=1; }
loader() {
  "$FC_PYTHON" - "$@" <<'PY'
import sys, featcache
try:
    featcache.Loader(sys.argv[1], features="hifigan", tokens="phonemes", batch_size=2)
    print("opened")
except featcache.FeatcacheError as e:
    print(e)
PY
}
got=$(loader st)
wantl="featcache: st: several tokens configs are named 'phonemes': choose one by digest ($new, $old (made by an older tokenize, tokenizer_version 4, where this one's is 5: out of date))"
[ "$old" \< "$new" ] && wantl="featcache: st: several tokens configs are named 'phonemes': choose one by digest ($old (made by an older tokenize, tokenizer_version 4, where this one's is 5: out of date), $new)"
[ "$got" = "$wantl" ] || { echo "FAIL: the loader"; echo "got:  $got"; echo "want: $wantl"; fail=1; }
# the drop it names leaves one config: cache-verify passes clean, the loader reads the name
"$FC_BIN/cache-config" -q --drop "$old" st || { echo "FAIL: the drop"; fail=1; }
"$FC_BIN/cache-verify" --strict st >out 2>&1 || { echo "FAIL: cache-verify after the drop"; cat out; fail=1; }
[ "$(loader st)" = opened ] || { echo "FAIL: the loader after the drop"; loader st; fail=1; }
[ $fail = 0 ] && echo "ok: a config an older tokenize made is said out of date, and dropped"
exit $fail
