#!/bin/bash
# scripts/check-layout passes on this tree (sources and the built objects' calls), and fails with
# a named problem on a copy of the tree broken eight ways: a folder without its README or a README
# line, a wrong component, a file over 800 lines, an include of another folder's private header,
# a tool including one, a call between folders its README does not allow (from the built objects),
# two files of a folder calling each other (objects compiled here).
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

fresh; rm "$T/src/libcache/core/profile/README.md"
expect no-readme "check-layout: libcache/core/profile: no README.md"
fresh; sed -i '/^May call:/d' "$T/src/cmd/cache-bench/README.md"
expect no-may-call "check-layout: cmd/cache-bench/README.md: no 'May call:' line"
fresh; sed -i 's/^Component: core/Component: mel/' "$T/src/libcache/core/loader/README.md"
expect wrong-component "but its place in the tree puts it in core"
fresh; seq 1 801 | sed 's|^|/* line */|' >"$T/src/libcache/core/store/long.c"
expect long-file "check-layout: libcache/core/store/long.c: 801 lines (over 800"
fresh; echo '#include "libcache/core/loader/loader_int.h"' >>"$T/src/cmd/cache-bench/bench_report.c"
expect wrong-include "cmd/cache-bench/bench_report.c: includes libcache/core/loader's private header, but cmd/cache-bench/README.md's May call does not name loader/"
fresh; echo '#include "libcache/core/store/store_int.h"' >>"$T/src/cmd/cache-bench.c"
expect tool-include "cmd/cache-bench.c: a tool includes a private library header"

# a call the README does not allow, found in the built objects: store/ calls formats/
fresh; sed -i 's|^May call: formats/; LMDB.$|May call: LMDB.|' "$T/src/libcache/core/store/README.md"
expect wrong-call "check-layout: libcache/core/store: calls into formats" --build "$FC_BIN"

# a file calling back into the file that calls it: two objects of store/ compiled here, each
# calling the other, in a build tree of their own
fresh
b=$T/fake-build/CMakeFiles/fc_core_objects.dir/libcache/core/store
mkdir -p "$b"
printf 'int store_pong(int);\nint store_ping(int n) { return n ? store_pong(n - 1) : 0; }\n' \
  >"$T/src/libcache/core/store/ping.c"
printf 'int store_ping(int);\nint store_pong(int n) { return n ? store_ping(n - 1) : 1; }\n' \
  >"$T/src/libcache/core/store/pong.c"
cc -c -o "$b/ping.c.o" "$T/src/libcache/core/store/ping.c" &&
  cc -c -o "$b/pong.c.o" "$T/src/libcache/core/store/pong.c" ||
  { echo "FAIL callback: cannot compile the two files"; fail=1; }
expect callback "libcache/core/store/ping.c: calls back into libcache/core/store/pong.c, which calls it" \
  --build "$T/fake-build"

[ $fail = 0 ] && echo "check-layout: passes here, catches all eight breakages"
exit $fail
