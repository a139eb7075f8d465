#!/usr/bin/env bash
# cache-bench on a read-only mount: refused with a clear line and exit 2; --read-only benches it.
# Needs a read-only bind mount (root, mount allowed in this sandbox); else skipped (77), saying why.
set -u
bin=$FC_BIN/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
t=$(mktemp -d)
lat="$t/r$(printf '\351')o" # a mount point whose name is not UTF-8 (Latin-1)
cleanup() {
  mountpoint -q "$t/ro" 2>/dev/null && umount "$t/ro"
  mountpoint -q "$lat" 2>/dev/null && umount "$lat"
  rm -rf "$t"
}
trap cleanup EXIT
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/s', 6, frames=20)" \
  || fail "fixture"
mkdir "$t/ro"
if ! mount --bind "$t/s" "$t/ro" 2>"$t/merr" || ! mount -o remount,ro,bind "$t/ro" 2>>"$t/merr"; then
  echo "skip: cannot make a read-only bind mount here: $(head -1 "$t/merr")"
  exit 77
fi
touch "$t/ro/x" 2>/dev/null && fail "bind mount is not read-only"

"$bin" -q "$t/ro" >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 2 ] || fail "read-only mount: exit $rc, want 2"
[ -s "$t/out" ] && fail "read-only mount: wrote to stdout"
want="cache-bench: $t/ro: store is on a read-only mount ($t/ro): LMDB runs without its lock file there, so a writer elsewhere could change it under the benchmark; pass --read-only to bench it anyway"
[ "$(cat "$t/err")" = "$want" ] || fail "stderr
got:  $(cat "$t/err")
want: $want"

"$bin" --read-only --json -p sequential -b 2 --duration 0.5 "$t/ro" >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 0 ] || fail "--read-only: exit $rc: $(cat "$t/err")"
grep -q '"record":"summary".*"read_only":true' "$t/out" || fail "summary does not say read_only"
[ "$(grep -c '"record":"pass"' "$t/out")" -eq 4 ] || fail "want 4 passes"
[ "$(tail -1 "$t/err")" = "cache-bench: done: 4 of 4 passes" ] || fail "done line: $(tail -1 "$t/err")"

# the mount point is named as names are (quoted, \xe9), in the refusal and in the device line:
# printed raw, stderr and the report were not UTF-8
utf8() { "$FC_PYTHON" -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$1" 2>/dev/null; }
mkdir "$lat"
mount --bind "$t/s" "$lat" && mount -o remount,ro,bind "$lat" || fail "bind mount at a Latin-1 name"
"$bin" -q "$lat" >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 2 ] && utf8 "$t/err" && grep -qF "store is on a read-only mount (\"$t/r\xe9o\"): " "$t/err" ||
  fail "Latin-1 mount point: exit $rc: $(cat -v "$t/err")"
"$bin" -q --read-only --no-probe -p sequential -s warm --duration 0 "$lat" >"$t/out" 2>"$t/err" ||
  fail "Latin-1 mount point, --read-only: exit $?: $(cat -v "$t/err")"
utf8 "$t/out" && grep -qE "^device: .* on \"$t/r\\\\xe9o\"( \(read-only\)|, read-only)" "$t/out" ||
  fail "Latin-1 mount point: device line: $(grep -a '^device' "$t/out" | cat -v)"
echo ok
