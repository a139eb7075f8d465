#!/bin/bash
# scripts/check-layout passes on this tree (sources and the built objects' calls), and fails with
# a named problem on a copy of the tree broken seven ways: a folder without its README or a README
# line, a wrong component, a file over 800 lines, an include of another folder's private header,
# a tool including one, a call between folders its README does not allow (from the built objects).
set -u
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0

"$FC_SRC/scripts/check-layout" --build "$FC_BIN" >"$T/out" 2>&1 ||
  { echo "FAIL check-layout on the tree:"; cat "$T/out"; fail=1; }

# expect NAME PATTERN [ARGS]: check-layout on the broken copy exits 1 and prints PATTERN
expect() {
  "$T/src/scripts/check-layout" "${@:3}" >"$T/out" 2>&1
  local rc=$?
  [ $rc = 1 ] || { echo "FAIL $1: exit $rc, want 1"; cat "$T/out"; fail=1; }
  grep -qF -- "$2" "$T/out" || { echo "FAIL $1: no '$2' in:"; cat "$T/out"; fail=1; }
}
fresh() {
  rm -rf "$T/src"; mkdir -p "$T/src"
  (cd "$FC_SRC" && cp -r CMakeLists.txt scripts formats kernels libcache include cmd "$T/src/")
}

fresh; rm "$T/src/libcache/profile/README.md"
expect no-readme "check-layout: libcache/profile: no README.md"
fresh; sed -i '/^May call:/d' "$T/src/libcache/bench/README.md"
expect no-may-call "check-layout: libcache/bench/README.md: no 'May call:' line"
fresh; sed -i 's/^Component: core/Component: mel/' "$T/src/libcache/loader/README.md"
expect wrong-component "CMakeLists.txt builds it into core"
fresh; seq 1 801 | sed 's|^|/* line */|' >"$T/src/libcache/store/long.c"
expect long-file "check-layout: libcache/store/long.c: 801 lines (over 800"
fresh; echo '#include "libcache/loader/loader_int.h"' >>"$T/src/libcache/bench/bench_report.c"
expect wrong-include "libcache/bench/bench_report.c: includes libcache/loader's private header"
fresh; echo '#include "libcache/store/store_int.h"' >>"$T/src/cmd/cache-bench.c"
expect tool-include "cmd/cache-bench.c: a tool includes a private library header"

# a call the README does not allow, found in the built objects: store/ calls formats/
fresh; sed -i 's|^May call: formats/; LMDB.$|May call: LMDB.|' "$T/src/libcache/store/README.md"
expect wrong-call "check-layout: libcache/store: calls into formats/ (" --build "$FC_BIN"

[ $fail = 0 ] && echo "check-layout: passes here, catches all seven breakages"
exit $fail
