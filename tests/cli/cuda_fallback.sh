#!/usr/bin/env bash
# featurize --device on this machine, GPU or not:
#   no usable GPU (CI, or a build without the CUDA backend):
#     --device auto  runs on the CPU: exit 0, -v says "featurize: device: cpu (no CUDA device: ...)",
#                    --json has "device":"cpu", the record's producer is 1 (CPU)
#     --device cuda / cuda:0 / cuda:7   exit 2, stderr exactly "featurize: no CUDA device: REASON",
#                    REASON the runtime's (fc_device_resolve), stdout empty, no store created
#   a usable GPU: auto and cuda run on cuda:0 (producer 2), a job over --gpu-min-seconds starts
#     the GPU beside the CPU (the hybrid start: --json cpu_computed > 0), and a device that does not exist
#     (cuda:N, N = count) exits 2 with "featurize: no CUDA device: device N does not exist (...)";
#     with fault injection, a GPU that fails to start (FC_FAULT=cuda:1, its first runtime call):
#     auto (hybrid and wait) computes on the CPU (exit 0, "the GPU could not be started (...)",
#     --json device cpu and fell_back_to_cpu true, producer 1), cuda exits 2.
#   the driver lists a GPU (FC_NVIDIA_GPUS_DIR: a directory per GPU, as /proc/driver/nvidia/gpus)
#     and the CUDA runtime is not asked before the job starts it:
#     no usable GPU, a build with the backend: auto (hybrid and wait) takes cuda:0 (-v), the job
#       finds it cannot be started and the CPU computes it (exit 0, "the GPU could not be started
#       (REASON)", --json device cpu and fell_back_to_cpu true, producer 1), but with a bad
#       FC_CUDA_RING it exits 2 with the variable's reason, nothing stored, and a job that fell
#       back and then failed (--strict) says the GPU's reason all the same, and a --dtype mq
#       job is the CPU's (-v says why; no fallback); cuda is taken (-v)
#       and exits 2 with "featurize: REASON", nothing stored; CUDA_VISIBLE_DEVICES=0 is taken as
#       listed; cuda:1 (past the one listed) and CUDA_VISIBLE_DEVICES of a UUID, of a number past
#       the list, empty or naming one twice ask the runtime first, as before (exit 2 and no
#       store; auto says "device: cpu (REASON)")
#     a usable GPU: auto and cuda run on cuda:0 (producer 2), listed or not (an empty list: the
#       runtime is asked first)
#   both: --device gpu is a usage error (exit 2, with the --help hint).
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
LIB=${FEATCACHE_LIBRARY:-$FC_BIN/libfeatcache.so.0}
[ -x "$FZ" ] || { echo "FAIL: featurize is not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# 1.25 s of a 16-bit 22.05 kHz tone, made with Python's standard library (a GPU machine has no
# espeak-ng).
"$PY" - <<'PY' || exit 1
import math, struct, wave
with wave.open("a.wav", "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / 22050)))
                           for i in range(27562)))
PY

# The library's own answer, through its public API: fc_device_resolve of cuda:0, cuda:1, ... (the
# count is the first N that does not resolve; the reason is cuda:0's when there is none).
read -r built count reason < <("$PY" - "$LIB" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
class Device(ctypes.Structure):  # fc_device (fc_featurize.h)
    _fields_ = [("kind", ctypes.c_int), ("index", ctypes.c_int)]
why = ctypes.create_string_buffer(256)
def resolve(n):
    got = Device()
    rc = lib.fc_device_resolve(ctypes.byref(Device(2, n)), ctypes.byref(got), why, ctypes.c_size_t(256))
    return rc, why.value.decode()
rc, reason = resolve(0)
if rc:
    print(0 if "this build has no CUDA backend" in reason else 1, 0, reason)
else:
    n = 1
    while resolve(n)[0] == 0:
        n += 1
    print(1, n, "")
PY
)
[ -n "${count:-}" ] || { echo "cannot query the CUDA devices through $LIB (fc_device_resolve)"; exit 1; }
echo "CUDA devices: $count${reason:+ ($reason)}"

producer() { # producer field of every record in the store (read through the library's store API)
  "$PY" "$FC_SRC/tests/fc_records.py" "$1" | cut -d' ' -f2 | tr '\n' ' ' | sed 's/ $//'
}
json_field() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }

# check_nodev NAME SPEC WANT_STDERR: exit 2, exact stderr, empty stdout, no store.
check_nodev() {
  "$FZ" --device "$2" -o st_nodev a.wav >out 2>err
  local rc=$?
  if [ "$rc" != 2 ] || [ "$(cat err)" != "$3" ] || [ -s out ] || [ -e st_nodev ]; then
    fail "$1: exit $rc (want 2); stderr: $(cat err); want: $3"
    [ -s out ] && fail "$1: unexpected stdout: $(cat out)"
    [ -e st_nodev ] && fail "$1: a store was created"
  fi
  rm -rf st_nodev
}

