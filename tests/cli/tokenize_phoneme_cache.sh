#!/usr/bin/env bash
# tokenize -t phonemes --build-vocab reads each line with espeak-ng once: the vocab pass keeps each
# line's reading (in memory up to FC_PHONEME_CACHE bytes, 64 MiB by default, the rest in an unnamed
# temporary file beside the store, or in TMPDIR for --shard) and the run makes the ids from it.
# (It used to run espeak-ng over the whole corpus twice, once for the vocab, once for the ids.)
# 1. The store is the same as the two-pass path's (FC_PHONEME_CACHE=off): every key and value of
#    every table (meta's created/ stamps aside), stderr and --json, over a corpus of odd lines
#    (empty, blank, spaces or marks only, NFKC-changed, CJK, Arabic, Armenian read in a child,
#    emoji, control characters, a 5,000-letter word, an 8 KB line, invalid UTF-8, over
#    --max-text-bytes, repeated texts), for a manifest file in batches (a bulk load), stdin,
#    --shard (of a file, of stdin, into a split store: the vocab pass keeps the shard's readings
#    alone), a split store and a rerun into a store holding part of the corpus, with the readings
#    in memory and all in the file (FC_PHONEME_CACHE=0).
# 2. espeak-ng reads each line once: with every line read in a child (FC_PHONEMIZE_CHILD=all), the
#    child after the vocab pass's last one is made to die (FC_FAULT=espeak:N+1): the two-pass path
#    loses a line to it, the cache makes no such child (fault-injection builds only).
# 3. A line espeak-ng failed on in the vocab pass is read again for its ids, as before.
# 4. The temporary file leaves nothing behind, in the store's directory or in TMPDIR.
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
P=${FC_PYTHON:-python3}
"$P" -c 'import lmdb' 2>/dev/null || { echo "skipped: no python lmdb module to read the stores" >&2; exit 77; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }
cd "$d" || exit 1
mkdir tmp
export TMPDIR=$d/tmp

"$P" - <<'PY' || fail "could not write the corpus"
import random, wave
r = random.Random(7)
words = ("the quick brown fox jumps over a lazy dog while Mr. Smith paid $3,000.50 on Jan. 2 "
         "at 10:30 e.g. version 2.0").split()
odd = ["Hello there.", "", "   ", "...", "Caf\u00e9 na\u00efve fa\u00e7ade \u2014 \u00bd \ufb01ne",
       "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002",
       "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
       "The word \u0561\u0562 here.", "emoji \U0001F600 and \u0301combining e\u0301",
       "ctrl\x01chars\x07here", "x" * 5000, " ".join(r.choice(words) for _ in range(1500)),
       "What?! Really... yes; no: maybe", "Hello there."]
lines = odd + [" ".join(r.choice(words) for _ in range(r.randint(1, 20))) +
               r.choice([".", "?", "!", ",", ""]) for _ in range(60)]
with open("odd.tsv", "wb") as f:
    for i, t in enumerate(lines):
        f.write(b"u%03d\t" % i + t.encode() + b"\n")
        if i == 20: f.write(b"\n")
        if i == 30: f.write(b"u900\t\xff\xfe bad utf8\n")
        if i == 40: f.write(b"u901\t" + b"y " * 40000 + b"\n")
