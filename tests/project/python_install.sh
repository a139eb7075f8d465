#!/usr/bin/env bash
# Packages installed the usual way: `cmake --install` to a prefix puts the library, the tools and
# the man pages (featurize(1) ... featcache(5), generated from docs/) there; `pip install ./python`
# into a fresh venv gives a package that finds that library through pkg-config, with no
# FEATCACHE_LIBRARY and no source tree on the path, and trains the example loop on a store that
# the installed featurize made. With no PKG_CONFIG_PATH either, it finds the path recorded at
# install (the package copy cmake installs; pip install ./python after cmake --install); with
# nothing to find, its error names PKG_CONFIG_PATH and FEATCACHE_LIBRARY.
set -euo pipefail
if [ "${FC_SANITIZE:-0}" = 1 ]; then
  echo "skipped: the sanitizer build's library cannot be loaded by an uninstrumented python" >&2
  exit 77
fi
if [ ! -d "$FC_BIN/man" ]; then
  echo "skipped: no man pages in this build (go-md2man was not found at configure; scripts/setup installs it)" >&2
  exit 77
fi
fail() { echo "python_install: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$FC_BIN" --prefix "$prefix" >/dev/null

# man pages: every tool's and the format's, rendered by man(1) from the installed tree
for p in man1/featurize.1 man1/tokenize.1 man1/cache-verify.1 man1/cache-bench.1 \
         man1/loader-bench.1 man5/featcache.5; do
  f=$prefix/share/man/$p
  [ -f "$f" ] || fail "$p not installed"
  name=$(basename "$p"); name=${name%.*}
  out=$(MANWIDTH=100 man -l "$f" 2>/dev/null) || fail "man -l $p failed"
  grep -q "^NAME" <<<"$out" || fail "$p: no NAME section"
  grep -q "^ *$name - " <<<"$out" || fail "$p: NAME line does not name $name"
done
out=$(MANPATH=$prefix/share/man MANWIDTH=100 man featurize 2>/dev/null) || fail "man featurize failed"
grep -q 'featurize - compute log-mel spectrograms' <<<"$out" || fail "man featurize: wrong page"
grep -q -- '--preset' <<<"$out" || fail "man featurize: options missing"
out=$(MANPATH=$prefix/share/man MANWIDTH=100 man 5 featcache 2>/dev/null) || fail "man 5 featcache failed"
grep -q 'FCR1' <<<"$out" || fail "man 5 featcache: the record header is missing"

# a fresh venv (the interpreter the tests use, with the system's numpy/torch), the package from a
# copy of python/ (a build writes egg-info beside the sources), installed offline
"$FC_PYTHON" -m venv --system-site-packages "$tmp/venv"
cp -r "$FC_SRC/python" "$tmp/pysrc"
"$tmp/venv/bin/python" -m pip install -q --no-index --no-build-isolation --disable-pip-version-check \
  "$tmp/pysrc" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log" >&2; fail "pip install ./python failed"; }
run() { (cd "$tmp" && env -u PYTHONPATH -u FEATCACHE_LIBRARY PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
  "$tmp/venv/bin/python" "$@"); }
got=$(run -c 'import featcache; print(featcache.__file__); print(featcache.find_library()); print(featcache.library_version())')
mapfile -t lines <<<"$got"
case "${lines[0]}" in "$tmp/venv/"*) ;; *) fail "imported featcache from ${lines[0]}, not the venv";; esac
[ "$(realpath "${lines[1]}")" = "$(realpath "$prefix/lib/libfeatcache_core.so.0")" ] ||
  fail "loaded library ${lines[1]}, not the installed $prefix/lib/libfeatcache_core.so.0"
want=$("$prefix/bin/featurize" --version | sed -n 's/^featurize (featcache) \([^ ]*\).*/\1/p')
[ "${lines[2]}" = "$want" ] || fail "library_version ${lines[2]} != featurize --version $want"
pkgver=$(run -c 'import importlib.metadata as m; print(m.version("featcache"))')
[ "$pkgver" = "$want" ] || fail "package version $pkgver != library $want"

