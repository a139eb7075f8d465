#!/usr/bin/env bash
# cache-config: a store's configs listed (digest, kind, the name the loader answers to, records,
# created) as a table and as JSON, the same list in cache-verify --json; --drop by name or digest
# removes the config's records and meta keys and nothing else (cache-verify clean after, the other
# configs still load); a split store listed as one and dropped from every part; a merge keeps the
# earliest creation time without a conflict; --json stays valid JSON beside a damaged config; an
# interrupted drop (a failed commit) leaves the config listed and a rerun finishes; a damaged
# store is said, not an abort, and nothing is dropped from it; usage errors and a folder that is
# not a store.
set -u
CC=${FC_BIN:?}/cache-config
FZ=$FC_BIN/featurize
TK=$FC_BIN/tokenize
CV=$FC_BIN/cache-verify
CM=$FC_BIN/cache-merge
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
try="Try 'cache-config --help' for more information."

: >metadata.csv
mkdir wavs
for i in 1 2 3 4 5 6; do
  espeak-ng -w "wavs/u$i.wav" "utterance number $i, said once" ||
    { echo "FAIL: espeak-ng could not make the test speech (scripts/setup installs it)"; exit 1; }
  echo "u$i|Utterance number $i, said once.|Utterance number $i, said once." >>metadata.csv
done
echo "u7|Utterance number 1, said once.|Utterance number 1, said once." >>metadata.csv
cp wavs/u1.wav wavs/u7.wav
"$FZ" -q --device cpu --manifest metadata.csv -o st || fail "featurize hifigan"
"$FZ" -q --device cpu --preset kaldi --dtype mq --manifest metadata.csv -o st || fail "featurize kaldi mq"
"$TK" -q --manifest metadata.csv --build-vocab -o st || fail "tokenize"
hifigan=$("$FZ" --print-config hifigan | "$PY" -c 'import sys, xxhash; h = xxhash.xxh3_128_intdigest(sys.stdin.buffer.read().rstrip(b"\n")); print(((h & (2**64-1)).to_bytes(8, "little") + (h >> 64).to_bytes(8, "little")).hex())')
kaldimq=$("$FZ" --print-config kaldi --dtype mq | "$PY" -c 'import sys, xxhash; h = xxhash.xxh3_128_intdigest(sys.stdin.buffer.read().rstrip(b"\n")); print(((h & (2**64-1)).to_bytes(8, "little") + (h >> 64).to_bytes(8, "little")).hex())')

# the table: three configs, records (u7 has u1's audio and text: one record each, 6 feat records
# per mel config, 6 token records), created in RFC 3339 UTC
"$CC" st >out 2>err || fail "list: exit $?: $(cat err)"
[ ! -s err ] || fail "list wrote to stderr: $(cat err)"
[ "$(head -n 1 out)" = "st: 3 configs" ] || fail "head: $(head -n 1 out)"
grep -qE "^$hifigan  mel     hifigan +6 +[0-9.]+  20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-9:]{8}Z$" out ||
  fail "hifigan row: $(cat out)"
grep -qE "^$kaldimq  mel     kaldi \(mq\) +6 +[0-9.]+  20[0-9-]{8}T[0-9:]{8}Z$" out || fail "kaldi mq row: $(cat out)"
grep -qE "^[0-9a-f]{32}  tokens  chars +6 +0.0  20[0-9-]{8}T[0-9:]{8}Z$" out || fail "chars row: $(cat out)"

# JSON, and cache-verify --json lists the same configs
"$CC" --json st >list.json || fail "--json"
"$CV" -q --json st >verify.json 2>/dev/null || fail "cache-verify --json: $(cat verify.json)"
"$PY" - list.json verify.json <<'PY' || fail "json: $(cat list.json verify.json)"
import json, sys
a = json.load(open(sys.argv[1]))
v = json.load(open(sys.argv[2]))
assert a["store"] == "st" and a["parts"] == 1 and len(a["configs"]) == 3, a
for c in a["configs"]:
    assert c["kind"] in ("mel", "tokens") and c["records"] == 6 and c["record_bytes"] > 0, c
    assert c["config"]["kind"] == c["kind"], c  # the config itself, embedded
    assert c["created"].endswith("Z") and len(c["created"]) == 20, c
