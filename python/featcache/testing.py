"""featcache.testing: write and read stores in pure Python (lmdb + xxhash), following the
documented format (docs/FORMAT.md) independently of the C library — for tests, benchmarks and
fixtures. Needs the `lmdb` and `xxhash` packages (not needed by the rest of featcache).

    from featcache.testing import StoreWriter, read_record
    with StoreWriter("fixture/") as w:
        cfg = w.add_config(mel_config_json("hifigan"))
        w.add_utterance("utt1", audio_bytes=b"...", mel=np.zeros((100, 80), np.float32), config=cfg)
"""

import ctypes
import json
import struct

import lmdb
import numpy as np
import xxhash

__all__ = ["digest", "record_key", "encode_record", "parse_record", "StoreWriter",
           "mel_config_json", "read_utterance", "decode_mq", "index_problems", "DTYPES"]

DTYPES = {np.dtype(np.float32): 1, np.dtype(np.float16): 2, np.dtype(np.int32): 4,
          np.dtype(np.int16): 5, np.dtype(np.uint16): 6}
_NP = {1: np.float32, 2: np.float16, 3: np.uint16, 4: np.int32, 5: np.int16, 6: np.uint16}
_HDR = struct.Struct("<4sHBBIIQQ16sII")  # 56 bytes, then u64 header hash


def digest(data):
    """XXH3-128 in stored byte order: low 64 bits little-endian, then high 64 bits."""
    v = xxhash.xxh3_128_intdigest(data)
    return (v & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little") + (v >> 64).to_bytes(8, "little")


def record_key(content_digest, config_digest):
    return digest(content_digest + config_digest)


def encode_record(array, config_digest, dtype_code=None, producer=1):
    a = np.ascontiguousarray(array)
    code = dtype_code or DTYPES[a.dtype]
    dims = (a.shape[0], a.shape[1] if a.ndim == 2 else 1)
    payload = a.tobytes()
    head = _HDR.pack(b"FCR1", 64, code, a.ndim, dims[0], dims[1], len(payload),
                     xxhash.xxh3_64_intdigest(payload), config_digest, 0, producer)
    return head + struct.pack("<Q", xxhash.xxh3_64_intdigest(head)) + payload


_ZSTD = None


def _zstd_decompress(frame, size):
    """One zstd frame of exactly size bytes, through the system libzstd (ctypes)."""
    global _ZSTD
    if _ZSTD is None:
        _ZSTD = ctypes.CDLL("libzstd.so.1")
        _ZSTD.ZSTD_decompress.restype = ctypes.c_size_t
        _ZSTD.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                          ctypes.c_size_t]
        _ZSTD.ZSTD_isError.argtypes = [ctypes.c_size_t]
    out = ctypes.create_string_buffer(max(size, 1))
    got = _ZSTD.ZSTD_decompress(out, size, bytes(frame), len(frame))
    if _ZSTD.ZSTD_isError(got) or got != size:
        raise ValueError("mq: a zstd frame does not decompress to %d bytes" % size)
    return out.raw[:size]


def decode_mq(payload, dim0, dim1):
    """Decode an mq payload (docs/FORMAT.md, "The mq payload") with numpy, independently of the
    C decoder: float32 [dim0, dim1]."""
    payload = bytes(payload)
    step, mode, reserved, base = struct.unpack_from("<BBHi", payload)
    if step > 12 or reserved or mode > 1:
        raise ValueError("mq: bad header")
    scale = 1.0 / (1 << step)
    n = dim0 * dim1
    if mode == 0:
        if len(payload) != 8:
            raise ValueError("mq: constant payload is not 8 bytes")
        return np.full((dim0, dim1), base * scale, np.float32)
    n_esc, zs, ze = struct.unpack_from("<III", payload, 8)
    if 20 + zs + ze != len(payload):
        raise ValueError("mq: frame sizes disagree with the payload")
    sym = np.frombuffer(_zstd_decompress(payload[20:20 + zs], n), np.uint8).astype(np.int64)
    esc = np.frombuffer(_zstd_decompress(payload[20 + zs:], 4 * n_esc), "<u4") if n_esc else []
    where = np.flatnonzero(sym == 255)
    if len(where) != n_esc:
        raise ValueError("mq: escape symbols and escapes disagree")
    sym[where] = 255 + np.asarray(esc, np.int64)
    r = (sym >> 1) ^ -(sym & 1)                       # unzigzag
    d = np.cumsum(r.reshape(dim0, dim1), axis=1)      # d(f, b) = k(f, b) - k(f-1, b)
    k = base + np.cumsum(d, axis=0)                   # row -1 is all base
    return (k.astype(np.float32) * np.float32(scale)).astype(np.float32)


