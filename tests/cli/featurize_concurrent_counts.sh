#!/usr/bin/env bash
# Two featurize runs over the same files into one store at the same time (two targets of a
# `make -j` whose lists overlap): the store holds each record once, and each file is counted new
# by one run and already stored by the other — the two runs' counts add up to the files. An item
# the other run committed after this run looked it up (both computed it; the second commit finds
# the record and the very same audio entry there) was counted new by both.
set -u
FZ=${FC_BIN:?}/featurize
V=$FC_BIN/cache-verify
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

N=400 # 0.2 s files, each its own tone
"$PY" - "$N" <<'PY' || { echo "FAIL: cannot write the WAVs"; exit 1; }
import math, struct, sys, wave
for n in range(int(sys.argv[1]) + 1):
    w = wave.open("w%04d.wav" % n, "wb")
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
    f = 0.01 + n * 0.0007
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i * f))) for i in range(4410)))
    w.close()
PY
ls w0*.wav | head -n "$N" >list
extra=$(printf 'w%04d.wav' "$N")

counts() { # FILE: "processed skipped failed" of a --json summary
  "$PY" -c 'import json, sys; j = json.load(open(sys.argv[1]))
print(j["processed"], j["skipped_existing"], j["failed"])' "$1" 2>/dev/null || echo "- - -"
}

raced=0
for round in 1 2 3; do
  rm -rf st
  # the store made first, so that both runs open it as it is
  "$FZ" -q -j 1 --writers 1 -o st "$extra" || { fail "round $round: the store not made"; continue; }
  # each reads its list from a FIFO, both written once both are started: they set out together
  rm -f fa fb && mkfifo fa fb || { fail "mkfifo"; continue; }
  "$FZ" --json -q -j 1 --batch 64 -o st - <fa >a.json 2>a.err &
  pa=$!
  "$FZ" --json -q -j 1 --batch 64 -o st - <fb >b.json 2>b.err &
  pb=$!
  cat list >fa &
  cat list >fb
  wait $pa
  ra=$?
  wait $pb
  rb=$?
  [ $ra = 0 ] && [ $rb = 0 ] || { fail "round $round: exit $ra and $rb"; cat a.err b.err; continue; }
  read -r pa_n sa_n fa_n <<<"$(counts a.json)"
  read -r pb_n sb_n fb_n <<<"$(counts b.json)"
  [ "$pa_n" != - ] && [ "$pb_n" != - ] || { fail "round $round: no --json summary"; continue; }
  [ $((pa_n + pb_n)) = $N ] && [ $((sa_n + sb_n)) = $N ] && [ $((fa_n + fb_n)) = 0 ] ||
    fail "round $round: new $pa_n + $pb_n, already stored $sa_n + $sb_n, failed $fa_n + $fb_n; want new and already stored to add up to $N each"
  # both computed some of the same files: the commits met each other's (what the test is for)
  [ "$pa_n" -gt 0 ] && [ "$pb_n" -gt 0 ] && raced=$((raced + 1))
  "$V" --json st >v.json 2>v.err
  got=$("$PY" -c 'import json, sys; j = json.load(open(sys.argv[1]))
print(j["ok"], j["entries"]["feat"], j["entries"]["audio"])' v.json 2>/dev/null)
  [ "$got" = "True $((N + 1)) $((N + 1))" ] ||
    fail "round $round: cache-verify: ok, records, entries = $got; want True $((N + 1)) $((N + 1))"
done
# the runs overlapped in at least one round (each stored some files): else nothing was tested
[ $raced -ge 1 ] || fail "in no round did both runs store files (they never overlapped)"
[ $fails = 0 ] && echo "featurize_concurrent_counts: ok ($raced of 3 rounds overlapped)"
exit $((fails > 0))