names = sorted(c["name"] for c in a["configs"])
assert names == ["chars", "hifigan", "kaldi (mq)"], names
mine = sorted((c["digest"], c["kind"], c["name"], c["records"], c["created"]) for c in a["configs"])
theirs = sorted((c["digest"], c["kind"], c["name"], c["records"], c["created"]) for c in v["configs"])
assert mine == theirs, (mine, theirs)
PY
"$CC" --json --no-count st | "$PY" -c 'import json, sys; d = json.load(sys.stdin); assert all(c["records"] is None for c in d["configs"]), d' ||
  fail "--no-count"

# a store written before creation times were kept lists "-" / null
"$PY" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('old', 3, frames=10)" ||
  fail "fixture"
"$CC" old | grep -qE '^[0-9a-f]{32}  mel     hifigan +3 +[0-9.]+  -$' || fail "old store: $("$CC" old)"

# the names a config answers to: its listed name ('kaldi (mq)') and, as for the loader's
# features= and cache-verify --expect-preset, the preset's ('kaldi') where the store holds no
# config that is that preset itself (cache-config(1): `cache-config --drop kaldi cache/`)
cp -r st bykaldi
"$CC" --drop kaldi bykaldi >out 2>err || fail "drop kaldi (the preset of kaldi (mq)): exit $?: $(cat err)"
grep -q "^cache-config: dropped config $kaldimq from bykaldi: 6 records" err || fail "drop kaldi: $(cat err)"
"$PY" - st <<'PY' || fail "the loader by the listed name 'kaldi (mq)'"
import sys, featcache
assert sum(len(b) for b in featcache.Loader(sys.argv[1], features="kaldi (mq)", batch_size=4)) == 7
assert sum(len(b) for b in featcache.Loader(sys.argv[1], features="kaldi", batch_size=4)) == 7
PY

# drop by name: the records and meta keys go, entries and the other configs stay
cp -r st before
"$CC" --drop 'kaldi (mq)' st >out 2>err || fail "drop kaldi (mq): exit $?: $(cat err)"
grep -qxE "cache-config: dropped config $kaldimq from st: 6 records, [0-9.]+ MB \(free pages in data.mdb, reused by later writes\)" err ||
  fail "drop message: $(cat err)"
"$FZ" -q --device cpu --preset kaldi -o st1 wavs/u1.wav || fail "featurize one file"
"$CC" --drop kaldi st1 >out 2>err || fail "drop the one record: exit $?: $(cat err)"
grep -qxE "cache-config: dropped config [0-9a-f]{32} from st1: 1 record, [0-9.]+ MB \(free pages in data.mdb, reused by later writes\)" err ||
  fail "one record's drop message: $(cat err)"
"$CC" st | grep -q "^st: 2 configs$" || fail "after the drop: $("$CC" st)"
"$CV" -q st >out 2>&1 || fail "cache-verify after the drop: $(cat out)"
"$PY" - st <<'PY' || fail "after the drop, the store holds"
import sys, json, lmdb, featcache
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    meta = [bytes(k).decode().split("/")[0] for k, _ in t.cursor(db=env.open_db(b"meta", txn=t, create=False))]
    n = {name: t.stat(env.open_db(name, txn=t, create=False))["entries"] for name in (b"audio", b"text", b"feat", b"tok")}
assert sorted(meta) == ["cfg", "cfg", "created", "created", "format", "vocab"], meta
assert n == {b"audio": 7, b"text": 7, b"feat": 6, b"tok": 6}, n
assert sum(len(b) for b in featcache.Loader(sys.argv[1], features="hifigan", tokens="chars", batch_size=4)) == 7
try:
    featcache.Loader(sys.argv[1], features="kaldi")
    sys.exit("features='kaldi' still loads")
except featcache.FeatcacheError as e:
    assert "no mel config named 'kaldi'" in str(e), e
PY
# drop by digest: the token config and its vocabulary
chars=$("$CC" --json st | "$PY" -c 'import json, sys; print([c["digest"] for c in json.load(sys.stdin)["configs"] if c["kind"] == "tokens"][0])')
"$CC" -q --drop "$chars" st 2>err || fail "drop by digest: $(cat err)"
[ ! -s err ] || fail "-q printed: $(cat err)"
"$PY" -c 'import sys, lmdb; env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8); t = env.begin(); print(sorted(bytes(k).decode().split("/")[0] for k, _ in t.cursor(db=env.open_db(b"meta", txn=t, create=False))), t.stat(env.open_db(b"tok", txn=t, create=False))["entries"])' st >out
[ "$(cat out)" = "['cfg', 'created', 'format'] 0" ] || fail "after dropping chars: $(cat out)"
"$CV" -q st >out 2>&1 || fail "cache-verify after dropping chars: $(cat out)"

