#!/usr/bin/env bash
# A tool started with SIGINT (or SIGTERM) ignored keeps it ignored, as shells and sort do: a job a
# script starts in the background (`featurize ... &`: the shell starts it with SIGINT ignored, on
# purpose) or under nohup is not stopped by a Ctrl-C meant for the foreground job. The tools'
# handler replaced the inherited SIG_IGN, and such a Ctrl-C stopped the background job (exit 130).
# Started with SIGINT at its default (a terminal's foreground job, sigint_default below), SIGINT
# stops it as before: exit 130.
set -u
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
. "$FC_SRC/tests/cli/stop_site.bash"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
sox -n -r 22050 -b 16 b.wav synth 0.5 sine 500 || { echo "FAIL: sox failed"; exit 1; }
mkfifo held.wav

in_fifo_open() { grep -qx wait_for_partner /proc/"$1"/task/*/wchan 2>/dev/null; }

# featurize NAME WANT_RC SIG LAUNCH...: featurize of a.wav, held.wav (a FIFO) and b.wav, -j 1, started
# by LAUNCH; once its worker waits in the FIFO's open, SIG; then the FIFO delivers b.wav's audio
run() {
  local name=$1 want=$2 sig=$3
  shift 3
  rm -rf "s$name"
  if [ "$1" = plain ]; then # a script's `cmd &`, as it is (bash ignores SIGINT in it)
    "$B/featurize" -j 1 --batch 1 --device cpu -o "s$name" a.wav held.wav b.wav >out 2>err &
  else
    "$@" "$B/featurize" -j 1 --batch 1 --device cpu -o "s$name" a.wav held.wav b.wav >out 2>err &
  fi
  local pid=$!
  for _ in $(seq 400); do in_fifo_open $pid && break; sleep 0.05; done
  in_fifo_open $pid || { echo "skipped: featurize was not seen in the FIFO's open" >&2; exit 77; }
  kill -"$sig" $pid
  sleep 0.3
  timeout 20 sh -c "cat b.wav >held.wav" || fail "$name: nobody read the FIFO"
  wait $pid
  local rc=$?
  [ $rc = "$want" ] || fail "$name: exit $rc, want $want: $(cat err)"
  if [ "$want" = 0 ]; then
    grep -qx "featurize: done: 3 of 3 (3 new, 0 already stored, 0 failed)" err &&
      ! grep -q interrupted err || fail "$name: stderr: $(cat err)"
  else
    grep -q "^featurize: interrupted: 2 of 3 done, 1 not started" err || fail "$name: stderr: $(cat err)"
  fi
}
nothing() { exec "$@"; } # (a function run in the background: bash leaves SIGINT as it was)
ignore_int() { trap '' INT; exec "$@"; }
ignore_term() { trap '' TERM; exec "$@"; }
# a script's `cmd &`: SIGINT ignored by the shell
run bg 0 INT plain
# trap '' INT before it (nohup-like, a job runner), and SIGTERM ignored likewise
run ignored 0 INT ignore_int
run term-ignored 0 TERM ignore_term
# SIGINT at its default: stopped as before
run default 130 INT sigint_default
run term 143 TERM nothing

# cache-verify (every tool shares the handler): stopped at its first store open, SIGINT ignored
# there goes unheard; at its default the check stops (130)
"$B/featurize" -q --device cpu -o s a.wav || fail "featurize s"
FC_FAULT_STOP=store_open:1 "$B/cache-verify" s >out 2>err &
pid=$!
if stopped $pid; then
  interrupted $pid
  [ $rc = 0 ] && ! grep -q interrupted err || fail "cache-verify, SIGINT ignored: exit $rc: $(cat err)"
  FC_FAULT_STOP=store_open:1 sigint_default "$B/cache-verify" s >out 2>err &
  pid=$!
  stopped $pid || fail "cache-verify did not stop at its store open"
  interrupted $pid
  [ $rc = 130 ] || fail "cache-verify, SIGINT at its default: exit $rc: $(cat err)"
else
  grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null &&
    fail "cache-verify did not stop at its store open"
  kill -9 $pid 2>/dev/null
fi

[ "$fails" = 0 ] && echo "all ignored-signal checks passed"
exit "$fails"
