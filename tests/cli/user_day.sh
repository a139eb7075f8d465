#!/usr/bin/env bash
# A user's day on a real, imperfect corpus, end to end, with no edit of the manifest: an
# LJSpeech-style corpus of espeak-ng speech with the problems real corpora have — an empty WAV, a
# truncated WAV, a stereo 44.1 kHz file, an id in metadata.csv with no WAV, a line with numbers and
# abbreviations — taken through featurize, tokenize, cache-verify and a short PyTorch training loop
# on FeatcacheDataset, then through `make -j2 -f scripts/scaleout/Makefile SHARDS=4`, then through
# the failure policy (a bad file fixed: its record goes, in the store and in the merged store),
# with the corpus read from another directory and after it moved. ~30 s (120 espeak-ng files, the
# torch import, a 4-shard make twice): the one test that plays the whole day.
set -u
B=${FC_BIN:?}
SRC=${FC_SRC:?}
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v make >/dev/null || { echo "FAIL: make not installed (scripts/setup installs it)"; exit 1; }

# ---- the corpus: 120 utterances of espeak-ng speech (22.05 kHz mono), and the five problems ----
N=120
mkdir -p LJ/wavs
numbers='Dr. Smith paid $3.50 on Jan. 5th, 1999, at 10:30 a.m.'
numbers_norm='Doctor Smith paid three dollars fifty on January fifth, nineteen ninety-nine, at ten thirty a m.'
for i in $(seq -w 1 $N); do
  id=LJ001-0$i
  case $i in
  007) text=$numbers norm=$numbers_norm ;;
  *) text="This is sentence number $i of the test corpus." norm=$text ;;
  esac
  echo "$id|$text|$norm" >>LJ/metadata.csv
  case $i in
  010) ;; # listed in metadata.csv, no WAV
  *) espeak-ng -w "LJ/wavs/$id.wav" "$norm" || { echo "FAIL: espeak-ng failed"; exit 1; } ;;
  esac
done
: >LJ/wavs/LJ001-0020.wav # empty
head -c 3000 LJ/wavs/LJ001-0030.wav >t.wav && mv t.wav LJ/wavs/LJ001-0030.wav # truncated
sox LJ/wavs/LJ001-0040.wav -r 44100 -c 2 s.wav && mv s.wav LJ/wavs/LJ001-0040.wav # stereo 44.1 kHz
"$PY" -c 'import soundfile as sf, sys; i = sf.info(sys.argv[1]); assert (i.samplerate, i.channels) == (44100, 2), i' \
  LJ/wavs/LJ001-0040.wav || fail "the stereo file is not stereo 44.1 kHz"
manifest_sum=$(md5sum <LJ/metadata.csv)
failed_ids="LJ001-0010 LJ001-0020 LJ001-0030"

# ---- featurize ----
# -o naming the WAV folder by mistake is refused; nothing is written there
"$B/featurize" -q -o LJ/wavs --manifest LJ/metadata.csv >/dev/null 2>err
[ $? = 2 ] && grep -q 'not a featcache store, and not empty' err && [ ! -e LJ/wavs/data.mdb ] ||
  fail "featurize -o wavs: $(cat err)"
# the first run: the three bad files named, recorded, exit 1; -v names the stereo file's conversion
"$B/featurize" -v -j2 --device cpu --manifest LJ/metadata.csv -o cache >out 2>err
rc=$?
[ $rc = 1 ] || fail "featurize: exit $rc (want 1: three inputs failed)"
grep -qx 'featurize: LJ/wavs/LJ001-0010.wav: No such file or directory' err || fail "missing WAV line"
grep -qx 'featurize: LJ/wavs/LJ001-0020.wav: empty file' err || fail "empty WAV line"
grep -q '^featurize: LJ/wavs/LJ001-0030.wav: truncated: ' err || fail "truncated WAV line"
grep -q '^featurize: LJ/wavs/LJ001-0040.wav: stored as LJ001-0040 (.*; resampled 44100→22050 Hz, 2→1 channels)$' err ||
  fail "stereo conversion not named: $(grep 0040 err)"