# ... and with no PKG_CONFIG_PATH: the library's path recorded at install. (1) The copy of the
# package `cmake --install` put beside the library: pip install <prefix>/lib/featcache/python.
pipi() { "$tmp/venv/bin/python" -m pip install -q --no-index --no-build-isolation \
  --disable-pip-version-check --force-reinstall --no-deps "$1" >"$tmp/pip.log" 2>&1 ||
  { cat "$tmp/pip.log" >&2; fail "pip install $1 failed"; }; }
norun() { (cd "$tmp" && env -u PYTHONPATH -u FEATCACHE_LIBRARY -u PKG_CONFIG_PATH \
  "$tmp/venv/bin/python" "$@"); }
want_lib=$(realpath "$prefix/lib/libfeatcache_core.so.0")
pipi "$prefix/lib/featcache/python"
got=$(norun -c 'import featcache; print(featcache.find_library()); print(featcache.library_version())') ||
  fail "the installed copy of the package, no PKG_CONFIG_PATH: import failed"
[ "$(realpath "$(head -n 1 <<<"$got")")" = "$want_lib" ] || fail "installed copy loaded $got, not $want_lib"
# (2) pip install ./python from a source tree whose build was installed to the prefix: setup.py
# records the library named in build/install_manifest.txt (cmake --install writes it; another
# test's install may overwrite the shared one, so this tree's build/ holds this install's copy).
mkdir -p "$tmp/src/build"
cp -r "$FC_SRC/python" "$tmp/src/python"
for _ in 1 2 3; do
  cp "$FC_BIN/install_manifest.txt" "$tmp/src/build/install_manifest.txt"
  grep -q "^$prefix/" "$tmp/src/build/install_manifest.txt" && break
  cmake --install "$FC_BIN" --prefix "$prefix" >/dev/null
done
grep -q "^$prefix/" "$tmp/src/build/install_manifest.txt" || fail "install_manifest.txt does not name $prefix"
pipi "$tmp/src/python"
got=$(norun -c 'import featcache; print(featcache.find_library())') ||
  fail "pip install ./python after cmake --install, no PKG_CONFIG_PATH: import failed"
[ "$(realpath "$got")" = "$want_lib" ] || fail "pip install ./python loaded $got, not $want_lib"
# (3) nothing to be found: the error says what to set
out=$( (cd "$tmp" && env -u PYTHONPATH FEATCACHE_LIBRARY="$tmp/none/libfeatcache_core.so" \
  "$tmp/venv/bin/python" -c 'import featcache; featcache.library_version()') 2>&1) &&
  fail "a missing library raised nothing"
grep -q 'set PKG_CONFIG_PATH=P/lib/pkgconfig' <<<"$out" && grep -q 'FEATCACHE_LIBRARY=P/lib/libfeatcache_core.so.0' <<<"$out" ||
  fail "the error does not say what to set: $out"
pipi "$tmp/pysrc"

# the example loop, on a store the installed featurize made from WAVs this test writes
run - "$tmp/wavs" <<'PY'
import os, sys, wave
import numpy as np
d = sys.argv[1]
os.makedirs(d)
rng = np.random.default_rng(7)
for i in range(6):
    n = 22050 * (1 + i % 3)
    t = np.arange(n) / 22050.0
    x = 0.3 * np.sin(2 * np.pi * (110 + 40 * i) * t) + 0.05 * rng.standard_normal(n)
    with wave.open(os.path.join(d, "utt%d.wav" % i), "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())
PY
"$prefix/bin/featurize" --device cpu -q -o "$tmp/store" "$tmp"/wavs/*.wav || fail "installed featurize failed"
if run -c 'import torch' 2>/dev/null; then
  out=$(run "$FC_SRC/python/examples/train_torch.py" "$tmp/store" --epochs 1 --batch-size 4) ||
    fail "python/examples/train_torch.py failed against the installed library"
  echo "$out"
else
  echo "python_install: torch not importable: the example loop is not run" >&2
  out=$(run -c 'import featcache, sys; n = sum(len(b.ids) for b in featcache.Loader(sys.argv[1], batch_size=4)); print(n)' "$tmp/store")
  [ "$out" = 6 ] || fail "loader read $out utterances, want 6"
fi
echo "python_install: ok (featcache ${lines[2]} from $prefix)"
