#!/usr/bin/env bash
# Two tokenize runs into one store at once: a line whose record the other run stored first is not
# new to this one. The run counts it 'already stored' (its tokens and unknown symbols are not
# this run's), and the counts add up to what the store gained, whichever run came second. (Both
# used to report every line as new: each looked its lines up before the other committed, and a
# put of a record already there was taken as written.)
# The overlap is made, not timed: FC_FAULT_STOP=tokenize_batch:1 stops run A (SIGSTOP) between
# its first batch's lookups and its write; run B stores some of the same lines; SIGCONT lets A
# go on. Batch by batch (a small manifest), and as a bulk load (--batch 2: both runs found the
# store empty, and A's merge meets B's records).
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
if ! grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON; scripts/test sets it)" >&2
  exit 77
fi
d=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; for f in errA errB; do [ -f "$d/$f" ] && sed "s/^/  $f: /" "$d/$f" | head -10; done; exit 1; }
printf '%s\n' '<pad>' '<unk>' '<bos>' '<eos>' a b c d e f g h i j >"$d/v.txt"
# 10 distinct texts: line i is i+1 copies of one letter (u01: 'a', 1 token; ... u10: 10 'j's)
for i in $(seq 1 10); do
  printf 'u%02d\t%s\n' "$i" "$(printf "%${i}s" | tr ' ' "$(echo abcdefghij | cut -c"$i")")"
done >"$d/all.tsv"

stopped() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ]; }

# case NAME LINES_A LINES_B BATCH: A tokenizes the first LINES_A lines, B the first LINES_B
case_() {
  local name=$1 na=$2 nb=$3 batch=$4 s="$d/st-$1"
  head -n "$na" "$d/all.tsv" >"$d/a.tsv"
  head -n "$nb" "$d/all.tsv" >"$d/b.tsv"
  FC_FAULT_STOP=tokenize_batch:1 "$T" --vocab "$d/v.txt" --batch "$batch" --json -o "$s" "$d/a.tsv" \
    >"$d/outA" 2>"$d/errA" &
  local pid=$!
  for _ in $(seq 400); do stopped "$pid" && break; sleep 0.05; done
  stopped "$pid" || fail "$name: run A never stopped at its first batch"
  "$T" --vocab "$d/v.txt" --batch "$batch" -o "$s" "$d/b.tsv" 2>"$d/errB" || fail "$name: run B: exit $?"
  local tb=$((nb * (nb + 1) / 2)) ta=$((na * (na + 1) / 2))
  grep -qx "tokenize: done: $nb of $nb ($nb new, 0 already stored, 0 failed, $tb tokens)" "$d/errB" ||
    fail "$name: run B's summary"
  kill -CONT "$pid"
  wait "$pid" || fail "$name: run A: exit $?"
  local new=$((na - nb)) tnew=$((ta - tb))
  grep -qx "tokenize: done: $na of $na ($new new, $nb already stored, 0 failed, $tnew tokens)" \
    "$d/errA" || fail "$name: run A stored $new new lines after B stored $nb of its $na"
  grep -q "^{\"processed\":$new,\"skipped_existing\":$nb,\"failed\":0,\"not_started\":0,\"lines\":$na,\"tokens\":$tnew," \
    "$d/outA" || fail "$name: run A's --json: $(cat "$d/outA")"
  local v
  v=$("$FC_BIN/cache-verify" --json "$s") || fail "$name: the store fails cache-verify: ${v:0:400}"
  grep -q "\"entries\":{\"audio\":0,\"text\":$na,\"feat\":0,\"tok\":$na," <<<"$v" ||
    fail "$name: the store holds: ${v:0:400}"
  "$T" --vocab "$d/v.txt" -o "$s" "$d/a.tsv" 2>"$d/errA" || fail "$name: rerun: exit $?"
  grep -q "nothing to do: all $na lines already stored" "$d/errA" || fail "$name: rerun"
}

case_ batches 5 3 4096
case_ same 5 5 4096
case_ bulk 10 4 2
case_ bulk-same 10 10 2
echo ok
