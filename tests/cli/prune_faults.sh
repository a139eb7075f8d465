#!/usr/bin/env bash
# cache-prune cut short at every write: FC_FAULT=put:N and commit:N for N = 1, 2, ... (--batch 1:
# one delete per transaction, entries before records) until a run goes through. After each failed
# run the store must verify with at most orphan warnings (never an entry without its record, never
# an index naming a record that is gone), and a plain rerun must finish: cache-verify --strict
# passes, the dropped ids are gone, the kept ones served. A commit that fails is a kill at that
# instant (each transaction is atomic); so, below, are SIGINT, SIGTERM and SIGKILL in the middle
# of a run; and a commit of another process (a writer that takes no lock) before one of its
# transactions. Skipped (77) in a build without the fault countdowns.
set -u
. "$FC_SRC/tests/cli/stop_site.bash" # sigint_default
CP=${FC_BIN:?}/cache-prune
FZ=$FC_BIN/featurize
TK=$FC_BIN/tokenize
CV=$FC_BIN/cache-verify
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

mkdir wavs
for i in 1 2 3 4 5; do
  sox -n -r 22050 -b 16 "wavs/u$i.wav" synth 0.$((i + 2)) sine $((150 * i)) ||
    { echo "FAIL: sox failed"; exit 1; }
  echo "u$i|word $i.|word $i." >>m.csv
done
"$FZ" -q --writers 1 --device cpu --manifest m.csv -o base || fail "featurize"
"$TK" -q --manifest m.csv --build-vocab --export-vocab v.txt -o base || fail "tokenize"
# two orphans of each kind, and two ids to drop
for i in 1 2; do sox -n -r 22050 -b 16 "wavs/u$i.wav" synth 0.6 sine $((900 + 50 * i)); done
sed -i -e 's/^u1|.*/u1|other 1.|other 1./' -e 's/^u2|.*/u2|other 2.|other 2./' m.csv
"$FZ" -q --device cpu --manifest m.csv -o base || fail "featurize again"
"$TK" -q --manifest m.csv --vocab v.txt -o base || fail "tokenize again"
grep -v -e '^u4|' -e '^u5|' m.csv >keep.csv

# a build without the countdowns ignores FC_FAULT: the first run would go through
cp -r base probe
FC_FAULT=commit:1 "$CP" -q --batch 1 --manifest keep.csv probe >/dev/null 2>&1
if [ $? = 0 ]; then echo "skip: built without -DFC_FAULT_INJECTION=ON"; exit 77; fi

for site in put commit; do
  n=1
  while :; do
    rm -rf s && cp -r base s
    FC_FAULT=$site:$n FC_FAULT_LOG=log "$CP" -q --batch 1 --manifest keep.csv s >out 2>err
    rc=$?
    [ $rc = 0 ] && break
    [ $rc = 1 ] || { fail "$site:$n: exit $rc, want 1"; cat err; }
    grep -q "^cache-prune: s: " err || { fail "$site:$n: no message naming the store"; cat err; }
    # what is left verifies, with orphans at most
    "$CV" s >vout 2>&1 || { fail "$site:$n: the store fails cache-verify"; cat vout; }
    grep ': warning: ' vout | grep -v ': orphan: ' && fail "$site:$n: a warning other than orphans"
    "$CP" -q s --manifest keep.csv >out 2>err || { fail "$site:$n: the rerun"; cat err; }
    "$CV" --strict --manifest keep.csv --expect-tokens s >vout 2>&1 ||
      { fail "$site:$n: after the rerun"; cat vout; }
    n=$((n + 1))
    [ $n -le 60 ] || { fail "$site: still failing at $n"; break; }
  done
  [ $n -gt 1 ] || fail "$site: never reached"
  echo "$site: $((n - 1)) failures injected, each left a store that verifies"
done
"$CV" --strict --manifest keep.csv --expect-tokens s >vout 2>&1 || { fail "the last run"; cat vout; }
"$PY" - s <<'PY' || fail "the loader after the prunes"
import featcache, sys
ids = sorted(i for b in featcache.Loader(sys.argv[1], batch_size=2, tokens="chars") for i in b.ids)
assert ids == ["u1", "u2", "u3"], ids
PY

