#!/usr/bin/env bash
# featurize without --writers on a new directory, its default a split store (a large job: here
# --jobs 8 --gpu-min-seconds 0, 2 writers), while another job creates the store (`make -j` with
# tokenize and featurize writing one store): featurize decided on a split store, then found a
# plain one (or a split store of other parts) when it opened the directory. It used to stop there,
# exit 2, "... created by another job meanwhile: 2 writers need a new directory"; the writers were
# its default, not the user's, so it now takes the layout it finds, as for a store there at start.
# Made deterministic with the directory's create lock (an flock of the directory, which every job
# creating a store takes): this test holds it while featurize waits on it, creates the store the
# other job would have made, then lets featurize go on. With --writers 2 given the refusal stays.
set -u
B=${FC_BIN:?}
PY=${FC_PYTHON:-python3}
[ -r /proc/self/wchan ] || [ -r /proc/locks ] || { echo "skipped: no /proc/PID/wchan or /proc/locks to see featurize wait on the lock" >&2; exit 77; }
d=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$d"' EXIT
fails=0
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; fails=$((fails + 1)); }
cd "$d" || exit 1
"$PY" - <<'PY' || { echo "FAIL: could not write the corpus"; exit 1; }
import wave, numpy as np
rng = np.random.default_rng(3)
with open("meta.csv", "w") as m:
    for i in range(4):
        x = 0.2 * rng.standard_normal(11025)
        with wave.open("u%d.wav" % i, "wb") as w:
            w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
            w.writeframes((x * 32767).astype("<i2").tobytes())
        m.write("u%d|Utterance number %d.|Utterance number %d.\n" % (i, i, i))
PY
"$B/tokenize" -q --build-vocab -o plain meta.csv || { echo "FAIL: the plain store"; exit 1; }

waiting() { # PID waits for an flock: its wait channel, or a blocked lock of its in /proc/locks
  [ "$(cat /proc/$1/wchan 2>/dev/null)" = locks_lock_inode_wait ] ||
    grep -Eq "^[0-9]+: -> FLOCK +ADVISORY +WRITE +$1 " /proc/locks 2>/dev/null
}

# race NAME MAKE [FEATURIZE ARGS]: featurize into NAME (a new directory) while MAKE (a shell
# command, run in $d) creates the store there, the directory's lock held; featurize's exit status
# in $rc, its stderr in err
race() {
  local st=$1 make=$2
  shift 2
  mkdir "$st" && rm -f held go && mkfifo go
  "$PY" - "$st" "$make" <<'PY' &
import fcntl, os, subprocess, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
open("held", "w").close()
open("go").read()
subprocess.run(sys.argv[2], shell=True, check=True)
PY
  local holder=$!
  for _ in $(seq 200); do [ -e held ] && break; sleep 0.05; done
  "$B/featurize" -v --preset hifigan --device cpu --jobs 8 --gpu-min-seconds 0 "$@" -o "$st" u?.wav >/dev/null 2>err &
  local pid=$!
  for _ in $(seq 400); do waiting "$pid" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  if ! waiting "$pid"; then
    echo "skipped: featurize was not seen waiting on the directory's lock (wchan: $(cat /proc/$pid/wchan 2>&1))" >&2
    exit 77
  fi
  echo go >go
  wait "$holder" || { echo "FAIL: $make"; exit 1; }
  wait "$pid"
  rc=$?
}

# a plain store made meanwhile (tokenize's, copied in): featurize writes it with one writer
race st1 "cp plain/data.mdb st1/"
[ "$rc" = 0 ] || fail "a plain store made meanwhile: exit $rc, want 0"
grep -q "featurize: done: 4 of 4 (4 new" err || fail "a plain store made meanwhile: the summary"
[ -e st1/featcache-split ] && fail "a plain store made meanwhile: a split-store marker beside it"
v=$("$B/cache-verify" --manifest meta.csv --expect-tokens --expect-preset hifigan st1 2>&1) ||
  fail "a plain store made meanwhile: cache-verify: ${v:0:600}"

# a split store of 3 parts made meanwhile (its marker, as featurize --writers 3 writes it first):
# featurize writes its 3 parts
race st2 "printf 'featcache-split/1 3\n' >st2/featcache-split"
[ "$rc" = 0 ] || fail "a split store of 3 parts made meanwhile: exit $rc, want 0"
grep -q "featurize: done: 4 of 4 (4 new" err || fail "a split store of 3 parts made meanwhile: the summary"
v=$("$B/cache-verify" st2 2>&1) || fail "a split store made meanwhile: cache-verify: ${v:0:600}"
[ -d st2/part-2 ] || fail "a split store of 3 parts made meanwhile: no part-2"

# --writers 2 given: the user's number, refused on a plain store as before
race st3 "cp plain/data.mdb st3/" --writers 2
[ "$rc" = 2 ] || fail "--writers 2 on a plain store made meanwhile: exit $rc, want 2"
grep -q "created by another job meanwhile: 2 writers need a new directory" err ||
  fail "--writers 2 on a plain store made meanwhile: the message"
[ $fails = 0 ] && echo "featurize_split_meanwhile: ok"
exit $((fails > 0))
