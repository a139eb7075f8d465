#!/bin/bash
# Each tool loads only the library components it calls (docs/HACKING.md): by ldd, featurize,
# loader-bench, cache-verify, cache-bench and cache-prune load no espeak-ng (nor, through it,
# PulseAudio, ALSA or X11); cache-verify, cache-bench and cache-prune no FFTW or libsndfile either;
# no tool loads cuFFT at start (it is loaded on the first CUDA plan); the Python package loads only
# libfeatcache_core.
# tokenize, which does load espeak-ng, still makes phonemes.
# The shared components export only the public fc_ API (FC_API in include/featcache/*.h).
set -u
command -v ldd >/dev/null || { echo "skip: no ldd"; exit 77; }
command -v nm >/dev/null || { echo "skip: no nm (binutils)"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0

# libs TOOL: the shared libraries it loads, one name per line (ldd's left column).
libs() { ldd "$1" | awk '{print $1}'; }
# must_not TOOL PATTERN WHAT
must_not() {
  local hit
  hit=$(libs "$1" | grep -E "$2")
  if [ -n "$hit" ]; then echo "FAIL $(basename "$1") loads $3: $(echo $hit)"; fail=1; fi
}
# must TOOL PATTERN WHAT
must() {
  libs "$1" | grep -Eq "$2" || { echo "FAIL $(basename "$1") does not load $3"; fail=1; }
}

SPEECH='^lib(espeak-ng|pulse|pulse-simple|pulsecommon|asound|X11|xcb|dbus|systemd|sonic|pcaudio)'
HEAVY='^lib(cufft|fftw3f|sndfile|soxr|utf8proc)'
for t in featurize loader-bench cache-verify cache-bench cache-prune; do
  [ -x "$FC_BIN/$t" ] || { echo "FAIL $t not built"; fail=1; continue; }
  must_not "$FC_BIN/$t" "$SPEECH" "espeak-ng or what it drags in"
  must_not "$FC_BIN/$t" '^libfeatcache_text' "the text component"
  must "$FC_BIN/$t" '^libfeatcache_core\.so' "libfeatcache_core"
done
for t in cache-verify cache-bench cache-prune; do
  must_not "$FC_BIN/$t" "$HEAVY" "the mel component's libraries"
  must_not "$FC_BIN/$t" '^libfeatcache_mel' "the mel component"
done
for t in featurize loader-bench; do must "$FC_BIN/$t" '^libfeatcache_mel\.so' "libfeatcache_mel"; done
# (espeak-ng itself brings libsndfile, through libpcaudio: only ours are checked here)
must_not "$FC_BIN/tokenize" '^lib(cufft|fftw3f|soxr)' "the mel component's libraries"
must_not "$FC_BIN/tokenize" '^libfeatcache_mel' "the mel component"
must "$FC_BIN/tokenize" '^libespeak-ng' "espeak-ng"
must_not "$FC_BIN/libfeatcache_core.so" "$SPEECH|$HEAVY" "heavy libraries"
# cuFFT is loaded at run time, on the first CUDA plan (kernels/cuda/cufft_load.c): no tool and no
# component loads it at start, not even featurize (unit/test_cufft_load checks the loading)
for f in featurize loader-bench tokenize libfeatcache_mel.so; do
  must_not "$FC_BIN/$f" '^libcufft' "cuFFT at start"
done

# tokenize -t phonemes still works: espeak-ng's IPA ("oʊ" of hello) in the built vocab.
printf 'a\tHello world.\nb\tThe cat sat.\n' >"$T/m.tsv"
if "$FC_BIN/tokenize" -q -o "$T/s" --manifest "$T/m.tsv" --manifest-format tsv -t phonemes \
     --build-vocab --export-vocab "$T/vocab" >"$T/out" 2>"$T/err"; then
  grep -qx 'oʊ' "$T/vocab" || { echo "FAIL phonemes: no 'oʊ' in the vocab:"; cat "$T/vocab"; fail=1; }
else
  echo "FAIL tokenize -t phonemes exited $?"; cat "$T/err"; fail=1
fi

# Exports: every dynamic symbol the components define is an FC_API function of the public headers
# (fault_hit, fault_hold and fault_stop too in fault-injection builds: the countdown the components
# share, and its hold around jansson's parser: formats/common/json.h).
grep -ho 'FC_API [^(]*(' "$FC_SRC"/include/featcache/*.h | sed -E 's/.*[ *]([a-z_0-9]+)\($/\1/' \
  | sort -u >"$T/api"
echo fault_hit >>"$T/api"
echo fault_hold >>"$T/api"
echo fault_stop >>"$T/api"
for c in core mel text; do
  nm -D --defined-only "$FC_BIN/libfeatcache_$c.so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u \
    >"$T/exp_$c"
  extra=$(comm -23 "$T/exp_$c" <(sort -u "$T/api"))
  [ -z "$extra" ] || { echo "FAIL libfeatcache_$c exports non-API symbols: $(echo $extra)"; fail=1; }
  [ -s "$T/exp_$c" ] || { echo "FAIL libfeatcache_$c exports nothing"; fail=1; }
done
grep -qx fc_loader_open "$T/exp_core" || { echo "FAIL fc_loader_open not exported by core"; fail=1; }
grep -qx fc_featurize_run "$T/exp_mel" || { echo "FAIL fc_featurize_run not exported by mel"; fail=1; }
grep -qx fc_tokenizer_free "$T/exp_text" || { echo "FAIL fc_tokenizer_free not exported by text"; fail=1; }

# The Python package, left to find the library itself, takes the core component and loads
# nothing heavy (in the sanitizer build it is pointed at the build dir explicitly).
if [ -n "${FC_PYTHON:-}" ]; then
  env -u FEATCACHE_LIBRARY FC_BIN="$FC_BIN" "$FC_PYTHON" - >"$T/py" 2>&1 <<'PY' ||
import os, re, sys
import featcache
from featcache import _lib
path = _lib.find_library()
if path is None:  # an out-of-tree build and nothing installed: nothing to find by default
    print("note: no library found by the default lookup")
elif not os.path.basename(path).startswith("libfeatcache_core.so"):
    sys.exit("find_library() gave %s, not libfeatcache_core" % path)
os.environ["FEATCACHE_LIBRARY"] = os.path.join(os.environ["FC_BIN"], "libfeatcache_core.so")
_lib._LIB = None
print(featcache.library_version())
maps = open("/proc/self/maps").read()
bad = sorted(set(re.findall(r"/(lib(?:espeak-ng|cufft|fftw3f|sndfile|pulse|X11)[^/\s]*)", maps)))
if bad:
    sys.exit("the package loaded " + " ".join(bad))
if "libfeatcache_core.so" not in maps:
    sys.exit("libfeatcache_core.so not mapped")
PY
  { echo "FAIL python:"; cat "$T/py"; fail=1; }
fi

[ $fail = 0 ] && echo "tool libraries: ok"
exit $fail
