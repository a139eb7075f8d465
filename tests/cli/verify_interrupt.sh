#!/bin/bash
# cache-verify --json stopped by SIGINT or SIGTERM (Ctrl-C, a Slurm time limit): exit 130/143, and
# the report on stdout says the check did not end — the object of the store (or of the dataset)
# whose check was cut has "ok":false and a "fatal" that says so. It printed nothing for it: a
# run stopped in its first store left stdout empty, and one stopped in the second store or in
# the dataset check left only the objects of the stores checked before, each "ok":true, so a
# script reading the report (jq -s 'all(.ok)') found everything clean. The signal is sent at a
# known point: FC_FAULT_STOP=store_open:N stops the process at its N-th store open.
set -u
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skipped: this build has no fault hooks (-DFC_FAULT_INJECTION=ON)"; exit 77; }
. "$FC_SRC/tests/cli/scaleout.bash"
. "$FC_SRC/tests/cli/stop_site.bash" # stopped PID TRIES
T=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 8 || exit 1
for k in 0 1; do
  "$FC_BIN/featurize" -q --shard $k/2 -o s$k --manifest c/metadata.csv || exit 1
done
stopped_in_store=0 stopped_in_dataset=0
for n in $(seq 1 20); do
  sig=INT want=130
  [ $((n % 2)) = 0 ] && sig=TERM want=143
  FC_FAULT_STOP=store_open:$n sigint_default "$FC_BIN/cache-verify" --json --manifest c/metadata.csv s0 s1 >out 2>err &
  pid=$!
  if ! stopped $pid 100; then # no N-th open: the run went through
    wait $pid
    rc=$?
    pid=
    check "not stopped (store_open:$n)" 0 $rc
    break
  fi
  kill -$sig $pid
  kill -CONT $pid
  wait $pid
  rc=$?
  pid=
  check "store_open:$n SIG$sig" $want $rc
  # every line an object; the last one the cut check's: not ok, and fatal says why
  "$PY" - <<'PY' >where || { echo "FAIL store_open:$n SIG$sig: the report"; cat out err; fail=1; }
import json
objs = [json.loads(l) for l in open("out")]
assert objs, "no report"
last = objs[-1]
assert last["ok"] is False and last["fatal"].startswith("interrupted: "), last
assert not all(o["ok"] for o in objs), objs
print("dataset" if "dataset" in last else "store")
PY
  case $(cat where) in
  store) stopped_in_store=1 ;;
  dataset) stopped_in_dataset=1 ;;
  esac
done
[ $stopped_in_store = 1 ] && [ $stopped_in_dataset = 1 ] ||
  { echo "FAIL: want runs stopped in a store's check and in the dataset's: $stopped_in_store $stopped_in_dataset"; fail=1; }
exit $fail
