#!/usr/bin/env bash
# cache-verify --manifest also counts the stored utterances the manifest does not name (a store made
# for the whole corpus checked with one split's manifest, or an id dropped from the manifest since):
# a note, no finding — exit 0, --strict too — since the loader reads them unless given the
# manifest, and cache-prune --manifest removes them; "beyond_manifest" in --json. One store, a
# split store (its parts as one dataset) and two shards; none when the manifest names them all.
set -u
B=${FC_BIN:?}
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for i in 1 2 3 4 5; do
  sox -n -r 22050 -b 16 "u$i.wav" synth 0.$i sine $((200 + 50 * i)) || { echo "FAIL: sox"; exit 1; }
  echo "u$i|Line $i." >>all.csv
done
grep -E '^u(2|4)\|' all.csv >dev.csv
"$B/featurize" -q --manifest all.csv --audio-dir . -o st || fail "featurize st"
"$B/featurize" -q --writers 2 --manifest all.csv --audio-dir . -o sp || fail "featurize sp"
for k in 0 1; do
  "$B/featurize" -q --manifest all.csv --audio-dir . --shard $k/2 -o s$k || fail "featurize s$k"
done
note='note: 3 stored utterances are not in the manifest (another split'"'"'s, or dropped from it): the loader reads them unless given the manifest (manifest=); cache-prune --manifest removes them'

"$B/cache-verify" --manifest dev.csv st >out 2>err
[ $? = 0 ] || fail "st: exit: $(cat err)"
[ "$(grep -c 'note:' out)" = 1 ] && grep -qxF "st: $note" out || fail "st: $(cat out)"
"$B/cache-verify" --strict --manifest dev.csv st >/dev/null 2>&1 || fail "st --strict: exit $?"
for d in "sp" "s0 s1"; do
  # shellcheck disable=SC2086
  "$B/cache-verify" --manifest dev.csv $d >out 2>err
  [ $? = 0 ] || fail "$d: exit: $(cat err)"
  [ "$(grep -c 'note:' out)" = 1 ] && grep -qxF "dataset: $note" out || fail "$d: $(cat out)"
done
"$B/cache-verify" --json --manifest dev.csv st >j1 2>/dev/null || fail "st --json: exit $?"
"$B/cache-verify" --json --manifest dev.csv s0 s1 >j2 2>/dev/null || fail "s0 s1 --json: exit $?"
"$B/cache-verify" --json --manifest all.csv s0 s1 >j3 2>/dev/null || fail "all --json: exit $?"
"$PY" - <<'PY' || fail "json"
import json
j1 = [json.loads(l) for l in open("j1")]
j2, j3 = [[json.loads(l) for l in open(f)] for f in ("j2", "j3")]
assert j1[0]["beyond_manifest"] == 3, j1
assert j2[-1]["beyond_manifest"] == 3 and j3[-1]["beyond_manifest"] == 0, (j2[-1], j3[-1])
assert all(s.get("beyond_manifest", 0) == 0 for s in j2[:-1]), j2  # the shards alone: no manifest
PY
"$B/cache-verify" --manifest all.csv st s0 >out 2>err
grep -q 'note:' out && fail "all named: $(cat out)"
exit $((fails > 0))
