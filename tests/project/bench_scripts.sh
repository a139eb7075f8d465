#!/usr/bin/env bash
# The benchmarks' shared module (scripts/benchlib) and the benchmarks written on it: each answers
# --help (exit 0) under the venv's python; each corpus builder makes the same files from the same
# seed in two directories, reuses a directory's files on a second call, and takes the first files
# that reach the minutes asked for; the disk throttle says why it cannot throttle tmpfs; the
# library lookup refuses the libfeatcache.so ld script. No benchmark is run (timings are not
# tests): docs/HACKING.md "Benchmarks".
set -u
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

n=0
for s in "$FC_SRC"/scripts/bench-*; do
  [ -x "$s" ] && grep -q '^import benchlib' "$s" || continue
  n=$((n + 1))
  out=$("$s" --help 2>&1)
  rc=$?
  [ $rc = 0 ] && [ -n "$out" ] || fail "$(basename "$s") --help: exit $rc: $out"
  "$s" --no-such-option >/dev/null 2>&1
  rc=$?
  [ $rc = 2 ] || fail "$(basename "$s") --no-such-option: exit $rc, not 2"
done
[ $n -ge 1 ] || fail "no scripts/bench-* imports benchlib"
# a corpus smaller than one batch has no whole batch: refused as a usage error before any work
# (it was a loop without end)
out=$(timeout 60 "$FC_SRC"/scripts/bench-adapter --n 4 --batch 8 --no-tf 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *"--n 4 is smaller than --batch 8"* ]] ||
  fail "bench-adapter --n 4 --batch 8: exit $rc, not 2: $out"

PYTHONPATH=$FC_SRC/scripts "$PY" - "$tmp" <<'PY' || fail "benchlib"
import os, shutil, sys
import benchlib as bl
tmp = sys.argv[1]
bad = []
def check(ok, what):
    if not ok:
        bad.append(what)
        print("FAIL", what)

def data(c):
    return [open(p, "rb").read() for p in c.paths]

def same(a, b):
    return data(a) == data(b)

said = []
say = lambda *m: said.append(" ".join(m))  # noqa: E731
if shutil.which("espeak-ng"):
    a = bl.corpus.speech(os.path.join(tmp, "s1"), 0.1, seed=5, say=say)
    b = bl.corpus.speech(os.path.join(tmp, "s2"), 0.1, seed=5, say=say)
    check(len(a) >= 1 and a.seconds >= 6 and same(a, b), f"speech: not the same files: {a.paths}")
    check(a.texts == b.texts and open(a.manifest).read().startswith(a.ids[0] + "|"),
          "speech: texts or metadata.csv")
    was = data(a)
    said.clear()
    c = bl.corpus.speech(os.path.join(tmp, "s1"), 0.05, seed=5, say=say)
    check(not said and c.paths == a.paths[:len(c)] and c.seconds >= 3, f"speech reused: {said}")
    d = bl.corpus.speech(os.path.join(tmp, "s1"), 0.1, seed=6, say=say)
    check(said and data(d) != was[:len(d)], "speech: another seed, the same files")
else:
    check(False, "espeak-ng not installed (scripts/setup installs it)")
for kind in ("noise", "silence", "tones"):
    a = bl.corpus.signals(os.path.join(tmp, kind + "1"), kind, minutes=0.5, secs=10)
    os.unlink(a.paths[1])  # remade, the same bytes
    a = bl.corpus.signals(os.path.join(tmp, kind + "1"), kind, minutes=0.5, secs=10)
    b = bl.corpus.signals(os.path.join(tmp, kind + "2"), kind, minutes=0.5, secs=10)
    check(len(a) == 3 and same(a, b) and abs(a.seconds - (30 + 300 / 22050)) < 1e-9,
          f"signals {kind}: {len(a)} files, {a.seconds} s")
a = bl.corpus.tones(os.path.join(tmp, "t1"), 3, 1.5)
b = bl.corpus.tones(os.path.join(tmp, "t2"), 3, 1.5)
check(same(a, b) and len(set(open(p, "rb").read() for p in a.paths)) == 3 and a.seconds == 4.5,
      "tones")
check(open(a.list).read().split() == a.paths, "list")
a = bl.corpus.voiced(os.path.join(tmp, "v1"), 2, 22050)
b = bl.corpus.voiced(os.path.join(tmp, "v2"), 2, 22050)
check(same(a, b) and sorted(os.listdir(os.path.join(tmp, "v1", "wavs"))) == ["u0000.wav",
                                                                             "u0001.wav"],
      "voiced: not the same files, or more than the WAVs in wavs/")
if shutil.which("espeak-ng"):
    a = bl.corpus.looped_speech(os.path.join(tmp, "l1"), 2, 0.5)
    b = bl.corpus.looped_speech(os.path.join(tmp, "l2"), 2, 0.5)
    check(same(a, b) and 0.9 <= a.seconds <= 1.1, f"looped_speech: {a.seconds} s")
a = bl.corpus.short_utterances(os.path.join(tmp, "u1"), 30, say=say)
b = bl.corpus.short_utterances(os.path.join(tmp, "u2"), 30, say=say)
man = open(a.manifest).read().splitlines()
check(len(a) == 30 and same(a, b) and 0.3 * 30 <= a.seconds <= 30 and len(man) == 30 and
      man[0].startswith(a.ids[0] + "|") and len(set(data(a))) == 30,
      "short_utterances: not the same 30 distinct files, or metadata.csv")
said.clear()
c = bl.corpus.short_utterances(os.path.join(tmp, "u1"), 30, say=say)
check(not said and c.paths == a.paths, f"short_utterances reused: {said}")
c = bl.corpus.short_utterances(os.path.join(tmp, "u1"), 45, say=say)
check(len(c) == 45 and c.paths[:30] == a.paths and data(c)[:30] == data(b),
      "short_utterances extended: the first files changed")
t = bl.Throttle("bench-selftest", "/dev/shm" if os.path.isdir("/dev/shm") else "/proc", read_mbps=1)
check(not t.ok and t.why and t.prefix() == [], f"throttle on tmpfs: ok {t.ok}, why {t.why}")
check(bl.MachineNotes().line().startswith("machine: "), "machine notes")
check(bl.timing.quartiles([3, 1, 2, 5, 4]) == (1.5, 3, 4.5), "quartiles")
sys.exit(1 if bad else 0)
PY

# the library lookup: an ELF, never the ld script
PYTHONPATH=$FC_SRC/scripts FEATCACHE_LIBRARY=$FC_BIN/libfeatcache.so "$PY" -c \
  'import benchlib; benchlib.library()' >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "not an ELF" "$tmp/err" ||
  fail "the ld script taken: exit $rc, $(cat "$tmp/err")"

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
