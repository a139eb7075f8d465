#!/usr/bin/env bash
# loader-bench --check-pages: the stores' B-tree pages checked before any of them is opened, as
# the loader's check_pages (FC_LOADER_CHECK_PAGES) checks them. A leaf node of the audio db given
# a flag no featcache db has (a flipped bit: LMDB may follow a NULL pointer when it reads that
# node; on the store of tests/python/test_loader_check_pages loader-bench died of a segmentation
# fault, nothing said, and had no option to check first); with the option such a store is
# refused, naming it and the page, exit 2, nothing run — whichever source opens it first (the
# cache source, the audio source's config, --compare's order). A sound store runs as without it;
# the option without a STORE is a usage error.
set -u
LB=${FC_BIN:?}/loader-bench
FZ=$FC_BIN/featurize
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
for i in 1 2 3; do sox -n -r 22050 -b 16 "u$i.wav" synth 0.$((i + 3)) sine $((300 * i)) || fail "sox"; done
printf '%s\n' "$tmp/u1.wav" "$tmp/u2.wav" "$tmp/u3.wav" >list.txt
"$FZ" -q --device cpu -o st u1.wav u2.wav u3.wav || fail "featurize"
cp -r st bad
# the first node of the audio db's first leaf: flag 4 (duplicate data) added (LMDB 0.9's layout)
"$FC_PYTHON" - bad/data.mdb <<'PY' || fail "damaging bad"
import struct, sys
P = 4096
d = bytearray(open(sys.argv[1], "rb").read())
def nodes(pg):
    lower = struct.unpack_from("<H", d, pg * P + 12)[0]
    return [pg * P + struct.unpack_from("<H", d, pg * P + 16 + 2 * i)[0] for i in range((lower - 16) // 2)]
meta = max((struct.unpack_from("<Q", d, p + 144)[0], p) for p in (0, P))[1]
for n in nodes(struct.unpack_from("<Q", d, meta + 128)[0]):
    ks = struct.unpack_from("<H", d, n + 6)[0]
    if bytes(d[n + 8:n + 8 + ks]) == b"audio":
        pg = struct.unpack_from("<Q", d, n + 8 + ks + 40)[0]
while struct.unpack_from("<H", d, pg * P + 10)[0] & 1:  # a branch page: its first child
    n = nodes(pg)[0]
    pg = struct.unpack_from("<H", d, n)[0] | struct.unpack_from("<H", d, n + 2)[0] << 16
n = nodes(pg)[0]
struct.pack_into("<H", d, n + 4, struct.unpack_from("<H", d, n + 4)[0] | 4)
open(sys.argv[1], "r+b").write(d)
PY
run=(-q --json -b 2 -w 1 --compute-ms 0 --warmup 0)
want="^loader-bench: $tmp/bad: damaged \(env data\.mdb: B-tree damaged \(page [0-9]+ of the audio db: a node with flags no featcache db's entries have \(node 0\)\): LMDB's reads of that page could crash, .*\): nothing run \(cache-verify says more\)$"
for how in "cache" "audio --manifest $tmp/list.txt" "compare --manifest $tmp/list.txt"; do
  set -- $how
  src=(--source "$1")
  [ "$1" = compare ] && src=(--compare)
  shift
  "$LB" "${run[@]}" --check-pages "${src[@]}" "$@" "$tmp/bad" >out 2>err; rc=$?
  [ $rc = 2 ] || fail "$how: exit $rc, want 2 ($(cat err))"
  [ -s out ] && fail "$how: wrote to stdout: $(cat out)"
  [ "$(wc -l <err)" = 1 ] && grep -qE "$want" err || fail "$how: stderr: $(cat err)"
done
# a damaged store among several: named, the first store's soundness no excuse
"$LB" "${run[@]}" --check-pages --partial "$tmp/st" "$tmp/bad" >out 2>err; rc=$?
[ $rc = 2 ] && grep -qE "$want" err || fail "two stores: exit $rc: $(cat err)"

# a sound store: read as without the option, every utterance
"$LB" "${run[@]}" --check-pages --epochs 1 "$tmp/st" >out 2>err; rc=$?
[ $rc = 0 ] && [ ! -s err ] || fail "sound store: exit $rc: $(cat err)"
"$FC_PYTHON" -c 'import json, sys; s = json.load(open("out"))["sources"][0]; assert s["utterances"] == 3, s' ||
  fail "sound store: $(cat out)"
"$LB" "${run[@]}" --check-pages --compare --manifest list.txt "$tmp/st" >out 2>err; rc=$?
[ $rc = 0 ] || fail "sound store, --compare: exit $rc: $(cat err)"

# Ctrl-C during the check (test builds: stopped at its open of the store, FC_FAULT_STOP): the
# walk stops at the next page, said, nothing run, 130
if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  . "$FC_SRC/tests/cli/stop_site.bash"
  FC_FAULT_STOP=store_open:1 sigint_default "$LB" "${run[@]}" --check-pages "$tmp/st" >out 2>err &
  pid=$!
  stopped $pid 400 || { kill -9 $pid; fail "Ctrl-C: not stopped at store_open:1: $(cat err)"; }
  interrupted $pid
  [ $rc = 130 ] && [ ! -s out ] &&
    [ "$(tail -n 1 err)" = "loader-bench: $tmp/st: interrupted while checking its pages: nothing run" ] ||
    fail "Ctrl-C in the check: exit $rc: $(cat err)"
fi

# no STORE: nothing to check
"$LB" --check-pages --source synthetic --steps 1 >out 2>err; rc=$?
[ $rc = 2 ] && [ "$(head -1 err)" = "loader-bench: --check-pages applies to a STORE: no STORE is read here" ] ||
  fail "no STORE: exit $rc: $(cat err)"
echo ok
