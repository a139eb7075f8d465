# Helpers of the CLI tests (sourced by tests/cli/merge_*.sh, scaleout_*.sh and others; not a test).
# make_corpus DIR N: N synthesized utterances (0.3-1.2 s of tones and noise, 22.05 kHz WAV) in
#   DIR/wavs and an LJSpeech-style DIR/metadata.csv (id|text|normalized text).
# same_store A B: exit 0 when stores A and B hold exactly the same keys and bytes in every db (the
#   creation times of configs and the shards recorded in meta aside).
# check NAME WANT GOT: a FAIL line (with ./out and ./err) and fail=1 when exit GOT is not WANT.
# make_bpe_json FILE (with M.CSV): a small BPE tokenizer.json trained with HF tokenizers.
PY=${FC_PYTHON:-python3}

check() {
  if [ "$2" != "$3" ]; then echo "FAIL $1: exit $3, want $2"; cat out err; fail=1; fi
}

make_bpe_json() {
  "$PY" - "$1" <<'PY' || { echo "FAIL: cannot train a BPE tokenizer (tokenizers: scripts/setup)"; exit 1; }
import sys
from tokenizers import Tokenizer, models, trainers, pre_tokenizers
tok = Tokenizer(models.BPE(unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.train_from_iterator(["utterance number one", "said once said twice"] * 10,
                        trainers.BpeTrainer(vocab_size=60, special_tokens=["[UNK]"]))
tok.save(sys.argv[1])
PY
}

make_corpus() {
  "$PY" - "$1" "$2" <<'PY'
import os, sys
import numpy as np, soundfile as sf
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(f"{d}/wavs", exist_ok=True)
rng = np.random.default_rng(11)
words = "the quick brown fox jumps over a lazy dog while seven wise owls hum softly".split()
with open(f"{d}/metadata.csv", "w") as f:
    for i in range(n):
        uid = f"LJ{1 + i // 100:03d}-{1 + i % 100:04d}"
        m = int(rng.integers(6615, 26460))
        t = np.arange(m) / 22050
        x = 0.3 * np.sin(2 * np.pi * rng.uniform(100, 3000) * t) + 0.05 * rng.standard_normal(m)
        sf.write(f"{d}/wavs/{uid}.wav", x.astype(np.float32), 22050, subtype="PCM_16")
        text = " ".join(rng.choice(words, int(rng.integers(3, 9))))
        f.write(f"{uid}|{text.capitalize()}.|{text}.\n")
PY
}

same_store() {
  "$PY" - "$1" "$2" <<'PY'
import re, sys, lmdb
def dump(p):
    env = lmdb.open(p, readonly=True, lock=False, max_dbs=8)
    out = {}
    with env.begin() as t:
        for name in (b"meta", b"audio", b"text", b"feat", b"tok"):
            db = env.open_db(name, txn=t, create=False)
            out[name] = {bytes(k): bytes(v) for k, v in t.cursor(db=db)}
    env.close()
    return out
a, b = dump(sys.argv[1]), dump(sys.argv[2])
# the shards a store records (meta shard/K/N, docs/FORMAT.md "Shards") say how it was made: a
# merge of shards holds theirs, one plain run none; set aside like the creation times below
for s in (a, b):
    s[b"meta"] = {k: v for k, v in s[b"meta"].items() if not k.startswith(b"shard/")}
bad = 0
for name in a:
    ka, kb = set(a[name]), set(b[name])
    if ka != kb:
        print(f"{name}: {len(ka - kb)} keys only in {sys.argv[1]}, {len(kb - ka)} only in {sys.argv[2]}")
        bad = 1
    # a config's creation time (meta created/<hex>) is when each run made it: present and
    # well-formed in both, not the same value
    stamp = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
    diff = [k for k in ka & kb if a[name][k] != b[name][k] and not (
        name == b"meta" and k.startswith(b"created/") and stamp.fullmatch(a[name][k])
        and stamp.fullmatch(b[name][k]))]
    if diff:
        print(f"{name}: {len(diff)} keys with different bytes, e.g. {diff[0]!r}")
        bad = 1
print("same_store:", " ".join(f"{n.decode()}={len(a[n])}" for n in a))
sys.exit(bad)
PY
}

# shard_stores CORPUS N: stores s0 .. s(N-1), each featurized and tokenized (--build-vocab) over
# shard k/N of CORPUS/metadata.csv; 1 when a run fails
shard_stores() {
  local k
  for ((k = 0; k < $2; k++)); do
    "$FC_BIN/featurize" -q --shard $k/$2 -o s$k --manifest "$1/metadata.csv" &&
      "$FC_BIN/tokenize" -q --build-vocab --shard $k/$2 -o s$k "$1/metadata.csv" || return 1
  done
}