for i in range(3):
    with wave.open("w%d.wav" % i, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
        w.writeframes(bytes(4000))
PY
head -30 odd.tsv > part.tsv
"$FC_BIN/featurize" -q --writers 3 -o splittpl w?.wav 2>err || fail "featurize --writers 3"

# every table's keys and values (a split store: each part's), meta's created/ stamps left out
cat > dump.py <<'PY'
import lmdb, os, sys
def dump(path):
    env = lmdb.open(path, readonly=True, lock=False, max_dbs=64)
    with env.begin() as t:
        names = [k for k, _ in t.cursor()]
    for name in names:
        db = env.open_db(name, create=False)
        with env.begin() as t:
            for k, v in t.cursor(db):
                if not (name == b"meta" and k.startswith(b"created/")):
                    print(name.decode(), k.hex(), v.hex())
p = sys.argv[1]
if os.path.exists(os.path.join(p, "data.mdb")): dump(p)
for sub in sorted(os.listdir(p)):
    if os.path.exists(os.path.join(p, sub, "data.mdb")):
        print("part", sub); dump(os.path.join(p, sub))
PY

# run NAME MODE: tokenize odd.tsv into st-NAME the MODE way; its dump, stderr and --json in NAME.*
run() {
  local name=$1 mode=$2 s=st-$1
  rm -rf "$s"
  case $mode in
  file) "$T" -t phonemes --build-vocab --json --batch 16 -o "$s" odd.tsv ;;
  stdin) "$T" -t phonemes --build-vocab --json --batch 16 -o "$s" - <odd.tsv ;;
  shard) "$T" -t phonemes --build-vocab --json --batch 16 --shard 1/3 -o "$s" odd.tsv ;;
  shardstdin) "$T" -t phonemes --build-vocab --json --batch 16 --shard 2/3 -o "$s" - <odd.tsv ;;
  shardsplit) cp -a splittpl "$s" &&
    "$T" -t phonemes --build-vocab --json --batch 16 --shard 0/2 -o "$s" odd.tsv ;;
  split) cp -a splittpl "$s" && "$T" -t phonemes --build-vocab --json --batch 16 -o "$s" odd.tsv ;;
  rerun) "$T" -q -t phonemes --build-vocab -o "$s" part.tsv 2>/dev/null
    "$T" -t phonemes --build-vocab --json --batch 16 --add-eos --case fold -o "$s" odd.tsv ;;
  esac >"$name.json" 2>"$name.err"
  echo "exit $?" >>"$name.err"
  sed -i "s|$s|STORE|g" "$name.err" # (the rerun's second config is said naming its store)
  sed -i 's/"wall_seconds":[0-9.]*/"wall_seconds":_/' "$name.json"
  "$P" dump.py "$s" >"$name.dump" || fail "$name: cannot read the store"
}

for mode in file stdin shard shardstdin shardsplit split rerun; do
  FC_PHONEME_CACHE=off run "$mode-off" "$mode"
  grep -q '^tok ' "$mode-off.dump" || fail "$mode: the two-pass path stored no records"
  grep -q '^exit 1$' "$mode-off.err" || fail "$mode: the two-pass path: want exit 1 (bad lines)"
  for cache in default 0; do
    if [ "$cache" = default ]; then run "$mode-$cache" "$mode"; else FC_PHONEME_CACHE=$cache run "$mode-$cache" "$mode"; fi
    for f in dump err json; do
      cmp -s "$mode-off.$f" "$mode-$cache.$f" ||
        fail "$mode, FC_PHONEME_CACHE=$cache: its $f differs from the two-pass path's:
$(diff "$mode-off.$f" "$mode-$cache.$f" | head -5 | cut -c1-200)"
    done
  done
  [ -z "$(ls -A tmp)" ] || fail "$mode: left in TMPDIR: $(ls -A tmp)"
done
for s in st-file-0 st-stdin-0 st-rerun-0; do
  [ "$(ls -A "$s" | sort | tr '\n' ' ')" = "data.mdb lock.mdb " ] || fail "$s holds $(ls -A "$s")"
done

# 2, 3: five clean lines, each read in a child: the vocab pass makes children 1-5
printf 'a\tOne line.\nb\tTwo lines here.\nc\tThree, four.\nd\tFive?\ne\tSix and seven!\n' >clean.tsv
if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  export FC_PHONEMIZE_CHILD=all
  FC_PHONEME_CACHE=off FC_FAULT=espeak:6 "$T" -t phonemes --build-vocab -o st-twice clean.tsv 2>err
  rc=$?
  [ "$rc" = 1 ] && grep -q 'clean.tsv:1: FC_EPHONEMIZE' err ||
    fail "the two-pass path: want line 1 lost to a 6th child (exit $rc)"
  FC_FAULT=espeak:6 "$T" -t phonemes --build-vocab -o st-once clean.tsv 2>err ||
    fail "a 6th espeak-ng child was made: exit $?"
  grep -q 'done: 5 of 5 (5 new' err || fail "cache: summary"
  # a line whose child died in the vocab pass is read again for its ids, as the two-pass path does
  for c in off default; do
    FC_PHONEME_CACHE=$c FC_FAULT=espeak:2 "$T" -t phonemes --build-vocab -o "st-died-$c" clean.tsv 2>"died-$c.err"
    echo "exit $?" >>"died-$c.err"
    "$P" dump.py "st-died-$c" >"died-$c.dump"
  done
  cmp -s died-off.err died-default.err || fail "a child died in the vocab pass: stderr differs: $(diff died-off.err died-default.err)"
  cmp -s died-off.dump died-default.dump || fail "a child died in the vocab pass: the stores differ"
  grep -q 'done: 5 of 5 (5 new' died-default.err || fail "a child died in the vocab pass: $(cat died-default.err)"
  unset FC_PHONEMIZE_CHILD
else
  echo "tokenize_phoneme_cache: espeak-ng's count not checked (no fault countdowns in this build)" >&2
fi
echo "tokenize_phoneme_cache: ok"
