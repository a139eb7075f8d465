#!/usr/bin/env bash
# A short, bounded libFuzzer campaign over every fuzz target (tests/fuzz/build.sh, 8 s each), so a
# parser change that crashes on nearby inputs fails CI; the long campaign (10^6 executions per
# target) is run by hand and recorded in docs/RELIABILITY.md. Skipped without clang and in the
# sanitizer build (the fuzzers carry their own ASan/UBSan).
set -euo pipefail
if [ "${FC_SANITIZE:-0}" = 1 ]; then
  echo "skipped: the fuzzers are built with their own sanitizers; the release run covers this" >&2
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
FC_FUZZ_OUT=$tmp "$FC_SRC/tests/fuzz/build.sh" 8