# errors: no such config (exit 2, what it has), a name two configs share, not a store
check() { # NAME WANT_RC WANT_STDERR -- CMD...
  local name=$1 want_rc=$2 want=$3
  shift 4
  "$@" >out 2>err
  local rc=$?
  [ $rc = "$want_rc" ] && [ "$(cat err)" = "$want" ] && [ ! -s out ] ||
    fail "$name: exit $rc, stdout $(cat out), stderr $(cat err) (want $want_rc: $want)"
}
# a config the store does not hold: nothing to drop, exit 0 (a rerun of a finished drop, in a
# Makefile, must not fail: it exited 2), saying so with what the store has (a misspelt name shows)
check unknown 0 "cache-config: st: nothing to drop: no config named 'whisper' (it has: hifigan $hifigan)" -- "$CC" --drop whisper st
check unknown-digest 0 "cache-config: st: nothing to drop: no config 0123456789abcdef0123456789abcdef in the store" -- \
  "$CC" --drop 0123456789abcdef0123456789abcdef st
check unknown-quiet 0 "" -- "$CC" -q --drop whisper st
cp -r before rerun
"$CC" -q --drop hifigan rerun 2>err || fail "rerun: the first drop: $(cat err)"
check rerun-name 0 "cache-config: rerun: nothing to drop: no config named 'hifigan' (it has: $("$CC" --json rerun | "$PY" -c 'import json, sys; print(", ".join("%s %s" % (c["name"], c["digest"]) for c in json.load(sys.stdin)["configs"]))'))" -- \
  "$CC" --drop hifigan rerun
check rerun-digest 0 "cache-config: rerun: nothing to drop: no config $hifigan in the store" -- \
  "$CC" --drop "$hifigan" rerun
printf 'x|Another text entirely, with new letters: qz.\n' >more.csv
"$TK" -q --manifest more.csv --build-vocab -o before 2>/dev/null
twochars=$("$CC" --json before | "$PY" -c 'import json, sys; print(", ".join("%s %s" % (c["name"], c["digest"]) for c in json.load(sys.stdin)["configs"] if c["name"] == "chars"))')
check ambiguous 2 "cache-config: before: 2 configs are named 'chars': give the digest of one ($twochars)" -- \
  "$CC" --drop chars before
# the README's token flow: the vocabulary built once into a file and passed after; a line with a
# new symbol ("é") is then <unk> (said), not a new config, and tokens="chars" still names one
"$FZ" -q --device cpu --manifest metadata.csv -o flow || fail "flow: featurize"
"$TK" -q --manifest metadata.csv --build-vocab --export-vocab vocab.txt -o flow 2>err || fail "flow: $(cat err)"
cp metadata.csv more2.csv
echo "u8|Un café, s'il vous plaît.|Un café, s'il vous plaît." >>more2.csv
"$TK" --manifest more2.csv --vocab vocab.txt -o flow >out 2>err || fail "flow with é: $(cat err)"
grep -q "unknown symbols\{0,1\} mapped to unk" err || fail "flow: the new symbol not said: $(cat err)"
[ "$("$CC" --json flow | "$PY" -c 'import json, sys; print([(c["name"], c["records"]) for c in json.load(sys.stdin)["configs"] if c["kind"] == "tokens"])')" = "[('chars', 7)]" ] ||
  fail "flow: $("$CC" flow)"
"$PY" -c 'import sys, featcache; print(featcache.Loader(sys.argv[1], tokens="chars").config("tokens") is not None)' flow >out 2>err &&
  [ "$(cat out)" = True ] || fail "flow: tokens=chars: $(cat out err)"

