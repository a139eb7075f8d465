#!/usr/bin/env bash
# `cmake --install` works, and an out-of-tree program finds the installed library both ways:
# find_package(featcache) with featcache::featcache and featcache::featcache_static, and
# pkg-config featcache (relocated: the .pc finds its prefix from where it lies); and a project of
# C++ alone finds the package too and compiles the headers.
set -euo pipefail
if [ "${FC_SANITIZE:-0}" = 1 ]; then
  echo "skipped: the sanitizer build's library needs -fsanitize in every consumer" >&2
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$FC_BIN" --prefix "$tmp/prefix" >/dev/null
for f in include/featcache.h include/featcache/fc_store.h bin/featurize lib/pkgconfig/featcache.pc \
         lib/cmake/featcache/featcacheConfig.cmake lib/libfeatcache.so lib/libfeatcache.a; do
  [ -e "$tmp/prefix/$f" ] || { echo "install: $f missing" >&2; exit 1; }
done
"$tmp/prefix/bin/featurize" --version | grep -q '^featurize (featcache) ' || { echo "installed featurize does not run" >&2; exit 1; }

mkdir -p "$tmp/app"
cat > "$tmp/app/main.c" <<'C'
#include <featcache.h>
#include <stdio.h>
#include <string.h>
/* Names the library uses inside (store.c, audio.c, tokenizer.c: files that the calls below pull
 * from the archive): a program's own must link, with libfeatcache.a as with the shared library. */
int store_grow_map(void);
int store_grow_map(void) { return 1; }
int audio_read_checked = 2;
const char *tok_tokenizer_reading = "mine";
int main(int argc, char **argv) {
  char hv[32];
  snprintf(hv, sizeof hv, "%d.%d.%d", FC_VERSION_MAJOR, FC_VERSION_MINOR, FC_VERSION_PATCH);
  if (strcmp(hv, fc_version()) != 0) {
    fprintf(stderr, "headers %s, library %s\n", hv, fc_version());
    return 1;
  }
  float *pcm;
  size_t n;
  if (fc_audio_decode("", 0, 16000, 0, &pcm, &n, NULL, NULL, 0) == 0 ||
      strcmp(fc_tok_kind_name(FC_TOK_CHARS), "chars") != 0)
    return 1;
  fc_store *s;
  int rc = fc_store_open(argv[1], FC_STORE_CREATE, &s);
  if (rc) { fprintf(stderr, "%s\n", fc_strerror(rc)); return 1; }
  fc_mel_config c;
  if (fc_mel_preset("hifigan", &c)) return 1;
  fc_digest d;
  char hex[33];
  fc_mel_config_digest(&c, &d);
  fc_digest_hex(&d, hex);
  printf("featcache %s %s %d\n", fc_version(), hex, argc);
  fc_store_close(s);
  return 0;
}
C
cat > "$tmp/app/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.25)
project(app C)
find_package(featcache REQUIRED)
add_executable(app main.c)
target_link_libraries(app PRIVATE featcache::featcache)
add_executable(app_static main.c)
target_link_libraries(app_static PRIVATE featcache::featcache_static)
C
cmake -S "$tmp/app" -B "$tmp/app/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/app/build" >/dev/null
out1=$(LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/app/build/app" "$tmp/s1")
out2=$("$tmp/app/build/app_static" "$tmp/s2")
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -o "$tmp/app/pc" "$tmp/app/main.c" $(pkg-config --cflags --libs featcache)
out3=$(LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/app/pc" "$tmp/s3")
[ "$out1" = "$out2" ] && [ "$out2" = "$out3" ] || {
  printf 'outputs differ:\n%s\n%s\n%s\n' "$out1" "$out2" "$out3" >&2; exit 1; }
case "$out1" in "featcache 0.1.0 "*" 2") ;; *) echo "unexpected: $out1" >&2; exit 1;; esac
[ -f "$tmp/s1/data.mdb" ] || { echo "store not created" >&2; exit 1; }

# A C++ trainer: a project of C++ alone (no C compiler enabled) finds the package, and the whole
# API compiles as C++ with the usual warnings as errors.
mkdir -p "$tmp/cxx"
{ printf '#include <featcache.h>\n#include <cstdio>\n#include <cstring>\n'; sed -n '/^int main/,$p' "$tmp/app/main.c"; } >"$tmp/cxx/main.cpp"
cat > "$tmp/cxx/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.25)
project(trainer CXX)
find_package(featcache 0.1 REQUIRED)
add_compile_options(-Wall -Wextra -pedantic -Werror)
add_executable(trainer main.cpp)
target_link_libraries(trainer PRIVATE featcache::featcache)
add_executable(trainer_static main.cpp)
target_link_libraries(trainer_static PRIVATE featcache::featcache_static)
C
cmake -S "$tmp/cxx" -B "$tmp/cxx/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/cxx.log" 2>&1 &&
  cmake --build "$tmp/cxx/build" >>"$tmp/cxx.log" 2>&1 ||
  { echo "a C++ project (project(trainer CXX)) cannot use the installed package:" >&2
    grep -v '^--' "$tmp/cxx.log" | head -n 20 >&2; exit 1; }
out4=$(LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/cxx/build/trainer" "$tmp/s4")
out5=$("$tmp/cxx/build/trainer_static" "$tmp/s5")
[ "$out4" = "$out1" ] && [ "$out5" = "$out1" ] || {
  printf 'C++ outputs differ from C:\n%s\n%s\n%s\n' "$out1" "$out4" "$out5" >&2; exit 1; }
# A program that links the shared library alone needs none of the static library's dependencies:
# with no pkg-config and no OpenMP to find (a machine with the runtime libraries, not their -dev
# packages), find_package(featcache) still succeeds, says what featcache_static would need, and
# the program builds and runs; one that links featcache_static there is stopped at its configure.
mkdir -p "$tmp/bare"
cp "$tmp/app/main.c" "$tmp/bare/"
cat > "$tmp/bare/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.25)
project(bare C)
find_package(featcache REQUIRED)
add_executable(app main.c)
target_link_libraries(app PRIVATE featcache::featcache)
if(WANT_STATIC)
  add_executable(app_static main.c)
  target_link_libraries(app_static PRIVATE featcache::featcache_static)
endif()
C
bare=(-DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON
  -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON)
cmake -S "$tmp/bare" -B "$tmp/bare/build" "${bare[@]}" >"$tmp/bare.log" 2>&1 &&
  cmake --build "$tmp/bare/build" >>"$tmp/bare.log" 2>&1 ||
  { echo "a program of the shared library alone, without pkg-config and OpenMP:" >&2
    grep -v '^-- [^f]' "$tmp/bare.log" | head -n 20 >&2; exit 1; }
grep -q "^-- featcache: featcache::featcache_static needs OpenMP, pkg-config, not found here" "$tmp/bare.log" ||
  { echo "find_package(featcache) did not say what featcache_static lacks:" >&2; cat "$tmp/bare.log" >&2; exit 1; }
out6=$(LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/bare/build/app" "$tmp/s6")
[ "$out6" = "$out1" ] || { printf 'the bare program differs:\n%s\n%s\n' "$out1" "$out6" >&2; exit 1; }
cmake -S "$tmp/bare" -B "$tmp/bare/build2" "${bare[@]}" -DWANT_STATIC=ON >"$tmp/bare2.log" 2>&1 &&
  { echo "featcache_static configured without its dependencies" >&2; exit 1; }
echo "install: ok ($out1)"
