#!/usr/bin/env bash
# Two featurize runs over the same files into one store at the same time (two targets of a
# `make -j` whose lists overlap): the store holds each record once, and each file is counted new
# by one run and already stored by the other — the two runs' counts add up to the files. An item
# the other run committed after this run looked it up (both computed it; the second commit finds
# the record and the very same audio entry there) was counted new by both.
# Held, not timed (two runs left to start together overlapped in some rounds only, on a loaded
# machine in none): run A stops before its first commit (FC_FAULT_STOP=featurize_batch:1), its
# first batch looked up and computed; run B commits its first batch (the same first files) and
# stops before its second; A goes on: its first commit meets B's records and entries, and it
# stores what B has not committed; then B goes on and meets A's. Each run stores some files.
set -u
if ! grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: this build has no fault stop sites (-DFC_FAULT_INJECTION=ON)" >&2
  exit 77
fi
FZ=$FC_BIN/featurize
V=$FC_BIN/cache-verify
PY=${FC_PYTHON:-python3}
. "$FC_SRC/tests/cli/stop_site.bash"
tmp=$(mktemp -d)
pa= pb=
trap 'for p in $pa $pb; do kill -KILL "$p"; done 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

N=200 # 0.2 s files, each its own tone
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

# the store made first, so that both runs open it as it is
"$FZ" -q -j 1 --writers 1 -o st "$extra" || { echo "FAIL: the store not made"; exit 1; }
FC_FAULT_STOP=featurize_batch:1 "$FZ" --json -q -j 1 --batch 64 -o st - <list >a.json 2>a.err &
pa=$!
stopped $pa 400 || { fail "run A never stopped before its first commit"; cat a.err; exit 1; }
FC_FAULT_STOP=featurize_batch:2 "$FZ" --json -q -j 1 --batch 64 -o st - <list >b.json 2>b.err &
pb=$!
stopped $pb 400 || { fail "run B never stopped before its second commit"; cat b.err; exit 1; }
kill -CONT $pa
wait $pa
ra=$?
pa=
kill -CONT $pb
wait $pb
rb=$?
pb=
[ $ra = 0 ] && [ $rb = 0 ] || { fail "exit $ra and $rb"; cat a.err b.err; }
read -r pa_n sa_n fa_n <<<"$(counts a.json)"
read -r pb_n sb_n fb_n <<<"$(counts b.json)"
if [ "$pa_n" = - ] || [ "$pb_n" = - ]; then
  fail "no --json summary"
else
  [ $((pa_n + pb_n)) = $N ] && [ $((sa_n + sb_n)) = $N ] && [ $((fa_n + fb_n)) = 0 ] ||
    fail "new $pa_n + $pb_n, already stored $sa_n + $sb_n, failed $fa_n + $fb_n; want new and already stored to add up to $N each"
  # each computed files the other committed first, and stored files of its own
  [ "$pa_n" -gt 0 ] && [ "$pb_n" -gt 0 ] || fail "new $pa_n and $pb_n: want each run to store some"
fi
"$V" --json st >v.json 2>v.err
got=$("$PY" -c 'import json, sys; j = json.load(open(sys.argv[1]))
print(j["ok"], j["entries"]["feat"], j["entries"]["audio"])' v.json 2>/dev/null)
[ "$got" = "True $((N + 1)) $((N + 1))" ] ||
  fail "cache-verify: ok, records, entries = $got; want True $((N + 1)) $((N + 1))"
[ $fails = 0 ] && echo "featurize_concurrent_counts: ok (new $pa_n + $pb_n)"
exit $((fails > 0))
