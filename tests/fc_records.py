"""Read a store's feature records through libfeatcache's own store API (fc_store_open, cursors;
a split store part by part), and write small stores with it (StoreWriter, as featcache.testing's),
for tests that must run where py-lmdb and xxhash are missing (a lent GPU machine has numpy but not
lmdb).

    python3 tests/fc_records.py STORE          # one line per record: key hex, producer, dtype, d0xd1
    from fc_records import records             # {key bytes: (header dict, payload bytes)}

The header is decoded from the bytes as docs/FORMAT.md lays it out (64-byte little-endian header,
then the payload); nothing here trusts the library's record parser.
"""
import ctypes
import os
import struct
import sys

FC_DB_META, FC_DB_AUDIO, FC_DB_TEXT, FC_DB_FEAT, FC_DB_TOK = range(5)
FC_STORE_CREATE = 1 << 1
_HDR = struct.Struct("<4sHBBIIQQ16sIIQ")


def _lib(path=None):
    path = path or os.environ.get("FEATCACHE_LIBRARY") or os.path.join(
        os.environ.get("FC_BIN", ""), "libfeatcache.so.0")  # the ELF: libfeatcache.so is an ld script
    lib = ctypes.CDLL(path)
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    lib.fc_store_open.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(vp)]
    lib.fc_store_close.argtypes = [vp]
    lib.fc_store_read_begin.argtypes = [vp, ctypes.POINTER(vp)]
    lib.fc_rtxn_end.argtypes = [vp]
    lib.fc_cursor_open.argtypes = [vp, ctypes.c_int, ctypes.POINTER(vp)]
    lib.fc_cursor_next.argtypes = [vp, ctypes.POINTER(vp), ctypes.POINTER(sz), ctypes.POINTER(vp),
                                   ctypes.POINTER(sz)]
    lib.fc_cursor_close.argtypes = [vp]
    lib.fc_strerror.restype = ctypes.c_char_p
    return lib


def _parts(store):
    """A split store's part directories in order (docs/FORMAT.md "Split stores"), else None."""
    parts = [d for d in os.listdir(store) if d.startswith("part-") and d[5:].isdigit()]
    if not parts or os.path.exists(os.path.join(store, "data.mdb")):
        return None
    return [os.path.join(store, d) for d in sorted(parts, key=lambda d: int(d[5:]))]


def _walk(store, db, lib=None):
    """Every (key, value) of db, from each part in turn when the store is split."""
    lib = lib or _lib()
    parts = _parts(store)
    if parts:
        return [kv for part in parts for kv in _walk(part, db, lib)]
    s, t, c = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    rc = lib.fc_store_open(os.fsencode(store), 1, ctypes.byref(s))  # FC_STORE_RDONLY
    if rc:
        raise OSError(f"{store}: {lib.fc_strerror(rc).decode()}")
    out = []
    try:
        if lib.fc_store_read_begin(s, ctypes.byref(t)) == 0:
            if lib.fc_cursor_open(t, db, ctypes.byref(c)) == 0:
                k, v = ctypes.c_void_p(), ctypes.c_void_p()
                kl, vl = ctypes.c_size_t(), ctypes.c_size_t()
                while lib.fc_cursor_next(c, ctypes.byref(k), ctypes.byref(kl), ctypes.byref(v),
                                         ctypes.byref(vl)) == 0:
                    out.append((ctypes.string_at(k, kl.value), ctypes.string_at(v, vl.value)))
                lib.fc_cursor_close(c)
            lib.fc_rtxn_end(t)
    finally:
        lib.fc_store_close(s)
    return out


def records(store, lib=None):
    """{16-byte key: (header dict, payload bytes)} of every feat record."""
    out = {}
    for k, v in _walk(store, FC_DB_FEAT, lib):
        (magic, hsize, dtype, ndim, d0, d1, pbytes, phash, cfg, flags, producer,
         hhash) = _HDR.unpack_from(v)
        if magic != b"FCR1" or len(v) != 64 + pbytes:
            raise ValueError(f"record {k.hex()}: bad magic or size")
        out[k] = (dict(dtype=dtype, ndim=ndim, dim0=d0, dim1=d1, producer=producer, config=cfg,
                       flags=flags), v[64:])
    return out


def audio_entries(store, lib=None):
    """{utterance id: 16-byte audio digest}."""
    return {k.decode(): v[:16] for k, v in _walk(store, FC_DB_AUDIO, lib)}


class _Digest(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint8 * 16)]


class _RecordHeader(ctypes.Structure):  # fc_record_header
    _fields_ = [("dtype", ctypes.c_uint8), ("ndim", ctypes.c_uint8), ("dim0", ctypes.c_uint32),
                ("dim1", ctypes.c_uint32), ("payload_bytes", ctypes.c_uint64),
                ("payload_hash", ctypes.c_uint64), ("config", _Digest), ("flags", ctypes.c_uint32),
                ("producer", ctypes.c_uint32)]


class _Put(ctypes.Structure):  # fc_put
    _fields_ = [("db", ctypes.c_int), ("key", ctypes.c_void_p), ("key_len", ctypes.c_size_t),
                ("val", ctypes.c_void_p), ("val_len", ctypes.c_size_t), ("flags", ctypes.c_uint)]


_DTYPES = {"float32": 1, "float16": 2, "int32": 4, "int16": 5, "uint16": 6}


def digest(data, lib=None):
    """XXH3-128 of data in stored byte order (fc_digest_buffer)."""
    lib = lib or _lib()
    d = _Digest()
    lib.fc_digest_buffer(data, ctypes.c_size_t(len(data)), ctypes.byref(d))
    return bytes(d.bytes)


