# Sourced by the tests that stop a tool at a fault-injection stop site (FC_FAULT_STOP=SITE:N: the
# process sends itself SIGSTOP there, test builds) and act while it is stopped:
# stopped PID [TRIES]: 0 once the process is stopped (state T in /proc/PID/stat), checked every
# 0.05 s, TRIES times (default 200: 10 s); 1 if it never stops.
stopped() {
  for _ in $(seq "${2:-200}"); do
    [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ] && return 0
    sleep 0.05
  done
  return 1
}
# interrupted PID: SIGINT to PID, stopped at its site, then let go on: its exit status in rc
interrupted() {
  kill -INT "$1"
  kill -CONT "$1"
  wait "$1"
  rc=$?
}
