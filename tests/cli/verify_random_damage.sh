#!/usr/bin/env bash
# cache-verify on 150 copies of one store, each with 1-4 bytes of its B-tree and meta pages changed
# at random (seeded: the same copies every run). Whatever the damage, cache-verify reports: exit 0
# or 1 (2 only for a store it cannot open), never a signal, and under the ASan build no
# sanitizer report. LMDB trusts its pages, and a node offset or key size made to point past its
# page had cache-verify crash (SIGSEGV, seeds 12, 66 and 105 of these); the pages are now walked
# before LMDB reads them (libcache/core/verify/verify_pages.c). The damage of seeds 12 and 66 must
# be said as a malformed page of the audio db.
set -u
V="$FC_BIN/cache-verify"
[ -x "$V" ] || { echo "FAIL: $V not built"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
"$FC_PYTHON" "$FC_SRC/tests/reference/test_verify_store.py" make base --n 300 --min-samples 2000 \
  --max-samples 30000 >/dev/null || { echo "FAIL: the fixture writer failed"; exit 1; }
"$FC_PYTHON" - "$V" <<'PY'
import lmdb, os, random, shutil, struct, subprocess, sys
V = sys.argv[1]
env = lmdb.open("base", max_dbs=8)  # pages freed too: a free list of several entries
meta = env.open_db(b"meta")
for i in range(5):
    with env.begin(write=True) as t:
        t.put(b"scratch%d" % i, b"x" * 40000, db=meta)
    with env.begin(write=True) as t:
        t.delete(b"scratch%d" % i, db=meta)
env.close()
base = open("base/data.mdb", "rb").read()
PS = 4096
# branch, leaf and meta pages (not the records' overflow pages, whose damage the checksums find)
pages = [i for i in range(len(base) // PS) if struct.unpack_from("<H", base, i * PS + 10)[0] in (1, 2, 8)]
bad, said = 0, {}
for seed in range(150):
    random.seed(seed)
    d = bytearray(base)
    for _ in range(random.choice([1, 1, 2, 4])):
        at = random.choice(pages) * PS + random.randrange(PS)
        if random.random() < 0.5:
            d[at] ^= 1 << random.randrange(8)
        else:
            d[at] = random.randrange(256)
    shutil.rmtree("t", ignore_errors=True)
    os.mkdir("t")
    open("t/data.mdb", "wb").write(d)
    r = subprocess.run([V, "-q", "t"], capture_output=True, text=True, timeout=120)
    if r.returncode not in (0, 1, 2) or "Sanitizer" in r.stderr or "runtime error" in r.stderr:
        bad += 1
        print(f"FAIL seed {seed}: exit {r.returncode}\n{r.stdout[-400:]}{r.stderr[-1500:]}")
    said[seed] = r.stdout
for seed in (12, 66):
    if "B-tree damaged (page " not in said[seed] or " of the audio db: " not in said[seed]:
        bad += 1
        print(f"FAIL seed {seed}: not said as a malformed page of the audio db:\n{said[seed]}")
sys.exit(1 if bad else 0)
PY
