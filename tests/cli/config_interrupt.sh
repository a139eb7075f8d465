#!/usr/bin/env bash
# cache-config listing several stores, stopped by SIGINT or SIGTERM (Ctrl-C, a job's time limit):
# the stores listed before stay on stdout, the one being counted is finished, the next ones are
# not listed, and the exit is 130/143 with a line saying how far it got. It had no handler: the
# signal killed it with its --json objects still in stdout's buffer, so a script got nothing. A
# split store cut between its parts gets an object saying so (its sums would be of some parts).
# The signal is sent at a known point: FC_FAULT_STOP=store_open:N stops the N-th store open.
set -u
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault hooks (-DFC_FAULT_INJECTION=ON)"; exit 77; }
. "$FC_SRC/tests/cli/stop_site.bash" # stopped PID TRIES, interrupted PID
B=$FC_BIN
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for i in 1 2 3; do
  sox -n -r 22050 -b 16 "a$i.wav" synth 0.5 sine $((200 * i)) || { echo "FAIL: sox failed"; exit 1; }
done
"$B/featurize" -q --device cpu -o s1 a1.wav a2.wav || fail "featurize s1"
"$B/featurize" -q --device cpu -o s2 a3.wav || fail "featurize s2"
"$B/featurize" -q --device cpu -o s3 a1.wav || fail "featurize s3"
"$B/featurize" -q --device cpu --writers 2 -o sp a1.wav a2.wav a3.wav || fail "featurize sp"
stores() { "$PY" -c 'import json, sys; print(" ".join("%s:%s" % (o["store"], "error" if o["configs"] is None else len(o["configs"])) for o in map(json.loads, sys.stdin)))' <out; }

# stopped at the second store's open: s1 listed, s2 counted and listed, s3 not
for sig in INT TERM; do
  want=130
  [ $sig = TERM ] && want=143
  FC_FAULT_STOP=store_open:2 sigint_default "$B/cache-config" --json s1 s2 s3 >out 2>err &
  pid=$!
  stopped $pid || { fail "$sig: never stopped at the second open"; continue; }
  kill -$sig $pid
  kill -CONT $pid
  wait $pid
  rc=$?
  pid=
  [ $rc = $want ] || fail "SIG$sig: exit $rc, want $want: $(cat err)"
  [ "$(stores)" = "s1:1 s2:1" ] || fail "SIG$sig: stdout holds '$(stores)', want 's1:1 s2:1': $(cat out)"
  grep -qx 'cache-config: interrupted after 2 of 3 stores' err || fail "SIG$sig: stderr: $(cat err)"
done

# stopped in the split store's first part: its parts not all counted, said as such
FC_FAULT_STOP=store_open:2 sigint_default "$B/cache-config" --json s1 sp s2 >out 2>err &
pid=$!
if stopped $pid; then
  interrupted $pid
  pid=
  [ "$rc" = 130 ] || fail "split: exit $rc, want 130: $(cat err)"
  [ "$(stores)" = "s1:1 sp:error" ] || fail "split: stdout holds '$(stores)': $(cat out)"
  grep -q '"store":"sp","parts":2,"configs":null,"error":"interrupted: not listed"' out ||
    fail "split: $(cat out)"
  grep -qx 'cache-config: interrupted after 1 of 3 stores' err || fail "split: stderr: $(cat err)"
else
  fail "split: never stopped at the second open"
fi

# the table too: what was listed stays, into a file (no --json)
FC_FAULT_STOP=store_open:2 sigint_default "$B/cache-config" s1 s2 s3 >out 2>err &
pid=$!
if stopped $pid; then
  interrupted $pid
  pid=
  [ "$rc" = 130 ] || fail "table: exit $rc, want 130"
  [ "$(grep -c ': 1 config$' out)" = 2 ] || fail "table: stdout: $(cat out)"
else
  fail "table: never stopped"
fi

[ $fails = 0 ] || exit 1
echo "config_interrupt: ok"
