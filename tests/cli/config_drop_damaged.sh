#!/usr/bin/env bash
# cache-config --drop on a store whose LMDB free list names a page a B-tree uses (a flipped bit in
# one of its page numbers): the drop's writes are handed that page and write over the tree — it
# exited 0 and left the audio db's root overwritten. Each part's pages are checked first, as
# cache-verify's first step checks them: refused, exit 1, nothing written, the finding said.
set -u
C="$FC_BIN/cache-config"
[ -x "$C" ] || { echo "FAIL: $C not built"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
for i in 1 2 3; do
  sox -n -r 22050 -b 16 "u$i.wav" synth 0.$((i + 3)) sine $((200 * i)) || { echo "FAIL: sox"; exit 1; }
done
"$FC_BIN/featurize" -q --device cpu -o s u*.wav && "$FC_BIN/featurize" -q --device cpu --preset whisper -o s u*.wav ||
  { echo "FAIL: featurize"; exit 1; }
. "$FC_SRC/tests/cli/free_list.bash"
free_pages s && free_list_damage s live || { echo "FAIL: damaging the free list"; exit 1; }
cp s/data.mdb before.mdb
"$C" --drop whisper s >out 2>err
rc=$?
[ $rc = 1 ] || { echo "FAIL --drop on a damaged free list: exit $rc, want 1"; cat err; fail=1; }
grep -qx "cache-config: s: cannot drop config [0-9a-f]\{32\}: damaged (env data.mdb: free list damaged (it names page [0-9]*, which the audio B-tree uses): .*): nothing dropped" err ||
  { echo "FAIL --drop on a damaged free list: message"; cat err; fail=1; }
cmp -s s/data.mdb before.mdb || { echo "FAIL --drop on a damaged free list: data.mdb changed"; fail=1; }
# cache-merge copies it into a sound store, from which the drop goes on
"$FC_BIN/cache-merge" -q -o new s && "$C" -q --drop whisper new && "$FC_BIN/cache-verify" -q new >/dev/null ||
  { echo "FAIL the merged copy: drop and verify"; fail=1; }
exit $fail
