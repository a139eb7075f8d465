#!/usr/bin/env bash
# The benchmark scripts' comma-separated options (bench-gpu --ring, bench-loader --only,
# bench-scale --sizes) refuse an empty item, and bench-loader --only a row group it does not
# have, with a usage error (exit 2) before any work — as the tools' list options do. Before, an
# empty item was dropped and an unknown group ran nothing, exit 0.
set -u
S=${FC_SRC:?}/scripts
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { # check WANT-MESSAGE CMD...: exit 2, stderr exactly the message, nothing on stdout
  local want=$1
  shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc = 2 ] && [ "$(cat "$tmp/err")" = "$want" ] && [ ! -s "$tmp/out" ] ||
    fail "$*: exit $rc, stderr '$(cat "$tmp/err")', want '$want'"
}
check "bench-gpu: --ring 8x4M,,16x2M: an empty item in the list" \
  "$S/bench-gpu" --work "$tmp/w" --ring 8x4M,,16x2M
check "bench-loader: --only a,,b: an empty item in the list" "$S/bench-loader" --only a,,b
check "bench-loader: --only a,x,memcpy: unknown x (one of a,b,c,f,memcpy,d,e)" \
  "$S/bench-loader" --only a,x,memcpy
check "bench-scale: --sizes 1000,: an empty item in the list" "$S/bench-scale" --sizes 1000,
[ -e "$tmp/w" ] && fail "bench-gpu made its work folder before refusing the option"
[ $fails = 0 ] && echo PASS || exit 1