def parse_record(val, verify=True):
    """(header dict, numpy array copy of the payload); raises ValueError on any mismatch."""
    val = bytes(val)
    if len(val) < 64:
        raise ValueError("record shorter than its header")
    magic, hsize, code, ndim, d0, d1, nbytes, phash, cfg, flags, prod = _HDR.unpack_from(val)
    (hh,) = struct.unpack_from("<Q", val, 56)
    if magic != b"FCR1" or hsize != 64 or hh != xxhash.xxh3_64_intdigest(val[:56]):
        raise ValueError("bad record header")
    if nbytes != len(val) - 64 or (code != 7 and d0 * d1 * np.dtype(_NP[code]).itemsize != nbytes):
        raise ValueError("record sizes disagree")
    if verify and xxhash.xxh3_64_intdigest(val[64:]) != phash:
        raise ValueError("payload checksum mismatch")
    if code == 7:  # mq: coded log-mel, decoded to float32
        return dict(dtype=code, ndim=ndim, dim0=d0, dim1=d1, config=cfg), decode_mq(val[64:], d0, d1)
    a = np.frombuffer(val, dtype=_NP[code], offset=64).copy()
    return dict(dtype=code, ndim=ndim, dim0=d0, dim1=d1, config=cfg), (
        a.reshape(d0, d1) if ndim == 2 else a)


def mel_config_json(preset="hifigan", library=None):
    """Canonical JSON of a preset, from the C library (so digests match what featurize writes)."""
    from . import _lib
    L = library or _lib.lib()
    cfg = ctypes.create_string_buffer(4096)  # larger than fc_mel_config
    if L.fc_mel_preset(preset.encode(), cfg) != 0:
        raise ValueError("unknown preset %r" % preset)
    out = ctypes.create_string_buffer(2048)
    n = L.fc_mel_config_json(cfg, out, 2048)
    if n < 0:
        raise RuntimeError("fc_mel_config_json failed")
    return out.raw[:n].decode()


