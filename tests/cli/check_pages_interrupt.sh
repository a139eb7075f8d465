#!/usr/bin/env bash
# Ctrl-C while a tool checks a store's pages before it writes (featurize and tokenize, with and
# without --check-pages; cache-prune; cache-config --drop; cache-merge): the check stops at the
# next page it would read (a big store's walk from a cold disk takes minutes: it went on to the
# end), the tool says so and exits 130, nothing written. It exited 130 with no word after the
# notice of the signal, cache-config --drop went on to its drop, and cache-merge said the inputs
# were being read for conflicts. featurize and tokenize --json print their object all the same
# (they printed nothing). The signal is sent at a known point: FC_FAULT_STOP=store_open:N
# stops the process at its N-th store open (the check's own).
set -u
[ -x "$FC_BIN/featurize" ] && [ -x "$FC_BIN/tokenize" ] || { echo "FAIL: tools not built"; exit 1; }
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault hooks (-DFC_FAULT_INJECTION=ON)"; exit 77; }
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
. "$FC_SRC/tests/cli/stop_site.bash" # stopped PID TRIES
"$PY" - <<'PY' || exit 1
import math, struct, wave
for name, f in (("a", 5), ("b", 7), ("c", 9)):
    with wave.open(name + ".wav", "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / f))) for i in range(22050)))
PY
printf 'a\thello there\n' >t.tsv
printf 'c\tgood evening\n' >t2.tsv
"$FC_BIN/featurize" -q --device cpu -o st a.wav b.wav && "$FC_BIN/tokenize" -q --build-vocab -o st t.tsv ||
  { echo "FAIL: the store"; exit 1; }
sum=$(md5sum <st/data.mdb)

# interrupt N WANT COMMAND...: stopped at its N-th store open, SIGINT, SIGCONT: exit 130, the last
# line of stderr WANT, data.mdb unchanged
interrupt() {
  local n=$1 want=$2
  shift 2
  FC_FAULT_STOP=store_open:$n sigint_default "$@" >out 2>err &
  pid=$!
  stopped $pid 400 || { fail "$*: not stopped at store_open:$n: $(cat err)"; kill -9 $pid; pid=; return; }
  local rc
  interrupted $pid
  pid=
  [ $rc = 130 ] && [ "$(tail -n 1 err)" = "$want" ] || { fail "$*: exit $rc"; cat err; echo "want: $want"; }
  [ "$(md5sum <st/data.mdb)" = "$sum" ] || fail "$*: data.mdb changed"
}

# unbegun TOTAL_KEY N: stdout one --json object, nothing done, its N inputs not started (it was
# empty: a script reading the object on exit 130 found nothing); a transcript file tokenize reads
# as it goes has had none read (0), and its vocab not built (no config digest yet: null)
unbegun() {
  "$PY" -c 'import json, sys
o = json.loads(open("out").read())
n = int(sys.argv[2])
assert (o["processed"], o["failed"], o["not_started"], o[sys.argv[1]]) == (0, 0, n, n), o
assert (o["config_digest"] is None) == (sys.argv[1] == "lines"), o' "$@" ||
    fail "--json after the stop: $(cat out)"
}
for opt in "" --check-pages; do
  interrupt 1 "featurize: st: interrupted while checking its pages: nothing done" \
    "$FC_BIN/featurize" -q --json --device cpu $opt -o st c.wav
  unbegun total 1
  interrupt 1 "tokenize: st: interrupted while checking its pages: nothing done" \
    "$FC_BIN/tokenize" -q --json --build-vocab $opt -o st t2.tsv
  unbegun lines 0
done
interrupt 1 "cache-prune: st: interrupted while checking its pages: nothing removed" \
  "$FC_BIN/cache-prune" st
# --json: the store being checked gets its object, status interrupted, nothing counted (stdout was
# empty, where a stop during the removals says "interrupted"); a STORE after it is not started
cp -r st st2
interrupt 2 "cache-prune: st2: interrupted while checking its pages: nothing removed" \
  "$FC_BIN/cache-prune" --json st st2
"$PY" - <<'PY' || fail "cache-prune --json, stopped in the page check: $(cat out)"
import json
lines = open("out").read().splitlines()
assert len(lines) == 1, lines
r = json.loads(lines[0])
assert r["store"] == "st2" and r["status"] == "interrupted" and r["dry_run"] is False, r
# kept_ids: nothing counted, null (not 0: no utterance stays, which the store does not say)
assert r["parts"] == 1 and r["transactions"] == 0 and r["bytes_freed"] == 0 and r["kept_ids"] is None, r
PY
[ "$(md5sum <st2/data.mdb)" = "$sum" ] || fail "cache-prune --json: st2/data.mdb changed"
# cache-config's first open finds the config; the second is the check's
interrupt 2 "cache-config: st: interrupted while checking its pages: nothing dropped" \
  "$FC_BIN/cache-config" --drop hifigan st
"$FC_BIN/cache-config" st >out 2>&1 && grep -q hifigan out || fail "the config was dropped: $(cat out)"
# cache-merge checks its inputs' pages first: its line said they were being read for conflicts
interrupt 1 "cache-merge: interrupted: nothing written (the stores' pages were being checked); run again to merge" \
  "$FC_BIN/cache-merge" -o new st
[ -e new ] && fail "cache-merge made its output"

# A store with a page LMDB's reads could crash on (a leaf node of the audio db given a flag no
# featcache db has), stopped before the walk reached it: the run reads nothing more through LMDB
# (cache-prune --dry-run and cache-verify went on to read the entries once the walk had stopped
# there, and crashed: SIGSEGV)
cp -r st bad && "$PY" - bad <<'PY' || fail "damaging bad"
import struct, sys
data = bytearray(open(sys.argv[1] + "/data.mdb", "rb").read())
def nodes(page):
    for i in range((struct.unpack_from("<H", data, page * 4096 + 12)[0] - 16) // 2):
        yield page * 4096 + struct.unpack_from("<H", data, page * 4096 + 16 + 2 * i)[0]
meta = max((struct.unpack_from("<Q", data, p + 144)[0], p) for p in (0, 4096))[1]
for n in nodes(struct.unpack_from("<Q", data, meta + 128)[0]):
    k = struct.unpack_from("<H", data, n + 6)[0]
    if bytes(data[n + 8:n + 8 + k]) == b"audio":
        page = struct.unpack_from("<Q", data, n + 8 + k + 40)[0]
n = next(nodes(page))
struct.pack_into("<H", data, n + 4, struct.unpack_from("<H", data, n + 4)[0] | 4)
open(sys.argv[1] + "/data.mdb", "r+b").write(data)
PY
sum=$(md5sum <bad/data.mdb)
for tool in cache-prune cache-verify; do
  if [ $tool = cache-prune ]; then want="cache-prune: bad: interrupted: run again to finish"; opt=--dry-run
  else want="cache-verify: bad: interrupted"; opt=; fi
  FC_FAULT_STOP=store_open:1 sigint_default "$FC_BIN/$tool" $opt bad >out 2>err &
  pid=$!
  if stopped $pid 400; then
    interrupted $pid
    [ $rc = 130 ] && [ "$(tail -n 1 err)" = "$want" ] || { fail "$tool on a damaged store: exit $rc"; cat err; }
  else
    fail "$tool: not stopped at store_open:1: $(cat err)"
    kill -9 $pid
  fi
  pid=
  [ "$(md5sum <bad/data.mdb)" = "$sum" ] || fail "$tool: bad/data.mdb changed"
done

[ "$fails" = 0 ] && echo ok
exit $((fails > 0))
