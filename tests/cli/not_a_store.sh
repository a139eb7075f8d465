#!/usr/bin/env bash
# The tools that open existing stores on a directory that holds none, each said the same way, exit
# 2, nothing written:
#   an LMDB environment of another program (its own db, no featcache meta):
#     "TOOL: DIR: not a featcache store (not an LMDB environment with featcache/1 meta)";
#     cache-merge -o DIR: "cache-merge: DIR: cannot open the output store: ..."
#   an environment nothing was ever committed to (a writer stopped before its first commit):
#     "TOOL: DIR: an empty store: nothing was ever committed to it (...); featurize, tokenize and
#     cache-merge take it as new", as cache-verify says it; cache-merge -o DIR takes it as new, and
#     an input so is said as one ("...: nothing merged; run its featurize or tokenize again ..."),
#   a file or a folder without data.mdb given to cache-merge as an input: as the other tools say it
#   a file, or a folder without data.mdb, given to cache-verify or loader-bench: as the other tools
#     say it (they said "FC_ENOSTORE: not a featcache store (no data.mdb)", "Not a directory");
#     cache-verify --json gives such a store its object all the same, that text its "fatal"
#   an empty data.mdb (its writer stopped before LMDB wrote a page): the same (the read-only opens
#     said "Bad file descriptor", cache-prune wrote LMDB's first pages into it), and cache-merge -o,
#     featurize and tokenize --check-pages take it as new (their page check called it damaged:
#     exit 1, "... take it as new): nothing written")
# cache-prune, cache-config --drop and cache-merge check a store's pages before they write (a
# damaged one is refused as "damaged"); that check says nothing of a directory that is no store:
# the open says what it is.
set -u
PY=${FC_PYTHON:-python3}
for t in cache-prune cache-config cache-bench cache-merge cache-verify loader-bench featurize tokenize; do
  [ -x "$FC_BIN/$t" ] || { echo "FAIL: $t is not built"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

"$PY" - <<'PY' || exit 1
import lmdb, math, os, struct, wave
env = lmdb.open("foreign", max_dbs=4)
with env.begin(write=True) as t:
    t.put(b"k", b"v", db=env.open_db(b"other", txn=t))
env.close()
lmdb.open("empty").close()  # the two meta pages, nothing committed
os.mkdir("zero")
open("zero/data.mdb", "wb").close()  # no page at all
with wave.open("a.wav", "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / 9))) for i in range(22050)))
PY
"$FC_BIN/featurize" -q --device cpu -o src a.wav || fail "featurize src"
echo a.wav >a.list

# check NAME WANT_RC WANT_STDERR DIR COMMAND...: exit code, stderr, DIR's data.mdb unchanged
check() {
  local name=$1 want_rc=$2 want=$3 dir=$4
  shift 4
  [ "$dir" = zero ] && : >zero/data.mdb # as new, whatever a check before did to it
  cp "$dir/data.mdb" before.mdb
  "$@" >out 2>err
  local rc=$?
  [ "$rc" = "$want_rc" ] || fail "$name: exit $rc, want $want_rc"
  [ "$(cat err)" = "$want" ] || { fail "$name: stderr"; cat err; echo "want: $want"; }
  cmp -s "$dir/data.mdb" before.mdb || fail "$name: $dir/data.mdb changed"
}

foreign="not a featcache store (not an LMDB environment with featcache/1 meta)"
empty="an empty store: nothing was ever committed to it (its writer stopped before its first commit?); featurize, tokenize and cache-merge take it as new"
for d in foreign empty zero; do
  if [ $d = foreign ]; then said=$foreign; else said=$empty; fi
  check "cache-prune $d" 2 "cache-prune: $d: $said" $d "$FC_BIN/cache-prune" $d
  check "cache-prune --dry-run $d" 2 "cache-prune: $d: $said" $d "$FC_BIN/cache-prune" --dry-run $d
  check "cache-prune $d (two stores)" 2 "cache-prune: $d: $said" $d "$FC_BIN/cache-prune" src $d
  check "cache-config $d" 2 "cache-config: $d: $said" $d "$FC_BIN/cache-config" $d
  check "cache-config --drop $d" 2 "cache-config: $d: $said" $d \
    "$FC_BIN/cache-config" --drop hifigan $d
  check "cache-bench $d" 2 "cache-bench: $d: $said" $d "$FC_BIN/cache-bench" $d
done
check "cache-merge -o foreign" 2 "cache-merge: foreign: cannot open the output store: FC_EFORMAT: not in the featcache format" \
  foreign "$FC_BIN/cache-merge" -o foreign src
# an input nothing was ever committed to (a shard whose featurize was killed before its first
# commit) is said so, not as "cannot open the store: FC_EFORMAT: not in the featcache format"
# (which read as a damaged shard); nothing merged, OUT not made; with --json the object all the
# same, as for another input that cannot be opened
merge_empty="an empty store: nothing was ever committed to it (its writer stopped before its first commit?): nothing merged; run its featurize or tokenize again (they take it as new), or merge without it"
for d in empty zero; do
  check "cache-merge input $d" 2 "cache-merge: $d: $merge_empty" $d "$FC_BIN/cache-merge" -o m src $d
  [ -e m ] && { fail "cache-merge input $d: made its output"; rm -rf m; }
  check "cache-merge --json input $d" 2 "cache-merge: $d: $merge_empty" $d "$FC_BIN/cache-merge" --json -q -o m $d src
  "$PY" -c 'import json; o = json.load(open("out")); assert o["status"] == "error" and o["total"] == 0, o' ||
    fail "cache-merge --json input $d: $(cat out)"
done
# an input that is a file, or a folder without data.mdb, is said as the other tools say it (it
# said "cannot open the store: Not a directory", "... FC_ENOSTORE: not a featcache store ...")
mkdir -p nostore
check "cache-merge input a file" 2 "cache-merge: a.wav: not a featcache store (not a directory)" \
  src "$FC_BIN/cache-merge" -o m src a.wav
check "cache-merge input no data.mdb" 2 "cache-merge: nostore: not a featcache store (no data.mdb)" \
  src "$FC_BIN/cache-merge" --json -o m src nostore
[ -e m ] && fail "cache-merge input no data.mdb: made its output"
# cache-verify and loader-bench say a file, or a folder without data.mdb, as the other tools do
# (they said "DIR: FC_ENOSTORE: not a featcache store (no data.mdb)" and "a.wav: Not a directory")
for d in nostore a.wav; do
  if [ $d = nostore ]; then said="not a featcache store (no data.mdb)"; else said="not a featcache store (not a directory)"; fi
  check "cache-verify $d" 2 "cache-verify: $d: $said
cache-verify: done: 0 of 1 stores clean (1 not checked)" src "$FC_BIN/cache-verify" $d
  check "cache-verify -q $d" 2 "cache-verify: $d: $said" src "$FC_BIN/cache-verify" -q $d
  check "cache-verify --json $d" 2 "cache-verify: $d: $said
cache-verify: done: 0 of 1 stores clean (1 not checked)" src "$FC_BIN/cache-verify" --json $d
  FATAL="$said" STORE=$d "$PY" -c '
import json, os
o = json.load(open("out"))
assert o["store"] == os.environ["STORE"] and o["ok"] is False and o["configs"] is None, o
assert o["fatal"] == os.environ["FATAL"], o["fatal"]
assert o["error_count"] == 0 and o["records_checked"] == 0 and "entries" in o, o' ||
    fail "cache-verify --json $d: $(cat out)"
  check "loader-bench $d" 2 "loader-bench: $d: $said" src "$FC_BIN/loader-bench" --steps 1 $d
  check "loader-bench $d (second store)" 2 "loader-bench: $d: $said" src \
    "$FC_BIN/loader-bench" --steps 1 src $d
  check "loader-bench --source audio $d" 2 "loader-bench: $d: $said" src \
    "$FC_BIN/loader-bench" --source audio --manifest a.list --steps 1 $d
done

# an empty environment is taken as new: the merge fills it
"$FC_BIN/cache-merge" -q -o empty src || fail "cache-merge -o empty: exit $?"
"$FC_BIN/cache-config" --json empty >out 2>err && grep -q '"records":1' out ||
  fail "cache-merge -o empty: $(cat out err)"

# an empty data.mdb is taken as new by the tools that make stores, their page checks included
for t in merge featurize tokenize; do
  rm -rf z && mkdir z && : >z/data.mdb
  case $t in
  merge) "$FC_BIN/cache-merge" -q -o z src ;;
  featurize) "$FC_BIN/featurize" -q --device cpu --check-pages -o z a.wav ;;
  tokenize) printf 'a\thello\n' >t.tsv && "$FC_BIN/tokenize" -q --build-vocab --check-pages -o z t.tsv ;;
  esac >out 2>err
  rc=$?
  [ $rc = 0 ] && [ ! -s err ] || { fail "$t into an empty data.mdb: exit $rc"; cat err; }
  "$FC_BIN/cache-verify" -q z >/dev/null 2>&1 || fail "$t into an empty data.mdb: not sound"
done

[ "$fails" = 0 ] && echo ok
exit $((fails > 0))
