#!/usr/bin/env bash
# Concurrent creators of one new split store never hide data (docs/FORMAT.md "Split stores"):
# two featurize jobs started together on the same new directory, one with --writers 3 and one with
# --writers 2 (or 1: a store of one part), FC_SPLIT_RACE_TRIALS times (20; docs/RELIABILITY.md
# has a 50-trial run). In each trial exactly one layout is made: a job that did not get its
# layout exits 2 saying why (a job of one writer that finds the split store made writes into its
# parts, as on any existing split store); the loader reads all 10 utterances and cache-verify
# passes. Then cache-verify's split checks: a part
# that says K/N' under a marker of N, a part beyond the marker's N (hidden records), and a missing
# part are each named, exit 1.
set -u
B=${FC_BIN:?}
PY=${FC_PYTHON:-python3}
TRIALS=${FC_SPLIT_RACE_TRIALS:-20}
tmp=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

"$PY" - <<'PY' || { echo "FAIL: cannot make the test audio (numpy, soundfile: scripts/setup)"; exit 1; }
import numpy as np, soundfile as sf
rng = np.random.default_rng(4)
for i in range(10):
    n = int(rng.integers(4410, 11025))
    x = 0.3 * np.sin(2 * np.pi * rng.uniform(100, 3000) * np.arange(n) / 22050)
    sf.write(f"u{i}.wav", x.astype(np.float32), 22050, subtype="PCM_16")
PY
ls u*.wav >list

count() { # utterances the loader reads from store $1
  "$PY" -c 'import featcache, sys; print(sum(len(b) for b in featcache.Loader(sys.argv[1], batch_size=4, prefetch_threads=0)))' "$1" 2>&1
}

hidden=0 both=0 one=0
for t in $(seq 1 "$TRIALS"); do
  s=race$t
  other=$((t % 3 == 0 ? 1 : 2))
  "$B/featurize" -q --device cpu -j 1 --writers 3 -o "$s" - <list >/dev/null 2>a.err &
  pa=$!
  "$B/featurize" -q --device cpu -j 1 --writers $other -o "$s" - <list >/dev/null 2>b.err &
  pb=$!
  wait $pa; ra=$?
  wait $pb; rb=$?
  if [ $ra = 0 ] && [ $rb = 0 ]; then # one job found the other's store and wrote into it
    both=$((both + 1))
  fi
  [ $ra = 0 ] || [ $rb = 0 ] || fail "trial $t: neither job succeeded ($ra, $rb): $(cat a.err b.err)"
  for r in "a $ra" "b $rb"; do
    set -- $r
    case $2 in
    0) ;;
    2) grep -Eq "(split into [0-9]+ parts|a store of one part|split store: open it as its parts)" "$1.err" ||
      fail "trial $t: job $1 exit 2 without saying the layout: $(cat "$1.err")" ;;
    *) fail "trial $t: job $1 exit $2: $(cat "$1.err")" ;;
    esac
  done
  n=$(count "$s")
  if [ "$n" != 10 ]; then
    fail "trial $t: the loader reads $n of 10 utterances"
    hidden=$((hidden + 1))
  fi
  "$B/cache-verify" -q "$s" >v.out 2>&1 || { fail "trial $t: cache-verify: $(cat v.out)"; hidden=$((hidden + 1)); }
  [ $ra = 0 ] && [ $rb = 0 ] || one=$((one + 1))
done
echo "split-store creation races: $TRIALS trials, $one with one job refused, $both with both jobs writing into one layout, $hidden with data hidden or a store failing cache-verify"

# cache-verify's split checks
"$B/featurize" -q --device cpu --writers 3 -o sp - <list || fail "featurize --writers 3"
"$B/cache-verify" -q sp >/dev/null 2>&1 || fail "a sound split store fails cache-verify"
cp -r sp/part-1 sp/part-3
"$B/cache-verify" sp >v.out 2>&1; rc=$?
[ $rc = 1 ] || fail "a part beyond the marker: exit $rc, want 1"
grep -q "^sp: error: part-3: a part beyond the marker's 3 parts: its records are hidden" v.out ||
  fail "a part beyond the marker is not named: $(cat v.out)"
rm -rf sp/part-3
printf 'featcache-split/1 4\n' >sp/featcache-split
"$B/cache-verify" sp >v.out 2>&1; rc=$?
[ $rc = 1 ] || fail "a marker of 4 over parts of 3: exit $rc, want 1"
grep -q "^sp: error: part-3: missing: the marker says 4 parts" v.out || fail "a missing part is not named: $(cat v.out)"
grep -q "^sp/part-0: error: meta part: says it is part 0 of 3, but the split store's marker says 4 parts" v.out ||
  fail "a part's K/N against the marker is not checked: $(cat v.out)"
printf 'featcache-split/1 3\n' >sp/featcache-split
mv sp/part-2 sp/p2 && mv sp/part-1 sp/part-2 && mv sp/p2 sp/part-1
"$B/cache-verify" sp >v.out 2>&1; rc=$?
[ $rc = 1 ] || fail "parts swapped: exit $rc, want 1"
grep -q "^sp/part-1: error: meta part: says it is part 2 of 3, but lies in a directory named part-1" v.out ||
  fail "a part in another part's directory is not named: $(cat v.out)"

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
