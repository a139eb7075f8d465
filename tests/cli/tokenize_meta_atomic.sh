#!/usr/bin/env bash
# tokenize stores a token config (meta cfg/<hex>, created/<hex>) and the vocabulary or
# tokenizer.json it names (vocab/<hex>, tokenizer/<hex>) in one write transaction: a job cut short
# leaves both or neither, never a config whose vocabulary is missing (cache-verify's error once a
# record is made with it). Driven with FC_FAULT=put:n and commit:n for n = 1, 2, ... on a new
# store, chars (its vocabulary built from the corpus) and bpe (a tokenizer.json), until the run
# succeeds; after each run the store's meta must hold each token config with its bytes. The same
# for cache-merge copying such a store into a new one (--batch 1: meta is still one transaction).
set -uo pipefail
if ! grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON; scripts/test sets it)" >&2
  exit 77
fi
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
printf 'u1|Utterance number one.|utterance number one.\nu2|Said once, said twice.|said once, said twice.\n' >m.csv
make_bpe_json tok.json

# meta DIR: "none" (no token config stored), "both" (each token config with its created/ and its
# vocab/ or tokenizer/ bytes), or what is missing
meta() {
  "$PY" - "$1" <<'PY'
import json, os, sys, lmdb
if not os.path.exists(os.path.join(sys.argv[1], "data.mdb")):
    print("none"); sys.exit(0)
e = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=20)
with e.begin() as t:
    try:
        m = e.open_db(b"meta", txn=t, create=False)
    except lmdb.NotFoundError:
        print("none"); sys.exit(0)
    kv = {bytes(k): bytes(v) for k, v in t.cursor(db=m)}
cfgs = {k[4:]: json.loads(v) for k, v in kv.items() if k.startswith(b"cfg/")}
files = [k for k in kv if k.startswith((b"vocab/", b"tokenizer/", b"created/"))]
if not cfgs:
    print("none" if not files else "no config, but " + " ".join(f.decode() for f in files))
    sys.exit(0)
bad = []
for h, j in cfgs.items():
    f = b"tokenizer/" if j.get("tokenizer") == "bpe" else b"vocab/"
    for k in (b"created/" + h, f + h):
        if k not in kv:
            bad.append("cfg/%s without %s" % (h.decode(), k.decode()))
print(" ".join(bad) if bad else "both")
PY
}

# fault_loop LABEL CMD...: CMD (which writes store s) under FC_FAULT=put:n and commit:n for n = 1,
# 2, ... until a run has nothing injected: each injected run exits 1 or 2 and leaves meta none or
# both; the clean run exits 0 with both.
fault_loop() {
  local label=$1 site n rc got injected clean
  shift
  for site in put commit; do
    injected=0 clean=0
    for n in $(seq 1 40); do
      rm -rf s f.log
      FC_FAULT=$site:$n FC_FAULT_LOG=f.log "$@" >out 2>&1
      rc=$?
      got=$(meta s)
      [ -s f.log ] || {
        [ $rc = 0 ] || { echo "FAIL $label $site:$n: exit $rc with nothing injected"; cat out; fail=1; }
        [ "$got" = both ] || { echo "FAIL $label: a clean run stored: $got"; fail=1; }
        clean=1
        break
      }
      injected=$((injected + 1))
      case $rc in 1 | 2) ;; *) echo "FAIL $label $site:$n: exit $rc, want 1 or 2"; cat out; fail=1 ;; esac
      case $got in
      none | both) ;;
      *) echo "FAIL $label $site:$n (exit $rc): $got"; fail=1 ;;
      esac
    done
    [ $injected -gt 0 ] || { echo "FAIL $label: no $site fault was injected"; fail=1; }
    [ $clean = 1 ] || { echo "FAIL $label: still failing at $site:40"; fail=1; }
  done
}

fault_loop chars "$FC_BIN/tokenize" -q --build-vocab -o s m.csv
fault_loop bpe "$FC_BIN/tokenize" -q -t bpe --tokenizer-json tok.json -o s m.csv

"$FC_BIN/tokenize" -q --build-vocab -o src m.csv && "$FC_BIN/tokenize" -q -t bpe --tokenizer-json tok.json -o src m.csv ||
  { echo "FAIL: the store to merge"; exit 1; }
fault_loop cache-merge "$FC_BIN/cache-merge" -q --batch 1 -o s src
exit $fail
