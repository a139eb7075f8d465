#!/usr/bin/env bash
# One id, two files, two runs AT ONCE (two targets of a `make -j`: train/*.wav and dev/*.wav into
# one store, ids from the file names): whichever commits an id last keeps it, and that run says
# each id it took over, naming the other file, as a run after the other does
# (featurize_id_replaced.sh) — the commit sees what the other run committed since this run's
# lookup. Held, not timed: run A stops before its first commit (FC_FAULT_STOP=featurize_batch:1),
# its lookups done (nothing stored under these ids), run B stores all of dev/, then A goes on.
# An id whose two files hold the same audio is not said, and counts in A's --json as already
# stored, as in a run after B's; the ids taken over count as new. docs/featurize.md "Ids".
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
a=
trap '[ -n "$a" ] && kill -KILL "$a" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

N=12 # ids w00..w11 in both folders, each file its own tone; plus 'same' (one audio, both folders)
"$PY" - "$N" <<'PY' || { echo "FAIL: cannot write the WAVs"; exit 1; }
import math, os, struct, sys, wave
def tone(path, f):
    w = wave.open(path, "wb")
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i * f))) for i in range(4410)))
    w.close()
for d in ("train", "dev", "seed"):
    os.makedirs(d, exist_ok=True)
for n in range(int(sys.argv[1])):
    tone("train/w%02d.wav" % n, 0.01 + n * 0.003)
    tone("dev/w%02d.wav" % n, 0.2 + n * 0.003)
tone("train/same.wav", 0.5)
tone("dev/same.wav", 0.5)
tone("seed/seed.wav", 0.7)
PY
# the store made first, so that both runs open it as it is
"$FZ" -q -j 1 -o st seed/seed.wav || { echo "FAIL: the store not made"; exit 1; }

FC_FAULT_STOP=featurize_batch:1 "$FZ" --json -j 1 -o st train/*.wav >a.json 2>a.err &
a=$!
stopped $a 400 || { fail "run A never stopped before its commit"; cat a.err; exit 1; }
"$FZ" --json -j 1 -o st dev/*.wav >b.json 2>b.err
rb=$?
kill -CONT $a
wait $a
ra=$?
a=
[ $ra = 0 ] && [ $rb = 0 ] || fail "exit $ra and $rb, want 0 and 0: $(cat a.err b.err)"

# B found every id new (A had committed nothing): no word
grep 'before, other audio' b.err && fail "run B said an id it found new"
# A committed last: each id of other audio said, naming dev's file; 'same' (one audio) not
for n in $(seq 0 $((N - 1))); do
  printf 'featurize: train/w%02d.wav: id w%02d named %s/dev/w%02d.wav before, other audio: it names this file now (two files with one id? give each its own, e.g. in a manifest, to keep both)\n' \
    "$n" "$n" "$tmp" "$n"
done >want
grep 'before, other audio' a.err >got
diff want got >/dev/null || fail "run A's lines: $(diff want got)"

counts() { # FILE: "processed skipped failed" of a --json summary
  "$PY" -c 'import json, sys; j = json.load(open(sys.argv[1]))
print(j["processed"], j["skipped_existing"], j["failed"])' "$1" 2>/dev/null || echo "- - -"
}
# ('same': stored by B first, from a copy under another path: already stored, as for a run after)
[ "$(counts a.json)" = "$N 1 0" ] || fail "run A --json: $(counts a.json), want $N 1 0"
[ "$(counts b.json)" = "$((N + 1)) 0 0" ] || fail "run B --json: $(counts b.json), want $((N + 1)) 0 0"

# the store: train's audio under every id (A's commit was the last), dev's records orphans
"$FZ" -j 1 -o st train/*.wav >/dev/null 2>rerun.err || fail "rerun of train: $(cat rerun.err)"
grep 'before, other audio' rerun.err && fail "rerun of train: an id said again"
"$V" --json st >v.json 2>/dev/null
got=$("$PY" -c 'import json, sys; j = json.load(open(sys.argv[1]))
print(j["entries"]["audio"], j["entries"]["feat"])' v.json 2>/dev/null)
[ "$got" = "$((N + 2)) $((2 * N + 2))" ] ||
  fail "cache-verify: entries, records = $got; want $((N + 2)) $((2 * N + 2))"

[ $fails = 0 ] && echo "featurize_id_replaced_meanwhile: ok" || exit 1
