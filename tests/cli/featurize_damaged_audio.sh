#!/usr/bin/env bash
# featurize on damaged lossy files and on audio in formats libsndfile cannot read. An MP3 whose
# first frame is a Xing/Info tag states its length exactly, as an Ogg stream's last granule does:
# one cut in the middle, or with a page lost to damage, fails (as a FLAC with one bad bit does)
# instead of storing the part that decodes; an MP3 without the tag (its length only an estimate) is stored. MP4/M4A,
# ADTS AAC and WebM fail as an unsupported format, named, not as "not an audio file" or a damaged
# MPEG file, and a WAV holding a codec libsndfile does not read (AC-3, G.726, ...) as an
# unsupported encoding, named (so is an Ogg stream of Speex or FLAC, a Shorten-compressed NIST
# SPHERE file, and WavPack, TTA and AC-3). AIFF, AU, RF64, W64 and NIST SPHERE files cut short fail as a cut WAV does, and a
# compressed WAV (ADPCM, GSM) says the frames its fact chunk states, not its blocks; one that
# lacks less than a frame holds every frame it states and is stored. Every
# input is made here from one espeak-ng utterance.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v ffmpeg >/dev/null || { echo "FAIL: ffmpeg missing (scripts/setup installs it)"; exit 1; }

espeak-ng -w sp.wav "the quick brown fox jumps over the lazy dog and keeps on running" ||
  { echo "FAIL: espeak-ng failed"; exit 1; }
