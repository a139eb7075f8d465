#!/usr/bin/env bash
# cache-prune --compact holds the writer lock exclusive on the compact copy from before its rename
# over data.mdb to its end (docs/cache-prune.md "Space"; compact.c): it held it on the file replaced
# only, so from the swap on (FC_FAULT_STOP=compact:2 stops it there, its directory not yet synced
# and LMDB's write lock still held) the store's data.mdb was free to take. A second cache-prune
# took it and hung on LMDB's write lock without a word (refused now: "in use: ... a cache-prune
# runs on it", exit 1), and a writer (tokenize) opened it without saying that cache-prune runs
# (it says so now, waits, and writes once cache-prune has finished: its text is in the store).
set -u
FZ=${FC_BIN:?}/featurize
TK=$FC_BIN/tokenize
CV=$FC_BIN/cache-verify
CP=$FC_BIN/cache-prune
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
. "$FC_SRC/tests/cli/stop_site.bash" # stopped PID

mkdir wavs
for i in 1 2 3 4 5 6; do
  sox -n -r 22050 -b 16 "wavs/u$i.wav" synth 1.$i sine $((200 * i)) ||
    { echo "FAIL: sox failed"; exit 1; }
  echo "u$i|word $i.|word $i." >>m.csv
done
"$FZ" -q --writers 1 --device cpu --manifest m.csv -o s || fail "featurize"
"$TK" -q --manifest m.csv --build-vocab --export-vocab v.txt -o s || fail "tokenize"
head -3 m.csv >keep.csv
"$CP" -q --manifest keep.csv s || fail "prune" # free pages: --compact has something to give back
sed 's/^u1|.*/u1|changed one.|changed one./' keep.csv >keep2.csv

FC_FAULT_STOP=compact:2 "$CP" -q --compact s >pout 2>perr &
pid=$!
pids+=("$pid")
if ! stopped "$pid"; then
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  echo "skip: FC_FAULT_STOP=compact:2 did not stop cache-prune (built without -DFC_FAULT_INJECTION=ON?)"
  [ $fails = 0 ] || exit 1
  exit 77
fi
i0=$(stat -c %i s/data.mdb)
ls s | grep -q '^data.mdb.compact-' && fail "stopped before the swap, not after it"

# a second cache-prune: refused at once, naming the one that runs (it hung, not a word)
timeout 20 "$CP" s >out 2>err
rc=$?
[ $rc = 1 ] || { fail "second cache-prune: exit $rc, want 1 (124: it hung)"; cat err; }
grep -qx "cache-prune: s: in use: process $pid (cache-prune) holds it exclusively: a cache-prune runs on it; nothing removed: run cache-prune when it has finished" err ||
  { fail "second cache-prune: message"; cat err; }

# a writer: says that it waits, and does not write while cache-prune runs
"$TK" --manifest keep2.csv --vocab v.txt -o s >tout 2>terr &
tp=$!
pids+=("$tp")
for _ in $(seq 200); do grep -q 'cache-prune is running on it' terr && break; sleep 0.05; done
grep -q 'cache-prune is running on it' terr || { fail "writer: tokenize did not say it waits"; cat terr; }
sleep 0.5
kill -0 "$tp" 2>/dev/null || fail "writer: tokenize finished while cache-prune was stopped"
[ "$(stat -c %i s/data.mdb)" = "$i0" ] || fail "data.mdb replaced again meanwhile"

kill -CONT "$pid"
wait "$pid" || { fail "cache-prune --compact"; cat perr; }
wait "$tp" || { fail "writer: tokenize"; cat terr; }
"$CV" --manifest keep2.csv --expect-tokens s >vout 2>&1 ||
  { fail "the writer's text is not in the store"; cat vout; }
ls s | grep -v -e '^data.mdb$' -e '^lock.mdb$' && fail "files left beside the store"

[ $fails = 0 ] && echo "ok" || exit 1
