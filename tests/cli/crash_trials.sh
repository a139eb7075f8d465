#!/usr/bin/env bash
# A few seeded SIGKILL trials of each writing tool (scripts/crash-trials: kill at a random instant,
# cache-verify the killed store, resume, compare with a clean run): 0 lost, 0 corrupt, 0 wrong.
# The 100-trial run is by hand, recorded in docs/RELIABILITY.md.
set -euo pipefail
exec "$FC_PYTHON" "$FC_SRC/scripts/crash-trials" --trials 6 --seed 7 --bin "$FC_BIN"
