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
# sigint_default COMMAND...: COMMAND with SIGINT at its default, as a terminal's foreground job has
# it: a script's `COMMAND &` starts it with SIGINT ignored (bash, as POSIX shells do without job
# control), and so does a test run from a job that had it ignored, which the tools keep
# (tests/cli/sigint_ignored.sh). `sigint_default CMD ... &`; an assignment before it
# (FC_FAULT_STOP=SITE:N sigint_default CMD) reaches CMD. (env, not `trap - INT`: a shell started
# with SIGINT ignored cannot reset it.)
sigint_default() {
  exec env --default-signal=INT "$@"
}
