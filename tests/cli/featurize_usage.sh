#!/usr/bin/env bash
# featurize: --help/--version and usage/configuration errors. Each case: the exit code, stdout,
# stderr exactly, and that nothing was created (a usage error does nothing).
set -u
FZ=${FC_BIN:?}/featurize
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# check NAME WANT_RC WANT_STDERR -- CMD...   (stdout must be empty)
check() {
  local name=$1 want_rc=$2 want_err=$3
  shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local err
  err=$(cat "$tmp/err")
  if [ "$rc" != "$want_rc" ] || [ "$err" != "$want_err" ] || [ -s "$tmp/out" ] || [ -e "$tmp/st" ]; then
    echo "FAIL $name: exit $rc (want $want_rc)"
    echo "  stderr: $err"
    echo "  want:   $want_err"
    [ -s "$tmp/out" ] && echo "  unexpected stdout: $(cat "$tmp/out")"
    [ -e "$tmp/st" ] && echo "  a store was created"
    fails=$((fails + 1))
  fi
  rm -rf "$tmp/st"
}
try="Try 'featurize --help' for more information."
S=$tmp/st
: >"$tmp/a.wav"

# --help: stdout, exit 0, generated from the option table.
"$FZ" --help >"$tmp/help" 2>"$tmp/err"; rc=$?
cat >"$tmp/help.want" <<'HELP'
Usage: featurize [options] -o STORE [AUDIO...]
       featurize [options] -o STORE --manifest FILE
       find DIR -name '*.wav' | featurize [options] -o STORE -
       featurize --print-config PRESET [feature options]

Compute log-mel spectrograms of audio files into a featcache store. Inputs
already stored with the same content and config are skipped (a file whose path,
size and mtime the store holds is not even read); bad inputs are reported and
skipped.

Output:
  -o, --output STORE           store directory (created if missing)
      --writers N              a new STORE split into N parts, one writer each
                               (default: 1 for a small job, else by the device
                               and -j)
      --batch N                records per write transaction (default 64; one
                               is also committed after 1 s)
      --force-new-store        create STORE even in a non-empty directory that
                               is not a store
      --check-pages            check every page of an existing STORE first
                               (cache-verify's first step; without it, its free
                               list alone): a damaged one is refused, nothing
                               written

