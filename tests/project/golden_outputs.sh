#!/bin/bash
# The tools' outputs on a fixed corpus (four WAVs from an integer generator, tests/project/
# golden_dump.py) match tests/project/golden/outputs.txt: every entry, config, token record and
# record header byte for byte, each mel record's values to their sum (so a change of FFT code path
# on another CPU passes and a change of what is computed does not), what cache-verify --json
# counts, featurize --print-config, the exported vocabulary, and a split store merged. A change
# meant to keep outputs (a refactor, a move) keeps this green; a change of the format or the
# numbers updates the golden file on purpose, in the same commit, and says why:
#     FC_GOLDEN_UPDATE=1 FC_BIN=build FC_SRC=. FC_PYTHON=.venv/bin/python tests/project/golden_outputs.sh
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
PY=${FC_PYTHON:-python3}
G=$FC_SRC/tests/project/golden/outputs.txt
D="$PY $FC_SRC/tests/project/golden_dump.py"
export FEATCACHE_LIBRARY=${FEATCACHE_LIBRARY:-$FC_BIN/libfeatcache.so.0}
cd "$T" || exit 1
$D corpus c || { echo "FAIL: the corpus writer failed"; exit 1; }
cd c || exit 1
run() { "$@" >"$T/out" 2>"$T/err" || { echo "FAIL: $* exited $?"; cat "$T/err"; exit 1; }; }
run "$FC_BIN/featurize" -q --preset hifigan --manifest metadata.csv -o s
run "$FC_BIN/featurize" -q --preset hifigan --dtype f16 --manifest metadata.csv -o s
run "$FC_BIN/featurize" -q --preset whisper --manifest metadata.csv -o s
run "$FC_BIN/featurize" -q --preset tacotron2 --dtype bf16 --manifest metadata.csv -o s
run "$FC_BIN/featurize" -q --preset hifigan --manifest metadata.csv -o s   # a rerun: nothing new
run "$FC_BIN/tokenize" -q --manifest metadata.csv --tokenizer chars --build-vocab --export-vocab vocab -o s
run "$FC_BIN/tokenize" -q --manifest metadata.csv --tokenizer phonemes --build-vocab -o s
run "$FC_BIN/featurize" -q --preset hifigan --writers 2 --manifest metadata.csv -o split
run "$FC_BIN/cache-merge" -q -o merged split
{
  echo "== store"; $D store s
  echo "== merged split store"; $D store merged
  echo "== cache-verify --json"
  "$FC_BIN/cache-verify" --json -q --manifest metadata.csv s | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
print({k: r.get(k) for k in ("ok", "records_checked", "error_count", "warning_count", "stopped")})'
  echo "== featurize --print-config hifigan"; "$FC_BIN/featurize" --print-config hifigan
  echo "== featurize --print-config whisper --n-mels 128"
  "$FC_BIN/featurize" --print-config whisper --n-mels 128
  echo "== vocab"; cat vocab
} >"$T/got" 2>"$T/err" || { echo "FAIL: dumping the outputs"; cat "$T/err"; exit 1; }
if [ -n "${FC_GOLDEN_UPDATE:-}" ]; then
  cp "$T/got" "$G" && echo "golden: wrote $G ($(wc -l <"$G") lines)"
  exit 0
fi
$D compare "$G" "$T/got" || { echo "FAIL: the outputs differ from $G (see above)"; exit 1; }
echo "golden: $(wc -l <"$G") lines as recorded"
