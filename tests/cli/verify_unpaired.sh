#!/bin/bash
# A store holding features and token ids in which some utterances have a text entry and no audio
# entry (a tokenize over a manifest with lines featurize never stored, or a split store's part
# whose writer stopped before its first commit and that tokenize mended), or an audio entry and no
# text entry: cache-verify without a manifest said the store was clean, and a training loop's
# loader reading features and tokens left those utterances out (Loader.problems() alone named
# them). Now a note each (no finding: exit 0, --strict too), naming the first id; --json counts
# them (text_only, audio_only). A store of one kind, a failure record's id and a --manifest run
# (whose errors say it) give no note.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
V="$FC_BIN/cache-verify"
make_corpus c 12 || exit 1
head -8 c/metadata.csv >c/eight.csv
note_text() { # STORE N FIRST
  if [ "$2" = 1 ]; then
    echo "$1: note: 1 utterance has a text entry but no audio entry ($3): a loader reading features and tokens leaves it out (its problems() name it); featurize its audio for training on it"
  else
    echo "$1: note: $2 utterances have text entries but no audio entry ($3 first): a loader reading features and tokens leaves them out (its problems() name them); featurize their audio for training on them"
  fi
}
counts() { "$V" --json "$1" | "$PY" -c 'import json, sys; o = json.loads(sys.stdin.readline()); print(o["text_only"], o["audio_only"])'; }
ids() { cut -d'|' -f1 "$1"; }

# features for 8 lines, tokens for all 12: 4 text-only
"$FC_BIN/featurize" -q -o s --manifest c/eight.csv || { echo "FAIL featurize"; exit 1; }
"$FC_BIN/tokenize" -q -o s --manifest c/metadata.csv --build-vocab || { echo "FAIL tokenize"; exit 1; }
first=$(ids c/metadata.csv | sed -n 9p)
for strict in "" --strict; do
  "$V" $strict s >out 2>err
  rc=$?
  [ $rc = 0 ] || { echo "FAIL s $strict: exit $rc"; cat out err; fail=1; }
  [ "$(head -1 out)" = "$(note_text s 4 "$first")" ] || { echo "FAIL s $strict: the note"; cat out; fail=1; }
  [ "$(wc -l <out)" = 2 ] || { echo "FAIL s $strict: want the note and the summary"; cat out; fail=1; }
done
[ "$(counts s)" = "4 0" ] || { echo "FAIL s --json: $(counts s)"; fail=1; }
# what the note says the loader does
"$PY" - <<'PY' || fail=1
import featcache
ld = featcache.Loader("s", batch_size=4, tokens="chars")
probs = sorted(p[0] for p in ld.problems() if p[2] == "text without audio entry")
got = sorted(u for b in ld for u in b.ids)
want = [l.split("|")[0] for l in open("c/metadata.csv")]
assert probs == want[8:] and got == sorted(want[:8]), (probs, got)
PY
# with the manifest: its errors name them, no note
"$V" --manifest c/metadata.csv s >out 2>err
[ $? = 1 ] && ! grep -q "note: .* no audio entry" out && [ "$(grep -c 'error: audio .*: missing: manifest line' out)" = 4 ] ||
  { echo "FAIL s --manifest"; cat out; fail=1; }

# features for all 12, tokens for 8: 4 audio-only
"$FC_BIN/featurize" -q -o a --manifest c/metadata.csv && "$FC_BIN/tokenize" -q -o a --manifest c/eight.csv --build-vocab ||
  { echo "FAIL a"; exit 1; }
"$V" a >out 2>err
[ $? = 0 ] && [ "$(head -1 out)" = "a: note: 4 utterances have audio entries but no text entry ($first first): a loader reading tokens leaves them out (its problems() name them); tokenize their transcripts into the store for training on them" ] ||
  { echo "FAIL a: the note"; cat out; fail=1; }
[ "$(counts a)" = "0 4" ] || { echo "FAIL a --json: $(counts a)"; fail=1; }

# one kind alone, or all paired: no note
"$FC_BIN/featurize" -q -o f --manifest c/eight.csv && "$FC_BIN/tokenize" -q -o t --manifest c/metadata.csv --build-vocab &&
  "$FC_BIN/featurize" -q -o both --manifest c/metadata.csv && "$FC_BIN/tokenize" -q -o both --manifest c/metadata.csv --build-vocab ||
  { echo "FAIL f, t, both"; exit 1; }
for st in f t both; do
  "$V" "$st" >out 2>err
  [ $? = 0 ] && [ "$(wc -l <out)" = 1 ] && [ "$(counts "$st")" = "0 0" ] || { echo "FAIL $st: no note wanted"; cat out; fail=1; }
done

# a line featurize failed (its failure record says why): no note for it
cp -r f g && cp c/eight.csv c/nine.csv && echo "bad|a line whose audio is no audio" >>c/nine.csv &&
  echo "not audio" >c/wavs/bad.wav && "$FC_BIN/featurize" -q -o g --manifest c/nine.csv 2>/dev/null
"$FC_BIN/tokenize" -q -o g --manifest c/nine.csv --build-vocab || { echo "FAIL g"; exit 1; }
"$V" g >out 2>err
[ $? = 0 ] && ! grep -q "note:" out && grep -q "^g: recorded failure: bad: " out && [ "$(counts g)" = "0 0" ] ||
  { echo "FAIL g: a failure record's id"; cat out; fail=1; }

# a split store whose part-1 was never committed to (its writer stopped first), mended by
# tokenize: that part holds token ids and no audio (no mel config either)
"$FC_BIN/featurize" -q --writers 3 -o sp --manifest c/metadata.csv || { echo "FAIL sp"; exit 1; }
rm -rf sp/part-1 && "$PY" -c 'import lmdb; lmdb.open("sp/part-1", max_dbs=8).close()' || exit 1
"$FC_BIN/tokenize" -q -o sp --manifest c/metadata.csv --build-vocab || { echo "FAIL tokenize sp"; exit 1; }
n1=$("$V" --json sp/part-1 | "$PY" -c 'import json, sys; print(json.loads(sys.stdin.readline())["entries"]["text"])')
"$V" sp >out 2>err
[ "$n1" -gt 0 ] && grep -q "^sp/part-1: note: $n1 utterances\? ha[sv]e\? .*text entr.* but no audio entry " out ||
  { echo "FAIL sp: the mended part ($n1 text entries)"; cat out; fail=1; }
! grep -q "^sp/part-[02]: note" out || { echo "FAIL sp: a note on a whole part"; cat out; fail=1; }
exit $fail
