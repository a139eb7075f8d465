#!/usr/bin/env bash
# The tree stays formatted as .clang-format says (scripts/format --check; exit 77 without
# clang-format 14, which scripts/setup installs).
set -uo pipefail
exec "$FC_SRC/scripts/format" --check
