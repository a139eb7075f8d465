#!/bin/bash
# Build the libFuzzer targets (clang -fsanitize=fuzzer,address,undefined) and fuzz each one.
#   tests/fuzz/build.sh [SECONDS] [TARGET...]     default: 60 s each, every target
#   FC_FUZZ_RUNS=N       stop each target after N executions instead (the 10^6 campaign)
#   FC_FUZZ_SEED=N       libFuzzer's random seed (default: a new one each run); CI's short campaign
#                        fixes it, so a red CI run is reproducible
#   FC_FUZZ_OUT=DIR      build and corpus directory (default build-fuzz/)
#   FC_FUZZ_TIMEOUT=S    one input running longer is a hang (default 120: a loaded machine starves)
#   FC_FUZZ_MAX_LEN=N    longest input (default 16384 bytes; phonemes 512: a line of text, and
#                        espeak-ng speaks every clause of it, so long inputs cost ~ms each)
# Targets (tests/fuzz/fuzz_*.c):
#   record   record/entry validation and the mel config JSON (what cache-verify and the loader trust)
#   parsers  manifest readers (LJSpeech, wav.scp, JSONL, lists, TSV), tokenizer.json, vocab, normalization,
#            the --shard spec
#   loader   the loader opening a hostile store and reading an epoch (coded mq records too)
#   phonemes the phonemes tokenizer's reading of a line (espeak-ng clauses, marks, units)
#   audio    the audio decoder (its 16-bit WAV reader, libsndfile, soxr) and the staging path's
#            read of a 16-bit WAV in place, against the whole file
# The sources under test are compiled into each fuzzer, so they carry coverage instrumentation.
# Seeds come from the replay drivers (tests/fuzz/replay_*.c, which CTest runs without libFuzzer)
# when the build at $FC_BIN (default build/) has them. A crash leaves its input in
# $FC_FUZZ_OUT/artifacts/ and fails the run; copy it into the replay driver's seeds as a
# regression test. Exit 77 without clang.
set -eu
cd "$(dirname "$0")/../.."
command -v clang >/dev/null || { echo "fuzz: clang not found (apt-get install clang)" >&2; exit 77; }
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(record parsers loader phonemes audio)
out=${FC_FUZZ_OUT:-build-fuzz}
bin=${FC_BIN:-build}
mkdir -p "$out/artifacts"
cflags=(-std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -Iinclude -I. $(pkg-config --cflags jansson))
# XXH3 once per instruction set (formats/xxh3_int.h), each file with its own flags, for digest.c
xxh3=()
for v in base avx2 avx512; do
  vflags=()
  case $v in avx2) vflags=(-mavx2) ;; avx512) vflags=(-mavx512f) ;; esac
  [ "$(uname -m)" = x86_64 ] || vflags=()
  clang "${cflags[@]}" "${vflags[@]}" -c formats/xxh3_$v.c -o "$out/xxh3_$v.o"
  xxh3+=("$out/xxh3_$v.o")
done
for t in "${targets[@]}"; do
  case $t in
  record) srcs=(formats/record.c formats/codec.c formats/digest.c formats/config/mel_config.c formats/utf8.c
                formats/config/presets.c libcache/core/verify/verify_record.c formats/common/last_error.c)
          libs=(-lxxhash -lzstd $(pkg-config --libs jansson) -lm -lpthread) ;;
  parsers) srcs=(formats/manifest.c formats/manifest_items.c formats/manifest_segment.c formats/shard.c formats/utf8.c formats/digest.c formats/record.c formats/codec.c
                 libcache/text/tokenize/tok_bpe.c libcache/text/tokenize/tok_bpe_encode.c libcache/text/tokenize/tok_util.c libcache/text/tokenize/tok_vocab.c
                 libcache/text/tokenize/tok_normalize.c formats/common/last_error.c)
           libs=($(pkg-config --libs jansson libutf8proc) -lxxhash -lzstd -lm -lpthread) ;;
  loader) # (verify/ and the merge/ parts it uses: the loader's page check, FC_LOADER_CHECK_PAGES)
          srcs=($(ls formats/*.c | grep -v '/xxh3_') formats/common/*.c formats/config/*.c libcache/core/store/*.c
                libcache/core/loader/*.c libcache/core/verify/*.c libcache/core/merge/*.c)
          libs=(-fopenmp -llmdb -lxxhash -lzstd $(pkg-config --libs jansson) -lm -lpthread) ;;
  phonemes) srcs=(libcache/text/tokenize/tok_espeak.c libcache/text/tokenize/tok_child.c libcache/text/tokenize/tok_util.c
                  libcache/text/tokenize/tok_normalize.c formats/utf8.c formats/common/last_error.c)
            libs=($(pkg-config --libs espeak-ng libutf8proc) -lxxhash -lm -lpthread) ;;
  audio) srcs=(libcache/mel/featurize/audio*.c formats/digest.c
               formats/common/fault.c formats/common/last_error.c)
         libs=($(pkg-config --libs sndfile soxr) -lxxhash -lm -lpthread) ;;
  *) echo "fuzz: unknown target $t (record, parsers, loader, phonemes, audio)" >&2; exit 2 ;;
  esac
  echo "fuzz: building $t" >&2
  case " ${srcs[*]} " in *" formats/digest.c "* | *" formats/record.c "*) srcs+=("${xxh3[@]}") ;; esac
  clang "${cflags[@]}" "tests/fuzz/fuzz_$t.c" "${srcs[@]}" "${libs[@]}" -o "$out/fuzz_$t"
  corpus=$out/corpus-$t
  mkdir -p "$corpus"
  if [ -x "$bin/tests/fuzz_replay_$t" ]; then
    FC_FUZZ_SEED_DIR="$corpus" "$bin/tests/fuzz_replay_$t" >/dev/null 2>&1 || true
  fi
  limit=(-max_total_time="$secs")
  [ -n "${FC_FUZZ_RUNS:-}" ] && limit=(-runs="$FC_FUZZ_RUNS")
  [ -n "${FC_FUZZ_SEED:-}" ] && limit+=(-seed="$FC_FUZZ_SEED")
  echo "fuzz: $t for ${FC_FUZZ_RUNS:-$secs s} ${FC_FUZZ_RUNS:+runs}${FC_FUZZ_SEED:+, seed $FC_FUZZ_SEED}" >&2
  max_len=${FC_FUZZ_MAX_LEN:-16384}
  [ "$t" = phonemes ] && max_len=${FC_FUZZ_MAX_LEN:-512} # a line; espeak-ng speaks each clause
  "$out/fuzz_$t" "${limit[@]}" -max_len=$max_len -timeout="${FC_FUZZ_TIMEOUT:-120}" -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$t-" "$corpus" 2>"$out/fuzz_$t.log" ||
    { tail -40 "$out/fuzz_$t.log" >&2; echo "fuzz: $t FAILED (input in $out/artifacts/)" >&2; exit 1; }
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz_$t.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/fuzz_$t.log")
  echo "fuzz: $t: $runs executions ($rate/s), no crash"
done