if [ "$count" = 0 ]; then
  case "$reason" in
    "no CUDA device: "?*) ;;
    *) fail "fc_device_resolve reason '$reason' does not start with 'no CUDA device: '" ;;
  esac
  # auto falls back to the CPU, says so at -v, and in --json (--gpu-min-seconds 0: whatever the
  # job's size, so the reason is the runtime's).
  "$FZ" --device auto --gpu-min-seconds 0 -v --json -o st a.wav >out 2>err
  rc=$?
  [ "$rc" = 0 ] || fail "auto: exit $rc; stderr: $(cat err)"
  want_line="featurize: device: cpu ($reason)"
  grep -qxF "$want_line" err || fail "auto -v: no line '$want_line' in stderr: $(cat err)"
  [ "$(json_field out device 2>/dev/null)" = cpu ] || fail "auto --json: device is not cpu: $(cat out)"
  [ "$(producer st)" = 1 ] || fail "auto: producer '$(producer st)', want 1 (CPU)"
  # without -v nothing is said about the device
  "$FZ" --device auto -o st2 a.wav >out 2>err || fail "auto (no -v): exit $?"
  grep -q "device" err && fail "auto without -v mentions the device: $(cat err)"
  # cpu explicitly: no CUDA query in the way
  "$FZ" --device cpu --json -o st3 a.wav >out 2>err || fail "cpu: exit $?; $(cat err)"
  [ "$(json_field out device 2>/dev/null)" = cpu ] || fail "cpu --json: $(cat out)"
  # cuda asked for: exit 2 with the runtime's reason, nothing done
  check_nodev "cuda" cuda "featurize: $reason"
  check_nodev "cuda:0" cuda:0 "featurize: $reason"
  check_nodev "cuda:7" cuda:7 "featurize: $reason"
  if [ "$built" = 1 ]; then # a GPU the driver lists, which the runtime cannot use
    mkdir -p gpus/0000:01:00.0
    echo 'not audio' >bad.wav
    export FC_NVIDIA_GPUS_DIR=$tmp/gpus
    for start in hybrid wait; do
      rm -rf st_l
      FC_CUDA_START=$start "$FZ" --device auto --gpu-min-seconds 0 -v --json -o st_l a.wav >out 2>err
      rc=$?
      [ "$rc" = 0 ] || fail "listed GPU, auto ($start): exit $rc; $(cat err)"
      grep -qxF "featurize: device: cuda:0" err || fail "listed GPU, auto ($start) -v: $(cat err)"
      grep -qxF "featurize: the GPU could not be started ($reason): the CPU computed the job" err ||
        fail "listed GPU, auto ($start): no fallback line in $(cat err)"
      [ "$(json_field out device 2>/dev/null)/$(json_field out fell_back_to_cpu 2>/dev/null)" = \
        cpu/True ] || fail "listed GPU, auto ($start): --json $(cat out)"
      [ "$(producer st_l)" = 1 ] || fail "listed GPU, auto ($start): producer '$(producer st_l)'"
      # a bad FC_CUDA_RING is a configuration error (exit 2, nothing stored), not a GPU that
      # could not be started whose job the CPU computes
      rm -rf st_r
      FC_CUDA_RING=8x4Q FC_CUDA_START=$start "$FZ" --device auto --gpu-min-seconds 0 -o st_r \
        a.wav >out 2>err
      rc=$?
      ring_want="featurize: FC_CUDA_RING '8x4Q': want CHUNKSxSAMPLES[:early|:late][:commit], 1 to 16 chunks of 64K to 32M samples (e.g. 16x2M, the default at -j 16)"
      [ "$rc" = 2 ] && [ "$(cat err)" = "$ring_want" ] && [ ! -s out ] ||
        fail "listed GPU, auto ($start), FC_CUDA_RING=8x4Q: exit $rc (want 2); stderr $(cat err)"
      [ -e st_r ] && [ -n "$(producer st_r)" ] && fail "FC_CUDA_RING=8x4Q: stored $(producer st_r)"
      # a job that fell back and then failed (--strict stopped it at a bad file): the GPU's
      # reason is said all the same
      rm -rf st_s
      FC_CUDA_START=$start "$FZ" --device auto --gpu-min-seconds 0 --strict -j 1 -o st_s \
        bad.wav a.wav >out 2>err
      rc=$?
      [ "$rc" = 1 ] &&
        grep -qxF "featurize: the GPU could not be started ($reason): the CPU computed the job" err ||
        fail "listed GPU, auto ($start), --strict stop: exit $rc (want 1); stderr $(cat err)"
    done
    # --dtype mq: coded per utterance, which the GPU's pipeline does not do: auto takes the CPU
    # whatever the job, and does not start the GPU only to leave it
    FC_CUDA_START=wait "$FZ" --device auto --gpu-min-seconds 0 --dtype mq -v --json -o st_mq \
      a.wav >out 2>err || fail "listed GPU, auto, --dtype mq: exit $?; $(cat err)"
    grep -qxF "featurize: device: cpu (--dtype mq: the GPU does not make mq records)" err &&
      ! grep -q "could not be started" err ||
      fail "listed GPU, auto, --dtype mq: stderr $(cat err)"
    [ "$(json_field out device 2>/dev/null)/$(json_field out fell_back_to_cpu 2>/dev/null)" = \
      cpu/False ] || fail "listed GPU, auto, --dtype mq: --json $(cat out)"
    "$FZ" --device cuda -v -o st_lc a.wav >out 2>err # taken (-v), then found unusable
    rc=$?
    [ "$rc" = 2 ] && [ "$(head -n 1 err)" = "featurize: device: cuda:0" ] &&
      grep -qxF "featurize: $reason" err || fail "listed GPU, cuda: exit $rc (want 2); stderr $(cat err)"
    [ -e st_lc ] && [ -n "$(producer st_lc)" ] && fail "listed GPU, cuda: records stored: $(producer st_lc)"
    check_nodev "listed GPU, cuda:1" cuda:1 "featurize: $reason"
    # CUDA_VISIBLE_DEVICES naming listed GPUs by number: taken as listed; anything else (a UUID,
    # a number past the list, nothing) asks the runtime first
    for cvd in 0 GPU-8f2e3c1a 1 "" 0,0; do
      rm -rf st_lv
      CUDA_VISIBLE_DEVICES=$cvd "$FZ" --device auto --gpu-min-seconds 0 -v -o st_lv a.wav >out 2>err ||
        fail "listed GPU, CUDA_VISIBLE_DEVICES='$cvd', auto: exit $?"
      if [ "$cvd" = 0 ]; then
        grep -qxF "featurize: device: cuda:0" err &&
          grep -qxF "featurize: the GPU could not be started ($reason): the CPU computed the job" err ||
          fail "listed GPU, CUDA_VISIBLE_DEVICES=0, auto -v: $(cat err)"
      else
        grep -qxF "featurize: device: cpu ($reason)" err ||
          fail "listed GPU, CUDA_VISIBLE_DEVICES='$cvd', auto -v: $(cat err)"
      fi
    done
    unset FC_NVIDIA_GPUS_DIR
  fi
