#!/bin/bash
# cache-verify's consistency checks: a manifest id without features, a missing feature, a config
# mismatch (--expect-preset other than the store's), missing tokens (--expect-tokens), an orphan
# record (a warning: exit 0, or 1 with --strict), changed source files (--sources, --rehash), and a
# transcript that does not hash to its text entry's digest.
set -u
V="$FC_BIN/cache-verify"
[ -x "$V" ] || { echo "FAIL: $V not built"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
fail=0
"$FC_PYTHON" "$FC_SRC/tests/reference/test_verify_store.py" make s --n 20 --tokens --sources src \
  --manifest m.csv >keys ||
  { echo "FAIL: the fixture writer (test_verify_store.py make) failed"; exit 1; }
key_of() { awk -v id="$1" '$1 == id {print $2}' keys; }
run() { # name want_rc [args]: run on s, report lines (summary dropped) in got
  local name=$1 want=$2; shift 2
  "$V" "$@" s >out 2>err; local rc=$?
  [ "$rc" = "$want" ] || { echo "FAIL $name: exit $rc, want $want"; cat out err; fail=1; }
  grep -v ' errors\?, [0-9]* warnings\?;' out >got
}
same() { diff -u want got >/dev/null || { echo "FAIL $1:"; diff -u want got; fail=1; }; }

run clean 0 --manifest m.csv --expect-tokens --sources --rehash
: >want; same clean
cfg=$("$FC_PYTHON" - <<'PY'
import lmdb
e = lmdb.open("s", max_dbs=8, readonly=True, lock=False)
with e.begin() as t:
    for k, v in t.cursor(db=e.open_db(b"meta", txn=t, create=False)):
        if k.startswith(b"cfg/") and b'"kind":"mel"' in v: print(k[4:].decode())
PY
)

# a manifest naming an id the store lacks, and a feature deleted from the store
echo "utt99999|one more|one more" >>m.csv
"$FC_PYTHON" - "$(key_of utt00004)" <<'PY'
import lmdb, sys
e = lmdb.open("s", max_dbs=8)
with e.begin(write=True) as t:
    assert t.delete(bytes.fromhex(sys.argv[1]), db=e.open_db(b"feat", txn=t))
PY
run manifest 1 --manifest m.csv --expect-tokens
cat >want <<W
s: error: audio utt99999: missing: manifest line 21 names it, the store has no audio entry (no features)
s: error: text utt99999: missing: manifest line 21 names it, the store has no text entry (no tokens)
s: error: feat $(key_of utt00004) (id utt00004): missing: no feature record for mel config hifigan $cfg
W
same manifest

# a config mismatch: the training run wants tacotron2 features
run mismatch 1 --expect-preset tacotron2
t2=$(grep -o 'config [0-9a-f]\{32\}) is not' got | cut -c8-39)
[ -n "$t2" ] || { echo "FAIL mismatch: no config digest"; cat got; fail=1; }
grep -qx "s: error: meta cfg/$t2: config mismatch: expected preset tacotron2 (config $t2) is not in the store; stored mel configs: hifigan $cfg" got \
  || { echo "FAIL mismatch line"; cat got; fail=1; }
run mismatch-digest 1 --expect-config 0123456789abcdef0123456789ABCDEF
grep -qx "s: error: meta cfg/0123456789abcdef0123456789abcdef: config mismatch: expected mel config 0123456789abcdef0123456789abcdef is not in the store; stored mel configs: hifigan $cfg" got \
  || { echo "FAIL mismatch-digest line"; cat got; fail=1; }
run expect-tokens-name 1 --expect-tokens=phonemes
grep -q "^s: error: meta: config mismatch: expected token config phonemes is not in the store; stored token configs: chars [0-9a-f]*$" got \
  || { echo "FAIL expect-tokens name"; cat got; fail=1; }
"$V" --expect-preset nosuch s >out 2>err; rc=$?
[ $rc = 2 ] && [ "$(head -1 err)" = "cache-verify: unknown preset 'nosuch' (want one of hifigan, tacotron2, librosa, whisper, kaldi; one stored in another dtype as cache-config lists it, 'kaldi (mq)'; or a 32-hex config digest)" ] \
  || { echo "FAIL unknown preset: exit $rc"; cat err; fail=1; }

# an orphan: a feature whose audio entry is gone — a warning; --strict makes it fail
"$FC_PYTHON" - <<'PY'
import lmdb
e = lmdb.open("s", max_dbs=8)
with e.begin(write=True) as t:
    assert t.delete(b"utt00009", db=e.open_db(b"audio", txn=t))
PY
run orphan 1 --expect-preset hifigan
cat >want <<W
s: error: feat $(key_of utt00004) (id utt00004): missing: no feature record for mel config hifigan $cfg
s: warning: feat $(key_of utt00009): orphan: no audio entry refers to this record (config hifigan $cfg): cache-prune removes it
s: note: 1 utterance has a text entry but no audio entry (utt00009): a loader reading features and tokens leaves it out (its problems() name it); featurize its audio for training on it
W
same orphan
# remove the missing-feature error so that only the warning remains
"$FC_PYTHON" - <<'PY'
import lmdb
e = lmdb.open("s", max_dbs=8)
with e.begin(write=True) as t:
    assert t.delete(b"utt00004", db=e.open_db(b"audio", txn=t))
PY
run warning-only 0
grep -q '^s: warning: feat [0-9a-f]*: orphan: ' got || { echo "FAIL warning-only"; cat got; fail=1; }
run warning-strict 1 --strict

# changed sources: one grown, one rewritten with the same size and mtime, one deleted
printf 'x' >>src/utt00001.wav
"$FC_PYTHON" - <<'PY'
import os
p = "src/utt00002.wav"; st = os.stat(p); b = bytearray(open(p, "rb").read()); b[-1] ^= 1
open(p, "wb").write(b); os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
PY
rm src/utt00003.wav
run sources 1 --sources
cat >want <<W
s: error: audio utt00001: source changed: src/utt00001.wav is $(stat -c %s src/utt00001.wav) bytes, its features were made from $(( $(stat -c %s src/utt00001.wav) - 1 )) bytes
s: error: audio utt00003: source src/utt00003.wav: No such file or directory (the corpus moved? --source-root DIR looks for it under DIR)
s: warning: feat $(key_of utt00009): orphan: no audio entry refers to this record (config hifigan $cfg): cache-prune removes it
s: note: 2 utterances have text entries but no audio entry (utt00004 first): a loader reading features and tokens leaves them out (its problems() name them); featurize their audio for training on them
W
same sources
run rehash 1 --rehash
grep -q '^s: error: audio utt00002: source changed: src/utt00002.wav hashes to [0-9a-f]\{32\}, its features were made from [0-9a-f]\{32\}$' got \
  || { echo "FAIL rehash"; cat got; fail=1; }
[ "$(grep -c '^s: error: audio' got)" = 3 ] || { echo "FAIL rehash: want 3 source errors"; cat got; fail=1; }

# a touched source: its mtime as a time (to the nanosecond when either has a fraction), not as ns
stored=$(TZ=UTC stat -c %y src/utt00005.wav | sed 's/ +0000$//')
touch -d '2026-01-02 03:04:05.5 UTC' src/utt00005.wav
run touched 1 --sources
grep -qxF "s: error: audio utt00005: source changed: src/utt00005.wav has mtime 2026-01-02 03:04:05.500000000 UTC, its features were made from it at mtime $stored UTC (--rehash tells whether its bytes changed)" got \
  || { echo "FAIL touched (stored $stored)"; cat got; fail=1; }
run touched-rehash 1 --sources --rehash
grep -qxF "s: warning: audio utt00005: source src/utt00005.wav touched (mtime 2026-01-02 03:04:05.500000000 UTC, stored $stored UTC) but its bytes are unchanged" got \
  || { echo "FAIL touched-rehash"; cat got; fail=1; }

# a damaged transcript: the text no longer hashes to the entry's digest, from whose text the tok
# records were made (same length, one letter changed: nothing else tells)
"$FC_PYTHON" - <<'PY'
import lmdb
e = lmdb.open("s", max_dbs=8)
with e.begin(write=True) as t:
    d = e.open_db(b"text", txn=t)
    v = t.get(b"utt00006", db=d)
    assert v[16:] == b"text number 6", v
    t.put(b"utt00006", v[:16] + b"text number 7", db=d)
PY
run text-digest 1
grep -q "^s: error: text utt00006: transcript hashes to [0-9a-f]\{32\}, the entry's text digest is [0-9a-f]\{32\}: its tokens were made from another text$" got \
  || { echo "FAIL text-digest"; cat got; fail=1; }
[ "$(grep -c ': error: ' got)" = 1 ] || { echo "FAIL text-digest: want 1 error"; cat got; fail=1; }
exit $fail
