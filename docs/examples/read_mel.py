import sys, json, lmdb, numpy as np  # read_mel.py STORE ID [PRESET]
M, P1, P2 = 2**64 - 1, 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F
P4 = 0x85EBCA77C2B2AE63
SECRET = bytes.fromhex("b8fe6c3923a44bbe7c01812cf721ad1c"
                       "ded46de9839097db7240a4a4b7b3671f")
le = lambda b, i: int.from_bytes(b[i:i + 8], "little")
def mix16(b, i):  # XXH3_mix16B, seed 0: a 64x64 → 128-bit product
    p = (le(b, i) ^ le(SECRET, i)) * (le(b, i + 8)
                                      ^ le(SECRET, i + 8))
    return (p ^ (p >> 64)) & M
def aval(h):
    h = ((h ^ (h >> 37)) * 0x165667919E3779F9) & M
    return h ^ (h >> 32)
def key(content, config):  # XXH3-128 of 32 bytes: low64, high64 LE
    b = content + config
    lo = (((32 * P1 + mix16(b, 0)) & M)
          ^ ((le(b, 16) + le(b, 24)) & M))
    hi = mix16(b, 16) ^ ((le(b, 0) + le(b, 8)) & M)
    l = aval((lo + hi) & M)
    h = -aval((lo * P1 + hi * P4 + 32 * P2) & M) & M
    return l.to_bytes(8, "little") + h.to_bytes(8, "little")
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
meta, audio, feat = (env.open_db(n, create=False)
                     for n in (b"meta", b"audio", b"feat"))
with env.begin() as txn:
    assert txn.get(b"format", db=meta) == b"featcache/1"
    want = sys.argv[3] if len(sys.argv) > 3 else "hifigan"
    cfg = next((bytes.fromhex(k[4:].decode())
                for k, v in txn.cursor(db=meta)
                if k.startswith(b"cfg/")
                and json.loads(v).get("preset") == want), None)
    entry = txn.get(sys.argv[2].encode(), db=audio)
    rec = cfg and entry and txn.get(key(entry[:16], cfg), db=feat)
    if not rec:  # no such config, no such id, or not featurized
        sys.exit(f"{sys.argv[1]}: no {want} mel of {sys.argv[2]}")
    # magic, f32, 2-D
    assert rec[:4] == b"FCR1" and rec[6] == 1 and rec[7] == 2
    frames, n_mels = map(int, np.frombuffer(rec, "<u4", 2, 8))
    mel = np.frombuffer(rec, "<f4", -1, 64).reshape(frames, n_mels)
print(sys.argv[2], mel.shape, f"{mel.mean():.6f}")