def record_key(content, config, lib=None):
    lib = lib or _lib()
    k = _Digest()
    lib.fc_record_key(ctypes.byref(_Digest.from_buffer_copy(content)),
                      ctypes.byref(_Digest.from_buffer_copy(config)), ctypes.byref(k))
    return bytes(k.bytes)


def mel_config_json(preset="hifigan", lib=None):
    """Canonical JSON of a preset, from the library (what featurize stores)."""
    lib = lib or _lib()
    cfg = ctypes.create_string_buffer(4096)  # larger than fc_mel_config
    if lib.fc_mel_preset(preset.encode(), cfg) != 0:
        raise ValueError(f"unknown preset {preset!r}")
    out = ctypes.create_string_buffer(2048)
    n = lib.fc_mel_config_json(cfg, out, ctypes.c_size_t(2048))
    if n < 0:
        raise RuntimeError("fc_mel_config_json failed")
    return out.raw[:n].decode()


class StoreWriter:
    """A store written through the library's store API (fc_store_write): configs, audio and text
    entries, feature and token records — featcache.testing.StoreWriter's interface, for machines
    without py-lmdb and xxhash. Arrays are numpy arrays (float32/float16 mels, int tokens)."""

    def __init__(self, path, lib=None):
        self.lib = lib or _lib()
        self.s = ctypes.c_void_p()
        rc = self.lib.fc_store_open(os.fsencode(path), FC_STORE_CREATE, ctypes.byref(self.s))
        if rc:
            raise OSError(f"{path}: {self.lib.fc_strerror(rc).decode()}")

    def _write(self, puts):
        arr = (_Put * len(puts))()
        keep = []
        for i, (db, k, v) in enumerate(puts):
            kb, vb = ctypes.create_string_buffer(k, len(k)), ctypes.create_string_buffer(v, len(v))
            keep += [kb, vb]
            arr[i] = _Put(db, ctypes.addressof(kb), len(k), ctypes.addressof(vb), len(v), 0)
        self.lib.fc_store_write.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        rc = self.lib.fc_store_write(self.s, arr, len(puts))
        if rc:
            raise OSError(f"fc_store_write: {self.lib.fc_strerror(rc).decode()}")

    def _record(self, array, config):
        payload = array.tobytes()
        h = _RecordHeader(dtype=_DTYPES[str(array.dtype)], ndim=array.ndim, dim0=array.shape[0],
                          dim1=array.shape[1] if array.ndim == 2 else 1,
                          config=_Digest.from_buffer_copy(config), producer=1)
        out = ctypes.create_string_buffer(64 + len(payload))
        rc = self.lib.fc_record_encode(ctypes.byref(h), payload, ctypes.c_size_t(len(payload)), out)
        if rc:
            raise ValueError("fc_record_encode failed")
        return out.raw

    def add_config(self, json_text):
        raw = json_text.encode() if isinstance(json_text, str) else json_text
        d = digest(raw, self.lib)
        self._write([(FC_DB_META, b"cfg/" + d.hex().encode(), raw)])
        return d

    def add_utterance(self, uid, audio_bytes, mel=None, config=None, text=None, tokens=None,
                      tok_config=None):
        adig = digest(audio_bytes, self.lib)
        p = (uid + ".wav").encode()
        entry = adig + struct.pack("<IIQQq", 22050, 1, 22050, len(audio_bytes), 0) + p
        puts = [(FC_DB_AUDIO, uid.encode(), entry)]
        if mel is not None:
            puts.append((FC_DB_FEAT, record_key(adig, config, self.lib), self._record(mel, config)))
        if text is not None:
            tdig = digest(text.encode(), self.lib)
            puts.append((FC_DB_TEXT, uid.encode(), tdig + text.encode()))
            if tokens is not None:
                puts.append((FC_DB_TOK, record_key(tdig, tok_config, self.lib),
                             self._record(tokens, tok_config)))
        self._write(puts)
        return adig

    def close(self):
        if self.s:
            self.lib.fc_store_close(self.s)
            self.s = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_all(store, config, tok_config=None, lib=None):
    """{utterance id: (mel array, tokens array or None)}, read through the store API with one
    pass over each db (the records' bytes decoded here as docs/FORMAT.md lays them out). Call it
    before a loader opens the store: LMDB must not open an environment twice in a process."""
    import numpy as np
    lib = lib or _lib()
    np_dt = {1: np.float32, 2: np.float16, 4: np.int32, 5: np.int16, 6: np.uint16}

    def parse(v):
        (magic, hsize, dtype, ndim, d0, d1, pbytes, phash, cfg, flags, producer,
         hhash) = _HDR.unpack_from(v)
        if magic != b"FCR1" or len(v) != 64 + pbytes:
            raise ValueError("bad record")
        a = np.frombuffer(v, np_dt[dtype], offset=64).copy()
        return a.reshape(d0, d1) if ndim == 2 else a

    feat = dict(_walk(store, FC_DB_FEAT, lib))
    tok = dict(_walk(store, FC_DB_TOK, lib)) if tok_config is not None else {}
    text = dict(_walk(store, FC_DB_TEXT, lib)) if tok_config is not None else {}
    out = {}
    for k, v in _walk(store, FC_DB_AUDIO, lib):
        uid = k.decode()
        mel = parse(feat[record_key(v[:16], config, lib)])
        t = None
        if tok_config is not None:
            t = parse(tok[record_key(text[k][:16], tok_config, lib)])
        out[uid] = (mel, t)
    return out


if __name__ == "__main__":
    for key, (h, _) in sorted(records(sys.argv[1]).items()):
        print(key.hex(), h["producer"], h["dtype"], f"{h['dim0']}x{h['dim1']}")
