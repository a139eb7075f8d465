#!/usr/bin/env bash
# cache-verify's dataset line says where the stores' configs are: "N mel, M token configs in every
# store" only when every store holds audio and text entries (docs/cache-verify.md: every store
# that holds audio (text) entries holds the same mel (token) configs; an empty one need not). It
# said "in every store" of a split store whose second part no id was routed to, which holds none.
set -u
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
printf 'a|Hello there.\n' >m.csv

# one utterance in a split store of 2 parts: part-1 holds nothing, no config either
"$B/featurize" -q --writers 2 -o sp a.wav || fail "featurize"
"$B/cache-verify" sp >out 2>err
[ $? = 0 ] || fail "verify sp: exit, want 0: $(cat err)"
want='dataset of 2 stores: 0 errors; 1 audio, 0 text entries; 1 mel configs in the 1 of 2 stores with audio entries, no token configs needed (no text entries); 0 manifest ids'
[ "$(grep '^dataset' out)" = "$want" ] || fail "split store: $(grep '^dataset' out)"

# two shards that both hold audio and text (a copy: one id, counted once): every store
"$B/featurize" -q -o s0 a.wav && "$B/tokenize" -q -o s0 --manifest m.csv --build-vocab || fail "s0"
cp -r s0 s1
"$B/cache-verify" s0 s1 >out 2>err
want='dataset of 2 stores: 0 errors; 1 audio, 1 text entries; 1 mel, 1 token configs in every store; 0 manifest ids'
[ "$(grep '^dataset' out)" = "$want" ] || fail "two full shards: $(grep '^dataset' out)"

# shards made with other options: the line names the fields that differ (it gave two digests)
"$B/tokenize" -q --build-vocab --export-vocab v.txt -o v --manifest m.csv || fail "vocab"
"$B/tokenize" -q --vocab v.txt -o t0 --manifest m.csv || fail "t0"
printf 'b|Hello here.\n' >m1.csv
"$B/tokenize" -q --vocab v.txt --add-bos -o t1 --manifest m1.csv || fail "t1"
c0=$("$B/cache-config" --json t0 | grep -o '"digest":"[0-9a-f]*"' | cut -d'"' -f4)
c1=$("$B/cache-config" --json t1 | grep -o '"digest":"[0-9a-f]*"' | cut -d'"' -f4)
"$B/cache-verify" t0 t1 >out 2>err
[ $? = 1 ] || fail "options: exit, want 1"
want="dataset: error: meta: t1 holds the tokens config $c1 that t0 lacks (t0's chars config ${c0:0:12}, but add_bos true where that has false): the stores cannot be read as one dataset with it"
grep -qxF "$want" out || fail "options: $(grep holds out)"
# another vocabulary: said so, not as two vocabulary digests
printf 'c|Zebra quiz.\n' >m2.csv
"$B/tokenize" -q --build-vocab -o t2 --manifest m2.csv || fail "t2"
"$B/cache-verify" t0 t2 >out 2>err
grep -q "^dataset: error: meta: t2 holds the tokens config [0-9a-f]* that t0 lacks (t0's chars config ${c0:0:12}, but another vocabulary): " out ||
  fail "vocabulary: $(grep holds out)"
# mel shards, one with --n-mels 64 (its preset then null): paired all the same
"$B/featurize" -q -o f0 a.wav && "$B/featurize" -q --n-mels 64 -o f1 a.wav || fail "f0 f1"
"$B/cache-verify" f0 f1 >out 2>err
grep -q "^dataset: error: meta: f1 holds the mel config [0-9a-f]* that f0 lacks (f0's hifigan config [0-9a-f]\{12\}, but n_mels 64 where that has 80): " out ||
  fail "mel: $(grep holds out)"
exit $((fails > 0))
