#!/bin/bash
# cache-merge -o OUT where OUT is a non-empty directory that holds no store — the folder of the
# shards (`-o shards shards/s*/`), the corpus, a home directory — is refused as featurize and
# tokenize refuse it (exit 2, nothing written into it, the message naming what is there; with
# --json the summary's status "error");
# --force-new-store creates the merged store there. An OUT whose folder is not there is said
# before the inputs are read. An empty or missing directory, an existing store, and an OUT left
# with only lock.mdb pass.
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 12 || exit 1
mkdir shards
for k in 0 1; do
  "$FC_BIN/featurize" -q --shard $k/2 -o shards/s$k --manifest c/metadata.csv || exit 1
done

# the shards' own folder: refused, nothing written there
"$M" -q -o shards shards/s*/ >out 2>err; check shards-folder 2 $?
grep -qx "cache-merge: shards: not a featcache store, and not empty (2 entries, e.g. s[01]): a new store goes into a new or empty directory; --force-new-store creates it here" err ||
  { echo "FAIL shards-folder: message"; cat err; fail=1; }
ls -A shards | sort | tr '\n' ' ' | grep -qx "s0 s1 " || { echo "FAIL shards-folder: written into"; ls -A shards; fail=1; }

# the corpus folder (one file): refused, the file named
"$M" -q -o c/wavs shards/s0 shards/s1 >out 2>err; check corpus-folder 2 $?
grep -q "^cache-merge: c/wavs: not a featcache store, and not empty (12 entries, e.g. LJ001-" err ||
  { echo "FAIL corpus-folder: message"; cat err; fail=1; }
[ -e c/wavs/data.mdb ] && { echo "FAIL corpus-folder: a store made"; fail=1; }

# --json: the summary says it, as of the output among the inputs ("error", exit 2)
"$M" --json -o shards shards/s0 shards/s1 >out 2>err; check json 2 $?
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "error" and r["total"] == 0, r' ||
  { echo "FAIL json: summary"; cat out; fail=1; }
grep -q "^cache-merge: shards: not a featcache store, and not empty" err || { echo "FAIL json: message"; cat err; fail=1; }
[ -e shards/data.mdb ] && { echo "FAIL json: a store made"; fail=1; }

# --force-new-store: made there, and a rerun into the store so made needs no option
"$M" -q --force-new-store -o shards shards/s0 shards/s1 >out 2>err; check force 0 $?
[ -e shards/data.mdb ] || { echo "FAIL force: no store made"; fail=1; }
"$M" -q -o shards shards/s0 shards/s1 >out 2>err; check force-rerun 0 $?

# OUT in a folder that is not there: said at once, before the inputs are read for conflicts (a
# first pass over every key of every input: minutes on a large corpus, then "cannot create the
# output store: No such file or directory"), as featurize says it; --json "error", total 0
"$M" --json -o nope/sub/cache shards/s0 shards/s1 >out 2>err; check folder-missing 2 $?
[ "$(cat err)" = "cache-merge: nope/sub/cache: cannot create the output store: its folder nope/sub does not exist (a new store is made in an existing folder: mkdir -p it)" ] ||
  { echo "FAIL folder-missing: message"; cat err; fail=1; }
"$PY" -c 'import json; r = json.load(open("out")); assert r["status"] == "error" and r["total"] == 0, r' ||
  { echo "FAIL folder-missing: json"; cat out; fail=1; }

# empty, missing, an existing store, a folder a killed merge left with its lock file: merged
mkdir empty
"$M" -q -o empty shards/s0 shards/s1 >out 2>err; check empty 0 $?
"$M" -q -o missing shards/s0 shards/s1 >out 2>err; check missing 0 $?
"$M" -q -o empty shards/s0 shards/s1 >out 2>err; check existing 0 $?
mkdir left && : >left/lock.mdb
"$M" -q -o left shards/s0 shards/s1 >out 2>err; check lock-left 0 $?
same_store empty left >/dev/null || { echo "FAIL lock-left: store differs"; fail=1; }
exit $fail