class StoreWriter:
    """Writes a store with Python's lmdb: meta/format, configs, audio/text entries, records."""

    def __init__(self, path, map_size=1 << 30):
        self.env = lmdb.open(str(path), max_dbs=8, map_size=map_size, subdir=True)
        self.db = {n: self.env.open_db(n.encode()) for n in ("meta", "audio", "text", "feat", "tok")}
        with self.env.begin(write=True) as t:
            t.put(b"format", b"featcache/1", db=self.db["meta"])

    def add_config(self, json_text):
        """Store a config JSON (str, stored as given); returns its digest."""
        raw = json_text.encode() if isinstance(json_text, str) else json_text
        d = digest(raw)
        with self.env.begin(write=True) as t:
            t.put(b"cfg/" + d.hex().encode(), raw, db=self.db["meta"])
        return d

    def add_utterance(self, uid, audio_bytes, mel=None, config=None, text=None, tokens=None,
                      tok_config=None, raw_record=None, path=None):
        """Audio entry (digest of audio_bytes) and its feature record; with text, the text entry
        and its token record. raw_record replaces the encoded feature record (corruption tests)."""
        adig = digest(audio_bytes)
        p = (path or uid + ".wav").encode()
        entry = adig + struct.pack("<IIQQq", 22050, 1, 22050, len(audio_bytes), 0) + p
        with self.env.begin(write=True) as t:
            t.put(uid.encode(), entry, db=self.db["audio"])
            if mel is not None or raw_record is not None:
                rec = raw_record if raw_record is not None else encode_record(mel, config)
                t.put(record_key(adig, config), rec, db=self.db["feat"])
            if text is not None:
                tdig = digest(text.encode())
                t.put(uid.encode(), tdig + text.encode(), db=self.db["text"])
                if tokens is not None:
                    t.put(record_key(tdig, tok_config), encode_record(tokens, tok_config),
                          db=self.db["tok"])
        return adig

    def close(self):
        self.env.sync(True)
        self.env.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_utterance(env, uid, config, tok_config=None):
    """Read one utterance independently of the C library: (mel array, tokens array or None)."""
    dbs = {n: env.open_db(n.encode(), create=False) for n in ("audio", "text", "feat", "tok")}
    with env.begin(buffers=False) as t:
        a = t.get(uid.encode(), db=dbs["audio"])
        if a is None:
            raise KeyError(uid)
        rec = t.get(record_key(a[:16], config), db=dbs["feat"])
        _, mel = parse_record(rec)
        tok = None
        if tok_config is not None:
            te = t.get(uid.encode(), db=dbs["text"])
            _, tok = parse_record(t.get(record_key(te[:16], tok_config), db=dbs["tok"]))
    return mel, tok


def index_problems(path, complete=True):
    """Check the indexes of the store at path (docs/FORMAT.md "Index") against its entries and
    records, written from the format alone: every index entry of config C under id names the
    record XXH3-128(entry digest || C), which the store holds, with the record's dim0; with
    complete, every id whose record under an indexed config is there is in that index (true of
    stores the tools wrote). Returns (problems: list of str, {config hex: index entries})."""
    env = lmdb.open(str(path), readonly=True, lock=False, max_dbs=256, subdir=True)
    problems, counts = [], {}
    try:
        with env.begin(buffers=False) as t:
            names = [bytes(k) for k, _ in t.cursor() if bytes(k).startswith(b"index/")]
            meta = env.open_db(b"meta", txn=t, create=False)
            dbs = {n: env.open_db(n.encode(), txn=t, create=False)
                   for n in ("audio", "text", "feat", "tok")}
            for name in names:
                hexd = name[6:].decode()
                cfg_json = t.get(b"cfg/" + name[6:], db=meta)
                if cfg_json is None:
                    continue  # a config no longer stored: readers never use its index
                kind = json.loads(cfg_json)["kind"]
                ents, recs = (("audio", "feat") if kind == "mel" else ("text", "tok"))
                cfg = bytes.fromhex(hexd)
                ix = env.open_db(name, txn=t, create=False)
                seen = 0
                for k, v in t.cursor(db=ix):
                    seen += 1
                    uid = k.decode("utf-8", "replace")
                    e = t.get(k, db=dbs[ents])
                    if len(v) != 20:
                        problems.append("%s %s: value of %d bytes" % (hexd, uid, len(v)))
                    elif e is None:
                        problems.append("%s %s: no %s entry" % (hexd, uid, ents))
                    elif v[:16] != record_key(e[:16], cfg):
                        problems.append("%s %s: names another record" % (hexd, uid))
                    else:
                        r = t.get(v[:16], db=dbs[recs])
                        if r is None:
                            problems.append("%s %s: names a missing record" % (hexd, uid))
                        elif struct.unpack_from("<I", r, 8)[0] != struct.unpack_from("<I", v, 16)[0]:
                            problems.append("%s %s: dim0 differs from the record's" % (hexd, uid))
                counts[hexd] = seen
                if not complete:
                    continue
                for k, e in t.cursor(db=dbs[ents]):
                    if t.get(record_key(e[:16], cfg), db=dbs[recs]) is not None and \
                            t.get(k, db=ix) is None:
                        problems.append("%s %s: not indexed" % (hexd, k.decode("utf-8", "replace")))
    finally:
        env.close()
    return problems, counts

