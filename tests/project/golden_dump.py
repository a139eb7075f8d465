"""The outputs of the tools on the golden corpus, as text that does not depend on the machine:
every entry, config, token record and record header byte for byte (as hashes), and each mel
record's values as a sum (float noise of another FFT code path moves it by < 1e-2; a change of
what is computed moves it by far more). Used by tests/project/golden_outputs.sh.

    python3 golden_dump.py corpus DIR          write the corpus (deterministic bytes) into DIR
    python3 golden_dump.py store STORE          print the dump of STORE
    python3 golden_dump.py compare WANT GOT     exit 1 naming each line that differs
"""
import os
import re
import struct
import sys
import wave

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fc_records as R  # noqa: E402

import numpy as np  # noqa: E402
import xxhash  # noqa: E402

DBS = {"meta": 0, "audio": 1, "text": 2, "feat": 3, "tok": 4}
TEXTS = ["Printing, in the only sense with which we are at present concerned.",
         "The quick brown fox jumps over the lazy dog, twice.",
         "Numbers like 3.14 and 2026 are spoken as words.",
         "A changed parameter can never serve a stale feature."]


def corpus(d):
    """Four 16-bit WAVs at 22050 Hz (one stereo at 44100) from an integer generator: the same
    bytes on every machine. metadata.csv in LJSpeech form."""
    os.makedirs(os.path.join(d, "wavs"), exist_ok=True)
    state = 12345
    lines = []
    for i, (n, rate, ch) in enumerate([(11025, 22050, 1), (22187, 22050, 1), (5000, 22050, 1),
                                       (30000, 44100, 2)]):
        samples = []
        for j in range(n * ch):  # a decaying tone plus LCG noise, all integer arithmetic
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            tone = ((j * (37 + 11 * i)) % 400) - 200
            samples.append(max(-32768, min(32767, tone * 40 + (state >> 16) % 2001 - 1000)))
        uid = "GOLD-%04d" % (i + 1)
        with wave.open(os.path.join(d, "wavs", uid + ".wav"), "wb") as w:
            w.setnchannels(ch)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes(struct.pack("<%dh" % len(samples), *samples))
        lines.append("%s|%s|%s" % (uid, TEXTS[i], TEXTS[i]))
    with open(os.path.join(d, "metadata.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")


def h(b):
    return xxhash.xxh3_64_hexdigest(b)


def dump(store):
    lib = R._lib()
    out = []
    for name, db in DBS.items():
        for k, v in R._walk(store, db, lib):
            if name == "meta" and k.startswith(b"created/"):  # when the run made the config:
                ok = re.fullmatch(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", v)  # its form, not its time
                out.append("meta %s %s" % (k.decode(), "<RFC 3339 UTC>" if ok else h(v)))
            elif name == "meta":
                out.append("meta %s %s" % (k.decode(), h(v)))
            elif name == "audio":  # digest, rate, channels, frames, size; not mtime nor path
                rate, ch, frames, size = struct.unpack_from("<IIQQ", v, 16)
                out.append("audio %s %s %d %d %d %d" % (k.decode(), v[:16].hex(), rate, ch, frames,
                                                         size))
            elif name == "text":
                out.append("text %s %s" % (k.decode(), h(v)))
            elif name == "tok":
                out.append("tok %s %s" % (k.hex(), h(v)))
            else:
                magic, _, dtype, ndim, d0, d1, pb, _, cfg, flags, prod, _ = R._HDR.unpack_from(v)
                p = v[64:]
                if dtype == 1:
                    vals = np.frombuffer(p, "<f4").astype(np.float64)
                elif dtype == 2:
                    vals = np.frombuffer(p, "<f2").astype(np.float64)
                else:  # mq and the integer dtypes: the bytes themselves
                    vals = None
                fp = ("sum=%.4f" % vals.sum()) if vals is not None else "payload=" + h(p)
                out.append("feat %s dtype=%d ndim=%d %dx%d cfg=%s flags=%d producer=%d %s" % (
                    k.hex(), dtype, ndim, d0, d1, cfg.hex(), flags, prod, fp))
    return out


def compare(want_path, got_path):
    want = open(want_path).read().splitlines()
    got = open(got_path).read().splitlines()
    bad = 0

    def split_sum(line):
        if " sum=" in line:
            head, s = line.rsplit(" sum=", 1)
            return head, float(s)
        return line, None
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else "(none)"
        g = got[i] if i < len(got) else "(none)"
        (wh, ws), (gh, gs) = split_sum(w), split_sum(g)
        if wh != gh or (ws is None) != (gs is None) or (ws is not None and abs(ws - gs) > 1e-2):
            print("golden: line %d differs:\n  want %s\n  got  %s" % (i + 1, w, g))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "corpus":
        corpus(sys.argv[2])
    elif cmd == "store":
        print("\n".join(dump(sys.argv[2])))
    elif cmd == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit("usage: golden_dump.py corpus DIR | store STORE | compare WANT GOT")