mkdir notastore
check not-a-store 2 "cache-config: notastore: not a featcache store (no data.mdb)" -- "$CC" notastore
check a-file 2 "cache-config: metadata.csv: not a featcache store (not a directory)" -- "$CC" metadata.csv
check no-store 2 "cache-config: no store given
$try" -- "$CC"
check drop-two 2 "cache-config: --drop takes one store, not 2
$try" -- "$CC" --drop chars st before
# the options given are named, not one that was not (it said "drop --json and --no-count" for each)
check drop-json 2 "cache-config: --drop lists nothing: drop --json
$try" -- "$CC" --drop chars --json st
check drop-no-count 2 "cache-config: --drop lists nothing: drop --no-count
$try" -- "$CC" --no-count --drop chars st
check drop-json-no-count 2 "cache-config: --drop lists nothing: drop --json and --no-count
$try" -- "$CC" --drop chars --json --no-count st
# an empty CONFIG (--drop "$OLD" with OLD unset, in a Makefile) names no config: a usage error,
# not "nothing to drop" and exit 0, which read as a drop already done
check drop-empty 2 "cache-config: --drop '' names no config (an empty value: an unset variable?)
$try" -- "$CC" --drop '' st

# a store this user cannot write (a teammate's dataset: no lock.mdb can be opened for writing) is
# listed as cache-verify and cache-merge read it, lock-free; a drop there says why it cannot
# (it was "cannot open the store: Permission denied", exit 2, for the listing too). Root reads
# and writes anything: as_owner.bash drops the capabilities that let it.
cp -r flow theirs && chmod a-w theirs theirs/*
. "$FC_SRC/tests/cli/as_owner.bash"
run=("${as_owner[@]}")
"${run[@]}" "$CC" theirs >out 2>err || fail "a store not ours to write: exit $?: $(cat err)"
# read lock-free, and said (it was silent): a writer committing meanwhile may reuse the pages read
[ "$(head -n 1 out)" = "theirs: 2 configs" ] &&
  [ "$(cat err)" = "cache-config: theirs: not writable by this user (lock.mdb): LMDB cannot take its reader lock: read without it (MDB_NOLOCK), as cache-verify reads such a store; a writer committing meanwhile could make what is read wrong" ] ||
  fail "a store not ours to write: $(cat out err)"
# another EACCES (data.mdb itself unreadable, lock.mdb ours) is no lock-free case: said as it is
cp -r flow unread && chmod 000 unread/data.mdb
check unreadable 2 "cache-config: unread: cannot open the store: Permission denied" -- "${run[@]}" "$CC" unread
chmod u+rw unread/data.mdb
# (a drop there said only "cannot open the store: Permission denied")
check theirs-drop 2 "cache-config: theirs: cannot drop from it: the store cannot be written (Permission denied); nothing dropped (cache-config without --drop lists its configs: it only reads)" -- \
  "${run[@]}" "$CC" --drop chars theirs
"$CC" theirs | grep -q "^theirs: 2 configs$" || fail "theirs after the refused drop: $("$CC" theirs)"
chmod -R u+w theirs
# its lock.mdb alone read-only (the folder and data.mdb writable): the reason names the file
chmod a-w theirs/lock.mdb
check lock-drop 2 "cache-config: theirs: cannot drop from it: the store cannot be written (Permission denied: lock.mdb is read-only for this user); nothing dropped (cache-config without --drop lists its configs: it only reads)" -- \
  "${run[@]}" "$CC" --drop chars theirs
chmod u+w theirs/lock.mdb

# a record whose header names no config the store holds (a damaged digest) was left out of the
# counts without a word: said after the table, the table unchanged. A record no index names (no
# id's: here one put under a key of its own) is counted by its header
damage_digest() { # DIR KEY: the first feat record's config digest changed (header bytes 32..47),
  # the record put under KEY (hex; "" for its own key)
  "$PY" - "$1" "$2" <<'PY'
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=200)
with env.begin(write=True) as t:
    db = env.open_db(b"feat", txn=t)
    k, v = next(iter(t.cursor(db)))
    v = bytearray(v)
    v[40] ^= 1
    t.put(bytes.fromhex(sys.argv[2]) if sys.argv[2] else k, bytes(v), db=db)
PY
}
cp -r flow nocfg
damage_digest nocfg ffffffffffffffffffffffffffffffff || fail "a record naming no config"
"$CC" nocfg >out 2>err || fail "nocfg: exit $?"
[ "$(cat err)" = "cache-config: nocfg: 1 record names no config the store holds (a damaged header?) and is not counted above: cache-verify names it" ] ||
  fail "nocfg: stderr: $(cat err)"
"$CC" flow | sed 1d >want
sed 1d out | diff want - >/dev/null || fail "nocfg: the table changed: $(cat out)"
# a record an index names is counted under the index's config, its header not read (the first
# page of each record, a read per record on a store out of the page cache): its digest damaged
# the same way, it is counted as before and nothing is said (cache-verify checks headers)
cp -r flow indexed
damage_digest indexed "" || fail "damaging an indexed record's config digest"
"$CC" indexed >out 2>err && [ ! -s err ] || fail "indexed: exit $?, stderr $(cat err)"
sed 1d out | diff want - >/dev/null || fail "indexed: the table changed: $(cat out)"
"$CC" flow >/dev/null 2>err && [ ! -s err ] || fail "flow: a warning on a sound store: $(cat err)"

# a split store: listed as one (records summed over its parts), dropped from every part
"$FZ" -q --device cpu --writers 2 --manifest metadata.csv -o split || fail "featurize --writers 2"
"$FZ" -q --device cpu --preset tacotron2 --manifest metadata.csv -o split || fail "featurize tacotron2 split"
"$CC" --json split | "$PY" -c 'import json, sys; d = json.load(sys.stdin); assert d["parts"] == 2 and sorted((c["name"], c["records"]) for c in d["configs"]) == [("hifigan", 6), ("tacotron2", 6)], d' ||
  fail "split list: $("$CC" split)"
# one part alone is refused (exit 2) — also when the name is another part's only, or no part's:
# "nothing to drop" there would pass while the split store still holds it
"$FZ" -q --device cpu --preset kaldi -o split wavs/u1.wav || fail "featurize kaldi, one file"
for p in 0 1; do
  for want in kaldi whisper "$hifigan"; do
    check "part $p alone ($want)" 2 "cache-config: split/part-$p: is part $p of a split store of 2 parts: give the split store's directory (the config is dropped from every part)" -- \
      "$CC" --drop "$want" split/part-$p
  done
done
"$CC" -q --drop kaldi split || fail "split drop kaldi"
"$CC" -q --drop tacotron2 split || fail "split drop"
"$CC" split | grep -q "^split: 1 config$" || fail "split after the drop: $("$CC" split)"
"$CV" -q split >out 2>&1 || fail "cache-verify split: $(cat out)"
# a part missing: nothing dropped, by name or by digest (the name's lookup kept what it had read
# of the parts before the missing one: a leak, exit 1 under LeakSanitizer)
cp -r split nopart && rm -rf nopart/part-1
for want in hifigan "$hifigan"; do
  check "split, a part missing ($want)" 2 "cache-config: nopart/part-1: missing (its writer stopped before making it?): featurize (or tokenize) -o nopart again makes it, or put back the part that was moved away; nothing dropped" -- \
    "$CC" --drop "$want" nopart
done
"$CC" nopart/part-0 | grep -qE "^$hifigan  mel     hifigan " || fail "a part missing: dropped from part 0: $("$CC" nopart/part-0)"

# a merge keeps the earliest creation time, and two times are no conflict
"$FZ" -q --device cpu -o a wavs/u1.wav wavs/u2.wav || fail "store a"
sleep 1.1
"$FZ" -q --device cpu -o b wavs/u3.wav wavs/u4.wav || fail "store b"
ta=$("$CC" a | awk '/hifigan/ {print $NF}')
tb=$("$CC" b | awk '/hifigan/ {print $NF}')
[ "$ta" \< "$tb" ] || fail "created: a $ta, b $tb"
"$CM" -q -o m b a >out 2>&1 || fail "merge: $(cat out)"
[ "$("$CC" m | awk '/hifigan/ {print $NF}')" = "$ta" ] || fail "merged created: $("$CC" m), want $ta"
"$CM" -q -o a b >out 2>&1 || fail "merge into a: $(cat out)"
[ "$("$CC" a | awk '/hifigan/ {print $NF}')" = "$ta" ] || fail "merged into a: $("$CC" a), want $ta"

# an interrupted drop: the second commit fails; the config stays listed, a rerun finishes
if grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt"; then
  "$PY" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('big', 9000, frames=2)" ||
    fail "fixture big"
  FC_FAULT=commit:2 "$CC" --drop hifigan big >out 2>err
  rc=$?
  [ $rc = 1 ] && grep -q "^cache-config: big: cannot drop config [0-9a-f]*: .* (4096 records removed: run again to finish)$" err ||
    fail "interrupted drop: exit $rc: $(cat err)"
  "$CC" big | grep -qE '^[0-9a-f]{32}  mel     hifigan +4904 ' || fail "after the failed drop: $("$CC" big)"
  "$CC" -q --drop hifigan big || fail "the rerun"
  "$CC" big | grep -q '^big: 0 configs$' || fail "after the rerun: $("$CC" big)"
else
  echo "cache_config: this build has no fault countdowns: the interrupted drop is not checked"
fi

# a config whose stored JSON is damaged: --json stays one valid JSON object a line, the bytes
# given as config_text (splicing them in made the line invalid)
rm -rf dj && cp -r before dj && "$PY" - <<'PY' || fail "damaging a config"
import lmdb
e = lmdb.open("dj", max_dbs=20)
with e.begin(write=True) as t:
    meta = e.open_db(b"meta", txn=t, create=False)
    k = next(k for k, v in t.cursor(db=meta) if k.startswith(b"cfg/") and b'"tokens"' in v)
    t.put(k, b'{"kind":"tokens","tokenizer":"chars",broken', db=meta)
PY
"$CC" --json dj >dj.json 2>err || fail "--json on a damaged config: exit $?: $(cat err)"
"$PY" - dj.json <<'PY' || fail "--json on a damaged config: $(cat dj.json)"
import json, sys
d = json.load(open(sys.argv[1]))
bad = [c for c in d["configs"] if c["kind"] == "other"]
assert len(bad) == 1 and bad[0]["config"] is None, d
assert bad[0]["config_text"] == '{"kind":"tokens","tokenizer":"chars",broken', bad[0]
assert all(isinstance(c["config"], dict) for c in d["configs"] if c["kind"] != "other"), d
PY

# --help: stdout, exit 0, every option, the man page; --version
"$CC" --help >out 2>err || fail "--help: exit $?"
[ ! -s err ] && head -n 2 out | grep -qx 'Usage: cache-config \[--json\] \[--no-count\] STORE...' &&
  grep -q -- '--drop CONFIG' out && grep -q -- '--no-count' out && grep -q -- '--json' out &&
  grep -q -- '--quiet' out && tail -n 1 out | grep -qx 'Manual: man cache-config.' || fail "--help: $(cat out err)"
"$CC" --version | grep -qE '^cache-config \(featcache\) [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version"
check unknown-option 2 "cache-config: unknown option '--nope'
$try" -- "$CC" --nope st
check empty-store 2 "cache-config: '' names no STORE (an empty path: an unset variable?)
$try" -- "$CC" st ""
check flag-value 2 "cache-config: option '--quiet' takes no value
$try" -- "$CC" --qu=1 st
check needs-value 2 "cache-config: option '--drop' needs a value
$try" -- "$CC" st --drop
check abbrev-value 2 "cache-config: option '--no-count' takes no value
$try" -- "$CC" --no=1 st
# the listing lost (a full disk, stdout closed) is exit 1 with the reason, never a silent 0
if [ -w /dev/full ]; then
  for a in --json "" --help --version; do
    # shellcheck disable=SC2086 # "" is the table
    "$CC" $a st >/dev/full 2>err
    rc=$?
    [ $rc = 1 ] && [ "$(cat err)" = "cache-config: stdout: cannot write: No space left on device" ] ||
      fail "'$a' into a full disk: exit $rc: $(cat err)"
  done
fi
"$CC" --json st >&- 2>err
rc=$?
[ $rc = 1 ] && [ "$(cat err)" = "cache-config: stdout: cannot write: Bad file descriptor" ] ||
  fail "--json, stdout closed: exit $rc: $(cat err)"

# a name no config has, in a store of many configs: the list of what it has is cut at whole
# entries and says how many it left off (it was cut mid-digest at 1 KB)
mkdir many && cp wavs/u1.wav many/u1.wav
for h in $(seq 200 229); do
  "$FZ" -q --device cpu --hop "$h" -o mst many/u1.wav || fail "featurize --hop $h"
done
"$CC" --drop whisper mst 2>err
rc=$?
last=$(sed -n 's/.*, \([^,]*\))$/\1/p' err)
[ $rc = 0 ] && grep -q "^cache-config: mst: nothing to drop: no config named 'whisper' (it has: (no name) [0-9a-f]\{32\}, " err &&
  echo "$last" | grep -q '^and [0-9]* more (cache-config mst lists them)$' ||
  fail "--drop of an unknown name among 30 configs: exit $rc: $(cat err)"

# a damaged store (a copy with a hole of zeros: the tok leaf page of the last token record zeroed,
# which LMDB asserts on when a walk steps onto it, and its delete faults on): the listing that
# counts records, and a drop, say so, exit 1 — they aborted (exit 134: "Assertion 'IS_LEAF(mp)'
# failed") and the drop of the token config faulted (139). The drop walks what it changes first:
# nothing removed. The listing from meta alone still works.
for i in $(seq 100); do echo "d$i|Line number $i of the damaged store.|Line number $i of the damaged store."; done >dmg.csv
"$TK" -q --manifest dmg.csv --build-vocab -o dmg || fail "tokenize dmg"
"$PY" - <<'PY' || fail "zeroing the page"
import lmdb, struct
e = lmdb.open("dmg", readonly=True, lock=False, max_dbs=16)
with e.begin() as t:
    last = list(t.cursor(db=e.open_db(b"tok", txn=t, create=False)).iternext(values=False))[-1]
e.close()
data = bytearray(open("dmg/data.mdb", "rb").read())
zeroed = 0
at = data.find(last)
while at >= 0:  # a leaf node of 16-byte keys holds it (ksize just before): the page, and its
    if struct.unpack_from("<H", data, at - 2)[0] == 16:  # stale copies, zeroed
        page = at // 4096 * 4096
        data[page:page + 4096] = bytes(4096)
        zeroed += 1
    at = data.find(last, at + 1)
assert zeroed, "no leaf page holds the last tok key"
open("dmg/data.mdb", "wb").write(data)
PY
cp dmg/data.mdb dmg.before
"$CC" dmg >out 2>err
rc=$?
[ $rc = 1 ] && [ "$(cat err)" = "cache-config: dmg: cannot list its configs: MDB_CORRUPTED: Located page was wrong type: the store is damaged (cache-verify says where)
cache-config: done: 0 of 1 store listed (1 failed)" ] ||
  fail "damaged: the listing: exit $rc: $(cat err)"
# --json: the store's object all the same, its configs null and why (a script reading one object
# per STORE found nothing for it)
"$CC" --json dmg >out 2>err
rc=$?
[ $rc = 1 ] && "$PY" -c 'import json, sys
o = [json.loads(l) for l in open("out")]
assert o == [{"store": "dmg", "parts": 1, "configs": None, "error": "cannot list its configs: MDB_CORRUPTED: Located page was wrong type: the store is damaged (cache-verify says where)"}], o' ||
  fail "damaged: --json: exit $rc: $(cat out)"
# and so do a STORE that is not there and one that is no store, in the order given, beside a
# sound one (they printed none: a script pairing objects with STOREs read the next one's as theirs);
# exit 1, not 2: dmg was opened, the job ran (2: nothing done)
"$CC" --json nothere dmg notastore >out 2>err
rc=$?
[ $rc = 1 ] && "$PY" -c 'import json, sys
o = [json.loads(l) for l in open("out")]
assert [(d["store"], d["configs"], d.get("error", "")[:30]) for d in o] == [("nothere", None, "cannot open the store: No such"), ("dmg", None, "cannot list its configs: MDB_C"), ("notastore", None, "not a featcache store (no data")], o' ||
  fail "not there, no store: --json: exit $rc: $(cat out)"
"$CC" --no-count dmg >out 2>err || fail "damaged: --no-count: exit $?: $(cat err)"
grep -q '^[0-9a-f]\{32\}  tokens  chars ' out || fail "damaged: --no-count: $(cat out)"
dig=$(sed -n 's/^\([0-9a-f]\{32\}\)  tokens  chars .*/\1/p' out)
"$CC" --drop chars dmg >out 2>err
rc=$?
[ $rc = 1 ] && [ "$(cat err)" = "cache-config: dmg: cannot drop config $dig: MDB_CORRUPTED: Located page was wrong type (0 records removed: the store is damaged)" ] ||
  fail "damaged: the drop: exit $rc: $(cat err)"
cmp -s dmg/data.mdb dmg.before || fail "damaged: the drop changed data.mdb"

[ $fails = 0 ] && echo "ok: cache-config lists, drops, merges and resumes" && exit 0
exit 1
