#!/bin/bash
# Build and run the libFuzzer target (clang with -fsanitize=fuzzer). Usage:
#   tests/fuzz/build.sh [SECONDS]      build into build-fuzz/ and fuzz for SECONDS (default 60)
# The sources under test are compiled into the fuzzer directly, so they carry coverage
# instrumentation. The short replay that CTest runs without libFuzzer is tests/unit/test_verify_fuzz.c.
set -eu
cd "$(dirname "$0")/../.."
command -v clang >/dev/null || { echo "clang not found (apt-get install clang)"; exit 77; }
out=build-fuzz
mkdir -p "$out/corpus"
clang -std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude -I. $(pkg-config --cflags jansson) \
  tests/fuzz/fuzz_record.c formats/record.c formats/digest.c formats/config.c formats/utf8.c \
  kernels/presets.c libcache/verify/verify_record.c \
  -lxxhash $(pkg-config --libs jansson) -lm -o "$out/fuzz_record"
# seeds: the replay driver writes its seed inputs here when FC_FUZZ_SEED_DIR is set
if [ -x "${FC_BIN:-build}/tests/unit_test_verify_fuzz" ]; then
  FC_FUZZ_SEED_DIR="$out/corpus" "${FC_BIN:-build}/tests/unit_test_verify_fuzz" >/dev/null
fi
"$out/fuzz_record" -max_total_time="${1:-60}" -max_len=4096 "$out/corpus"
