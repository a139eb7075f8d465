import sys, json, lmdb, numpy as np  # usage: read_tokens.py STORE [TOKENIZER [ID...]]
M, P1, P2, P4 = 2**64 - 1, 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x85EBCA77C2B2AE63
SECRET = bytes.fromhex("b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f")
le = lambda b, i: int.from_bytes(b[i:i + 8], "little")
def mix16(b, i):  # XXH3_mix16B, seed 0: fold of a 64x64 → 128-bit product
    p = (le(b, i) ^ le(SECRET, i)) * (le(b, i + 8) ^ le(SECRET, i + 8))
    return (p ^ (p >> 64)) & M
def aval(h):
    h = ((h ^ (h >> 37)) * 0x165667919E3779F9) & M
    return h ^ (h >> 32)
def key(content, config):  # XXH3-128 of 32 bytes; stored as low64 LE then high64 LE
    b = content + config
    lo = ((32 * P1 + mix16(b, 0)) & M) ^ ((le(b, 16) + le(b, 24)) & M)
    hi = mix16(b, 16) ^ ((le(b, 0) + le(b, 8)) & M)
    l, h = aval((lo + hi) & M), -aval((lo * P1 + hi * P4 + 32 * P2) & M) & M
    return l.to_bytes(8, "little") + h.to_bytes(8, "little")
DTYPES = {4: "<i4", 5: "<i2", 6: "<u2"}
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
meta, text, tok = (env.open_db(n, create=False) for n in (b"meta", b"text", b"tok"))
with env.begin() as txn:
    want = sys.argv[2] if len(sys.argv) > 2 else "phonemes"
    hexcfg = next((k[4:].decode() for k, v in txn.cursor(db=meta)
                   if k.startswith(b"cfg/") and json.loads(v).get("tokenizer") == want), None)
    if hexcfg is None:
        sys.exit(f"{sys.argv[1]}: no tokens config of tokenizer {want}")
    vocab = txn.get(b"vocab/" + hexcfg.encode(), db=meta)  # chars, phonemes: a symbol a line
    if vocab is not None:
        vocab = vocab.decode().split("\n")[:-1]
    else:  # bpe: no vocab/ key; the tokens of its tokenizer.json, by id
        tj = json.loads(txn.get(b"tokenizer/" + hexcfg.encode(), db=meta))
        vocab = {i: t for t, i in tj["model"]["vocab"].items()}
        vocab.update((a["id"], a["content"]) for a in tj.get("added_tokens") or [])
    ids = [i.encode() for i in sys.argv[3:]] or [k for k, _ in txn.cursor(db=text)]
    status = 0
    for i in ids:
        entry = txn.get(i, db=text)  # text digest, then the text as read
        rec = entry and txn.get(key(entry[:16], bytes.fromhex(hexcfg)), db=tok)
        if not rec:  # no such id, or its text has no tokens of this config
            print(f"{sys.argv[1]}: no {want} tokens of {i.decode()}", file=sys.stderr)
            status = 1
            continue
        assert rec[:4] == b"FCR1" and rec[6] in DTYPES and rec[7] == 1  # magic, integer, 1-D
        seq = np.frombuffer(rec, DTYPES[rec[6]], int(np.frombuffer(rec, "<u4", 1, 8)[0]), 64)
        print(f"{i.decode()}\t{entry[16:].decode()}\n\t{''.join(vocab[int(t)] for t in seq)}")
sys.exit(status)