else
  # --gpu-min-seconds 0 makes any job large enough for the hybrid start, where the CPU computes
  # while the GPU starts (the one file is the CPU's then): the device opened first (wait), the GPU
  # computes it
  FC_CUDA_START=wait "$FZ" --device auto --gpu-min-seconds 0 -v --json -o st a.wav >out 2>err ||
    fail "auto on a GPU: exit $?; $(cat err)"
  grep -qE "^featurize: device: cuda:0( |$)" err || fail "auto -v on a GPU: $(cat err)"
  [ "$(json_field out device 2>/dev/null)" = cuda:0 ] || fail "auto --json on a GPU: $(cat out)"
  [ "$(producer st)" = 2 ] || fail "auto on a GPU: producer '$(producer st)', want 2 (CUDA)"
  "$FZ" --device cuda --json -o st2 a.wav >out 2>err || fail "cuda on a GPU: exit $?; $(cat err)"
  [ "$(producer st2)" = 2 ] || fail "cuda on a GPU: producer '$(producer st2)', want 2"
  mkdir -p nolist # the driver's list unread: the runtime is asked before the job, as without one
  FC_CUDA_START=wait FC_NVIDIA_GPUS_DIR=$tmp/nolist "$FZ" --device auto --gpu-min-seconds 0 \
    -o st_nl a.wav >out 2>err ||
    fail "auto on a GPU, no GPU listed: exit $?; $(cat err)"
  [ "$(producer st_nl)" = 2 ] || fail "auto on a GPU, no GPU listed: producer '$(producer st_nl)'"
  # --gpu-min-seconds is also what makes a job large enough for the hybrid start (the CPU computes
  # while the GPU starts): 40 files of 1.25 s over a 1 s threshold start it hybrid, and the CPU
  # computes the first of them (the default threshold, 3000 s a worker, would have had it wait)
  for i in $(seq 1 40); do cp a.wav "h$i.wav"; done
  "$FZ" --device auto --gpu-min-seconds 1 --json -o st_hy h*.wav >out 2>err ||
    fail "auto, hybrid by --gpu-min-seconds: exit $?; $(cat err)"
  [ "$(json_field out cpu_computed 2>/dev/null)" -gt 0 ] 2>/dev/null ||
    fail "auto --gpu-min-seconds 1 on 40 files: no utterance computed by the CPU while the GPU started: $(cat out)"
  "$FZ" --device "cuda:$count" -o st_nodev a.wav >out 2>err
  rc=$?
  [ "$rc" = 2 ] || fail "cuda:$count: exit $rc (want 2)"
  grep -qxE "featurize: no CUDA device: device $count does not exist \(.*\)" err ||
    fail "cuda:$count: stderr $(cat err)"
  if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
    for start in hybrid wait; do
      rm -rf st_fb
      FC_FAULT_LOG=$tmp/fault.log FC_FAULT=cuda:1 FC_CUDA_START=$start "$FZ" --device auto \
        --gpu-min-seconds 0 --json -o st_fb a.wav >out 2>err
      rc=$?
      [ "$rc" = 0 ] || fail "auto, GPU failing to start ($start): exit $rc; $(cat err)"
      grep -q "^featurize: the GPU could not be started (.*): the CPU computed the job$" err ||
        fail "auto, GPU failing to start ($start): stderr $(cat err)"
      [ "$(json_field out device 2>/dev/null)/$(json_field out fell_back_to_cpu 2>/dev/null)" = \
        cpu/True ] || fail "auto, GPU failing to start ($start): --json $(cat out)"
      [ "$(producer st_fb)" = 1 ] || fail "auto, GPU failing to start ($start): producer '$(producer st_fb)'"
    done
    grep -q "^cuda:1" "$tmp/fault.log" 2>/dev/null || fail "FC_FAULT=cuda:1 was never injected"
    FC_FAULT=cuda:1 "$FZ" --device cuda -o st_fb2 a.wav >out 2>err
    rc=$?
    [ "$rc" = 2 ] || fail "cuda, GPU failing to start: exit $rc (want 2); $(cat err)"
  else
    echo "no fault injection in this build: a GPU failing to start not tried"
  fi
