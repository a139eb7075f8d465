#!/bin/bash
# cache-verify on a token config's vocabulary (chars: meta vocab/<hex>) and tokenizer.json (bpe:
# meta tokenizer/<hex>), which readers turning ids back into symbols read: clean as tokenize
# writes them; missing, or bytes other than the config's vocab_digest / tokenizer_json_digest
# name, an error naming the key and both digests; missing beside a config no record was made with
# yet (an older tokenize or cache-merge cut short), a warning that the rerun clears.
set -u
V="$FC_BIN/cache-verify"
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
printf 'u1|Utterance number one.|utterance number one.\nu2|Said once, said twice.|said once, said twice.\n' >m.csv
make_bpe_json tok.json
"$FC_BIN/tokenize" -q --build-vocab -o s m.csv || exit 1
"$FC_BIN/tokenize" -q -t bpe --tokenizer-json tok.json -o s m.csv || exit 1
"$V" -q s >out 2>&1 || { echo "FAIL clean store"; cat out; fail=1; }

# meta key, config field, config digest of each kind
read -r chars_hex vocab_d bpe_hex tok_d < <("$PY" - <<'PY'
import json, lmdb
e = lmdb.open("s", readonly=True, lock=False, max_dbs=20)
with e.begin() as t:
    meta = e.open_db(b"meta", txn=t, create=False)
    cfg = {k[4:].decode(): json.loads(v) for k, v in t.cursor(db=meta) if k.startswith(b"cfg/")}
c = next(h for h, j in cfg.items() if j["tokenizer"] == "chars")
b = next(h for h, j in cfg.items() if j["tokenizer"] == "bpe")
print(c, cfg[c]["vocab_digest"], b, cfg[b]["tokenizer_json_digest"])
PY
)
[ -n "$tok_d" ] || { echo "FAIL: no chars and bpe configs"; exit 1; }

damage() { # copy DIR, then KEY deleted or (with VALUE) rewritten in its meta
  rm -rf "$1" && cp -r s "$1" && "$PY" - "$@" <<'PY'
import lmdb, sys
e = lmdb.open(sys.argv[1], max_dbs=20)
with e.begin(write=True) as t:
    meta = e.open_db(b"meta", txn=t, create=False)
    if len(sys.argv) > 3:
        assert t.get(sys.argv[2].encode(), db=meta) is not None
        t.put(sys.argv[2].encode(), sys.argv[3].encode(), db=meta)
    else:
        assert t.delete(sys.argv[2].encode(), db=meta)
PY
}
expect() { # store line: exit 1 and exactly that error
  "$V" "$1" >out 2>err; local rc=$?
  [ $rc = 1 ] || { echo "FAIL $1: exit $rc, want 1"; cat out; fail=1; }
  [ "$(grep ': error: ' out)" = "$2" ] || { echo "FAIL $1:"; cat out; echo "want: $2"; fail=1; }
}
damage nov "vocab/$chars_hex"
expect nov "nov: error: meta vocab/$chars_hex: missing: token config chars $chars_hex names vocab_digest $vocab_d, the store does not hold it"
damage badv "vocab/$chars_hex" "$(printf '<pad>\n<unk>\n<bos>\n<eos>\nx')"
other=$("$PY" -c 'import sys, xxhash; h = xxhash.xxh3_128_intdigest(b"<pad>\n<unk>\n<bos>\n<eos>\nx"); print(((h & (2**64-1)).to_bytes(8, "little") + (h >> 64).to_bytes(8, "little")).hex())')
expect badv "badv: error: meta vocab/$chars_hex: hashes to $other, but token config chars $chars_hex names vocab_digest $vocab_d"
damage notok "tokenizer/$bpe_hex"
expect notok "notok: error: meta tokenizer/$bpe_hex: missing: token config bpe $bpe_hex names tokenizer_json_digest $tok_d, the store does not hold it"

# a config stored without it and with no record made yet (a tokenize cut short between the two
# writes): a warning, exit 0; the rerun stores it
rm -rf short && mkdir short && "$PY" - <<'PY'
import lmdb
src = lmdb.open("s", readonly=True, lock=False, max_dbs=20)
dst = lmdb.open("short", max_dbs=20)
with src.begin() as t, dst.begin(write=True) as u:
    sm = src.open_db(b"meta", txn=t, create=False)
    dm = dst.open_db(b"meta", txn=u)
    for name in (b"audio", b"text", b"feat", b"tok"):
        dst.open_db(name, txn=u)
    for k, v in t.cursor(db=sm):
        if k == b"format" or k.startswith(b"cfg/") or k.startswith(b"created/"):
            u.put(k, v, db=dm)
PY
"$V" short >out 2>err; rc=$?
[ $rc = 0 ] || { echo "FAIL short: exit $rc, want 0"; cat out; fail=1; }
grep -Fqx "short: warning: meta vocab/$chars_hex: missing: token config chars $chars_hex names vocab_digest $vocab_d, the store does not hold it (no record was made with the config: a tokenize or cache-merge cut short stores it when run again)" out ||
  { echo "FAIL short: no warning"; cat out; fail=1; }
"$FC_BIN/tokenize" -q --build-vocab -o short m.csv || { echo "FAIL short: rerun"; fail=1; }
"$FC_BIN/tokenize" -q -t bpe --tokenizer-json tok.json -o short m.csv || { echo "FAIL short: rerun"; fail=1; }
"$V" --strict short >out 2>err || { echo "FAIL short: not clean after the rerun"; cat out; fail=1; }

# --expect-tokens=chars where two token configs answer to 'chars' (the vocabulary rebuilt, or
# --case fold): both are checked, and a warning says that the loader's tokens="chars" would
# refuse the name (cache-verify ... && python train.py must not pass and then fail at once)
"$FC_BIN/tokenize" -q --build-vocab -o two m.csv || { echo "FAIL two: tokenize"; fail=1; }
"$FC_BIN/tokenize" -q --build-vocab --case fold -o two m.csv || { echo "FAIL two: tokenize fold"; fail=1; }
"$V" --expect-tokens=chars two >out 2>err; rc=$?
[ $rc = 0 ] && grep -qE "^two: warning: meta: 2 token configs answer to 'chars' \([0-9a-f]{32}, [0-9a-f]{32}\): a loader given tokens=\"chars\" refuses the name; give it one of these digests$" out ||
  { echo "FAIL two chars configs: exit $rc"; cat out err; fail=1; }
"$V" --strict --expect-tokens=chars two >out 2>err && { echo "FAIL two chars configs pass --strict"; fail=1; }
"$V" --expect-tokens=chars s >out 2>err && ! grep -q 'answer to' out || { echo "FAIL one chars config: $(cat out)"; fail=1; }
exit $fail
