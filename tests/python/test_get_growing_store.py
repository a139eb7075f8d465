"""Arrays of featcache.get (and of a Loader's batches) point into the process's map of the store.
A writer that grows the store past that map (featurize, tokenize adding records) made the next
open of the store in the process (a get after the commit, another Loader) adopt the new size by
remapping, under the arrays still held: reading one then crashed the process (SIGSEGV), e.g. a
notebook holding mel = featcache.get(...) while featurize ran beside it. The map now never moves
while anything of the store is held: the loaders map headroom past data.mdb (what is written
meanwhile is read without a resize; without it where the address space is limited), and where a
store outgrew even that, the open is refused naming what holds the map, and succeeds once it is
let go. The writer's map is kept small with
FC_FAULT_MAPSIZE (a test build's knob), and the reader's headroom is taken away the same way."""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

BIN = os.environ.get("FC_BIN", "")
# (FC_PYTHON: under the sanitizer build, the wrapper that preloads ASan, which a bare
# sys.executable child lacks: it would die at start)
PY = os.environ.get("FC_PYTHON") or sys.executable
for need, found in (("$FC_BIN/featurize", os.path.exists(os.path.join(BIN, "featurize"))),
                    ("espeak-ng (scripts/setup installs it)", shutil.which("espeak-ng"))):
    if not found:
        print("FAIL: needs %s" % need)
        sys.exit(1)
with open(os.path.join(BIN, "CMakeCache.txt")) as f:
    if "FC_FAULT_INJECTION:BOOL=ON" not in f.read():
        print("skipped: this build has no FC_FAULT_MAPSIZE (-DFC_FAULT_INJECTION=ON; scripts/test "
              "sets it)")
        sys.exit(77)

# the reader, in a process of its own so that a crash is a failure of the test, not its end
READER = r'''
import os, subprocess, sys
import featcache
path, wavs, headroom = sys.argv[1], sys.argv[2:-1], sys.argv[-1] == "headroom"
if not headroom:
    os.environ["FC_FAULT_MAPSIZE"] = "16384"  # the reader's map: data.mdb's size, no more
wenv = dict(os.environ, FC_FAULT_MAPSIZE="16384")  # the writer's map grows by doubling
held = featcache.get(path, "utt0")
want = held.copy()
refused = 0
for i, w in enumerate(wavs):
    subprocess.run([os.path.join(os.environ["FC_BIN"], "featurize"), "-q", "--device", "cpu",
                    "-o", path, w], check=True, env=wenv)
    uid = os.path.splitext(os.path.basename(w))[0]
    try:
        mel = featcache.get(path, uid)
        assert mel.shape[1] == 80 and mel.shape[0] > 10
    except featcache.FeatcacheError as e:
        assert not headroom, e
        assert "MDB_MAP_RESIZED" in str(e) and "let them go" in str(e), e
        refused += 1
    assert (held == want).all(), "the held array changed after commit %d" % i
    last = uid
print("refused", refused)
del held
assert featcache.get(path, last).shape[1] == 80  # nothing held: the grown map is adopted
assert (featcache.get(path, "utt0") == want).all()
'''


@pytest.fixture(scope="module")
def corpus():
    d = tempfile.mkdtemp(prefix="fc_get_growing_")
    wavs = []
    for i in range(10):
        w = os.path.join(d, "utt%d.wav" % i)
        subprocess.run(["espeak-ng", "-w", w, "Sentence %d, a little longer than a word." % i],
                       check=True)
        wavs.append(w)
    yield d, wavs
    shutil.rmtree(d)


@pytest.mark.parametrize("headroom", ["headroom", "none"])
def test_get_while_a_writer_grows_the_store(corpus, headroom):
    d, wavs = corpus
    path = os.path.join(d, "store-" + headroom)
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "-o", path,
                        wavs[0]], capture_output=True, text=True,
                       env=dict(os.environ, FC_FAULT_MAPSIZE="16384"))
    assert r.returncode == 0, r.stderr
    before = os.path.getsize(os.path.join(path, "data.mdb"))
    r = subprocess.run([PY, "-c", READER, path] + wavs[1:] + [headroom],
                       capture_output=True, text=True)
    assert r.returncode == 0, "reader: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr)
    # the store did grow past the reader's first map
    assert os.path.getsize(os.path.join(path, "data.mdb")) > 2 * before
    refused = int(r.stdout.split()[-1])
    assert (refused > 0) == (headroom == "none"), r.stdout


def test_headroom_under_an_address_space_limit(corpus):
    # the headroom is address space: under ulimit -v (RLIMIT_AS) below it, every open of a store
    # failed with "Cannot allocate memory"; it is then mapped as before, without headroom
    if os.environ.get("FC_SANITIZE") == "1":
        pytest.skip("ASan reserves terabytes of shadow memory: no RLIMIT_AS can be set under it")
    d, wavs = corpus
    path = os.path.join(d, "store-limited")
    r = subprocess.run([os.path.join(BIN, "featurize"), "-q", "--device", "cpu", "-o", path,
                        wavs[0], wavs[1]], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    code = ("import resource, sys, featcache\n"
            "resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.RLIM_INFINITY))\n"
            "print(featcache.get(sys.argv[1], 'utt1').shape[1],"
            " sum(len(b.ids) for b in featcache.Loader(sys.argv[1])))\n")
    r = subprocess.run([PY, "-c", code, path], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split() == ["80", "2"], r.stdout + r.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
