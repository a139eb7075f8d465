#!/usr/bin/env bash
# featurize --print-config PRESET [options]: the printed JSON is, byte for byte, the value that a
# store made with the same flags holds under meta cfg/<digest> (plus one newline), and its XXH3-128
# is that digest — for every preset and for overrides (preset null, a moved pad, another dtype).
# A preset stored in another dtype (kaldi as mq: "preset" null) still answers to the preset's
# name: the Python Loader's features="kaldi" and cache-verify --expect-preset kaldi. Usage errors.
set -u
FZ=${FC_BIN:?}/featurize
CV=$FC_BIN/cache-verify
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

espeak-ng -w a.wav "the config a store holds" ||
  { echo "FAIL: espeak-ng could not make the test speech (scripts/setup installs it)"; exit 1; }

# meta's configs of a store: "<hex> <json>" per line, the JSON's digest checked against its key
cfgs() {
  "$PY" - "$1" <<'PY'
import sys, lmdb, xxhash
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin(db=env.open_db(b"meta", create=False)) as t:
    for k, v in t.cursor():
        if not k.startswith(b"cfg/"):
            continue
        h = xxhash.xxh3_128_intdigest(bytes(v))
        raw = (h & (2**64 - 1)).to_bytes(8, "little") + (h >> 64).to_bytes(8, "little")
        if raw.hex() != k[4:].decode():
            print("digest mismatch", k.decode())
        sys.stdout.buffer.write(k[4:] + b" " + bytes(v) + b"\n")
PY
}

n=0
while read -r -a flags; do
  n=$((n + 1))
  preset=${flags[0]}
  rest=("${flags[@]:1}")
  "$FZ" --print-config "$preset" "${rest[@]}" >"p$n.json" 2>err
  rc=$?
  [ $rc = 0 ] && [ ! -s err ] || { fail "print-config ${flags[*]}: exit $rc: $(cat err)"; continue; }
  # --preset NAME with --print-config NAME is the same request
  "$FZ" --preset "$preset" --print-config "$preset" "${rest[@]}" >"q$n.json" 2>/dev/null
  cmp -s "p$n.json" "q$n.json" || fail "--preset $preset --print-config $preset prints other bytes"
  "$FZ" -q --device cpu --preset "$preset" "${rest[@]}" -o "st$n" --json a.wav >"run$n.json" 2>err ||
    { fail "featurize ${flags[*]}: $(cat err)"; continue; }
  cfgs "st$n" >"c$n" || { fail "reading st$n"; continue; }
  [ "$(wc -l <"c$n")" = 1 ] || { fail "${flags[*]}: want one config: $(cat "c$n")"; continue; }
  # byte for byte: the stored value followed by one newline is what --print-config printed
  cut -d' ' -f2- "c$n" | cmp -s - "p$n.json" ||
    fail "${flags[*]}: printed $(cat "p$n.json") but the store holds $(cut -d' ' -f2- "c$n")"
  digest=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["config_digest"])' "run$n.json")
  [ "$(cut -d' ' -f1 "c$n")" = "$digest" ] || fail "${flags[*]}: --json digest $digest, key $(cut -d' ' -f1 "c$n")"
done <<'CASES'
hifigan
tacotron2
librosa
whisper
kaldi
librosa --log db
whisper --n-mels 128
kaldi --dtype mq
hifigan --n-fft 2048 --hop 512
tacotron2 --codec mq
hifigan --sr 16000 --fmax 0 --dtype f16
kaldi --sr 8000
kaldi --snip-edges=false
CASES
[ $n = 13 ] || fail "ran $n cases"

# The presets as they are: "preset" set; an override or another dtype: null (a stored config's
# digest does not move).
grep -q '"preset":"kaldi"' p5.json || fail "kaldi: $(cat p5.json)"
grep -q '"preset":null' p8.json && grep -q '"dtype":"mq"' p8.json || fail "kaldi mq: $(cat p8.json)"
grep -q '"pad":768' p9.json || fail "hifigan n_fft 2048 hop 512: pad follows (n_fft - hop)/2: $(cat p9.json)"
# kaldi at 8 kHz: Kaldi's frames in milliseconds (25 ms in 256, 10 ms) and Nyquist
grep -q '"fmax":4000,.*"hop_length":80,.*"n_fft":256,.*"preset":null,.*"sample_rate":8000,.*"win_length":200' p12.json ||
  fail "kaldi --sr 8000: $(cat p12.json)"

# kaldi --snip-edges=false: its own config (the key appears only then), not the preset; its
# records have Kaldi's (N + 80) // 160 frames, which cache-verify, reading the config back, expects
grep -q '"preset":null,.*"sample_rate":16000,"snip_edges":false,"top_db"' p13.json ||
  fail "kaldi --snip-edges=false: $(cat p13.json)"
grep -q snip_edges p5.json && fail "kaldi's JSON names snip_edges: $(cat p5.json)"
"$CV" -q st13 >out 2>err || fail "cache-verify on kaldi --snip-edges=false: $(cat out err)"
"$CV" -q --expect-preset kaldi st13 >out 2>err && fail "cache-verify --expect-preset kaldi passed on kaldi --snip-edges=false"

