#!/usr/bin/env bash
# tokenize --build-vocab reads the whole corpus for the vocab before it stores anything (for
# phonemes, espeak-ng on every line: minutes on a large corpus). SIGINT or SIGTERM in that pass
# stops it at the next batch: exit 130 (143), nothing stored (a vocab without the lines not read
# would be another config), every line counted as not started; a rerun stores them all. (It used to
# read the rest of the corpus for the vocab, then tokenize and commit a batch, and only then stop.)
# A corpus of one batch (--batch 4096, the default, over 20 lines): the signal comes in the vocab
# pass's only batch, and the run stops after it, before the config or any line is stored. (It used
# to go on and tokenize and commit the whole corpus, then exit 130.)
# To hold the run inside the vocab pass without timing it, the first line's espeak-ng child hangs
# (FC_FAULT=espeakhang:1, every line read in a child: FC_PHONEMIZE_CHILD=all) until it is killed
# after FC_PHONEMIZE_TIMEOUT; the signal is sent while that child exists. SIGINT only: SIGTERM sets
# the same flag (tokenize_bad_inputs.sh sends it mid-run), and each case waits out the timeout.
set -u
. "$FC_SRC/tests/cli/stop_site.bash" # sigint_default
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
if ! grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON; scripts/test sets it)" >&2
  exit 77
fi
command -v pgrep >/dev/null || { echo "skipped: no pgrep (procps) to see the phonemizer's child" >&2; exit 77; }
d=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }
for i in $(seq -w 1 20); do printf 'u%s\tLine number %d is here.\n' "$i" "$((10#$i))"; done >"$d/in.tsv"

for b in 1 4096; do
  sig=INT
  want=$((128 + $(kill -l "$sig")))
  FC_FAULT=espeakhang:1 FC_PHONEMIZE_CHILD=all FC_PHONEMIZE_TIMEOUT=6 \
    sigint_default "$T" -t phonemes --build-vocab --batch "$b" -o "$d/st-$b" "$d/in.tsv" >/dev/null 2>"$d/err" &
  pid=$!
  for _ in $(seq 300); do pgrep -P "$pid" >/dev/null && break; sleep 0.05; done
  pgrep -P "$pid" >/dev/null || fail "SIG$sig (--batch $b): no phonemizer child appeared"
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  [ "$rc" = "$want" ] || fail "SIG$sig (--batch $b) in the vocab pass: exit $rc, want $want"
  grep -qx "tokenize: interrupted: 0 of 20 lines committed (0 failed), 20 not started" "$d/err" ||
    fail "SIG$sig (--batch $b) in the vocab pass: want nothing committed, 20 lines not started"
  v=$("$FC_BIN/cache-verify" --json "$d/st-$b")
  grep -q '"entries":{"audio":0,"text":0,"feat":0,"tok":0,' <<<"$v" ||
    fail "SIG$sig (--batch $b) in the vocab pass: the store holds lines: ${v:0:400}"
  "$T" -t phonemes --build-vocab -o "$d/st-$b" "$d/in.tsv" 2>"$d/err" || fail "SIG$sig (--batch $b): rerun: exit $?"
  grep -q "tokenize: done: 20 of 20 (20 new, 0 already stored, 0 failed" "$d/err" || fail "SIG$sig (--batch $b): rerun"
  "$FC_BIN/cache-verify" -q "$d/st-$b" >/dev/null || fail "SIG$sig (--batch $b): the store fails cache-verify after the rerun"
done
# --shard: the vocab pass over the whole corpus runs before the store is opened; a signal in it
# stops the run the same way: exit 130, the shard's lines not started, the --json summary printed
# (it was not handled there: SIGINT, ignored in a job started in the background by a script, went
# unheard and the run went on to store everything, exit 0; SIGTERM killed it, with no summary).
FC_FAULT=espeakhang:1 FC_PHONEMIZE_CHILD=all FC_PHONEMIZE_TIMEOUT=6 \
  sigint_default "$T" -t phonemes --build-vocab --batch 1 --shard 0/2 --json -o "$d/st-shard" "$d/in.tsv" \
  >"$d/out" 2>"$d/err" &
pid=$!
for _ in $(seq 300); do pgrep -P "$pid" >/dev/null && break; sleep 0.05; done
pgrep -P "$pid" >/dev/null || fail "--shard: no phonemizer child appeared"
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 130 ] || fail "SIGINT in the vocab pass of --shard 0/2: exit $rc, want 130"
n=$("$T" -t phonemes --build-vocab --shard 0/2 --json -o "$d/st-shard2" "$d/in.tsv" 2>/dev/null |
  sed -n 's/.*"lines":\([0-9]*\),.*/\1/p')
[ -n "$n" ] && [ "$n" -gt 0 ] && [ "$n" -lt 20 ] || fail "--shard 0/2 of 20 lines holds '$n'"
grep -qx "tokenize: interrupted: 0 of $n lines committed (0 failed), $n not started" "$d/err" ||
  fail "SIGINT in the vocab pass of --shard 0/2: want nothing committed, $n lines not started"
grep -q "\"processed\":0,.*\"not_started\":$n,\"lines\":$n," "$d/out" ||
  fail "SIGINT in the vocab pass of --shard 0/2: --json: $(cat "$d/out")"
"$T" -t phonemes --build-vocab --shard 0/2 -o "$d/st-shard" "$d/in.tsv" 2>"$d/err" ||
  fail "--shard 0/2: rerun after the interrupt: exit $?"
grep -q "tokenize: done: $n of $n ($n new, 0 already stored, 0 failed" "$d/err" || fail "--shard 0/2: rerun"
# A second SIGINT while the phonemizer child hangs ends tokenize at once (130), and the child with
# it: a child left behind would hang on for good, its parent gone.
FC_FAULT=espeakhang:1 FC_PHONEMIZE_CHILD=all FC_PHONEMIZE_TIMEOUT=60 \
  sigint_default "$T" -t phonemes --build-vocab --batch 1 -o "$d/st-twice" "$d/in.tsv" >/dev/null 2>"$d/err" &
pid=$!
for _ in $(seq 300); do pgrep -P "$pid" >/dev/null && break; sleep 0.05; done
kid=$(pgrep -P "$pid") || fail "twice: no phonemizer child appeared"
kill -INT "$pid"
sleep 0.3
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 130 ] || fail "twice: exit $rc, want 130"
for _ in $(seq 50); do kill -0 "$kid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$kid" 2>/dev/null; then
  kill -9 "$kid"
  fail "twice: the phonemizer child $kid outlived tokenize"
fi
echo "tokenize_interrupt: ok"
