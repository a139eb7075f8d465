#!/usr/bin/env bash
# featurize --max-seconds rejects a file whose header states a length over the limit without
# reading its data: a 10 GB recording was read whole before it was refused. Counted here (never
# timed) with strace: the bytes read stay a few KB for 64 MiB files (sparse) whose headers state
# 2097 s, a 16-bit mono WAV (featurize's own reader) and a 24-bit stereo one (libsndfile's). A
# header that states more data than the file holds is still "truncated" (the whole file is read:
# it is small), and a file under the limit is stored. The library's one-file call, fc_featurize_file,
# refuses from the header as well.
set -u
FZ=${FC_BIN:?}/featurize
command -v strace >/dev/null || { echo "skip: strace not installed"; exit 77; }
strace -f -o /dev/null true 2>/dev/null || { echo "skip: strace cannot trace here (ptrace refused)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# wav NAME RATE CHANNELS BITS DATA_BYTES: a PCM WAV header stating DATA_BYTES of data; the data
# itself is a hole (truncate), so the file costs no disk.
wav() {
  local name=$1 rate=$2 ch=$3 bits=$4 data=$5 align
  align=$((ch * bits / 8))
  le32() { printf "\\x$(printf %02x $(($1 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 24 & 255)))"; }
  le16() { printf "\\x$(printf %02x $(($1 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))"; }
  { printf RIFF; le32 $((36 + data)); printf 'WAVEfmt '; le32 16; le16 1; le16 "$ch"; le32 "$rate"
    le32 $((rate * align)); le16 "$align"; le16 "$bits"; printf data; le32 "$data"; } >"$name"
}
big=$((64 << 20))
wav big16.wav 16000 1 16 $big && truncate -s $((44 + big)) big16.wav
wav big24.wav 16000 2 24 $((big / 6 * 6)) && truncate -s $((44 + big / 6 * 6)) big24.wav
wav cut.wav 16000 1 16 $big && head -c 1000 /dev/zero >>cut.wav # states 64 MiB, holds 1000 bytes
wav ok.wav 16000 1 16 32000 && truncate -s $((44 + 32000)) ok.wav # 1 s of silence

ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  strace -f -e trace=read,pread64,readv,preadv,preadv2 -o trace \
  "$FZ" -q -j 1 --preset kaldi --max-seconds 2 -o st big16.wav big24.wav cut.wav ok.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "exit $rc, want 1: $(cat err)"
[ -s out ] && fail "stdout not empty: $(cat out)"
cat >want <<'TXT'
featurize: big16.wav: 2097.2 s long, over the 2.0 s limit
featurize: big24.wav: 699.1 s long, over the 2.0 s limit
featurize: cut.wav: truncated: header says 33554432 frames, file holds 500
featurize: done: 1 of 4 (1 new, 0 already stored, 3 failed)
TXT
diff -u want err || fail "stderr differs"
# every byte the process read: the libraries' headers, the store, the small files, the headers
read_bytes=$(awk '{ if (match($0, /= [0-9]+$/)) n += substr($0, RSTART + 2) } END { print n + 0 }' trace)
[ "$read_bytes" -lt $((4 << 20)) ] ||
  fail "$read_bytes bytes read (want a few KB: the headers, not the 2 x 64 MiB of data)"

# a rerun into the store, which holds entries now: refused from the headers again
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  strace -f -e trace=read,pread64,readv,preadv,preadv2 -o trace \
  "$FZ" -q -j 1 --preset kaldi --max-seconds 2 -o st big16.wav big24.wav >out 2>err
[ $? = 1 ] || fail "rerun: exit, want 1: $(cat err)"
read_bytes=$(awk '{ if (match($0, /= [0-9]+$/)) n += substr($0, RSTART + 2) } END { print n + 0 }' trace)
[ "$read_bytes" -lt $((4 << 20)) ] || fail "rerun: $read_bytes bytes read (want a few KB)"

# the library's one-file call (fc_featurize_file, loader-bench's baseline) refuses from the header
# too: the bytes read from big16.wav's descriptor stay a few KB
PY=${FC_PYTHON:-python3}
cat >one.py <<'PY'
import ctypes, featcache, sys
lib = ctypes.CDLL(featcache.find_library())
cfg = ctypes.create_string_buffer(4096)  # an fc_mel_config, filled by the library
assert lib.fc_mel_preset(b"kaldi", cfg) == 0
plan = ctypes.c_void_p()
assert lib.fc_mel_plan_create(cfg, ctypes.byref(plan)) == 0
mel, frames, why = ctypes.c_void_p(), ctypes.c_uint64(), ctypes.create_string_buffer(512)
rc = lib.fc_featurize_file(plan, sys.argv[1].encode(), ctypes.c_double(2.0), ctypes.byref(mel),
                           ctypes.byref(frames), why, ctypes.c_size_t(len(why)))
print(rc, why.value.decode())
lib.fc_mel_plan_free(plan)
PY
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  strace -f -e trace=openat,close,read,pread64,readv,preadv,preadv2 -o trace "$PY" one.py big16.wav >out 2>err ||
  fail "fc_featurize_file: $(cat err)"
grep -q ' 2097.2 s long, over the 2.0 s limit$' out || fail "fc_featurize_file: $(cat out err)"
# the reads on big16.wav's descriptor, from its openat to its close
read_bytes=$(awk '/openat\(.*"big16\.wav"/ { if (match($0, /= [0-9]+$/)) fd = substr($0, RSTART + 2); next }
  fd != "" && $0 ~ ("close\\(" fd "\\)") { fd = ""; next }
  fd != "" && $0 ~ ("read[v0-9]*\\(" fd ",") { if (match($0, /= [0-9]+$/)) n += substr($0, RSTART + 2) }
  END { print n + 0 }' trace)
grep -q 'openat(.*"big16.wav"' trace || fail "fc_featurize_file: big16.wav not opened in the trace"
[ "$read_bytes" -lt $((1 << 20)) ] ||
  fail "fc_featurize_file: $read_bytes bytes of big16.wav read (want its header)"

# a long file stored before the limit was given is still found stored when it must be read and
# hashed again (touched: its identity changed; --rehash), whatever its length: not refused
sox -n -r 16000 -b 16 long.wav synth 3 sine 440 || fail "sox"
"$FZ" -q --preset kaldi -o st long.wav || fail "store long.wav"
touch -d '2001-01-01' long.wav
for opt in "" --rehash; do
  # shellcheck disable=SC2086 # no option, or one
  "$FZ" --preset kaldi --max-seconds 2 $opt -o st long.wav >out 2>err ||
    fail "stored long.wav ${opt:-touched}: exit $?: $(cat err)"
  grep -q "1 already stored" err || fail "stored long.wav ${opt:-touched}: $(cat err)"
done
exit $((fails > 0))