"$PY" - <<'PY' || { echo "FAIL: could not make the inputs"; exit 1; }
import soundfile as sf
x, sr = sf.read("sp.wav", dtype="float32")
sf.write("tag.mp3", x, sr, format="MP3")            # LAME's Info tag: the exact length
sf.write("good.ogg", x, sr, format="OGG", subtype="VORBIS")
mp3 = open("tag.mp3", "rb").read()
open("cut.mp3", "wb").write(mp3[: len(mp3) // 2])
ogg = bytearray(open("good.ogg", "rb").read())
for i in range(len(ogg) // 2, len(ogg) // 2 + 500):  # a damaged page: its CRC fails, it is dropped
    ogg[i] ^= 0xA5
open("hole.ogg", "wb").write(ogg)
sf.write("good.flac", x, sr, subtype="PCM_16")
flac = bytearray(open("good.flac", "rb").read())
flac[len(flac) // 2] ^= 0x10  # one bit: libFLAC's frame CRC fails and libsndfile stops there
open("onebyte.flac", "wb").write(flac)
PY
# An MP3 without the tag: mpg123 estimates its length from the file size and the first frame's
# bitrate, so a cut cannot be told from a short file (and a good file decodes a little short).
ff() { ffmpeg -hide_banner -loglevel error -y -i sp.wav "$@"; }
ff -c:a libmp3lame -write_xing 0 notag.mp3 && ff -c:a aac aac.m4a && ff -c:a aac -f adts adts.aac &&
  ff -c:a libopus opus.webm && ff -c:a libopus -f caf caf_opus.caf && ff -c:a pcm_s16le x.avi ||
  { echo "FAIL: ffmpeg could not make an input"; exit 1; }
head -c "$(($(stat -c %s notag.mp3) / 2))" notag.mp3 >notag_cut.mp3
# Containers that state their data's size as WAV does, each cut in the middle of its samples:
# libsndfile reads what is there and reports that many frames, without a word.
"$PY" - <<'PY' || { echo "FAIL: could not make the cut containers"; exit 1; }
import soundfile as sf
x, sr = sf.read("sp.wav", dtype="float32")
for name, fmt, sub in [("aiff", "AIFF", "PCM_16"), ("aifc", "AIFF", "ULAW"), ("au", "AU", "PCM_24"),
                       ("rf64", "RF64", "PCM_16"), ("w64", "W64", "FLOAT"), ("nist", "NIST", "PCM_16")]:
    sf.write("full." + name, x, sr, format=fmt, subtype=sub)
    b = open("full." + name, "rb").read()
    open(f"cut_{name}.{name}", "wb").write(b[: len(b) // 2 + 1])
# A WAV whose writer never came back to fill in the sizes: its data chunk states 0 bytes, and
# libsndfile (librosa, sox) reads none of the samples that follow.
w = bytearray(open("sp.wav", "rb").read())
assert w[36:40] == b"data"
w[4:8] = w[40:44] = bytes(4)
open("unsized.wav", "wb").write(w)
PY
frames() { "$PY" -c "import soundfile as sf, sys; print(sf.info(sys.argv[1]).frames)" "$1"; }
n=$(frames tag.mp3)

"$FZ" -j 1 -o st tag.mp3 good.ogg cut.mp3 hole.ogg onebyte.flac notag_cut.mp3 aac.m4a adts.aac \
  opus.webm x.avi caf_opus.caf >out 2>err
rc=$?
[ $rc = 1 ] || fail "exit $rc, want 1"
grep '^featurize: ' err >ours # libmpg123 writes its own notes on stderr too (docs/featurize.md)
# A file of full size that decodes short is not "truncated": its length is not the file's size.
for f in cut.mp3 hole.ogg onebyte.flac; do
  grep -q "^featurize: $f: damaged or cut short: header says $n frames, only [0-9]* decode" ours ||
    fail "$f: want damaged or cut short; got: $(grep "^featurize: $f" ours)"
done
grep -q "^featurize: notag_cut.mp3: " ours &&
  fail "notag_cut.mp3 (no tag: no length to hold it to) failed: $(grep notag_cut ours)"
for f in aac.m4a adts.aac opus.webm x.avi; do
  case $f in
  *.m4a) kind="MP4/M4A" ;;
  *.aac) kind="AAC (ADTS)" ;;
  *.avi) kind="AVI" ;; # a RIFF file, but not a WAVE: not a damaged WAV
  *) kind="Matroska/WebM" ;;
  esac
  grep -qxF "featurize: $f: unsupported audio format: $kind; libsndfile reads WAV, FLAC, Ogg (Vorbis, Opus), MP3 and uncompressed formats (AIFF, AU, CAF, ...): convert it, to FLAC say" ours ||
    fail "$f: want the unsupported format named; got: $(grep "$f" ours)"
done
# A container libsndfile reads holding a codec it does not: not damaged either.
grep -qxF "featurize: caf_opus.caf: unsupported encoding in a CAF file (libsndfile: Supported file format but unsupported encoding.): convert it, to FLAC say" ours ||
  fail "caf_opus.caf: want an unsupported encoding; got: $(grep "^featurize: caf_opus.caf" ours)"
[ "$(tail -n 1 ours)" = "featurize: done: 3 of 11 (3 new, 0 already stored, 8 failed)" ] ||
  fail "summary: $(tail -n 1 ours)"

# an RF64 ffmpeg wrote to a pipe: its ds64 chunk states 0 data bytes (libsndfile, librosa and
# ffmpeg read none), which was a bare "no samples"
ffmpeg -hide_banner -loglevel error -y -i sp.wav -rf64 always -f wav - >unsized_rf64.wav ||
  { echo "FAIL: ffmpeg could not make unsized_rf64.wav"; exit 1; }
"$FZ" -j 1 -o st2 full.aiff cut_aiff.aiff cut_aifc.aifc cut_au.au cut_rf64.rf64 cut_w64.w64 \
  cut_nist.nist unsized.wav unsized_rf64.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "cut containers: exit $rc, want 1"
for f in cut_aiff.aiff cut_aifc.aifc cut_au.au cut_rf64.rf64 cut_w64.w64 cut_nist.nist; do
  m=$n
  [ $f = cut_aifc.aifc ] && m=$((n + 1)) # libsndfile's u-law AIFC states one frame more
  grep -q "^featurize: $f: truncated: header says $m frames, file holds [0-9]*$" err ||
    fail "$f: want truncated; got: $(grep "^featurize: $f" err)"
done
bytes=$(($(stat -c %s sp.wav) - 44))
grep -qxF "featurize: unsized.wav: no samples: the data chunk states 0 bytes and $bytes follow it (a writer that did not finish leaves it so; 'sox --ignore-length IN OUT' rewrites the header)" err ||
  fail "unsized.wav: want its 0-byte data chunk named; got: $(grep "^featurize: unsized" err)"
grep -qxF "featurize: unsized_rf64.wav: no samples: its ds64 chunk states 0 data bytes and $bytes follow its data chunk (ffmpeg writes RF64 so to a pipe, where it cannot go back to fill in the size; 'sox --ignore-length IN OUT' rewrites the header)" err ||
  fail "unsized_rf64.wav: want its ds64 chunk named; got: $(grep "^featurize: unsized_rf64" err)"
[ "$(tail -n 1 err)" = "featurize: done: 1 of 9 (1 new, 0 already stored, 8 failed)" ] ||
  fail "cut containers: summary: $(tail -n 1 err)"

# Compressed WAVs (ADPCM, GSM 6.10, G.721) cut in the middle: their block_align is a block of
# hundreds of samples, not a frame, and the cut said "header says 32 frames, file holds 15" of a
# file of 32,000 samples. The header's count is the fact chunk's.
"$PY" - <<'PY' >facts || { echo "FAIL: could not make the cut compressed WAVs"; exit 1; }
import soundfile as sf, struct
x, sr = sf.read("sp.wav", dtype="float32")
for sub in ("IMA_ADPCM", "MS_ADPCM", "GSM610", "G721_32"):
    sf.write("full.wav", x, sr, subtype=sub)
    b = open("full.wav", "rb").read()
    i = b.index(b"fact")
    open(f"cut_{sub}.wav", "wb").write(b[: len(b) // 2])
    print(f"cut_{sub}.wav", struct.unpack("<I", b[i + 8 : i + 12])[0])
PY
"$FZ" -j 1 -o st3 cut_IMA_ADPCM.wav cut_MS_ADPCM.wav cut_GSM610.wav cut_G721_32.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "cut compressed WAVs: exit $rc, want 1"
while read -r f m; do
  h=$(sed -n "s/^featurize: $f: truncated: header says $m frames, file holds \([0-9]*\)$/\1/p" err)
  [ -n "$h" ] && [ "$h" -gt $((m / 3)) ] && [ "$h" -lt $((m * 2 / 3)) ] ||
    fail "$f: want truncated: header says $m frames, file holds about half; got: $(grep "^featurize: $f" err)"
done <facts
[ "$(tail -n 1 err)" = "featurize: done: 0 of 4 (0 new, 0 already stored, 4 failed)" ] ||
  fail "cut compressed WAVs: summary: $(tail -n 1 err)"

# WAVs holding a codec libsndfile does not decode (ffmpeg writes them: AC-3, G.726, WMA, FLAC, AAC,
# MP2 in a RIFF WAVE): said to be an unsupported encoding, naming it, where they were "damaged WAV
# file (libsndfile: ... Malformed 'fmt ' chunk.)", a file a user would download again. MP3 in a WAV
# is read; a WAV whose format tag is 0 (no codec at all) is damaged.
wavs="ac3:0x2000:AC-3 adpcm_g726:0x0045:G.726_ADPCM wmav2:0x0161:WMA flac:0xF1AC:FLAC aac:0x00FF:AAC mp2:0x0050:MP2"
rate() { case $1 in adpcm_g726) echo 8000 ;; *) echo 44100 ;; esac; }
for w in $wavs; do
  c=${w%%:*}
  ffmpeg -hide_banner -loglevel error -y -i sp.wav -ar "$(rate "$c")" -c:a "$c" -f wav "in_$c.wav" ||
    { echo "FAIL: ffmpeg could not make in_$c.wav"; exit 1; }
done
ff -c:a libmp3lame -f wav in_mp3.wav || { echo "FAIL: ffmpeg could not make in_mp3.wav"; exit 1; }
"$PY" -c "
b = bytearray(open('sp.wav', 'rb').read()); assert b[12:16] == b'fmt '
b[20:22] = bytes(2); open('tag0.wav', 'wb').write(b)" || { echo "FAIL: could not make tag0.wav"; exit 1; }
"$FZ" -j 1 -o st4 in_*.wav tag0.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "codecs in WAVs: exit $rc, want 1"
grep '^featurize: ' err >ours
for w in $wavs; do
  c=${w%%:*} t=${w#*:}
  t=${t%%:*} name=${w##*:}
  grep -qxF "featurize: in_$c.wav: unsupported encoding in a WAV file: ${name//_/ } (format tag $t): convert it, to FLAC say" ours ||
    fail "in_$c.wav: want an unsupported encoding named; got: $(grep "^featurize: in_$c.wav" ours)"
done
grep -q "^featurize: in_mp3.wav" ours && fail "in_mp3.wav (MP3 in a WAV, libsndfile reads it) failed"
grep -q "^featurize: tag0.wav: damaged WAV file (libsndfile: " ours ||
  fail "tag0.wav: want a damaged WAV; got: $(grep "^featurize: tag0.wav" ours)"
[ "$(tail -n 1 ours)" = "featurize: done: 1 of 8 (1 new, 0 already stored, 7 failed)" ] ||
  fail "codecs in WAVs: summary: $(tail -n 1 ours)"

# A WAV whose data chunk states an odd size, its last byte missing (half a 16-bit sample): every
# frame it states is there, and it said "truncated: header says 22049 frames, file holds 22049".
"$PY" -c "
import struct
w = bytearray(open('sp.wav', 'rb').read()); assert w[36:40] == b'data'
n = struct.unpack('<I', w[40:44])[0]
w = w[: 44 + n - 2]; w[40:44] = struct.pack('<I', n - 1); open('half.wav', 'wb').write(w)" ||
  { echo "FAIL: could not make half.wav"; exit 1; }
"$FZ" -j 1 -o st5 half.wav >out 2>err || fail "half.wav: exit $?: $(cat err)"
[ "$(cat err)" = "featurize: done: 1 of 1 (1 new, 0 already stored, 0 failed)" ] ||
  fail "half.wav: $(cat err)"

# A WAV or AU whose header states a sample rate of 0, or one past 2^31 - 1, a CAF whose desc
# chunk states one that is not a positive rate, or an AIFF whose COMM chunk states 0 or a negative
# one (a damaged header): it was "damaged WAV file
# (libsndfile: Internal error : SF_INFO struct incomplete.)", which reads as the tool's fault; the
# rate its header states is said.
"$PY" -c "
import struct, soundfile as sf
w = bytearray(open('sp.wav', 'rb').read()); assert w[12:16] == b'fmt '
for name, r in (('rate0.wav', 0), ('rate3g.wav', 3000000000)):
    w[24:28] = struct.pack('<I', r); open(name, 'wb').write(w)
x, sr = sf.read('sp.wav', dtype='int16')
sf.write('r.au', x, sr, format='AU', subtype='PCM_16'); sf.write('r.caf', x, sr, format='CAF')
a = bytearray(open('r.au', 'rb').read()); assert a[:4] == b'.snd'
for name, r in (('au0.au', 0), ('au3g.au', 3000000000)):
    a[16:20] = struct.pack('>I', r); open(name, 'wb').write(a)
c = bytearray(open('r.caf', 'rb').read()); i = c.index(b'desc'); assert i == 8
for name, r in (('caf0.caf', 0.0), ('cafm5.caf', -5.0)):
    c[i + 12:i + 20] = struct.pack('>d', r); open(name, 'wb').write(c)
sf.write('r.aiff', x, sr, format='AIFF', subtype='PCM_16')
f = bytearray(open('r.aiff', 'rb').read()); i = f.index(b'COMM')
f[i + 16:i + 26] = bytes.fromhex('c00cfa00000000000000'); open('aiffm.aiff', 'wb').write(f)
f[i + 16:i + 26] = bytes(10); open('aiff0.aiff', 'wb').write(f)" ||
  { echo "FAIL: could not make rate0.wav"; exit 1; }
"$FZ" -j 1 -o st5r rate0.wav rate3g.wav au0.au au3g.au caf0.caf cafm5.caf aiffm.aiff aiff0.aiff sp.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "rate 0: exit $rc, want 1: $(cat err)"
for f in rate0.wav:0:WAV rate3g.wav:3000000000:WAV au0.au:0:AU au3g.au:3000000000:AU \
  caf0.caf:0:CAF cafm5.caf:-5:CAF aiffm.aiff:-16000:AIFF; do
  IFS=: read -r name rate kind <<<"$f"
  grep -qxF "featurize: $name: damaged $kind file: its header states a sample rate of $rate Hz (libsndfile: Internal error : SF_INFO struct incomplete.)" err ||
    fail "$name: want its rate said; got: $(grep "^featurize: $name" err)"
done
# libsndfile reads an AIFF's 0 Hz as 1 Hz: it was "unsupported sample rate conversion: 1 Hz to ..."
grep -qxF "featurize: aiff0.aiff: damaged AIFF file: its header states a sample rate of 0 Hz" err ||
  fail "aiff0.aiff: want its rate said; got: $(grep "^featurize: aiff0.aiff" err)"
grep -qxF "featurize: done: 1 of 9 (1 new, 0 already stored, 8 failed)" err ||
  fail "rate 0: summary: $(tail -n 1 err)"

# Ogg streams of a codec libsndfile does not decode (Speex, FLAC in Ogg) were "damaged Ogg file
# (libsndfile: Unspecified internal error.)", and formats it does not know at all (WavPack, TTA,
# raw AC-3) "not an audio file": each is now named as unsupported.
ff -ar 16000 -c:a libspeex sp1.spx && ff -c:a flac -f ogg og1.oga && ff -c:a wavpack wp1.wv &&
  ff -c:a tta tt1.tta && ff -ar 44100 -c:a ac3 ac1.ac3 ||
  { echo "FAIL: ffmpeg could not make an input"; exit 1; }
"$FZ" -j 1 -o st6 sp1.spx og1.oga wp1.wv tt1.tta ac1.ac3 >out 2>err
rc=$?
lib="libsndfile reads WAV, FLAC, Ogg (Vorbis, Opus), MP3 and uncompressed formats (AIFF, AU, CAF, ...): convert it, to FLAC say"
cat >want <<TXT
featurize: sp1.spx: unsupported encoding in an Ogg file: Speex: convert it, to FLAC say
featurize: og1.oga: unsupported encoding in an Ogg file: FLAC (libsndfile reads FLAC files, not FLAC in Ogg): convert it, to FLAC say
featurize: wp1.wv: unsupported audio format: WavPack; $lib
featurize: tt1.tta: unsupported audio format: TTA; $lib
featurize: ac1.ac3: unsupported audio format: AC-3; $lib
featurize: done: 0 of 5 (0 new, 0 already stored, 5 failed)
TXT
[ $rc = 1 ] || fail "Ogg codecs, other formats: exit $rc, want 1"
diff -u want err || fail "Ogg codecs, other formats: stderr differs"

# NIST SPHERE files of LDC's corpora (WSJ, Switchboard) hold Shorten-compressed samples, which
# libsndfile does not decode: they were "damaged NIST file (libsndfile: File contains data in an
# unimplemented format.)", a file a user would download again; now the compression is named, with
# what decodes it. The header is LDC's; the body stands in for the stream (nothing decodes it).
"$PY" -c "
import struct
def sph(coding, body):
    h = ('NIST_1A\\n   1024\\nsample_count -i 16000\\nsample_rate -i 16000\\nchannel_count -i 1\\n'
         'sample_n_bytes -i 2\\nsample_byte_format -s2 01\\nsample_coding -s%d %s\\n'
         'sample_checksum -i 4711\\nend_head\\n' % (len(coding), coding)).encode().ljust(1024, b' ')
    return h + body
open('shorten.sph', 'wb').write(sph('pcm,embedded-shorten-v2.00', b'ajkg\\x02' + bytes(range(256)) * 20))
open('ulaw.sph', 'wb').write(sph('ulaw,embedded-shorten-v1.09', b'ajkg\\x02' + bytes(range(256)) * 20))
open('pcm.sph', 'wb').write(sph('pcm', struct.pack('<16000h', *[(i * 37) % 2000 - 1000 for i in range(16000)])))
" || { echo "FAIL: could not make the SPHERE files"; exit 1; }
"$FZ" -j 1 -o st7 shorten.sph ulaw.sph pcm.sph >out 2>err
rc=$?
cat >want <<TXT
featurize: shorten.sph: unsupported encoding in a NIST SPHERE file: Shorten compression (sample_coding pcm,embedded-shorten-v2.00; LDC's sph2pipe -f wav IN OUT.wav decodes it): convert it, to FLAC say
featurize: ulaw.sph: unsupported encoding in a NIST SPHERE file: Shorten compression (sample_coding ulaw,embedded-shorten-v1.09; LDC's sph2pipe -f wav IN OUT.wav decodes it): convert it, to FLAC say
featurize: done: 1 of 3 (1 new, 0 already stored, 2 failed)
TXT
[ $rc = 1 ] || fail "SPHERE: exit $rc, want 1"
diff -u want err || fail "SPHERE: stderr differs"

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; cat err; exit 1; fi
echo ok
