#!/usr/bin/env bash
# cache-merge on an input whose audio or text entry is damaged (LMDB checksums nothing): a text
# entry whose transcript no longer hashes to its text digest (a flipped bit: its tokens were made
# from another text), an audio entry cut short. The merge verified records, not entries: it
# copied both, said "done" and exited 0, and cache-verify then failed OUT. Each is now checked as
# cache-verify checks it, said ("STORE: text entry 'ID': damaged entry left out: ...") and left
# out, counted in bad_records and dropped, exit 1; OUT passes cache-verify and holds the other
# entries. And merged with a store holding the same id soundly, the conflict line said the same
# transcript twice ("text number 1" vs "text number 1"): it now says which one is damaged.
set -u
M="$FC_BIN/cache-merge"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
for s in a b; do
  "$FC_PYTHON" "$FC_SRC/tests/reference/test_verify_store.py" make $s --n 12 --tokens \
    --min-samples 4096 --max-samples 6000 --seed $([ $s = a ] && echo 1 || echo 2) >/dev/null ||
    { echo "FAIL: the fixture writer failed"; exit 1; }
done
"$FC_PYTHON" - <<'PY' || { echo "FAIL: damaging b"; exit 1; }
import lmdb
env = lmdb.open("b", max_dbs=8)
audio, text = env.open_db(b"audio"), env.open_db(b"text")
with env.begin(write=True) as t:
    ka, va = next(iter(t.cursor(db=audio)))
    t.put(ka, bytes(va)[:10], db=audio)
    kt, vt = list(t.cursor(db=text))[1]
    vt = bytearray(vt)
    vt[3] ^= 0x40
    t.put(kt, bytes(vt), db=text)
print(bytes(ka).decode(), bytes(kt).decode())
PY
read -r aid tid < <("$FC_PYTHON" -c "
import lmdb
env = lmdb.open('b', max_dbs=8, readonly=True, lock=False)
with env.begin() as t:
    print(bytes(next(iter(t.cursor(db=env.open_db(b'audio', txn=t))))[0]).decode(),
          bytes(list(t.cursor(db=env.open_db(b'text', txn=t)))[1][0]).decode())")
"$M" --json -o out b >out.txt 2>err.txt
rc=$?
[ $rc = 1 ] || { echo "FAIL merge: exit $rc, want 1"; cat err.txt; fail=1; }
grep -qx "cache-merge: b: audio entry '$aid': damaged entry left out: audio entry of 10 bytes (want at least 48)" err.txt ||
  { echo "FAIL the audio entry not said"; cat err.txt; fail=1; }
grep -qx "cache-merge: b: text entry '$tid': damaged entry left out: transcript hashes to [0-9a-f]*, the entry's text digest is [0-9a-f]*: its tokens were made from another text" err.txt ||
  { echo "FAIL the text entry not said"; cat err.txt; fail=1; }
grep -q '"bad_records":2,"dropped":2' out.txt || { echo "FAIL counts"; cat out.txt; fail=1; }
"$FC_BIN/cache-verify" -q out >v.txt 2>&1 || { echo "FAIL cache-verify of out"; cat v.txt; fail=1; }
"$FC_PYTHON" - "$aid" "$tid" <<'PY' || fail=1
import lmdb, sys
env = lmdb.open("out", max_dbs=8, readonly=True, lock=False)
with env.begin() as t:
    audio = [bytes(k).decode() for k, _ in t.cursor(db=env.open_db(b"audio", txn=t))]
    text = [bytes(k).decode() for k, _ in t.cursor(db=env.open_db(b"text", txn=t))]
ok = sys.argv[1] not in audio and sys.argv[2] not in text and len(audio) == 11 and len(text) == 11
print("" if ok else "FAIL out holds %d audio, %d text entries" % (len(audio), len(text)))
sys.exit(0 if ok else 1)
PY
"$M" -o out2 b a >out.txt 2>err.txt
rc=$?
[ $rc = 1 ] && grep -qx "cache-merge: a: text entry '$tid' differs from b's: the same transcript \"[^\"]*\" with another text digest: the other is damaged (transcript hashes to [0-9a-f]*, the entry's text digest is [0-9a-f]*: its tokens were made from another text); refused" err.txt ||
  { echo "FAIL the conflict with a sound copy: exit $rc"; cat err.txt; fail=1; }
exit $fail
