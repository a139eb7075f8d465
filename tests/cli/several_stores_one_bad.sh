#!/usr/bin/env bash
# Several STOREs, one of them not there, no store, or not readable (DESIGN: 2 is "usage or
# configuration error, nothing done"; 1 "the job ran but something failed", with an N of M
# summary):
#   cache-verify and cache-config, which report each store in turn, report the others and exit 1,
#     the bad one named on stderr and counted in the summary (`done: 2 of 3 stores clean (1 not
#     checked)`, `done: 2 of 3 stores listed (1 failed)`), and with --json its object all the same
#     (they exited 2, which a script reads as "nothing was checked"); 2 only when none could be
#     opened;
#   cache-prune --dry-run, as the run it stands for (which opens every STORE before it prunes the
#     first), refuses the list (exit 2, no STORE reported: it reported the others, then exited 2),
#     and so do cache-bench and loader-bench (nothing run); one in use is cache-prune's exit 1, the
#     others pruned, with `done: 1 of 2 stores pruned (1 failed)` (it said no N of M).
set -u
for t in cache-verify cache-config cache-prune cache-bench featurize; do
  [ -x "$FC_BIN/$t" ] || { echo "FAIL: $t is not built"; exit 1; }
done
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

"$PY" - <<'PY' || exit 1
import math, struct, wave
for n, f in (("a", 300), ("b", 440)):
    with wave.open(n + ".wav", "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i * f / 3500))) for i in range(11025)))
PY
"$FC_BIN/featurize" -q --device cpu -o s1 a.wav || fail "featurize s1"
"$FC_BIN/featurize" -q --device cpu -o s2 b.wav || fail "featurize s2"
mkdir wavs

# run NAME WANT_RC WANT_STDERR COMMAND...
run() {
  local name=$1 want_rc=$2 want=$3
  shift 3
  "$@" >out 2>err
  local rc=$?
  [ "$rc" = "$want_rc" ] || fail "$name: exit $rc, want $want_rc: $(cat err)"
  [ "$(cat err)" = "$want" ] || { fail "$name: stderr"; cat err; echo "want: $want"; }
}

V=$FC_BIN/cache-verify
run "verify: one not a store" 1 "cache-verify: wavs: not a featcache store (no data.mdb)
cache-verify: done: 2 of 3 stores clean (1 not checked)" "$V" s1 wavs s2
[ "$(grep -c '^s[12]: 0 errors' out)" = 2 ] || fail "verify: the others not reported: $(cat out)"
run "verify --status" 1 "" "$V" --status s1 nope
run "verify -q" 1 "cache-verify: nope: cannot open the store: No such file or directory
cache-verify: done: 1 of 2 stores clean (1 not checked)" "$V" -q s1 nope # exit 1 comes with it
"$V" --json s1 nope s2 >out 2>/dev/null
rc=$?
[ $rc = 1 ] && "$PY" -c 'import json
o = [json.loads(l) for l in open("out")]
assert [(d["store"], d["ok"], d.get("fatal")) for d in o] == [("s1", True, None), ("nope", False, "cannot open the store: No such file or directory"), ("s2", True, None)], o' ||
  fail "verify --json: exit $rc: $(cat out)"
# none could be checked: nothing done
run "verify: none" 2 "cache-verify: wavs: not a featcache store (no data.mdb)
cache-verify: nope: cannot open the store: No such file or directory
cache-verify: done: 0 of 2 stores clean (2 not checked)" "$V" wavs nope
run "verify: the only one" 2 "cache-verify: nope: cannot open the store: No such file or directory
cache-verify: done: 0 of 1 stores clean (1 not checked)" "$V" nope
# a store this user cannot read (root reads anything)
if [ "$(id -u)" != 0 ]; then
  cp -r s2 locked
  chmod 000 locked/data.mdb
  "$V" -q s1 locked >out 2>err
  rc=$?
  [ $rc = 1 ] && grep -q '^cache-verify: locked: .*Permission denied' err ||
    fail "verify: unreadable store: exit $rc: $(cat err)"
  chmod 644 locked/data.mdb
fi

C=$FC_BIN/cache-config
run "config: one not a store" 1 "cache-config: wavs: not a featcache store (no data.mdb)
cache-config: done: 2 of 3 stores listed (1 failed)" "$C" s1 wavs s2
[ "$(grep -c '^s[12]: 1 config$' out)" = 2 ] || fail "config: the others not listed: $(cat out)"
"$C" --json s1 nope s2 >out 2>/dev/null
rc=$?
[ $rc = 1 ] && "$PY" -c 'import json
o = [json.loads(l) for l in open("out")]
assert [(d["store"], d.get("error")) for d in o] == [("s1", None), ("nope", "cannot open the store: No such file or directory"), ("s2", None)], o' ||
  fail "config --json: exit $rc: $(cat out)"
run "config: none" 2 "cache-config: wavs: not a featcache store (no data.mdb)
cache-config: nope: cannot open the store: No such file or directory" "$C" wavs nope
# a split store whose marker cannot be read gets its --json object too
mkdir sp
echo "featcache-split/1 many" >sp/featcache-split
"$C" --json s1 sp >out 2>err
rc=$?
[ $rc = 1 ] && "$PY" -c 'import json
o = [json.loads(l) for l in open("out")]
assert [d["store"] for d in o] == ["s1", "sp"] and o[1]["configs"] is None and o[1]["error"].startswith("cannot read the split store"), o' ||
  fail "config --json, a bad marker: exit $rc: $(cat out) $(cat err)"

# one store named twice, in another spelling or not: refused (exit 2, nothing listed), both
# spellings named, as cache-merge, cache-verify and cache-prune refuse it (it listed it twice)
run "config s1 s1" 2 "cache-config: s1: given twice (also as s1)" "$C" s1 s1
[ ! -s out ] || fail "config s1 s1: stdout: $(cat out)"
run "config s1 s2 ./s1/" 2 "cache-config: ./s1/: given twice (also as s1)" "$C" --json s1 s2 ./s1/
[ ! -s out ] || fail "config s1 s2 ./s1/: stdout: $(cat out)"
ln -s s2 s2link
run "config s2link s2" 2 "cache-config: s2: given twice (also as s2link)" "$C" --no-count s2link s2

# a dry run refuses as the run would: nothing reported
P=$FC_BIN/cache-prune
run "prune --dry-run" 2 "cache-prune: wavs: not a featcache store (no data.mdb)" "$P" --dry-run s1 wavs s2
[ ! -s out ] || fail "prune --dry-run: stdout: $(cat out)"
run "prune --dry-run --json" 2 "cache-prune: nope: cannot open the store: No such file or directory" \
  "$P" --dry-run --json s1 nope
[ ! -s out ] || fail "prune --dry-run --json: $(cat out)"
run "prune" 2 "cache-prune: wavs: not a featcache store (no data.mdb)" "$P" s1 wavs s2
run "bench" 2 "cache-bench: wavs: not a featcache store (no data.mdb)" "$FC_BIN/cache-bench" s1 wavs s2
"$P" --dry-run -q s1 s2 || fail "prune --dry-run of two stores: exit $?"
# one in use (a writer holds its lock) is left to its turn: the others pruned, exit 1 with the
# summary every exit 1 has (it ended at the refusal, no N of M said), whatever -q
"$PY" -c 'import fcntl, time
f = open("s2/data.mdb")
fcntl.flock(f, fcntl.LOCK_SH)
open("held", "w").close()
time.sleep(30)' &
holder=$!
for _ in $(seq 100); do [ -e held ] && break; sleep 0.05; done
busy="cache-prune: s2: in use: process $holder ($(cat /proc/$holder/comm 2>/dev/null)) has it open for writing; nothing removed: run cache-prune when it has finished"
run "prune, one in use" 1 "$busy
cache-prune: done: 1 of 2 stores pruned (1 failed)" "$P" -q s1 s2
run "prune --json, one in use" 1 "$busy
cache-prune: done: 1 of 2 stores pruned (1 failed)" "$P" -q --json s2 s1
"$PY" -c 'import json
o = [json.loads(l) for l in open("out")]
assert [(d["store"], d["status"]) for d in o] == [("s2", "error"), ("s1", "done")], o
# s2 never opened: nothing counted, null (it said 0 utterances stay); s1 counted
assert o[0]["kept_ids"] is None and o[1]["kept_ids"] == 1, o' ||
  fail "prune --json, one in use: $(cat out)"
run "prune, the only one in use" 1 "$busy
cache-prune: done: 0 of 1 store pruned (1 failed)" "$P" -q s2 # one STORE's exit 1 too
kill $holder
wait $holder 2>/dev/null

[ "$fails" = 0 ] && echo "all several-stores checks passed"
exit "$fails"
