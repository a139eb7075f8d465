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

# two shards that both hold audio and text: every store
"$B/featurize" -q -o s0 a.wav && "$B/tokenize" -q -o s0 --manifest m.csv --build-vocab || fail "s0"
cp -r s0 s1
"$B/cache-verify" s0 s1 >out 2>err
want='dataset of 2 stores: 0 errors; 2 audio, 2 text entries; 1 mel, 1 token configs in every store; 0 manifest ids'
[ "$(grep '^dataset' out)" = "$want" ] || fail "two full shards: $(grep '^dataset' out)"
exit $((fails > 0))
