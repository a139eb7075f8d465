"""tokenize: the store it writes, read back with py-lmdb and the documented layout (FORMAT.md):
text entries, tok keys, the 64-byte record header and both checksums, the config in meta,
idempotent reruns. Also the helpers the other test_tokenize_*.py files import."""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import lmdb
    import numpy as np
    import xxhash
except ImportError as e:  # pragma: no cover
    print(f"FAIL: {e} (scripts/setup installs it)")
    sys.exit(1)

FC_BIN = os.environ.get("FC_BIN", os.path.join(os.path.dirname(__file__), "../../build"))
TOKENIZE = os.path.join(FC_BIN, "tokenize")
DTYPES = {4: np.int32, 5: np.int16, 6: np.uint16}


def digest(b: bytes) -> bytes:
    """XXH3-128 in stored order: low 64 bits LE, then high 64 bits LE."""
    v = xxhash.xxh3_128_intdigest(b)
    return (v & (2**64 - 1)).to_bytes(8, "little") + (v >> 64).to_bytes(8, "little")


def run_tokenize(*args, check=True):
    p = subprocess.run([TOKENIZE, *map(str, args)], capture_output=True, text=True)
    if check and p.returncode not in (0,):
        raise AssertionError(f"tokenize {' '.join(map(str, args))} -> {p.returncode}\n{p.stderr}")
    return p


def parse_record(val: bytes, cfg: bytes):
    assert len(val) >= 64, "record shorter than its header"
    magic, hsize, dtype, ndim, dim0, dim1, pbytes, phash = struct.unpack_from("<4sHBBIIQQ", val, 0)
    rcfg = val[32:48]
    flags, producer, hhash = struct.unpack_from("<IIQ", val, 48)
    assert magic == b"FCR1" and hsize == 64, (magic, hsize)
    assert hhash == xxhash.xxh3_64_intdigest(val[:56]), "header checksum"
    assert ndim == 1 and dim1 == 1 and producer == 1, (ndim, dim1, producer)
    assert dtype in DTYPES, dtype
    size = np.dtype(DTYPES[dtype]).itemsize
    assert pbytes == dim0 * size == len(val) - 64, (pbytes, dim0, len(val))
    assert phash == xxhash.xxh3_64_intdigest(val[64:]), "payload checksum"
    assert rcfg == cfg, "config digest in the record"
    return np.frombuffer(val[64:], dtype=DTYPES[dtype]).astype(np.int64).tolist(), dtype


def read_tokens(store, config_hex):
    """{id: (text, ids)} for every text entry whose tok record exists under config_hex."""
    cfg = bytes.fromhex(config_hex)
    env = lmdb.open(str(store), readonly=True, lock=False, max_dbs=8, subdir=True)
    out = {}
    with env.begin() as txn:
        text_db, tok_db = env.open_db(b"text", txn=txn), env.open_db(b"tok", txn=txn)
        for key, val in txn.cursor(db=text_db):
            tdig, text = bytes(val[:16]), bytes(val[16:])
            assert tdig == digest(text), "text digest"
            rec = txn.get(digest(tdig + cfg), db=tok_db)
            if rec is not None:
                out[bytes(key).decode()] = (text.decode(), parse_record(bytes(rec), cfg)[0])
    env.close()
    return out


def read_meta(store, key):
    env = lmdb.open(str(store), readonly=True, lock=False, max_dbs=8, subdir=True)
    with env.begin() as txn:
        v = txn.get(key.encode(), db=env.open_db(b"meta", txn=txn))
    env.close()
    return None if v is None else bytes(v)


def write_tsv(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for i, t in rows:
            f.write(f"{i}\t{t}\n")


def main():
    if not os.access(TOKENIZE, os.X_OK):
        print(f"FAIL: {TOKENIZE} not built")
        return 1
    with tempfile.TemporaryDirectory() as d:
        rows = [(f"u{i}", f"Line number {i}: the quick brown fox, {i * 7} times!") for i in range(300)]
        man = os.path.join(d, "m.tsv")
        write_tsv(man, rows)
        st = os.path.join(d, "store")
        p = run_tokenize("-o", st, "--manifest", man, "--build-vocab", "--json", "-j", "2",
                         "--batch", "64", "--add-bos", "--add-eos")
        s = json.loads(p.stdout)
        assert s["processed"] == 300 and s["failed"] == 0 and s["skipped_existing"] == 0, s
        cfg_json = read_meta(st, "cfg/" + s["config_digest"])
        assert cfg_json is not None, "config in meta"
        assert digest(cfg_json).hex() == s["config_digest"], "config digest = XXH3-128 of the JSON"
        cfg = json.loads(cfg_json)
        assert cfg["kind"] == "tokens" and cfg["preset"] is None and cfg["tokenizer"] == "chars"
        assert cfg_json.decode() == json.dumps(cfg, sort_keys=True, separators=(",", ":"),
                                               ensure_ascii=False), "canonical JSON"
        vocab = read_meta(st, "vocab/" + s["config_digest"]).decode().split("\n")[:-1]
        assert digest(("\n".join(vocab) + "\n").encode()).hex() == cfg["vocab_digest"]
        toks = read_tokens(st, s["config_digest"])
        assert len(toks) == 300
        assert sum(len(v[1]) for v in toks.values()) == s["tokens"]
        for i, t in rows:
            text, ids = toks[i]
            assert text == t
            assert ids[0] == vocab.index("<bos>") and ids[-1] == vocab.index("<eos>")
            assert "".join(vocab[k] for k in ids[1:-1]) == t, (t, ids)
        # a rerun stores nothing new and says so
        p = run_tokenize("-o", st, "--manifest", man, "--build-vocab", "--json", "--add-bos", "--add-eos")
        s2 = json.loads(p.stdout)
        assert s2["processed"] == 0 and s2["skipped_existing"] == 300, s2
        assert s2["config_digest"] == s["config_digest"]
        assert "nothing to do" in p.stderr, p.stderr
        # another config lives beside the first; one changed line is the only new work
        rows[5] = ("u5", "A changed line.")
        write_tsv(man, rows)
        p = run_tokenize("-o", st, "--manifest", man, "--build-vocab", "--json", "--add-bos", "--add-eos")
        s3 = json.loads(p.stdout)
        assert s3["config_digest"] != s["config_digest"], "vocab changed (new symbols)"
        p = run_tokenize("-o", st, "--manifest", man, "--build-vocab", "--json", "--case", "fold", "--dtype", "i32")
        s4 = json.loads(p.stdout)
        toks4 = read_tokens(st, s4["config_digest"])
        assert len(toks4) == 300
        assert len(read_tokens(st, s3["config_digest"])) == 300, "earlier config still readable"
    print("ok: store layout, config, checksums, idempotent reruns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