# A commit of another process between the snapshot cache-prune chose its deletions in and one of
# its transactions (a writer that takes no lock: an older featcache, py-lmdb) may refer to a record
# it found orphaned: the prune stops (exit 1), nothing removed after that commit, and a rerun
# finishes. FC_FAULT_STOP=prune:N stops cache-prune (SIGSTOP) before its N-th transaction; the
# commit is made then, and SIGCONT lets it go on.
if "$PY" -c 'import lmdb' 2>/dev/null; then
  for n in 1 2; do
    rm -rf s && cp -r base s
    "$CP" -n --manifest keep.csv s >dry.base 2>&1
    FC_FAULT_STOP=prune:$n "$CP" --batch 1 --manifest keep.csv s >out 2>err &
    pid=$!
    for _ in $(seq 200); do
      [ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" = T ] && break
      sleep 0.05
    done
    if [ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" != T ]; then
      fail "FC_FAULT_STOP=prune:$n: cache-prune never stopped before its transaction $n"
      kill -9 $pid 2>/dev/null
      wait $pid 2>/dev/null
      continue
    fi
    "$PY" - s <<'PY' || fail "prune:$n: the other writer's commit"
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=8)
with env.begin(write=True, db=env.open_db(b"meta", create=False)) as t:
    t.put(b"x-another-writer", b"1")
PY
    kill -CONT $pid
    wait $pid
    rc=$?
    [ $rc = 1 ] || { fail "a commit before prune's transaction $n: exit $rc, want 1"; cat err; }
    grep -q "^cache-prune: s: another process wrote to the store meanwhile" err ||
      { fail "a commit before prune's transaction $n: message"; cat err; }
    "$CP" -n --manifest keep.csv s >dry 2>&1
    if [ $n = 1 ]; then
      cmp -s dry dry.base || fail "a commit before prune's first transaction: something removed: $(cat dry)"
    else
      cmp -s dry dry.base && fail "a commit before prune's second transaction: the first not kept"
    fi
    "$CV" s >vout 2>&1 || { fail "prune:$n: the store fails cache-verify"; cat vout; }
    "$CP" -q --manifest keep.csv s || fail "prune:$n: the rerun"
    "$CV" --strict --manifest keep.csv --expect-tokens s >vout 2>&1 ||
      { fail "prune:$n: after the rerun"; cat vout; }
  done
else
  echo "note: $PY has no lmdb module: the other writer's commit is not tested"
fi

# Ctrl-C, SIGTERM and SIGKILL in the middle of a long prune (one synced commit per orphan): the
# signalled runs say so and exit 130/143, and each leaves a store that verifies with at most orphan
# warnings; a rerun finishes. The signal lands mid-prune by construction: FC_FAULT_STOP=prune:20
# stops cache-prune before its 20th transaction, the signal is sent, and SIGCONT lets it go on (a
# timed signal came after the last delete on a loaded machine: the store clean, the test failed).
for i in $(seq 1500); do echo "t$i|text number $i.|text number $i."; done >t.csv
"$TK" -q --manifest t.csv --build-vocab --export-vocab tv.txt -o tbase || fail "tokenize t"
sed 's/text number/another text/g' t.csv >t2.csv
"$TK" -q --manifest t2.csv --vocab tv.txt -o tbase || fail "tokenize t again"
for sig in INT TERM KILL; do
  rm -rf t && cp -r tbase t
  FC_FAULT_STOP=prune:20 sigint_default "$CP" --batch 1 t >out 2>err &
  pid=$!
  for _ in $(seq 400); do
    [ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" = T ] && break
    sleep 0.05
  done
  if [ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" != T ]; then
    fail "SIG$sig: cache-prune never stopped before its transaction 20"
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    continue
  fi
  kill -$sig $pid 2>/dev/null
  kill -CONT $pid 2>/dev/null
  wait $pid 2>/dev/null
  rc=$?
  case $sig in INT) want=130 ;; TERM) want=143 ;; KILL) want=137 ;; esac
  [ $rc = $want ] || { fail "SIG$sig: exit $rc, want $want"; cat err; }
  if [ $sig != KILL ]; then
    grep -q '^cache-prune: t: interrupted: run again to finish$' err || { fail "SIG$sig: message"; cat err; }
    grep -q '^cache-prune: t: removed [0-9]* orphan records' err || { fail "SIG$sig: no summary"; cat err; }
  fi
  "$CV" t >vout 2>&1 || { fail "SIG$sig: the store fails cache-verify"; cat vout; }
  grep ': warning: ' vout | grep -v ': orphan: ' && fail "SIG$sig: a warning other than orphans"
  grep -q ': orphan: ' vout || fail "SIG$sig: no orphan left: the signal came after the last delete"
  "$CP" -q t || fail "SIG$sig: the rerun"
  "$CV" --strict t >vout 2>&1 || { fail "SIG$sig: after the rerun"; cat vout; }
done

[ $fails = 0 ] && echo "prune_faults: ok"
exit $((fails > 0))
