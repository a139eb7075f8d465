"""Read a store's feature records through libfeatcache's own store API (fc_store_open, cursors),
for tests that must run where py-lmdb is missing (a lent GPU machine has numpy but not lmdb).

    python3 tests/fc_records.py STORE          # one line per record: key hex, producer, dtype, d0xd1
    from fc_records import records             # {key bytes: (header dict, payload bytes)}

The header is decoded from the bytes as docs/FORMAT.md lays it out (64-byte little-endian header,
then the payload); nothing here trusts the library's record parser.
"""
import ctypes
import os
import struct
import sys

FC_DB_AUDIO, FC_DB_FEAT = 1, 3
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


def _walk(store, db, lib=None):
    lib = lib or _lib()
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


if __name__ == "__main__":
    for key, (h, _) in sorted(records(sys.argv[1]).items()):
        print(key.hex(), h["producer"], h["dtype"], f"{h['dim0']}x{h['dim1']}")
