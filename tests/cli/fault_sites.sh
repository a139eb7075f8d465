#!/usr/bin/env bash
# Every fault site (formats/fault.h) driven through the tools, SQLite faultsim style: for each site
# and n = 1, 2, ... FC_FAULT=site:n fails the n-th call of that site; after each run the tool must
# have exited with a documented code (1: items failed, with a `done: N of M` line and a line naming
# each failed input; 2: could not run, with a message naming the store), never crashed (the
# sanitizer build aborts on a leak or a bad access), and the store must pass cache-verify holding
# every record committed before. The loop ends when the run succeeds (the n-th call no longer
# exists); a site the job never reaches is said. Then a clean rerun completes the store.
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

keys() { # the store's feat/tok keys and values, hashed: committed work that must never go
  "$FC_PYTHON" - "$1" <<'PY'
import hashlib, os, sys, lmdb
if not os.path.exists(os.path.join(sys.argv[1], "data.mdb")):
    sys.exit(0)
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    for name in (b"feat", b"tok", b"audio", b"text"):
        try:
            db = env.open_db(name, txn=t, create=False)
        except lmdb.NotFoundError:
            continue
        for k, v in t.cursor(db=db):
            print(name.decode(), bytes(k).hex(), hashlib.sha1(bytes(v)).hexdigest())
PY
}

# drive TOOL-LABEL SITE STORE FRESH CMD...: loop n until the command succeeds. FRESH=1 starts
# each n on an empty store (so the n-th call exists for every n up to the job's count), else the
# store carries over (each run resumes the last: committed records must survive every failure).
drive() {
  local label=$1 site=$2 store=$3 fresh=$4; shift 4
  local n=1 before after out rc hit=0
  while [ $n -le 60 ]; do
    [ "$fresh" = 1 ] && rm -rf "$store"
    before=$(keys "$store")
    out=$(FC_FAULT="$site:$n" "$@" 2>&1); rc=$?
    [ $rc = 0 ] && break
    hit=$((hit + 1))
    case $rc in
    1) if [ "$label" = loader ]; then # Python: FeatcacheError naming the store and the reason
         grep -qE "FeatcacheError: featcache: $store: " <<<"$out" || fail "$label $site:$n: $out"
       else
         grep -qE "done: [0-9]+ of [0-9]+|[0-9]+ of [0-9]+ stores" <<<"$out" || fail "$label $site:$n: exit 1 without a summary: $out"
       fi ;;
    2) grep -qE "^[a-z-]+: " <<<"$out" || fail "$label $site:$n: exit 2 without a message: $out" ;;
    *) fail "$label $site:$n: exit $rc (crash?): $out" ;;
    esac
    if [ -f "$store/data.mdb" ]; then
      "$FC_BIN/cache-verify" -q "$store" >/dev/null 2>&1 || fail "$label $site:$n: store fails cache-verify"
      after=$(keys "$store")
      lost=$(comm -23 <(sort <<<"$before") <(sort <<<"$after") | grep -c . || true)
      [ "$lost" = 0 ] || fail "$label $site:$n: $lost committed records lost"
    fi
    n=$((n + 1))
  done
  [ $rc = 0 ] || fail "$label $site: still failing at n=60"
  local how=resumed; [ "$fresh" = 1 ] && how=fresh
  if [ $hit = 0 ]; then echo "$label $site ($how): not reached by this job"
  else echo "$label $site ($how): $hit injected failures survived, then success"; fi
}

for fresh in 1 0; do
  for site in env open read decode resample plan put commit grow; do
    rm -rf st
    drive featurize "$site" st $fresh "$FC_BIN/featurize" --device cpu -j 2 -o st --manifest list
  done
  for site in env put commit; do
    rm -rf tk
    drive tokenize "$site" tk $fresh "$FC_BIN/tokenize" --build-vocab -o tk --manifest metadata.csv
  done
done
"$FC_BIN/featurize" --device cpu -q -o full --manifest list || fail "clean featurize"
drive cache-verify env full 0 "$FC_BIN/cache-verify" -q full
drive loader env full 0 "$FC_PYTHON" -c 'import featcache, sys; n = sum(len(b) for b in featcache.Loader(sys.argv[1], batch_size=3)); sys.exit(0 if n == 8 else 3)' full
if [ -x "$FC_BIN/cache-merge" ]; then
  for site in env put commit; do
    rm -rf mg
    drive cache-merge "$site" mg 1 "$FC_BIN/cache-merge" -o mg full tk
  done
fi
[ $fails = 0 ] && echo "fault sites: all survived"
exit $((fails > 0))