# kaldi stored as mq answers to "kaldi": in the loader and in cache-verify
"$PY" - st8 "$(cut -d' ' -f1 c8)" >out 2>err <<'PY'
import json, sys, featcache
ld = featcache.Loader(sys.argv[1], features="kaldi", batch_size=1)
print(json.loads(ld.config())["dtype"], featcache.Loader(sys.argv[1], features=sys.argv[2]).config() == ld.config())
PY
[ "$(cat out)" = "mq True" ] || fail "Loader(features='kaldi') on a kaldi mq store: $(cat out err)"
"$CV" -q --expect-preset kaldi st8 >out 2>err || fail "cache-verify --expect-preset kaldi on kaldi mq: $(cat out err)"
"$CV" --expect-preset hifigan st8 >out 2>err && fail "cache-verify --expect-preset hifigan on kaldi mq passed"
grep -q 'stored mel configs: kaldi (mq) ' out || fail "the stored config is not named kaldi (mq): $(cat out)"
# the name it is listed under round-trips: --expect-preset 'kaldi (mq)' selects it, and a listed
# name of a config the store lacks is a config mismatch (exit 1), not an unknown preset (exit 2)
"$CV" -q --expect-preset 'kaldi (mq)' st8 >out 2>err || fail "cache-verify --expect-preset 'kaldi (mq)': exit $?: $(cat out err)"
"$CV" --expect-preset 'hifigan (mq)' st8 >out 2>err
rc=$?
[ $rc = 1 ] && grep -q "config mismatch: expected preset hifigan (mq) (config [0-9a-f]\{32\}) is not in the store; stored mel configs: kaldi (mq) " out ||
  fail "cache-verify --expect-preset 'hifigan (mq)' on kaldi mq: exit $rc: $(cat out err)"
"$CV" --expect-preset 'kaldi (f64)' st8 >out 2>err
rc=$?
[ $rc = 2 ] && grep -q "unknown preset 'kaldi (f64)'" err ||
  fail "cache-verify --expect-preset 'kaldi (f64)': exit $rc: $(cat out err)"
# kaldi f32 and kaldi mq side by side: the one named exactly wins
"$FZ" -q --device cpu --preset kaldi -o st8 a.wav 2>err || fail "kaldi f32 beside mq: $(cat err)"
"$PY" -c 'import json, sys, featcache; print(json.loads(featcache.Loader(sys.argv[1], features="kaldi").config())["dtype"])' \
  st8 >out 2>err
[ "$(cat out)" = f32 ] || fail "kaldi f32 beside kaldi mq: features='kaldi' gave $(cat out err)"

# docs/presets.md's table of every preset's parameters is what --print-config prints: every key,
# every value, every preset (the page cannot drift from the code)
"$PY" - "${FC_SRC:?}/docs/presets.md" "$FZ" >out 2>&1 <<'PY'
import json, subprocess, sys
rows = [l for l in open(sys.argv[1], encoding="utf-8") if l.startswith("| ")]
head = next(i for i, l in enumerate(rows) if l.startswith("| key | hifigan"))
presets = [c.strip() for c in rows[head].strip().strip("|").split("|")][1:]
table = {}
for l in rows[head + 2:]:
    cells = [c.strip().strip("`") for c in l.strip().strip("|").split("|")]
    if len(cells) != len(presets) + 1:
        break
    table[cells[0]] = cells[1:]
bad = 0
for i, p in enumerate(presets):
    got = json.loads(subprocess.run([sys.argv[2], "--print-config", p], check=True,
                                    capture_output=True, text=True).stdout)
    if set(got) != set(table):
        print(f"{p}: keys printed but not in the table: {sorted(set(got) - set(table))}; "
              f"in the table only: {sorted(set(table) - set(got))}")
        bad += 1
    for k, v in got.items():
        doc = table.get(k, [None] * len(presets))[i]
        try:
            docv = json.loads(doc)
        except (TypeError, ValueError):
            docv = doc
        if docv != v or isinstance(v, bool) != isinstance(docv, bool):
            print(f"{p}: {k} is {json.dumps(v)}, the page says {doc}")
            bad += 1
print(f"{len(presets)} presets, {len(table)} keys, {bad} differences")
sys.exit(1 if bad or len(presets) != 5 else 0)
PY
[ $? = 0 ] || fail "docs/presets.md against --print-config: $(cat out)"

# Usage errors: exit 2, nothing printed on stdout, nothing created.
check() { # NAME WANT_STDERR -- CMD...
  local name=$1 want=$2
  shift 3
  "$@" >out 2>err
  local rc=$?
  [ $rc = 2 ] && [ "$(cat err)" = "$want" ] && [ ! -s out ] && [ ! -e st ] ||
    fail "$name: exit $rc, stdout $(cat out), stderr: $(cat err) (want: $want)"
}
try="Try 'featurize --help' for more information."
check unknown "featurize: unknown preset 'foo' (want one of hifigan, tacotron2, librosa, whisper, kaldi)
$try" -- "$FZ" --print-config foo
check disagree "featurize: --print-config kaldi and --preset hifigan disagree
$try" -- "$FZ" --preset hifigan --print-config kaldi
check store "featurize: --print-config prints a config and exits: give no store and no inputs
$try" -- "$FZ" --print-config kaldi -o st
check inputs "featurize: --print-config prints a config and exits: give no store and no inputs
$try" -- "$FZ" --print-config kaldi a.wav
check invalid "featurize: invalid configuration: the mq codec needs a log output (--log ln, log10, db, whisper)" \
  -- "$FZ" --print-config librosa --dtype mq
check novalue "featurize: option '--print-config' needs a value
$try" -- "$FZ" --print-config
# a --shard or --device refused without --print-config is refused with it (it printed the config)
check shard "featurize: invalid shard '9/2': the shards of 2 are 0/2 to 1/2 (K counts from 0: seq 0 1)
$try" -- "$FZ" --print-config kaldi --shard 9/2
check device "featurize: unknown device 'gpu' (want auto, cpu, cuda or cuda:N)
$try" -- "$FZ" --print-config kaldi --device gpu

[ $fails = 0 ] && echo "ok: --print-config equals the stored config for $n flag sets" && exit 0
exit 1
