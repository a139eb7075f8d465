"""docs/FORMAT.md's Python reader example: the copy in the doc is the file that runs, its pure-Python
XXH3-128 equals xxHash's, and it reads the same mel from a store made by featurize that the
documented layout gives (header fields, both checksums, key recomputed from the file bytes)."""
import json, os, pathlib, random, subprocess, sys, tempfile

try:
    import lmdb
    import numpy as np
except ImportError as e:  # a GPU machine may lack py-lmdb: say so, do not fail
    print(f"skip: {e}")
    sys.exit(77)

SRC = pathlib.Path(os.environ["FC_SRC"])
BIN = pathlib.Path(os.environ["FC_BIN"])
EXAMPLE = SRC / "docs/examples/read_mel.py"


def load_example_functions():
    src = EXAMPLE.read_text().split("env = lmdb.open")[0]
    ns = {}
    exec(compile(src, str(EXAMPLE), "exec"), ns)
    return ns


def main():
    doc = (SRC / "docs/FORMAT.md").read_text()
    assert EXAMPLE.read_text() in doc, "docs/FORMAT.md's example differs from docs/examples/read_mel.py"
    lines = EXAMPLE.read_text().splitlines()
    # short, and narrow enough for the man page (80 columns less its indent)
    assert len(lines) <= 40 and max(len(line) for line in lines) <= 69

    ns = load_example_functions()
    try:
        import xxhash
    except ImportError:  # the setup script installs it; say so rather than pass silently
        print("xxhash package missing: run scripts/setup", file=sys.stderr)
        return 1
    rng = random.Random(7)
    for _ in range(200):
        b = bytes(rng.randrange(256) for _ in range(32))
        h = xxhash.xxh3_128_intdigest(b)
        want = (h & (2**64 - 1)).to_bytes(8, "little") + (h >> 64).to_bytes(8, "little")
        assert ns["key"](b[:16], b[16:]) == want, b.hex()

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        wav = tmp / "hello.wav"
        subprocess.run(["espeak-ng", "-w", str(wav), "The store format, documented to the byte."],
                       check=True)
        store = tmp / "store"
        subprocess.run([str(BIN / "featurize"), "-q", "--device", "cpu", "-o", str(store), str(wav)], check=True)
        out = subprocess.run([sys.executable, str(EXAMPLE), str(store), "hello"], check=True,
                             capture_output=True, text=True).stdout.split()
        # independently: parse the store by the documented layout
        env = lmdb.open(str(store), readonly=True, lock=False, max_dbs=8)
        meta, audio, feat = (env.open_db(n, create=False) for n in (b"meta", b"audio", b"feat"))
        with env.begin() as txn:
            entry = txn.get(b"hello", db=audio)
            digest = entry[:16]
            fb = wav.read_bytes()
            h = xxhash.xxh3_128_intdigest(fb)
            assert digest == (h & (2**64 - 1)).to_bytes(8, "little") + (h >> 64).to_bytes(8, "little")
            sr, ch, frames, size, mtime = np.frombuffer(entry[16:48], "<u4", 2).tolist() + \
                np.frombuffer(entry[24:48], "<u8").tolist()
            assert (sr, ch, size) == (22050, 1, len(fb)), (sr, ch, size)
            assert entry[48:].decode() == str(wav)
            cfgs = {k[4:].decode(): json.loads(v) for k, v in txn.cursor(db=meta) if k.startswith(b"cfg/")}
            (cfg_hex, cfg), = cfgs.items()
            assert cfg["preset"] == "hifigan" and cfg["kind"] == "mel"
            canon = json.dumps(cfg, sort_keys=True, separators=(",", ":"))
            hh = xxhash.xxh3_128_intdigest(txn.get(b"cfg/" + cfg_hex.encode(), db=meta))
            assert bytes.fromhex(cfg_hex) == (hh & (2**64 - 1)).to_bytes(8, "little") + (hh >> 64).to_bytes(8, "little")
            assert len(canon) > 100
            recs = list(txn.cursor(db=feat))
            assert len(recs) == 1
            k, rec = recs[0]
            assert k == ns["key"](digest, bytes.fromhex(cfg_hex))
            assert rec[:4] == b"FCR1" and int.from_bytes(rec[4:6], "little") == 64
            assert rec[6] == 1 and rec[7] == 2
            d0, d1 = np.frombuffer(rec[8:16], "<u4")
            nbytes, phash = np.frombuffer(rec[16:32], "<u8")
            assert d1 == 80 and d0 == frames // 256, (d0, frames)
            assert nbytes == len(rec) - 64 == d0 * d1 * 4
            assert phash == xxhash.xxh3_64_intdigest(rec[64:])
            assert rec[32:48] == bytes.fromhex(cfg_hex)
            assert int.from_bytes(rec[52:56], "little") == 1  # producer CPU
            assert int.from_bytes(rec[56:64], "little") == xxhash.xxh3_64_intdigest(rec[:56])
            mel = np.frombuffer(rec, "<f4", offset=64).reshape(d0, d1)
        # "Alignment": a record over ~2 KB lies in LMDB overflow pages, its header right after the
        # first page's 16-byte LMDB page header (the page said "starts on a page boundary"), so
        # its payload is 16-byte aligned in the map
        with env.begin(buffers=True) as txn:
            view = np.frombuffer(txn.get(k, db=feat), np.uint8)
            assert view.ctypes.data % 4096 == 16, view.ctypes.data % 4096
            assert (view.ctypes.data + 64) % 16 == 0
        assert "header starts 16 bytes past a page boundary" in " ".join(doc.split()), \
            "docs/FORMAT.md, Alignment: where a large record's header lies"
        assert out[0] == "hello" and out[1:3] == [f"({d0},", f"{d1})"], out
        assert abs(float(out[3]) - float(mel.mean())) < 1e-5, (out, mel.mean())
    print("test_format_example: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