grep -qx "featurize: done: 117 of $N (117 new, 0 already stored, 3 failed)" err || fail "summary: $(grep done: err)"
# with the documented flag the same corpus passes; the rerun stores nothing new
"$B/featurize" -q -j2 --device cpu --manifest LJ/metadata.csv -o cache --max-failed 3% --json >out 2>err
rc=$?
[ $rc = 0 ] || fail "featurize --max-failed 3%: exit $rc: $(cat err)"
grep -qx "featurize: done: 117 of $N (0 new, 117 already stored, 3 failed, allowed by --max-failed 3%)" err ||
  fail "rerun summary: $(grep done: err)"
"$PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(" ".join(sorted(f["id"] for f in r["failures"])))' out >ids
[ "$(cat ids)" = "$failed_ids" ] || fail "--json failures: $(cat ids)"

# ---- tokenize: every line (the numbers line's normalized column), the missing WAV's too ----
"$B/tokenize" -q --build-vocab --export-vocab vocab.txt -o cache --manifest LJ/metadata.csv 2>err ||
  fail "tokenize: $(cat err)"

# ---- cache-verify: recorded failures apart, exit 0; --strict fails on them; wavs is no store ----
"$B/cache-verify" --manifest LJ/metadata.csv --expect-preset hifigan --expect-tokens=chars cache >out 2>err
rc=$?
[ $rc = 0 ] || fail "cache-verify: exit $rc: $(grep error out)"
[ "$(grep -c '^cache: recorded failure: ' out)" = 3 ] || fail "recorded failures listed: $(cat out)"
grep -q '^cache: 0 errors, 0 warnings, 3 recorded failures; ' out || fail "verify summary: $(tail -n 1 out)"
"$B/cache-verify" -q --strict --manifest LJ/metadata.csv cache >/dev/null 2>&1
[ $? = 1 ] || fail "cache-verify --strict passes recorded failures"
"$B/cache-verify" LJ/wavs >/dev/null 2>err
[ $? = 2 ] && grep -qx "cache-verify: LJ/wavs: not a featcache store (no data.mdb)" err || fail "cache-verify wavs: $(cat err)"
"$B/loader-bench" LJ/wavs >/dev/null 2>err
[ $? = 2 ] && grep -qx "loader-bench: LJ/wavs: not a featcache store (no data.mdb)" err || fail "loader-bench wavs: $(cat err)"
# sources resolve from any directory (stored absolute)
(cd / && "$B/cache-verify" -q --sources "$tmp/cache" >"$tmp/out") || fail "--sources from /: $(grep error out)"

# ---- training: a short PyTorch loop on FeatcacheDataset, as the README's train.py ----
"$PY" - cache vocab.txt "$numbers_norm" "$failed_ids" <<'PY' || fail "the training loop"
import sys, torch
import featcache
from featcache.torch import FeatcacheDataset
store, vocab, numbers, failed = sys.argv[1], sys.argv[2], sys.argv[3], set(sys.argv[4].split())
torch.manual_seed(0)
ds = FeatcacheDataset(store, features="hifigan", tokens="chars", batch_size=16, shuffle=True,
                      seed=0, pad_to=200, crop="random", device="cpu")
model = torch.nn.Sequential(torch.nn.Linear(80, 64), torch.nn.ReLU(), torch.nn.Linear(64, 80))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
seen, losses = set(), []
for epoch in range(2):
    ds.set_epoch(epoch)
    for batch in ds:
        mels, lengths = batch["mels"], batch["mel_lengths"]          # [16, 200, 80], frames
        assert mels.shape[1:] == (200, 80) and torch.isfinite(mels).all(), mels.shape
        assert (batch["token_lengths"] > 0).all(), "an utterance without tokens"
        mask = (torch.arange(200)[None, :-1] < (lengths[:, None] - 1)).float()[..., None]
        pred = model(mels[:, :-1])                                   # next frame from this one
        loss = (((pred - mels[:, 1:]) ** 2) * mask).sum() / (mask.sum() * 80)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        seen.update(batch["ids"])
