#!/usr/bin/env bash
# Every fault site (formats/common/fault.h) driven through the tools, SQLite faultsim style: for each site
# and n = 1, 2, ... FC_FAULT=site:n fails the n-th call of that site; after each run the tool must
# have exited with a documented code (1: items failed, with a `done: N of M` line and a line naming
# each failed input; 2: could not run, with a message naming the store), never crashed (the
# sanitizer build aborts on a leak or a bad access), and the store must pass cache-verify holding
# every record committed before. The loop ends when the run succeeds (the n-th call no longer
# exists); a site the job never reaches fails the test. Then a clean rerun completes the store.
# By hand: FC_FAULT_SITES="alloc grow" runs only those sites; FC_FAULT_STRIDE (below) samples the
# long allocation loops.
set -uo pipefail
if ! grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON; scripts/test sets it)" >&2
  exit 77
fi
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$FC_PYTHON" - <<'PY' || exit 1
import wave
import numpy as np
rng = np.random.default_rng(5)
lines = []
for i in range(8):
    sr = 22050 if i % 2 else 16000          # half of them need soxr
    x = 0.3 * np.sin(2 * np.pi * 300 * (1 + i) * np.arange(sr) / sr) + 0.02 * rng.standard_normal(sr)
    with wave.open("f%d.wav" % i, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(sr)
        w.writeframes((x * 32767).astype("<i2").tobytes())
    lines.append("f%d|sentence number %d, with words.|sentence number %d, with words." % (i, i, i))
open("metadata.csv", "w").write("\n".join(lines) + "\n")
PY
ls f*.wav >list

keys() { # the store's feat/tok/audio/text keys and values, hashed: committed work that must never
  # go; and "meta" once its meta db exists (nothing at all: nothing was ever committed)
  "$FC_PYTHON" - "$1" <<'PY'
import hashlib, os, sys, lmdb
if not os.path.exists(os.path.join(sys.argv[1], "data.mdb")):
    sys.exit(0)
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    try:
        env.open_db(b"meta", txn=t, create=False)
        print("meta")
    except lmdb.NotFoundError:
        pass
    for name in (b"feat", b"tok", b"audio", b"text"):
        try:
            db = env.open_db(name, txn=t, create=False)
        except lmdb.NotFoundError:
            continue
        for k, v in t.cursor(db=db):
            print(name.decode(), bytes(k).hex(), hashlib.sha1(bytes(v)).hexdigest())
PY
}

# sums OUT: every summary line the run printed adds up: `done: N of M` (N: processed and skipped)
# plus its failed (`F failed`), `K not started`, and for cache-verify `K not clean, J not
# checked`, is M; in --json, processed + skipped_existing + failed + not_started = total (lines).
sums() {
  local line a t f p s x ns tt
  while IFS= read -r line; do
    case $line in
    *"done: "*" of "* | *"interrupted: "*" of "*)
      [[ $line =~ (done|interrupted):\ ([0-9]+)\ of\ ([0-9]+) ]] || continue
      a=${BASH_REMATCH[2]} t=${BASH_REMATCH[3]} f=0 ns=0
      [[ $line =~ [\(\ ]([0-9]+)\ failed ]] && f=${BASH_REMATCH[1]}
      [[ $line =~ [\(\ ]([0-9]+)\ not\ (started|clean) ]] && ns=${BASH_REMATCH[1]}
      [[ $line =~ [\(\ ]([0-9]+)\ not\ checked ]] && f=${BASH_REMATCH[1]}
      [ $((a + f + ns)) = "$t" ] || echo "summary does not add up ($a + $f + $ns != $t): $line" ;;
    "{\"processed\":"*)
      p=0 s=0 x=0 ns=0 tt=
      [[ $line =~ \"processed\":([0-9]+) ]] && p=${BASH_REMATCH[1]}
      [[ $line =~ \"skipped_existing\":([0-9]+) ]] && s=${BASH_REMATCH[1]}
      [[ $line =~ \"failed\":([0-9]+) ]] && x=${BASH_REMATCH[1]}
      [[ $line =~ \"not_started\":([0-9]+) ]] && ns=${BASH_REMATCH[1]}
      [[ $line =~ \"(total|lines)\":([0-9]+) ]] && tt=${BASH_REMATCH[2]}
      [ $((p + s + x + ns)) = "$tt" ] || echo "JSON counts do not add up ($p + $s + $x + $ns != $tt): $line" ;;
    esac
  done <<<"$1"
}

# drive TOOL-LABEL SITE STORE FRESH CMD...: loop n until the n-th call of SITE no longer happens
# (the run succeeds and FC_FAULT_LOG shows no failure injected; a run may also succeed having
# absorbed its failure, e.g. an allocation with a fallback). FRESH=1 starts each n on an empty
# store (so the n-th call exists for every n up to the job's count), else the store carries over
# (each run resumes the last: committed records must survive every failure). n steps by 1, but
# the `alloc` loops (hundreds of allocations per job) step by 1 up to 40 and then by
# FC_FAULT_STRIDE: by default 7 (17 in the sanitizer build), so that CI samples every 7th (17th)
# allocation past the 40th; FC_FAULT_STRIDE=1 runs every n (docs/RELIABILITY.md's figures).
alloc_stride=${FC_FAULT_STRIDE:-$([ "${FC_SANITIZE:-0}" = 1 ] && echo 17 || echo 7)}
want() { [ -z "${FC_FAULT_SITES:-}" ] || [[ " $FC_FAULT_SITES " == *" $1 "* ]]; }
drive() {
  local label=$1 site=$2 store=$3 fresh=$4; shift 4
  want "$site" || return 0
  local n=1 before after out rc hit=0 absorbed=0 stride=$alloc_stride bad
  [ "$site" = alloc ] || stride=1
  [ "$fresh" = 1 ] || after=$(keys "$store")
  while [ $n -le 5000 ]; do
    if [ "$fresh" = 1 ]; then rm -rf "$store"; before=; else before=$after; fi
    rm -f "$tmp/fault.log"
    out=$(FC_FAULT="$site:$n" FC_FAULT_LOG="$tmp/fault.log" "$@" 2>&1); rc=$?
    if [ ! -s "$tmp/fault.log" ]; then
      [ $rc = 0 ] && break
      fail "$label $site:$n: exit $rc with no failure injected: $out"
      break
    fi
    hit=$((hit + 1))
    case $rc in
    0) absorbed=$((absorbed + 1)) ;;
    1) if [ "$label" = loader ] || [ "$label" = loader-mq ]; then # Python: FeatcacheError naming the store and the reason,
         # or out of memory (planning an epoch, a batch: the reason is the memory, not a store),
         # the reason said once (it used to read "next batch: Cannot allocate memory (Cannot
         # allocate memory)": tests/python/test_loader_errors.py)
         grep -qE "FeatcacheError: (featcache: $store: |.*(Cannot allocate memory|out of memory))" <<<"$out" || fail "$label $site:$n: $out"
         ! grep -qE "^[a-z_.]*FeatcacheError: .*(Cannot allocate memory|out of memory).*(Cannot allocate memory|out of memory)" <<<"$out" ||
           fail "$label $site:$n: the reason is said twice: $(grep -E "^[a-z_.]*FeatcacheError: " <<<"$out")"
       elif [ "$label" = profiler ]; then # Python: StepProfiler.save raises OSError naming the file
         grep -qE "OSError: \[Errno [0-9]+\] [^:]+: '(p|pt)\.json'" <<<"$out" || fail "$label $site:$n: $out"
       else
         # the rule (every exit 1 comes with an `N of M` summary), whatever failed: out of
         # memory before anything was done too ("... done: 0 of 2 stores (2 not started),
         # nothing done"); a line that only says "nothing done" counts nothing
         grep -qE "done: [0-9]+ of [0-9]+|[0-9]+ of [0-9]+ stores" <<<"$out" || fail "$label $site:$n: exit 1 without a summary: $out"
       fi ;;
    2) grep -qE "^[a-z-]+: " <<<"$out" || fail "$label $site:$n: exit 2 without a message: $out" ;;
    *) fail "$label $site:$n: exit $rc (crash?): $out" ;;
    esac
    if [ "$site" = alloc ] && [ $rc != 0 ] && ! grep -qiE "out of memory|Cannot allocate memory" <<<"$out"; then
      fail "$label $site:$n: exit $rc without saying it ran out of memory: $out"
    fi
    bad=$(sums "$out")
    [ -z "$bad" ] || fail "$label $site:$n: $bad"
    [ -z "${POST:-}" ] || $POST "$label $site:$n"
    after=$(keys "$store")
    if [ -n "$after" ]; then # (a run failed before its first commit leaves an empty environment
      # at most, which the next run takes as new: nothing to verify, as in scripts/crash-trials)
      "$FC_BIN/cache-verify" -q "$store" >/dev/null 2>&1 || fail "$label $site:$n: store fails cache-verify"
    fi
    lost=$(comm -23 <(sort <<<"$before") <(sort <<<"$after") | grep -c . || true)
    [ "$lost" = 0 ] || fail "$label $site:$n: $lost committed records lost"
    if [ $n -lt 40 ]; then n=$((n + 1)); else n=$((n + stride)); fi
  done
  [ $n -le 5000 ] || fail "$label $site: still failing at n=5000"
  local how=resumed; [ "$fresh" = 1 ] && how=fresh
  # a site the job never reaches tested nothing: the countdown is dead there, or the job no longer
  # calls it (a map that never grows, a commit path that skips the site): that is a failure
  if [ $hit = 0 ]; then fail "$label $site ($how): not reached by this job: no failure was injected"
  else echo "$label $site ($how): $hit injected failures survived ($absorbed absorbed by the run)"; fi
}

# Every store starts with a 16 KiB map (test builds only: libcache/core/store/store.c), so that these
# small jobs grow it several times and reach the `grow` site, under every other site's faults too.
export FC_FAULT_MAPSIZE=16384
for fresh in 1 0; do
  for site in env open read decode resample plan put commit grow alloc; do
    rm -rf st
    drive featurize "$site" st $fresh "$FC_BIN/featurize" --device cpu -j 2 -o st --manifest list --json
  done
  for site in env put commit grow alloc; do
    rm -rf tk
    drive tokenize "$site" tk $fresh "$FC_BIN/tokenize" --build-vocab -o tk --manifest metadata.csv --json
  done
done

# An exported file (tokenize --export-vocab; fc_outfile) is written whole or not at all: after
# each failed open/write/sync/close/rename the previous file is there, unchanged, and no
# temporary is left beside it.
vocab_intact() {
  [ "$(cat vocab.txt 2>/dev/null)" = "previous vocab" ] || fail "$1: vocab.txt changed: $(head -c 80 vocab.txt 2>&1)"
  ! ls vocab.txt.tmp.* >/dev/null 2>&1 || fail "$1: a temporary was left: $(ls vocab.txt.tmp.*)"
}
rm -rf tk
echo "previous vocab" >vocab.txt
POST=vocab_intact drive tokenize write tk 1 "$FC_BIN/tokenize" --build-vocab -o tk --manifest metadata.csv --export-vocab vocab.txt
if want write; then
  [ "$(wc -l <vocab.txt)" -gt 5 ] || fail "tokenize --export-vocab: the vocab was not written by the run that succeeded"
fi
[ -d tk ] || "$FC_BIN/tokenize" -q --build-vocab -o tk --manifest metadata.csv || fail "clean tokenize"

"$FC_BIN/featurize" --device cpu -q -o full --manifest list || fail "clean featurize"
# the same job coded (--dtype mq): zstd's contexts allocate through the `alloc` site too
drive featurize-mq alloc mqs 1 "$FC_BIN/featurize" --device cpu -j 2 --dtype mq -o mqs --manifest list --json
"$FC_BIN/featurize" --device cpu -q --dtype mq -o fullmq --manifest list || fail "clean featurize --dtype mq"
# loader-bench's chart and trace (fc_outfile): each is its previous contents or whole, never half
charts_intact() {
  local svg trace
  svg=$(tail -n 1 c.svg 2>&1) trace=$(tail -c 3 t.json 2>&1)
  [ "$svg" = old ] || [ "$svg" = "</svg>" ] || fail "$1: c.svg is neither the old one nor whole: ...$svg"
  [ "$(cat t.json 2>&1)" = old ] || [ "$trace" = "]}" ] || fail "$1: t.json is neither the old one nor whole: ...$trace"
  ! ls ./*.tmp.* >/dev/null 2>&1 || fail "$1: a temporary was left: $(ls ./*.tmp.*)"
}
echo old >c.svg
echo old >t.json
POST=charts_intact drive loader-bench write full 0 "$FC_BIN/loader-bench" -q -b 2 --steps 3 --compute-ms 1 --svg c.svg --trace t.json full
if want write; then
  [ "$(tail -n 1 c.svg)" = "</svg>" ] && [ "$(tail -c 3 t.json)" = "]}" ] || fail "loader-bench: the chart and trace were not written by the run that succeeded"
fi

# cache-bench's chart and key dump (fc_outfile): the old file or a whole one (the dump: a line per
# record read, "pass pattern state threads batch key", 2 passes of the 8 records, and the probe's
# reads, "probe ..."), never half
bench_intact() {
  local svg dump
  svg=$(tail -n 1 b.svg 2>&1) dump=$(tail -n 1 d.txt 2>&1)
  [ "$svg" = old ] || [ "$svg" = "</svg>" ] || fail "$1: b.svg is neither the old one nor whole: ...$svg"
  [ "$dump" = old ] || { [ "$(grep -vc '^probe ' d.txt)" = 16 ] && [[ $dump =~ ^1\ .*\ [0-9a-f]{32}$ ]]; } ||
    fail "$1: d.txt is neither the old one nor whole: $(grep -vc '^probe ' d.txt) lines of passes, ...$dump"
  ! ls ./*.tmp.* >/dev/null 2>&1 || fail "$1: a temporary was left: $(ls ./*.tmp.*)"
}
echo old >b.svg
echo old >d.txt
POST=bench_intact drive cache-bench write full 0 "$FC_BIN/cache-bench" -p sequential -s warm -b 2 --duration 0.2 --svg b.svg --dump-order d.txt full
if want write; then
  [ "$(tail -n 1 b.svg)" = "</svg>" ] && [ "$(tail -n 1 d.txt)" != old ] || fail "cache-bench: the chart and key dump were not written by the run that succeeded"
fi

# cache-bench --direct's open of data.mdb and its reads (EINVAL): the pass fails, exit 1 with its
# `done: N of M passes (F failed)` line (tests/cli/bench_direct_errors.sh: the messages)
if dd if=full/data.mdb of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null; then
  for site in directopen directread; do
    drive cache-bench "$site" full 0 "$FC_BIN/cache-bench" --no-probe --direct -p random -s cold -b 2 --duration 0 full
  done
else
  echo "cache-bench directopen, directread: not driven (this filesystem does not do O_DIRECT)"
fi

# the profiler's saves (fc_profiler_save, through featcache.StepProfiler.save and .save_trace)
prof_intact() {
  local f
  for f in p.json pt.json; do
    [ "$(cat $f)" = old ] || "$FC_PYTHON" -c 'import json, sys; json.load(open(sys.argv[1]))' $f 2>/dev/null ||
      fail "$1: $f is neither the old one nor whole JSON: ...$(tail -c 40 $f)"
  done
  ! ls ./*.tmp.* >/dev/null 2>&1 || fail "$1: a temporary was left: $(ls ./*.tmp.*)"
}
echo old >p.json
echo old >pt.json
POST=prof_intact drive profiler write full 0 "$FC_PYTHON" -c '
from featcache.profiler import StepProfiler
p = StepProfiler()
for i in range(3):
    with p.step():
        with p.phase("data"):
            pass
p.save("p.json")
p.save_trace("pt.json")'
if want write; then
  [ "$(cat p.json)" != old ] && [ "$(cat pt.json)" != old ] || fail "profiler: the profile and trace were not saved by the run that succeeded"
fi

for site in env alloc; do
  drive cache-verify $site full 0 "$FC_BIN/cache-verify" -q full
  drive loader $site full 0 "$FC_PYTHON" -c 'import featcache, sys; n = sum(len(b) for b in featcache.Loader(sys.argv[1], batch_size=3)); sys.exit(0 if n == 8 else 3)' full
done
# the other tools over stores, out of memory at each allocation (while they list the STOREs,
# open one, read it): exit 1 with the summary every exit 1 has (STOREs listed or pruned, passes
# run; it was exit 2 for the only store, or exit 1 with only "STORE: Cannot allocate memory")
drive cache-config alloc full 0 "$FC_BIN/cache-config" full tk
drive cache-prune alloc full 0 "$FC_BIN/cache-prune" --dry-run full tk
cp -r full pr
drive cache-prune alloc pr 0 "$FC_BIN/cache-prune" pr
# out of memory reading a manifest's ids (its first allocation), before any STORE: exit 1 with
# the summary (it was exit 2, a usage error's code, "list: out of memory")
if want alloc; then
  out=$(FC_FAULT=alloc:1 "$FC_BIN/cache-prune" --dry-run --manifest list full 2>&1)
  rc=$?
  [ $rc = 1 ] && [ "$out" = "cache-prune: list: out of memory reading its ids: done: 0 of 1 store (1 not started), nothing removed" ] ||
    fail "cache-prune --manifest, out of memory reading it: exit $rc: $out"
fi
drive cache-bench alloc full 0 "$FC_BIN/cache-bench" -p sequential -s warm -b 2 --duration 0.2 full
# coded records: cache-verify and the loader decode them (zstd's decoder on the `alloc` site)
drive cache-verify-mq alloc fullmq 0 "$FC_BIN/cache-verify" -q fullmq
drive loader-mq alloc fullmq 0 "$FC_PYTHON" -c 'import featcache, sys; n = sum(len(b) for b in featcache.Loader(sys.argv[1], batch_size=3)); sys.exit(0 if n == 8 else 3)' fullmq

# cache-merge with small batches (--batch 3: several commits per db) into a 16 KiB map that it
# grows mid-run (FC_FAULT_MAPSIZE makes it skip sizing the map up front: libcache/core/merge/merge.c),
# once on a fresh output per n and once resuming the same output, which must keep every entry
# committed before each failure
if [ -x "$FC_BIN/cache-merge" ]; then
  for fresh in 1 0; do
    for site in env put commit grow alloc; do
      rm -rf mg
      drive cache-merge "$site" mg $fresh "$FC_BIN/cache-merge" --batch 3 -o mg full tk
    done
  done
fi
[ $fails = 0 ] && echo "fault sites: all survived"
exit $((fails > 0))
