#!/usr/bin/env bash
# featurize and tokenize started together on a new directory (`make -j` with both rules writing one
# store), featurize making a split store (--writers, or its default for a large job): tokenize looked
# for a split-store marker before featurize wrote it, and then found one when it opened the store.
# It used to stop there, exit 2, with the library's "FC_ESPLIT: a split store: open it as its parts";
# now it opens the parts, as for any split store. Made deterministic with a FIFO as the manifest:
# tokenize waits in its open of it (after its look for a marker) while featurize makes the split
# store. (A manifest in a pipe is read whole before the store is opened, its lines coming once; a
# manifest file read as the run goes takes the same way when its store turns out split, read whole
# then: that race has no point to hold tokenize at, and is not made here.)
set -u
B=${FC_BIN:?}
[ -r /proc/self/wchan ] || { echo "skipped: no /proc/PID/wchan to see tokenize wait on its manifest" >&2; exit 77; }
d=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }
cd "$d" || exit 1
"${FC_PYTHON:-python3}" - <<'PY' || fail "could not write the corpus"
import wave, numpy as np
rng = np.random.default_rng(3)
with open("meta.csv", "w") as m:
    for i in range(6):
        x = 0.2 * rng.standard_normal(11025)
        with wave.open("u%d.wav" % i, "wb") as w:
            w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
            w.writeframes((x * 32767).astype("<i2").tobytes())
        m.write("u%d|Utterance number %d.|Utterance number %d.\n" % (i, i, i))
PY
"$B/tokenize" -q --build-vocab --export-vocab v.txt -o vocab-store meta.csv || fail "the vocab"
mkfifo m.csv
"$B/tokenize" --vocab v.txt -o st m.csv >/dev/null 2>err &
pid=$!
for _ in $(seq 200); do [ "$(cat /proc/$pid/wchan 2>/dev/null)" = wait_for_partner ] && break; sleep 0.05; done
[ "$(cat /proc/$pid/wchan 2>/dev/null)" = wait_for_partner ] ||
  { echo "skipped: tokenize was not seen waiting on its FIFO (wchan: $(cat /proc/$pid/wchan 2>&1))" >&2; exit 77; }
"$B/featurize" -q --writers 3 -o st u?.wav 2>"$d/ferr" || fail "featurize --writers 3: $(cat "$d/ferr")"
timeout 20 sh -c 'cat meta.csv >m.csv' || fail "tokenize did not read its manifest"
wait "$pid"
rc=$?
[ "$rc" = 0 ] || fail "tokenize into the store split meanwhile: exit $rc, want 0"
grep -q "tokenize: done: 6 of 6 (6 new, 0 already stored, 0 failed" err || fail "tokenize's summary"
# every line's text and tokens in its id's part, beside its audio
v=$("$B/cache-verify" --manifest meta.csv --expect-tokens st 2>&1) || fail "cache-verify: ${v:0:600}"
echo "tokenize_split_meanwhile: ok"