assert all(torch.isfinite(torch.tensor(losses))), losses
assert len(seen) == 117 and not seen & failed, (len(seen), seen & failed)
print(f"trained {len(losses)} steps on {len(seen)} utterances, loss {losses[0]:.3f} -> {losses[-1]:.3f}")
# the numbers line: its tokens are its normalized transcript, symbol for symbol
symbols = open(vocab, encoding="utf-8").read().split("\n")
ld = featcache.Loader(store, features="hifigan", tokens="chars", batch_size=1, padded=False)
got = None
for b in ld:
    if b.ids[0] == "LJ001-0007":
        got = "".join(symbols[t] for t in b.tokens[0])
    b.release()
assert got == numbers, (got, numbers)
try:
    featcache.Loader(store + "/../LJ/wavs", features="hifigan")
    raise SystemExit("a folder of WAVs opened as a store")
except featcache.FeatcacheError as e:
    assert "not a featcache store" in str(e), e
PY

# ---- make -j2 with the scale-out Makefile: 4 shards, merged; the bad files do not stop it ----
make -s -j2 -f "$SRC/scripts/scaleout/Makefile" MANIFEST=LJ/metadata.csv SHARDS=4 BIN="$B" \
  WORK=shards CACHE=mcache >make.out 2>&1 || fail "make: $(tail -n 5 make.out)"
"$B/cache-verify" --manifest LJ/metadata.csv --expect-preset hifigan --expect-tokens mcache >out 2>err ||
  fail "cache-verify of the merged store: $(grep error out)"
[ "$(grep -c '^mcache: recorded failure: ' out)" = 3 ] || fail "merged store's recorded failures: $(cat out)"
"$PY" - cache mcache <<'PY' || fail "the merged store holds other keys than the single run"
import sys, lmdb
def keys(path):
    env = lmdb.open(path, readonly=True, lock=False, max_dbs=8)
    with env.begin() as t:
        return {n: {bytes(k) for k, _ in t.cursor(db=env.open_db(n, txn=t, create=False))}
                for n in (b"audio", b"feat", b"failed")}
a, b = keys(sys.argv[1]), keys(sys.argv[2])
assert a == b, {n: (len(a[n]), len(b[n])) for n in a}
PY
make -s -j2 -f "$SRC/scripts/scaleout/Makefile" MANIFEST=LJ/metadata.csv SHARDS=4 BIN="$B" \
  WORK=shards CACHE=mcache >make.out 2>&1
[ $? = 0 ] && [ ! -s make.out ] || fail "a second make did something: $(cat make.out)"

# ---- the failure policy: the missing WAV turns up; its record goes, here and after the merge ----
espeak-ng -w LJ/wavs/LJ001-0010.wav "This is sentence number 010 of the test corpus."
"$B/featurize" -q -j2 --device cpu --manifest LJ/metadata.csv -o cache --max-failed 3% 2>err
grep -qx "featurize: done: 118 of $N (1 new, 117 already stored, 2 failed, allowed by --max-failed 3%)" err ||
  fail "after the fix: $(grep done: err)"
"$B/cache-verify" --manifest LJ/metadata.csv --expect-preset hifigan cache >out 2>err ||
  fail "verify after the fix: $(grep error out)"
[ "$(grep -c ': recorded failure: ' out)" = 2 ] && ! grep -q 'recorded failure: LJ001-0010' out ||
  fail "LJ001-0010's record kept: $(grep 'recorded failure' out)"
make -s -B -j2 -f "$SRC/scripts/scaleout/Makefile" MANIFEST=LJ/metadata.csv SHARDS=4 BIN="$B" \
  WORK=shards CACHE=mcache >make.out 2>&1 || fail "make -B after the fix: $(tail -n 5 make.out)"
"$B/cache-verify" --manifest LJ/metadata.csv mcache >out 2>err || fail "merged after the fix: $(grep error out)"
[ "$(grep -c ': recorded failure: ' out)" = 2 ] || fail "merged store after the fix: $(grep 'recorded failure' out)"

# ---- the corpus moves: --source-root finds the sources under its new place ----
mkdir moved && mv LJ moved/
"$B/cache-verify" -q --sources cache >/dev/null 2>&1 && fail "--sources passes with the corpus gone"
"$B/cache-verify" -q --sources --source-root moved/LJ cache >out 2>&1 || fail "--source-root: $(grep error out)"

[ "$(md5sum <moved/LJ/metadata.csv)" = "$manifest_sum" ] || fail "the manifest was edited"
if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
