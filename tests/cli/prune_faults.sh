#!/usr/bin/env bash
# cache-prune cut short at every write: FC_FAULT=put:N and commit:N for N = 1, 2, ... (--batch 1:
# one delete per transaction, entries before records) until a run goes through. After each failed
# run the store must verify with at most orphan warnings (never an entry without its record, never
# an index naming a record that is gone), and a plain rerun must finish: cache-verify --strict
# passes, the dropped ids are gone, the kept ones served. A commit that fails is a kill at that
# instant (each transaction is atomic). Skipped (77) in a build without the fault countdowns.
set -u
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

[ $fails = 0 ] && echo "prune_faults: ok"
exit $((fails > 0))
