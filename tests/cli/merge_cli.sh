#!/bin/bash
# cache-merge end to end: --help/--version, usage errors (exit 2, nothing created), three shards
# (featurize --shard K/3 + tokenize --shard K/3 --build-vocab) merged into exactly the store one
# plain featurize + tokenize run makes, the stderr summary and --json, a rerun that does nothing
# and says so, a conflict (exit 1, reported, nothing created) and --prefer, a failed commit
# (exit 1, store consistent) that a rerun completes, --shard usage errors.
set -u
M="$FC_BIN/cache-merge"
[ -x "$M" ] || { echo "skip: $M not built"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
expect_err() { # name exact-stderr
  if [ "$(cat err)" != "$2" ]; then echo "FAIL $1: stderr:"; cat err; echo "want:"; echo "$2"; fail=1; fi
}

"$M" --help >out 2>err; check help 0 $?
[ "$(head -1 out)" = "Usage: cache-merge [options] -o OUT STORE..." ] || { echo "FAIL help: first line"; fail=1; }
for o in --output --prefer --partial --batch --quiet --progress --json --help --version; do
  grep -q -- "$o" out || { echo "FAIL help lacks $o"; fail=1; }
done
[ -s err ] && { echo "FAIL help wrote to stderr"; fail=1; }
# the exit status as cache-merge(1) gives it: each case of 2 and 1 named
tr '\n' ' ' <out | grep -q "a store given twice or the output among the inputs" ||
  { echo "FAIL help: exit 2 of a store given twice, the output among the inputs, unsaid"; fail=1; }
tr '\n' ' ' <out | grep -q "the --json summary that could not be written" ||
  { echo "FAIL help: exit 1 of a --json summary that could not be written, unsaid"; fail=1; }
"$M" --version >out 2>err; check version 0 $?
grep -Eq '^cache-merge \(featcache\) [0-9]+\.[0-9]+\.[0-9]+$' out || { echo "FAIL version"; fail=1; }

"$M" s0 >out 2>err; check no-output 2 $?
expect_err no-output "cache-merge: no output store (-o OUT)
Try 'cache-merge --help' for more information."
"$M" -o "" s0 >out 2>err; check empty-output 2 $?
expect_err empty-output "cache-merge: -o '' names no store (an empty path: an unset variable?)
Try 'cache-merge --help' for more information."
"$M" -o m "" >out 2>err; check empty-input 2 $?
expect_err empty-input "cache-merge: '' names no STORE (an empty path: an unset variable?)
Try 'cache-merge --help' for more information."
"$M" -o m >out 2>err; check no-input 2 $?
expect_err no-input "cache-merge: no input STORE given
Try 'cache-merge --help' for more information."
"$M" --bogus -o m s0 >out 2>err; check unknown 2 $?
expect_err unknown "cache-merge: unknown option '--bogus'
Try 'cache-merge --help' for more information."
"$M" -o m s0 --json=1 >out 2>err; check json-value 2 $?
expect_err json-value "cache-merge: option '--json' takes no value
Try 'cache-merge --help' for more information."
"$M" --qu=1 -o m s0 >out 2>err; check quiet-value 2 $?
expect_err quiet-value "cache-merge: option '--quiet' takes no value
Try 'cache-merge --help' for more information."
"$M" -o m s0 --pr >out 2>err; check ambiguous 2 $?
expect_err ambiguous "cache-merge: option '--pr' is ambiguous (--prefer, --progress)
Try 'cache-merge --help' for more information."
if [ -w /dev/full ]; then
  for a in --help --version; do
    "$M" $a >/dev/full 2>err; check "$a into a full disk" 1 $?
    expect_err "$a into a full disk" "cache-merge: stdout: cannot write: No space left on device"
  done
fi
"$M" --batch 0 -o m s0 >out 2>err; check batch0 2 $?
expect_err batch0 "cache-merge: invalid value '0' for --batch (want an integer in 1..16777216)
Try 'cache-merge --help' for more information."
"$M" --prefer nowhere -o m s0 >out 2>err; check prefer-bad 2 $?
expect_err prefer-bad "cache-merge: invalid value 'nowhere' for --prefer (want first, last or one of the input stores)
Try 'cache-merge --help' for more information."
"$M" -o m nope >out 2>err; check missing-input 2 $?
expect_err missing-input "cache-merge: nope: cannot open the store: No such file or directory"
[ -e m ] && { echo "FAIL a failed merge created its output"; fail=1; }

# the corpus, one plain run, three shards
make_corpus c 60 || exit 1
"$FC_BIN/featurize" -q -j2 -o ref --manifest c/metadata.csv || exit 1
"$FC_BIN/tokenize" -q --build-vocab -o ref c/metadata.csv || exit 1
for k in 0 1 2; do
  "$FC_BIN/featurize" -q -j1 --shard $k/3 -o s$k --manifest c/metadata.csv || fail=1
  "$FC_BIN/tokenize" -q --build-vocab --shard $k/3 -o s$k c/metadata.csv || fail=1
done
"$PY" - s0 s1 s2 <<'PY' || fail=1
import sys, lmdb
sizes = []
for p in sys.argv[1:]:
    env = lmdb.open(p, readonly=True, lock=False, max_dbs=8)
    with env.begin() as t:
        sizes.append(t.stat(env.open_db(b"audio", txn=t, create=False))["entries"])
assert sum(sizes) == 60 and all(0 < s < 60 for s in sizes), sizes
PY

"$M" -o s0 s0 s1 >out 2>err; check out-is-input 2 $?
expect_err out-is-input "cache-merge: s0: the output cannot be one of the inputs"
"$M" --prefer s9 -o m s0 s1 >out 2>err; check prefer-missing 2 $?

"$M" --json -o m s0 s1 s2 >json 2>err; check merge 0 $?
"$PY" -c 'import json; r = json.load(open("json")); assert r["total"] == 248 and r["status"] == "done", r' \
  || { echo "FAIL merge json"; cat json; fail=1; }
grep -Eq '^cache-merge: done: 248 of 248 entries in m \(60 feat, 60 tok, 60 audio, 60 text, 8 meta copied; 0 already there; 5 duplicate keys stored once\); [0-9.]+ MB in [0-9.]+ s, [0-9]+ MB/s$' err \
  || { echo "FAIL merge summary"; cat err; fail=1; }
same_store ref m >same.txt || { echo "FAIL merged store differs from one plain run"; cat same.txt; fail=1; }
"$FC_BIN/cache-verify" -q --strict m >out 2>&1 || { echo "FAIL cache-verify on the merged store"; cat out; fail=1; }

# the --json object lost (a full disk, stdout closed) is exit 1 with the reason, not a silent 0
if [ -w /dev/full ]; then
  "$M" -q --json -o m s0 s1 s2 >/dev/full 2>err; check json-full 1 $?
  expect_err json-full "cache-merge: stdout: cannot write: No space left on device"
fi
"$M" -q --json -o m s0 s1 s2 >&- 2>err; check json-closed 1 $?
expect_err json-closed "cache-merge: stdout: cannot write: Bad file descriptor"
"$M" --json -o m s2 s1 s0 >out 2>err; check rerun 0 $?
expect_err rerun "cache-merge: nothing to do: all 248 entries of the 3 stores already in m"
"$PY" - out <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "nothing to do" and r["inputs"] == 3 and r["output"] == "m", r
assert sum(r["copied"].values()) == 0 and r["commits"] == 0, r
assert r["present"] == {"meta": 8, "audio": 60, "text": 60, "feat": 60, "tok": 60}, r
assert r["conflicts"] == 0 and r["dropped"] == 0 and r["bytes_in"] > 60 * 64, r
PY

# a failed commit (fault injection, in builds with -DFC_FAULT_INJECTION=ON as scripts/test makes):
# exit 1, the store consistent; a rerun completes it
if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  FC_FAULT=commit:3 "$M" --batch 7 -o m2 s0 s1 s2 >out 2>err; check fault 1 $?
  expect_err fault "cache-merge: m2: Input/output error
cache-merge: done: 15 of 248 entries in m2 (233 failed); run again to finish"
  "$FC_BIN/cache-verify" -q m2 >out 2>&1 || { echo "FAIL a merge stopped by a failed commit is not consistent"; cat out; fail=1; }
  "$M" --json -o m2 s0 s1 s2 >out 2>err; check resume 0 $?
  "$PY" -c 'import json,sys; r=json.load(open("out")); assert r["status"] == "done" and 0 < sum(r["copied"].values()) < 248 and sum(r["present"].values()) > 0, r' \
    || { echo "FAIL resume json"; cat out; fail=1; }
  same_store ref m2 >same.txt || { echo "FAIL resumed merge differs"; cat same.txt; fail=1; }
else
  echo "fault case not run: $FC_BIN was built without -DFC_FAULT_INJECTION=ON"
fi

# a conflict: a store whose LJ001-0001 has another transcript (same vocab, so same token config)
"$FC_BIN/tokenize" -q --build-vocab --export-vocab vocab.txt -o v c/metadata.csv || fail=1
head -1 c/metadata.csv | sed 's/|[^|]*|[^|]*$/|Other words.|other words./' >other.csv
"$FC_BIN/tokenize" -q --vocab vocab.txt -o sx other.csv || fail=1
sk=$(for k in 0 1 2; do "$PY" -c "import lmdb,sys; e=lmdb.open('s$k',readonly=True,lock=False,max_dbs=8); t=e.begin(); sys.exit(0 if t.get(b'LJ001-0001', db=e.open_db(b'text',txn=t,create=False)) else 1)" && echo s$k; done)
"$M" -o mc s0 s1 s2 sx >out 2>err; check conflict 1 $?
expect_err conflict "cache-merge: sx: text entry 'LJ001-0001' differs from $sk's: different transcripts: \"other words.\" vs \"$(sed -n 's/^LJ001-0001|[^|]*|//p' c/metadata.csv)\"; refused
cache-merge: 1 id with differing entries; nothing merged (choose a winner with --prefer first|last|STORE)"
[ -e mc ] && { echo "FAIL a refused merge created its output"; fail=1; }
"$M" -q --prefer sx -o mc s0 s1 s2 sx >out 2>err; check prefer-store 0 $?
grep -q "; kept sx's$" err || { echo "FAIL prefer sx: no 'kept' line"; cat err; fail=1; }
"$PY" -c "
import lmdb; e=lmdb.open('mc',readonly=True,lock=False,max_dbs=8); t=e.begin()
assert t.get(b'LJ001-0001', db=e.open_db(b'text',txn=t,create=False))[16:] == b'other words.'" \
  || { echo "FAIL prefer sx: wrong transcript kept"; fail=1; }
"$M" -q --prefer first -o mf s0 s1 s2 sx >out 2>err; check prefer-first 0 $?
"$PY" -c "
import lmdb; e=lmdb.open('mf',readonly=True,lock=False,max_dbs=8); t=e.begin()
assert t.get(b'LJ001-0001', db=e.open_db(b'text',txn=t,create=False))[16:] != b'other words.'" \
  || { echo "FAIL prefer first: wrong transcript kept"; fail=1; }
# --prefer a split store (merged as its parts): each part wins where it holds the id
"$FC_BIN/featurize" -q --writers 2 -o sxs </dev/null || fail=1
head -10 c/metadata.csv | sed 's/|[^|]*|[^|]*$/|Other words.|other words./' >other10.csv
"$FC_BIN/tokenize" -q --vocab vocab.txt -o sxs other10.csv || fail=1
"$M" -q --prefer sxs -o ms s0 s1 s2 sxs >out 2>err; check prefer-split 0 $?
[ "$(grep -c "; kept sxs/part-[01]'s$" err)" = 10 ] || { echo "FAIL prefer split: want 10 'kept' lines"; cat err; fail=1; }
"$PY" -c "
import lmdb; e=lmdb.open('ms',readonly=True,lock=False,max_dbs=8); t=e.begin()
db = e.open_db(b'text',txn=t,create=False)
kept = [k for k, v in t.cursor(db=db) if bytes(v)[16:] == b'other words.']
assert len(kept) == 10, kept" || { echo "FAIL prefer split: wrong transcripts kept"; fail=1; }
"$M" -q --prefer sxs/part-1 -o mp s0 s1 s2 sxs >out 2>err; check prefer-one-part 1 $?
# a split store is one of the STOREs given, however many parts it has
"$M" -q -o m1 sxs >out 2>err; check split-alone 0 $?
"$M" --json -o m1 sxs >out 2>err; check split-alone-rerun 0 $?
expect_err split-alone-rerun "cache-merge: nothing to do: all 14 entries of the 1 store already in m1"
"$PY" -c 'import json; r = json.load(open("out")); assert r["inputs"] == 1, r' || { echo "FAIL split alone: json inputs"; cat out; fail=1; }

# --shard usage errors
"$FC_BIN/featurize" --shard 3/3 -o x a.wav >out 2>err; check shard-range 2 $?
expect_err shard-range "featurize: invalid shard '3/3': the shards of 3 are 0/3 to 2/3 (K counts from 0: seq 0 2)
Try 'featurize --help' for more information."
env -u SLURM_ARRAY_TASK_ID "$FC_BIN/tokenize" --build-vocab --shard slurm -o x c/metadata.csv >out 2>err; check shard-slurm 2 $?
grep -q "^tokenize: --shard slurm: SLURM_ARRAY_TASK_ID is not set" err || { echo "FAIL shard slurm message"; cat err; fail=1; }
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3 "$FC_BIN/featurize" -q -j1 --shard slurm -o ss --manifest c/metadata.csv >out 2>err \
  || { echo "FAIL featurize --shard slurm"; cat err; fail=1; }
same_store s1 ss >/dev/null 2>&1 || true
"$PY" -c "
import lmdb
def ids(p):
    e=lmdb.open(p,readonly=True,lock=False,max_dbs=8); t=e.begin()
    return [k for k,_ in t.cursor(db=e.open_db(b'audio',txn=t,create=False))]
assert ids('ss') == ids('s1'), 'slurm task 1 of 3 != shard 1/3'" || fail=1
# a rerun of task 1 alone (sbatch --array=1): plain slurm cannot know N, a usage error, nothing
# made; slurm/3 makes shard 1 of 3, as in the full array
rerun() { SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=1 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=1 "$@"; }
rerun "$FC_BIN/featurize" -q -j1 --shard slurm -o sr --manifest c/metadata.csv >out 2>err; check shard-slurm-rerun 2 $?
grep -q "^featurize: --shard slurm: task 1 of an array of 1 tasks, ids 1 to 1 is not one of all N shards, .*: --shard slurm/N$" err ||
  { echo "FAIL shard slurm rerun message"; cat err; fail=1; }
[ -e sr ] && { echo "FAIL a refused --shard slurm made a store"; fail=1; }
rerun "$FC_BIN/featurize" -q -j1 --shard slurm/3 -o sr --manifest c/metadata.csv >out 2>err; check shard-slurm-3 0 $?
rerun "$FC_BIN/tokenize" -q -j1 --build-vocab --shard slurm/3 -o sr c/metadata.csv >out 2>err; check shard-slurm-3-tokenize 0 $?
"$PY" -c "
import lmdb
def ids(p, db):
    e=lmdb.open(p,readonly=True,lock=False,max_dbs=8); t=e.begin()
    return [k for k,_ in t.cursor(db=e.open_db(db,txn=t,create=False))]
assert ids('sr', b'audio') == ids('s1', b'audio'), 'rerun task 1, slurm/3 != shard 1/3'
assert ids('sr', b'text') == ids('s1', b'audio'), 'rerun task 1, tokenize slurm/3 != shard 1/3'" || fail=1
exit $fail
