#!/usr/bin/env bash
# featurize: paths from stdin, idempotent reruns ("nothing to do", store bytes unchanged), two
# presets side by side in one store, dedup (two names, same bytes → one record, two audio entries),
# overrides (preset null), dtypes, --json and -q.
set -u
FZ=${FC_BIN:?}/featurize
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
dump() { # one line per entry; meta values and records by hash; records validated
  "$PY" - "$1" <<'PY'
import struct, sys, lmdb, xxhash
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
bad = 0
for name in (b"meta", b"audio", b"feat"):
    with env.begin(db=env.open_db(name, create=False)) as t:
        for k, v in t.cursor():
            v = bytes(v)
            if name == b"feat":
                magic, hsize, dtype, ndim, d0, d1, pb, ph = struct.unpack_from("<4sHBBIIQQ", v)
                ok = (magic == b"FCR1" and len(v) == 64 + pb and xxhash.xxh3_64_intdigest(v[64:]) == ph
                      and xxhash.xxh3_64_intdigest(v[:56]) == struct.unpack_from("<Q", v, 56)[0])
                bad += not ok
                print("feat", k.hex(), v[32:48].hex(), f"dtype={dtype}", f"{d0}x{d1}", xxhash.xxh3_64_hexdigest(v))
            elif name == b"audio":
                print("audio", k.decode(), v[:16].hex(), xxhash.xxh3_64_hexdigest(v))
            else:
                print("meta", k.decode(), v.decode() if k.startswith(b"cfg/") else xxhash.xxh3_64_hexdigest(v))
sys.exit(1 if bad else 0)
PY
}
json_field() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }

for i in 1 2 3 4 5; do
  espeak-ng -w "s$i.wav" "sentence number $i is spoken here" ||
    { echo "FAIL: espeak-ng could not make the test speech (scripts/setup installs it)"; exit 1; }
done

# Paths from stdin ("-"), then with no input argument at all.
ls s*.wav | "$FZ" -j 2 -o st - >out 2>err
rc=$?
[ $rc = 0 ] && [ "$(cat err)" = "featurize: done: 5 of 5 (5 new, 0 already stored, 0 failed)" ] && [ ! -s out ] || fail "stdin: exit $rc: $(cat err)"
dump st >d1 || fail "invalid store"
[ "$(grep -c '^feat ' d1)" = 5 ] || fail "want 5 records"

# Rerun: nothing to do, nothing written.
# (--device cpu: the JSON's device is checked, and auto may choose a GPU on a GPU machine)
ls s*.wav | "$FZ" -j 2 --device cpu -o st --json >out 2>err
rc=$?
[ $rc = 0 ] && [ "$(cat err)" = "featurize: nothing to do: all 5 already stored" ] || fail "rerun: exit $rc: $(cat err)"
[ "$(json_field out processed) $(json_field out skipped_existing) $(json_field out failed)" = "0 5 0" ] ||
  fail "rerun json: $(cat out)"
[ "$(json_field out device)" = cpu ] && [ "$(json_field out preset)" = hifigan ] || fail "json: $(cat out)"
dump st >d2
diff -u d1 d2 || fail "rerun changed the store"
"$FZ" -q -o st s1.wav >out 2>err || fail "-q rerun failed"
[ -s err ] && fail "-q printed: $(cat err)"

# A second preset beside the first: 5 more records, its own cfg, hifigan's records untouched.
"$FZ" -q -j 2 --preset tacotron2 -o st s*.wav 2>err || fail "tacotron2: $(cat err)"
dump st >d3
[ "$(grep -c '^feat ' d3)" = 10 ] || fail "two presets: want 10 records"
[ "$(grep -c '^meta cfg/' d3)" = 2 ] || fail "two presets: want 2 configs"
grep -q '"preset":"tacotron2"' d3 && grep -q '"preset":"hifigan"' d3 || fail "cfg JSON lacks preset names"
while read -r l; do grep -qxF "$l" d3 || fail "tacotron2 run changed: $l"; done < <(grep -E '^(feat|audio) ' d1)
# Every record's config digest (header bytes 32..47) names a stored cfg.
for d in $(grep '^feat ' d3 | cut -d' ' -f3 | sort -u); do
  grep -q "^meta cfg/$d " d3 || fail "record config $d not in meta"
done

# Dedup: same bytes under another name → no new record, one more audio entry, same digest.
cp s1.wav copy.wav
"$FZ" -v --device cpu -o st copy.wav >out 2>err
rc=$?
printf 'featurize: device: cpu\nfeaturize: copy.wav: same audio as a stored record; entry copy added\nfeaturize: done: 1 of 1 (1 new, 0 already stored, 0 failed)\n' |
  diff -u - <(grep -v '^featurize: stages ' err) || fail "dedup: stderr differs (exit $rc)"
grep -qE '^featurize: stages \(busy s\): .*: [a-zA-Z-]+$' err || fail "dedup: no stages line at -v"
dump st >d4
[ "$(grep -c '^feat ' d4)" = 10 ] || fail "dedup: a record was added"
[ "$(grep '^audio copy ' d4 | cut -d' ' -f3)" = "$(grep '^audio s1 ' d4 | cut -d' ' -f3)" ] ||
  fail "dedup: digests of copy and s1 differ"
# Both names in one run into a fresh store: one record, two entries.
"$FZ" -q -j 2 -o st5 s1.wav copy.wav 2>err || fail "dedup fresh: $(cat err)"
dump st5 >d5
[ "$(grep -c '^feat ' d5) $(grep -c '^audio ' d5)" = "1 2" ] || fail "dedup fresh: $(cat d5)"

# Overrides: the stored preset becomes null; a changed parameter never reuses a record.
"$FZ" -q --hop 200 --json -o st s1.wav >out 2>err || fail "override: $(cat err)"
[ "$(json_field out preset) $(json_field out processed)" = "None 1" ] || fail "override json: $(cat out)"
grep -q '"preset":null' <(dump st) || fail "override: no cfg with preset null"
# dtypes: f16 and bf16 records (2 bytes per value).
"$FZ" -q --dtype f16 -o st s2.wav 2>err || fail "f16: $(cat err)"
"$FZ" -q --dtype bf16 -o st s2.wav 2>err || fail "bf16: $(cat err)"
dump st >d6 || fail "invalid store after dtypes"
grep -q 'dtype=2 ' d6 && grep -q 'dtype=3 ' d6 || fail "dtypes: f16/bf16 records missing"

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