Features:
      --preset NAME            hifigan (default), tacotron2, librosa, whisper,
                               kaldi
      --sr HZ                  sample rate; audio is resampled to it
      --n-fft N                FFT size
      --win N                  window length (<= n-fft)
      --hop N                  hop length
      --n-mels N               mel bands
      --fmin HZ                lowest mel frequency
      --fmax HZ                highest mel frequency (0: sr/2; negative: that
                               far below sr/2, as Kaldi's --high-freq)
      --mel-scale S            slaney, htk or kaldi
      --norm N                 slaney or none
      --center BOOL            centre frames (pad n-fft/2 each side)
      --pad N                  samples padded each side when not centred
      --pad-mode M             reflect or constant
      --snip-edges BOOL        Kaldi's --snip-edges: true (default), only whole
                               windows; false, (N + hop/2) / hop frames, edges
                               mirrored
      --power P                1 magnitude, 2 power
      --log L                  none, ln, log10, db or whisper
      --top-db DB              with --log db: clamp to the utterance's max - DB
                               (default 80; 0: none, top_db=None)
      --dtype T                f32 (default), f16, bf16 or mq (the codec)
      --codec C                none (default) or mq: log-mel coded ~4x smaller
                               than f32, max error 2^-8 (ln)
      --print-config PRESET    print the config JSON a store would hold for
                               PRESET and the options above, and exit

Inputs:
      --manifest FILE          LJSpeech csv, Kaldi wav.scp, JSON lines or a
                               path list
      --manifest-format F      auto, ljspeech, kaldi, jsonl or list
      --audio-dir DIR          base of relative manifest paths
      --max-seconds S          fail inputs longer than S seconds (default 0: no
                               limit)
      --shard K/N              only shard K of N (0-based, by a hash of the
                               id); 'slurm/N': K is the Slurm array task id;
                               'slurm': N is the task count too (--array=0-N-1)

Running:
  -j, --jobs N                 worker threads (default: the CPUs nproc counts)
      --device DEV             auto (default), cpu, cuda or cuda:N
      --gpu-min-seconds S      auto: use the GPU for jobs of at least S s of
                               audio (default 3000 x jobs; 0: any job)
      --rehash                 read and hash every input (default: one stored
                               with its path, size, mtime is not read)
      --strict                 stop at the first bad input
      --max-failed N|P%        exit 0 when at most N (or P % of the) inputs
                               failed (default 0)
  -q, --quiet                  no progress, no summary unless something failed
  -v, --verbose                one line per input, the device, where the time
                               went
      --progress               progress line even when stderr is no terminal
      --json                   print a JSON summary on stdout
  -h, --help                   show this help and exit
      --version                show the version and exit

Each input that fails is recorded in the store (cache-verify --manifest lists
it apart). Exit status: 0 all stored (or the failed ones within --max-failed),
1 some inputs failed, 2 usage or configuration error, or a store this user may
only read that lacks inputs (it is checked, nothing written), 130/143
interrupted (finished work is committed).
Manual: man featurize; the presets' parameters: man featcache-presets.
HELP
if [ $rc != 0 ] || [ -s "$tmp/err" ] || ! diff -u "$tmp/help.want" "$tmp/help"; then
  echo "FAIL --help (exit $rc)"; fails=$((fails + 1))
fi
"$FZ" -h | cmp -s - "$tmp/help" || { echo "FAIL -h differs from --help"; fails=$((fails + 1)); }

out=$("$FZ" --version 2>&1); rc=$?
[[ $rc == 0 && $out =~ ^featurize\ \(featcache\)\ [0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  { echo "FAIL --version: '$out' exit $rc"; fails=$((fails + 1)); }

check "unknown long option" 2 "featurize: unknown option '--bogus'
$try" -- "$FZ" --bogus -o "$S" "$tmp/a.wav"
check "unknown short option" 2 "featurize: unknown option '-Z'
$try" -- "$FZ" -Z -o "$S" "$tmp/a.wav"
# a reference's spelling of a parameter (librosa's, torchaudio's, Kaldi's) names featurize's option;
# a parameter that has none says whose it is
check "librosa's spelling" 2 "featurize: unknown option '--hop-length': featurize's is --hop
$try" -- "$FZ" --hop-length 160 -o "$S" "$tmp/a.wav"
check "underscores" 2 "featurize: unknown option '--n_mels=128': featurize's is --n-mels
$try" -- "$FZ" --n_mels=128 -o "$S" "$tmp/a.wav"
check "sample rate" 2 "featurize: unknown option '--sample-rate': featurize's is --sr
$try" -- "$FZ" --print-config whisper --sample-rate 16000
check "Kaldi's milliseconds" 2 "featurize: unknown option '--frame-length=12.5': featurize's is --win, in samples (Kaldi's --frame-length=25 is --win 400 at 16 kHz; the kaldi preset's frames follow --sr)
$try" -- "$FZ" --preset kaldi --frame-length=12.5 -o "$S" "$tmp/a.wav"
check "a parameter without an option" 2 "featurize: unknown option '--window': window is the preset's, with no option (featcache-presets(7) says which parameters have one)
$try" -- "$FZ" --preset librosa --window hamming -o "$S" "$tmp/a.wav"
check "librosa's top_db" 2 "featurize: unknown option '--top_db=60': featurize's is --top-db
$try" -- "$FZ" --preset librosa --log db --top_db=60 -o "$S" "$tmp/a.wav"
# --top-db clamps a log in dB: with another it would change the digest and no value
check "--top-db without --log db" 2 "featurize: invalid configuration: top_db 0: the clamp of a log in dB (log db, librosa's power_to_db), and this config's log is another: it would change no value, only the config's digest; give log db with it, or no top_db" -- "$FZ" --preset librosa --top-db 0 -o "$S" "$tmp/a.wav"
check "Kaldi's dither" 2 "featurize: unknown option '--dither=0': featurize never dithers (Kaldi's --dither=0: features made with random noise could not be cached)
$try" -- "$FZ" --preset kaldi --dither=0 -o "$S" "$tmp/a.wav"
check "missing value" 2 "featurize: option '--hop' needs a value
$try" -- "$FZ" -o "$S" "$tmp/a.wav" --hop
check "missing short value" 2 "featurize: option '-o' needs a value
$try" -- "$FZ" "$tmp/a.wav" -o
check "value for a flag" 2 "featurize: option '--quiet' takes no value
$try" -- "$FZ" --quiet=1 -o "$S" "$tmp/a.wav"
check "ambiguous abbreviation" 2 "featurize: option '--man' is ambiguous (--manifest, --manifest-format)
$try" -- "$FZ" --man "$tmp/m.csv" -o "$S"
check "no store" 2 "featurize: no store given (-o STORE)
$try" -- "$FZ" "$tmp/a.wav"
check "empty manifest path" 2 "featurize: --manifest '' names no file (an empty path: an unset variable?)
$try" -- "$FZ" -o "$S" --manifest ""
# no input at all with stdin a terminal: said at once, not a silent wait for paths typed in
# ('-' asks for stdin on purpose and still reads it); script(1) gives featurize a terminal
if command -v script >/dev/null; then
  mkfifo "$tmp/in"
  sleep 12 >"$tmp/in" & # holds the terminal's input open: nothing typed, no end of input
  holder=$!
  timeout 10 script -qec "'$FZ' -o '$S'" /dev/null <"$tmp/in" >"$tmp/out" 2>&1
  rc=$?
  kill $holder 2>/dev/null
  tr -d '\r' <"$tmp/out" >"$tmp/tty"
  [ $rc = 2 ] && grep -qx "featurize: no input: give AUDIO..., --manifest FILE, or '-' for paths on stdin (stdin is a terminal)" "$tmp/tty" &&
    [ ! -e "$S" ] || { echo "FAIL no input on a terminal: exit $rc: $(head -c 300 "$tmp/tty")"; fails=$((fails + 1)); }
  rm -rf "$S"
fi
# -o "$CACHE" with CACHE unset: said so, not ": cannot open the store: Invalid argument"
check "empty store path" 2 "featurize: -o '' names no store (an empty path: an unset variable?)
$try" -- "$FZ" -o "" "$tmp/a.wav"
# -o $CACHE --manifest m.csv with CACHE unset: -o takes "--manifest" for the store, m.csv for an
# audio path: a store named as an option was made in the working directory and m.csv failed as
# "not an audio file". A store name that begins with '-' is refused, nothing made.
check "store named as an option" 2 "featurize: -o --manifest: a store name that begins with '-' looks like an option (-o without its value? an unset variable?): name such a store ./--manifest
$try" -- env -C "$tmp" "$FZ" -o --manifest "$tmp/a.wav"
[ -e "$tmp/--manifest" ] && { echo "FAIL store named as an option: made"; fails=$((fails + 1)); }
check "store named -" 2 "featurize: -o -: a store name that begins with '-' looks like an option (-o without its value? an unset variable?): name such a store ./-
$try" -- env -C "$tmp" "$FZ" -o - "$tmp/a.wav"
check "trailing junk" 2 "featurize: invalid value '12x' for --hop (want an integer in 1..65536)
$try" -- "$FZ" --hop 12x -o "$S" "$tmp/a.wav"
check "overflow" 2 "featurize: invalid value '99999999999999999999' for --n-fft (want an integer in 2..65536)
$try" -- "$FZ" --n-fft 99999999999999999999 -o "$S" "$tmp/a.wav"
check "above u32" 2 "featurize: invalid value '4294967296' for --hop (want an integer in 1..65536)
$try" -- "$FZ" --hop 4294967296 -o "$S" "$tmp/a.wav"
check "negative" 2 "featurize: invalid value '-5' for --n-mels (want an integer in 1..4096)
$try" -- "$FZ" --n-mels -5 -o "$S" "$tmp/a.wav"
# decimal numbers only, as the integers are: a hex float (--max-seconds 0x10 was 16 s) or a leading
# space (' 3' passed where -j ' 2' does not) is refused
check "hex seconds" 2 "featurize: invalid value '0x10' for --max-seconds (want a number in 0..1e+09)
$try" -- "$FZ" --max-seconds 0x10 -o "$S" "$tmp/a.wav"
check "leading space" 2 "featurize: invalid value ' 100' for --fmin (want a number in 0..1e+07)
$try" -- "$FZ" --fmin " 100" -o "$S" "$tmp/a.wav"
check "n-mels 0" 2 "featurize: invalid value '0' for --n-mels (want an integer in 1..4096)
$try" -- "$FZ" --n-mels 0 -o "$S" "$tmp/a.wav"
check "n-mels too many" 2 "featurize: invalid value '5000' for --n-mels (want an integer in 1..4096)
$try" -- "$FZ" --n-mels 5000 -o "$S" "$tmp/a.wav"
check "sr too high" 2 "featurize: invalid value '1000000' for --sr (want an integer in 1..768000)
$try" -- "$FZ" --sr 1000000 -o "$S" "$tmp/a.wav"
check "max-failed junk" 2 "featurize: invalid value '3x' for --max-failed (want a count, or a percentage such as 1%)
$try" -- "$FZ" --max-failed 3x -o "$S" "$tmp/a.wav"
check "max-failed over 100%" 2 "featurize: invalid value '100.5%' for --max-failed (want a count, or a percentage such as 1%)
$try" -- "$FZ" --max-failed 100.5% -o "$S" "$tmp/a.wav"
for p in 1e1% 0x10% inf% 5.5.5%; do
  check "max-failed $p" 2 "featurize: invalid value '$p' for --max-failed (want a count, or a percentage such as 1%)
$try" -- "$FZ" --max-failed "$p" -o "$S" "$tmp/a.wav"
done
check "max-failed negative" 2 "featurize: invalid value '-1' for --max-failed (want a count, or a percentage such as 1%)
$try" -- "$FZ" --max-failed -1 -o "$S" "$tmp/a.wav"
check "strict and max-failed" 2 "featurize: --strict stops at the first failure: drop --max-failed 2%
$try" -- "$FZ" --strict --max-failed 2% -o "$S" "$tmp/a.wav"
check "jobs 0" 2 "featurize: invalid value '0' for --jobs (want an integer in 1..256)
$try" -- "$FZ" -j 0 -o "$S" "$tmp/a.wav"
check "fmin junk" 2 "featurize: invalid value '10Hz' for --fmin (want a number in 0..1e+07)
$try" -- "$FZ" --fmin 10Hz -o "$S" "$tmp/a.wav"
# one word for every value but 1 and 2 (3 said 'a number in 1..2', as if 1.5 were one)
check "power 3" 2 "featurize: invalid value '3' for --power (want 1 or 2)
$try" -- "$FZ" --power 3 -o "$S" "$tmp/a.wav"
check "power abc" 2 "featurize: invalid value 'abc' for --power (want 1 or 2)
$try" -- "$FZ" --power abc -o "$S" "$tmp/a.wav"
check "power 1.5" 2 "featurize: invalid value '1.5' for --power (want 1 or 2)
$try" -- "$FZ" --power 1.5 -o "$S" "$tmp/a.wav"
check "center" 2 "featurize: invalid value 'maybe' for --center (want true or false)
$try" -- "$FZ" --center maybe -o "$S" "$tmp/a.wav"
check "snip-edges" 2 "featurize: invalid value 'maybe' for --snip-edges (want true or false)
$try" -- "$FZ" --snip-edges=maybe -o "$S" "$tmp/a.wav"
check "log" 2 "featurize: invalid value 'log2' for --log (want one of none, ln, log10, db, whisper)
$try" -- "$FZ" --log log2 -o "$S" "$tmp/a.wav"
check "dtype" 2 "featurize: invalid value 'f64' for --dtype (want one of f32, f16, bf16, mq)
$try" -- "$FZ" --dtype f64 -o "$S" "$tmp/a.wav"
check "mel-scale" 2 "featurize: invalid value 'bark' for --mel-scale (want one of slaney, htk, kaldi)
$try" -- "$FZ" --mel-scale bark -o "$S" "$tmp/a.wav"
check "preset" 2 "featurize: unknown preset 'mfcc' (want one of hifigan, tacotron2, librosa, whisper, kaldi)
$try" -- "$FZ" --preset mfcc -o "$S" "$tmp/a.wav"
check "manifest and paths" 2 "featurize: give either --manifest or paths, not both
$try" -- "$FZ" --manifest "$tmp/a.wav" -o "$S" "$tmp/a.wav"
check "stdin mixed" 2 "featurize: '-' (stdin) cannot be mixed with paths
$try" -- "$FZ" -o "$S" "$tmp/a.wav" -
check "audio-dir alone" 2 "featurize: --audio-dir applies to --manifest only
$try" -- "$FZ" --audio-dir "$tmp" -o "$S" "$tmp/a.wav"
# an --audio-dir that is no directory fails every input: a configuration error, said before the
# store is touched (it was each input's failure, recorded in a new store)
echo "$tmp/a.wav" >"$tmp/list.txt"
check "audio-dir missing" 2 "featurize: $tmp/nodir: --audio-dir: No such file or directory" \
  -- "$FZ" --audio-dir "$tmp/nodir" --manifest "$tmp/list.txt" -o "$S"
check "audio-dir a file" 2 "featurize: $tmp/a.wav: --audio-dir: Not a directory" \
  -- "$FZ" --audio-dir "$tmp/a.wav" --manifest "$tmp/list.txt" -o "$S"
check "device" 2 "featurize: unknown device 'tpu' (want auto, cpu, cuda or cuda:N)
$try" -- "$FZ" --device tpu -o "$S" "$tmp/a.wav"
# mq is coded on the CPU: an explicit GPU would be started only to idle, in any build
check "cuda mq" 2 "featurize: --device cuda: the GPU does not make mq records (--dtype mq is coded per utterance on the CPU): give --device cpu, or auto
$try" -- "$FZ" --device cuda --dtype mq -o "$S" "$tmp/a.wav"
check "cuda:1 codec mq print-config" 2 "featurize: --device cuda:1: the GPU does not make mq records (--dtype mq is coded per utterance on the CPU): give --device cpu, or auto
$try" -- "$FZ" --device cuda:1 --codec mq --print-config kaldi

# Configuration errors: the reason from fc_mel_config_validate, exit 2, nothing created.
check "win > n-fft" 2 "featurize: invalid configuration: win_length 2048 not in 1..n_fft (1024): hifigan's n_fft; give --n-fft 2048 or more with --win 2048" \
  -- "$FZ" --win 2048 -o "$S" "$tmp/a.wav"
# the preset's own window above the --n-fft given (kaldi's 25 ms, 400 samples at 16 kHz)
check "n-fft below kaldi's window" 2 "featurize: invalid configuration: win_length 400 not in 1..n_fft (256): kaldi's window; give --win 256 or less with --n-fft 256" \
  -- "$FZ" --preset kaldi --n-fft 256 -o "$S" "$tmp/a.wav"
check "win and n-fft both given" 2 "featurize: invalid configuration: win_length 600 not in 1..n_fft (512)" \
  -- "$FZ" --preset kaldi --n-fft 512 --win 600 -o "$S" "$tmp/a.wav"
# a pad under a centring preset (whisper, tacotron2, librosa) or beside --center true
check "pad under a centring preset" 2 "featurize: invalid configuration: pad is for uncentred framing only: whisper centres its frames; give --center false with --pad" \
  -- "$FZ" --preset whisper --pad 10 -o "$S" "$tmp/a.wav"
check "pad and center true" 2 "featurize: invalid configuration: pad is for uncentred framing only: --center true pads n_fft/2 each side itself; give --center true or --pad, not both" \
  -- "$FZ" --center true --pad 3 -o "$S" "$tmp/a.wav"
check "fmax > nyquist" 2 "featurize: invalid configuration: fmax 12000 above Nyquist 11025" \
  -- "$FZ" --fmax 12000 -o "$S" "$tmp/a.wav"
check "fmin >= fmax" 2 "featurize: invalid configuration: fmin 9000 not in [0, fmax 8000): hifigan's fmax; give --fmin below 8000, or --fmax above 9000 (up to Nyquist 11025)" \
  -- "$FZ" --fmin 9000 -o "$S" "$tmp/a.wav"
check "fmax below fmin, from Nyquist" 2 "featurize: invalid configuration: fmin 20 not in [0, fmax -1000): --fmax=-9000 counts down from Nyquist 8000 (Kaldi's --high-freq): give one above -7980" \
  -- "$FZ" --preset kaldi --fmax=-9000 -o "$S" "$tmp/a.wav"
# a lower --sr under a preset whose fmax is its own (hifigan's and tacotron2's 8000 Hz, not
# Nyquist): the user gave no --fmax, so the message says whose it is and what to give
check "preset's fmax above a lower rate's Nyquist" 2 "featurize: invalid configuration: fmax 8000 above Nyquist 4000 (hifigan's fmax, at --sr 8000): give --fmax 4000 or less (--fmax 0: Nyquist)" \
  -- "$FZ" --sr 8000 -o "$S" "$tmp/a.wav"
check "preset's fmax above Nyquist, --print-config" 2 "featurize: invalid configuration: fmax 8000 above Nyquist 6000 (tacotron2's fmax, at --sr 12000): give --fmax 6000 or less (--fmax 0: Nyquist)" \
  -- "$FZ" --print-config tacotron2 --sr 12000
# another problem as well: the library's reason alone, no word on fmax
check "preset's fmax above Nyquist, and win > n-fft" 2 "featurize: invalid configuration: win_length 2048 not in 1..n_fft (1024)" \
  -- "$FZ" --sr 8000 --win 2048 -o "$S" "$tmp/a.wav"
# Kaldi's unsnipped frames are a framing of their own: not with centring, not with a pad
check "snip-edges false, center" 2 "featurize: invalid configuration: snip_edges false (Kaldi's framing) and center true are two framings: give one" \
  -- "$FZ" --preset kaldi --center true --snip-edges=false -o "$S" "$tmp/a.wav"
check "snip-edges false, hifigan's pad" 2 "featurize: invalid configuration: snip_edges false (Kaldi's framing) mirrors the edges itself: pad must be 0, not 384: hifigan's pad; give --pad 0 with --snip-edges false" \
  -- "$FZ" --snip-edges false -o "$S" "$tmp/a.wav"
# mel bands with no FFT bin ("empty filters", librosa's warning): the log floor in every frame,
# whatever the audio; refused, with the smallest n_fft that fills every band (librosa agrees)
check "empty mel bands" 2 "featurize: invalid configuration: 78 of 80 mel bands hold no FFT bin at n_fft 3 (empty filters): --n-fft 297 is the smallest that gives every band one (or fewer --n-mels)" \
  -- "$FZ" --n-fft 3 -o "$S" "$tmp/a.wav"
check "empty mel bands, more mels" 2 "featurize: invalid configuration: 19 of 200 mel bands hold no FFT bin at n_fft 400 (empty filters): --n-fft 534 is the smallest that gives every band one (or fewer --n-mels: 149 fill every band at n_fft 400)" \
  -- "$FZ" --preset whisper --n-mels 200 -o "$S" "$tmp/a.wav"
check "empty mel bands at any n_fft" 2 "featurize: invalid configuration: 4060 of 4096 mel bands hold no FFT bin at n_fft 2048 (empty filters): no --n-fft up to 65536 gives every band one: fewer --n-mels: 36 fill every band at n_fft 2048" \
  -- "$FZ" --preset librosa --n-mels 4096 --fmax 200 -o "$S" "$tmp/a.wav"
# Kaldi's --frame-length=12.5 (--win 200: a 256-point FFT) with 80 bands leaves two empty; Kaldi's
# MelBanks stops there too ("You may have set --num-mel-bins too large"), and its FFT is the
# window's power of two: fewer bands is a Kaldi recipe's way out, so the count that fills them is said
check "empty mel bands, kaldi --win 200" 2 "featurize: invalid configuration: 2 of 80 mel bands hold no FFT bin at n_fft 256 (empty filters): --n-fft 290 is the smallest that gives every band one (or fewer --n-mels: 70 fill every band at n_fft 256)" \
  -- "$FZ" --preset kaldi --win 200 -o "$S" "$tmp/a.wav"
check "empty mel bands, one fills" 2 "featurize: invalid configuration: 1 of 2 mel bands hold no FFT bin at n_fft 3 (empty filters): --n-fft 8 is the smallest that gives every band one (or fewer --n-mels: 1 fills every band at n_fft 3)" \
  -- "$FZ" --n-fft 3 --n-mels 2 --pad 0 -o "$S" "$tmp/a.wav"
# Kaldi's mel banks exist for an even FFT size and 3 bands or more (Kaldi's MelBanks and
# torchaudio's get_mel_banks refuse the others); an odd one dropped its last bin, in band
check "kaldi banks, odd n-fft" 2 "featurize: invalid configuration: n_fft 401 is odd: Kaldi's mel banks (mel_scale kaldi) need an even FFT size, as Kaldi's MelBanks does: give --n-fft 400 or 402" \
  -- "$FZ" --preset kaldi --n-fft 401 -o "$S" "$tmp/a.wav"
check "kaldi banks, odd n-fft at the window" 2 "featurize: invalid configuration: n_fft 401 is odd: Kaldi's mel banks (mel_scale kaldi) need an even FFT size, as Kaldi's MelBanks does: give --n-fft 402" \
  -- "$FZ" --print-config hifigan --mel-scale kaldi --n-fft 401
check "kaldi banks, 2 bands" 2 "featurize: invalid configuration: n_mels 2: Kaldi's mel banks (mel_scale kaldi) need 3 bands or more, as Kaldi's MelBanks does (\"Must have at least 3 mel bins\"): give --n-mels 3 or more" \
  -- "$FZ" --preset kaldi --n-mels 2 -o "$S" "$tmp/a.wav"
# the smallest n_fft that fills every band, for Kaldi's banks the smallest even one (287 is odd)
check "empty mel bands, kaldi: an even n-fft" 2 "featurize: invalid configuration: 1 of 79 mel bands hold no FFT bin at n_fft 256 (empty filters): --n-fft 288 is the smallest that gives every band one (or fewer --n-mels: 70 fill every band at n_fft 256)" \
  -- "$FZ" --preset kaldi --win 200 --n-mels 79 -o "$S" "$tmp/a.wav"
check "empty mel bands, --print-config" 2 "featurize: invalid configuration: 78 of 80 mel bands hold no FFT bin at n_fft 3 (empty filters): --n-fft 297 is the smallest that gives every band one (or fewer --n-mels)" \
  -- "$FZ" --print-config hifigan --n-fft 3
# hifigan's pad (n_fft - hop) / 2 below zero: HiFi-GAN would crop, featcache cannot: refused,
# saying what to change; when the bands are empty too and the n_fft that fills them is at least
# the hop, that message comes first (its fix is the fix for both)
check "n-fft below the hop" 2 "featurize: invalid configuration: n_fft 128 is below hop_length 256: the pad hifigan takes, (n_fft - hop_length) / 2, would be negative (HiFi-GAN would crop 64 samples each side): give n_fft 256 or more, hop_length 128 or less, or a pad" \
  -- "$FZ" --n-fft 128 --n-mels 10 -o "$S" "$tmp/a.wav"
check "hop above n-fft, --print-config" 2 "featurize: invalid configuration: n_fft 1024 is below hop_length 1200: the pad hifigan takes, (n_fft - hop_length) / 2, would be negative (HiFi-GAN would crop 88 samples each side): give n_fft 1200 or more, hop_length 1024 or less, or a pad" \
  -- "$FZ" --print-config hifigan --hop 1200
check "n-fft below the hop, bands empty" 2 "featurize: invalid configuration: 22 of 80 mel bands hold no FFT bin at n_fft 128 (empty filters): --n-fft 297 is the smallest that gives every band one (or fewer --n-mels)" \
  -- "$FZ" --n-fft 128 -o "$S" "$tmp/a.wav"
check "manifest missing" 2 "featurize: $tmp/nope.csv: cannot open: No such file or directory" \
  -- "$FZ" --manifest "$tmp/nope.csv" -o "$S"

# CUDA comes with its own backend; a build without one refuses it up front (exit 2).
if [ "${FC_HAVE_CUDA:-0}" != 1 ]; then
  check "cuda without backend" 2 "featurize: no CUDA device: this build has no CUDA backend" \
    -- "$FZ" --device cuda -o "$S" "$tmp/a.wav"
  check "cuda:1 without backend" 2 "featurize: no CUDA device: this build has no CUDA backend" \
    -- "$FZ" --device cuda:1 -o "$S" "$tmp/a.wav"
fi

# A store path that is a file: nothing done, exit 2.
: >"$tmp/file"
"$FZ" -o "$tmp/file" "$tmp/a.wav" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(cat "$tmp/err")" = "featurize: $tmp/file: cannot open the store: Not a directory" ] ||
  { echo "FAIL store is a file: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }

# A store whose folder does not exist (-o cache/hifigan before mkdir cache): the store is made if
# missing, not its folders, and the reason says which is missing, where "cannot open the store: No
# such file or directory" read as if the store itself had to exist.
"$FZ" -o "$tmp/nodir/sub/st" "$tmp/a.wav" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(cat "$tmp/err")" = "featurize: $tmp/nodir/sub/st: cannot create the store: its folder $tmp/nodir/sub does not exist (a new store is made in an existing folder: mkdir -p it)" ] &&
  [ ! -e "$tmp/nodir" ] || { echo "FAIL store's folder missing: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }

# A store that is a symbolic link to a folder not there (cache -> /scratch/$USER/cache on a node
# where it was not made): said so, naming the folder to make, where "cannot open the store: No
# such file or directory" named a cache that ls shows; a relative link's target from the link's
# folder. Nothing made.
mkdir "$tmp/links" && ln -s "$tmp/scratch/cache" "$tmp/links/abs" && ln -s ../scratch/rel "$tmp/links/rel"
for l in abs rel; do
  "$FZ" -o "$tmp/links/$l/" "$tmp/a.wav" >"$tmp/out" 2>"$tmp/err"; rc=$?
  want="$tmp/scratch/cache"; [ $l = rel ] && want="$tmp/links/../scratch/rel"
  [ $rc = 2 ] && [ "$(cat "$tmp/err")" = "featurize: $tmp/links/$l/: cannot create the store: a symbolic link to $want, which does not exist (mkdir -p it)" ] &&
    [ ! -e "$tmp/scratch" ] || { echo "FAIL store a dangling link ($l): exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }
done

# A non-empty directory that is not a store (a folder of WAVs given as -o by mistake): refused,
# nothing written into it; --force-new-store creates the store there.
mkdir "$tmp/wavs" && cp "$tmp/a.wav" "$tmp/wavs/a.wav"
"$FZ" -o "$tmp/wavs" "$tmp/a.wav" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(cat "$tmp/err")" = "featurize: $tmp/wavs: not a featcache store, and not empty (1 entry, e.g. a.wav): a new store goes into a new or empty directory; --force-new-store creates it here" ] &&
  [ "$(ls "$tmp/wavs")" = a.wav ] ||
  { echo "FAIL non-empty directory: exit $rc: $(cat "$tmp/err"); holds $(ls "$tmp/wavs")"; fails=$((fails + 1)); }
"$FZ" -q --force-new-store -o "$tmp/wavs" "$tmp/a.wav" >"$tmp/out" 2>"$tmp/err"; rc=$?
# a.wav is empty: it fails (exit 1), but the store is made and holds its failure record
[ $rc = 1 ] && [ -e "$tmp/wavs/data.mdb" ] ||
  { echo "FAIL --force-new-store: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }
# the store made there is a store now: no option needed to write to it again
"$FZ" -q --max-failed 1 -o "$tmp/wavs" "$tmp/a.wav" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 0 ] || { echo "FAIL rerun into the store: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }
rm -rf "$tmp/wavs"
# what a job killed while creating a split store leaves (the marker's temporary file) is no reason
# to refuse: the rerun creates the store there
mkdir "$tmp/killed" && : >"$tmp/killed/.featcache-split.12345"
"$FZ" -q --writers 2 -o "$tmp/killed" "$tmp/a.wav" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && [ -e "$tmp/killed/featcache-split" ] ||
  { echo "FAIL a killed creation's leftovers: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }
rm -rf "$tmp/killed"
mkdir "$tmp/empty"
"$FZ" -q -o "$tmp/empty" "$tmp/a.wav" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && [ -e "$tmp/empty/data.mdb" ] ||
  { echo "FAIL empty directory: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }
rm -rf "$tmp/empty"

# stdout that cannot be written (a full disk): the --json summary, --help, a config lost is exit 1
# with the reason, never a silent 0 (the job's own work is done and stays stored)
if [ -w /dev/full ]; then
  "$FZ" -q --json -o "$S" "$tmp/a.wav" --max-failed 1 >/dev/full 2>"$tmp/err"; rc=$?
  [ $rc = 1 ] && grep -qx "featurize: stdout: cannot write: No space left on device" "$tmp/err" ||
    { echo "FAIL --json into a full disk: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }
  rm -rf "$S"
  for a in --help --version "--print-config kaldi"; do
    # shellcheck disable=SC2086 # the words of $a
    "$FZ" $a >/dev/full 2>"$tmp/err"; rc=$?
    [ $rc = 1 ] && grep -qx "featurize: stdout: cannot write: No space left on device" "$tmp/err" ||
      { echo "FAIL $a into a full disk: exit $rc: $(cat "$tmp/err")"; fails=$((fails + 1)); }
  done
fi

if [ $fails -gt 0 ]; then echo "$fails case(s) failed"; exit 1; fi
echo "ok"