fi

# auto on a small job (the 1.25 s file; the default threshold is 3000 s per worker): the CPU, with
# the reason, on any machine, without touching the CUDA runtime.
"$FZ" --device auto -j 2 -v --json -o st_small a.wav >out 2>err || fail "auto small: exit $?; $(cat err)"
want_line="featurize: device: cpu (small job: about 1 s of audio, below the 6000 s for which the GPU's start-up pays off)"
if [ "$built" = 1 ]; then
  grep -qxF "$want_line" err || fail "auto small -v: no line '$want_line' in stderr: $(cat err)"
else
  grep -qxF "featurize: device: cpu ($reason)" err || fail "auto small -v (no backend): $(cat err)"
fi
[ "$(json_field out device 2>/dev/null)" = cpu ] || fail "auto small --json: $(cat out)"
[ "$(producer st_small)" = 1 ] || fail "auto small: producer '$(producer st_small)', want 1"
# a threshold just above the job: both numbers with the decimals that tell them apart
if [ "$built" = 1 ]; then
  "$FZ" --device auto --gpu-min-seconds 1.3 -v -o st_near a.wav >out 2>err || fail "auto near: exit $?"
  want_line="featurize: device: cpu (small job: about 1.25 s of audio, below the 1.30 s for which the GPU's start-up pays off)"
  grep -qxF "$want_line" err || fail "auto --gpu-min-seconds 1.3 -v: no line '$want_line' in stderr: $(cat err)"
fi
# the threshold counts the job's bytes: a threshold below this file's 1.25 s takes the GPU if any
"$FZ" --device auto --gpu-min-seconds 1 -v -o st_thr a.wav >out 2>err || fail "auto --gpu-min-seconds 1: exit $?"
if [ "$count" = 0 ]; then
  grep -qxF "featurize: device: cpu ($reason)" err || fail "auto --gpu-min-seconds 1: $(cat err)"
else
  grep -qE "^featurize: device: cuda:0( |$)" err || fail "auto --gpu-min-seconds 1 on a GPU: $(cat err)"
fi

# A device name that is not one: usage error.
check_nodev "gpu" gpu "featurize: unknown device 'gpu' (want auto, cpu, cuda or cuda:N)
Try 'featurize --help' for more information."

[ "$fails" = 0 ] && echo "ok"
exit $((fails > 0))
