#!/bin/bash
# The exported ABI is what a library user calls, said in three places that must agree: the
# FC_API declarations of include/featcache/*.h, the version script (cmake/featcache.map), and the
# table in docs/HACKING.md ("The exported ABI") — and it is what the three shared components
# and the static libfeatcache.a export, at most 185 functions, with no tool's engine and no
# internal helper among them.
set -u
command -v nm >/dev/null || { echo "skip: no nm (binutils)"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0

sed -n 's/^ *\(fc_[a-z0-9_]*\);$/\1/p' "$FC_SRC/cmake/featcache.map" | sort >"$T/map"
grep -ho 'FC_API [^(;]*(' "$FC_SRC"/include/featcache/*.h | sed -E 's/.*[ *]([a-z_0-9]+)\($/\1/' |
  grep -vx '__attribute__' | sort -u >"$T/api"
awk '/^## The exported ABI/ {on = 1; next} on && /^## / {on = 0} on && /^\| `fc_[a-z_]*\.h`/' "$FC_SRC/docs/HACKING.md" |
  grep -o '`fc_[a-z0-9_]*`' | tr -d '`' | sort -u >"$T/doc"
for c in core mel text; do
  nm -D --defined-only "$FC_BIN/libfeatcache_$c.so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}'
done | grep -v '^fault_\(hit\|hold\|stop\)$' | sort >"$T/exp"

# same EXPECTED GOT WHAT
same() {
  local d
  d=$(diff "$1" "$2" | sed -n 's/^[<>] //p' | tr '\n' ' ')
  [ -z "$d" ] || { echo "FAIL $3 differ: $d"; fail=1; }
}
same "$T/map" "$T/api" "cmake/featcache.map and the FC_API declarations"
same "$T/map" "$T/exp" "cmake/featcache.map and the components' exports"
same "$T/map" "$T/doc" "cmake/featcache.map and docs/HACKING.md's ABI table"
[ -z "$(uniq -d "$T/exp")" ] || { echo "FAIL exported by two components: $(uniq -d "$T/exp")"; fail=1; }
n=$(wc -l <"$T/exp")
[ "$n" -le 185 ] || { echo "FAIL $n exported functions (at most 185)"; fail=1; }
bad=$(grep -E '^fc_(bench|lb|cuda|gpu_timer|fz|kmerge|writeback)_' "$T/exp" | tr '\n' ' ')
[ -z "$bad" ] || { echo "FAIL an engine or an internal helper exported: $bad"; fail=1; }
# internal functions carry no fc_ prefix: every fc_ function the library's objects define is public
# (the tests' archive, where internal names stay global)
nm --defined-only "$FC_BIN/libfeatcache_internal.a" 2>/dev/null | awk '$2 == "T" {print $3}' |
  grep '^fc_' | sort -u >"$T/static"
hidden=$(comm -23 "$T/static" "$T/map" | tr '\n' ' ')
[ -z "$hidden" ] || { echo "FAIL internal functions with the public fc_ prefix: $hidden"; fail=1; }
# libfeatcache.a exports what the shared components export: a program may define its own
# store_compact (project/install links one); its global definitions are the map's names
nm -g --defined-only "$FC_BIN/libfeatcache.a" 2>/dev/null | awk 'NF == 3 {print $3}' |
  grep -v '^fault_\(hit\|hold\|stop\)$' | sort >"$T/archive"
same "$T/map" "$T/archive" "cmake/featcache.map and libfeatcache.a's global names"
# with the CUDA backend its kernels are inside libfeatcache.a's mel object, their launch functions
# local there: no fc_cu_* is global or left undefined (for a libfc_cuda.a to define), and no
# libfc_cuda.a goes with the install (project/install links the static library)
if [ "${FC_HAVE_CUDA:-0}" = 1 ]; then
  cu=$(nm "$FC_BIN/libfeatcache.a" 2>/dev/null | awk '$NF ~ /^fc_cu_/ {print $(NF-1), $NF}')
  echo "$cu" | grep -q '^t fc_cu_launch_mel$' ||
    { echo "FAIL libfeatcache.a holds no local fc_cu_launch_mel (the CUDA kernels not in it)"; fail=1; }
  bad=$(echo "$cu" | awk '$1 != "t" {print $2}' | sort -u | tr '\n' ' ')
  [ -z "$bad" ] || { echo "FAIL libfeatcache.a: CUDA launch functions global or undefined: $bad"; fail=1; }
  grep -q 'libfc_cuda' "$FC_BIN/install_manifest.txt" 2>/dev/null &&
    { echo "FAIL libfc_cuda.a installed"; fail=1; }
else
  echo "abi: CUDA backend not configured (FC_CUDA=OFF or no nvcc): its static symbols not checked"
fi

# the headers' FC_VERSION_* are the project's version (fc_version(): project/install), the
# libraries' file names its, and their soname its major number
v=$(sed -n 's/^project(featcache VERSION \([0-9.]*\).*/\1/p' "$FC_SRC/CMakeLists.txt")
hv=$(awk '/^#define FC_VERSION_(MAJOR|MINOR|PATCH) / {printf "%s%s", s, $3; s = "."}' \
  "$FC_SRC/include/featcache/fc_base.h")
[ -n "$v" ] && [ "$hv" = "$v" ] || { echo "FAIL fc_base.h's FC_VERSION_* say '$hv', CMakeLists.txt '$v'"; fail=1; }
for c in core mel text; do
  so=$(readelf -d "$FC_BIN/libfeatcache_$c.so" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  [ "$so" = "libfeatcache_$c.so.${v%%.*}" ] && [ -e "$FC_BIN/libfeatcache_$c.so.$v" ] ||
    { echo "FAIL libfeatcache_$c: soname '$so', no libfeatcache_$c.so.$v for version $v"; fail=1; }
done

[ $fail = 0 ] && echo "abi: $n exported functions, one list in the headers, the map and HACKING.md"
exit $fail
