#!/usr/bin/env bash
# cache-prune on a store made by featurize and tokenize: an utterance refeaturized with other audio
# and one retokenized with another text leave orphan records (cache-verify --strict fails on
# them); --dry-run says what would go and changes nothing; cache-prune removes them and
# cache-verify --strict passes. --manifest without an id removes its entries and records: the
# loader and featcache.get no longer serve it. A split store is pruned part by part, reported
# as one. The writer lock: refused (exit 1) while another process has the store open for writing;
# a writer that opens the store while cache-prune holds it waits. docs/cache-prune.md.
set -u
. "$FC_SRC/tests/cli/stop_site.bash" # sigint_default
FZ=${FC_BIN:?}/featurize
TK=$FC_BIN/tokenize
CV=$FC_BIN/cache-verify
CP=$FC_BIN/cache-prune
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# run NAME WANT_RC ARGS...: cache-prune, stdout in out, stderr in err
run() {
  local name=$1 want=$2
  shift 2
  "$CP" "$@" >out 2>err
  local rc=$?
  [ "$rc" = "$want" ] || { fail "$name: exit $rc, want $want"; cat out err; }
}
expect_err() { [ "$(cat err)" = "$2" ] || { fail "$1: stderr:"; cat err; echo "want:"; echo "$2"; }; }
verify() { # NAME WANT_RC ARGS...: cache-verify --strict
  local name=$1 want=$2
  shift 2
  "$CV" --strict "$@" >vout 2>verr
  local rc=$?
  [ "$rc" = "$want" ] || { fail "$name: cache-verify --strict exit $rc, want $want"; cat vout verr; }
}
tone() { sox -n -r 22050 -b 16 "$1" synth "$2" sine "$3" || { echo "FAIL: sox failed"; exit 1; }; }

mkdir wavs
for i in 1 2 3 4; do tone "wavs/u$i.wav" 0.$((i + 2)) $((200 * i)); done
printf 'u1|one.|one.\nu2|two.|two.\nu3|three.|three.\nu4|four.|four.\n' >m.csv
"$FZ" -q --writers 1 --device cpu --manifest m.csv -o st || fail "featurize"
"$TK" -q --manifest m.csv --build-vocab --export-vocab v.txt -o st || fail "tokenize"
verify clean 0 st
run nothing 0 st
# nothing removed: said so, and no "pages freed" (none were)
expect_err nothing "cache-prune: st: removed 0 orphan records (0 feat, 0 tok; 0.0 MB); 4 utterances stay: nothing to remove"

# u2 refeaturized with other audio, u3 retokenized with another text: their old records are orphans
tone wavs/u2.wav 0.7 900
sed -i 's/^u3|.*/u3|three again.|three again./' m.csv
"$FZ" -q --device cpu --manifest m.csv -o st || fail "featurize again"
"$TK" -q --manifest m.csv --vocab v.txt -o st || fail "tokenize again"
verify orphans 1 st
[ "$(grep -c ': orphan: ' vout)" = 2 ] || { fail "want 2 orphan warnings"; cat vout; }
cp -r st st.before

run dry 0 -n st
expect_err dry "cache-prune: st: would remove 2 orphan records (1 feat, 1 tok; 0.0 MB); 4 utterances stay"
[ -s out ] && fail "dry: wrote to stdout"
cmp -s st/data.mdb st.before/data.mdb || fail "dry: data.mdb changed"
verify dry-still 1 st

run prune 0 --json st
expect_err prune "cache-prune: st: removed 2 orphan records (1 feat, 1 tok; 0.0 MB); 4 utterances stay (pages freed in data.mdb, reused by later writes)"
"$PY" - <<'PY' || { fail "prune --json"; cat out; }
import json
d = json.loads(open("out").read())
assert d["store"] == "st" and d["parts"] == 1 and d["dry_run"] is False and d["status"] == "done", d
assert d["orphans"]["feat"] == 1 and d["orphans"]["tok"] == 1 and d["orphans"]["bytes"] > 64 * 2, d
assert d["dropped"] == {"ids": 0, "audio": 0, "text": 0, "failed": 0, "bytes": 0}, d
assert d["kept_ids"] == 4 and d["bytes_freed"] == d["orphans"]["bytes"] and d["transactions"] == 1, d
PY
verify pruned 0 --manifest m.csv --expect-tokens st
run again 0 -q st
[ -s err ] && { fail "-q: said something"; cat err; }

# u4 dropped from the manifest: its entries, then its records, go
grep -v '^u4|' m.csv >m3.csv
run manifest-dry 0 -n --manifest m3.csv st
expect_err manifest-dry "cache-prune: st: would remove 2 orphan records (1 feat, 1 tok; 0.0 MB) and 1 utterance not in the manifest (1 audio, 1 text entries, 0 failure records; 0.0 MB); 3 utterances stay"
"$PY" -c 'import featcache, sys; featcache.get(sys.argv[1], "u4", tokens="chars")' st ||
  fail "u4 not served before the prune"
run manifest 0 --manifest m3.csv st
expect_err manifest "cache-prune: st: removed 2 orphan records (1 feat, 1 tok; 0.0 MB) and 1 utterance not in the manifest (1 audio, 1 text entries, 0 failure records; 0.0 MB); 3 utterances stay (pages freed in data.mdb, reused by later writes)"
verify manifest-verify 0 --manifest m3.csv --expect-tokens st
"$PY" - st <<'PY' || fail "the loader after --manifest"
import featcache, sys
ids = sorted(i for b in featcache.Loader(sys.argv[1], batch_size=2, tokens="chars") for i in b.ids)
assert ids == ["u1", "u2", "u3"], ids
try:
    featcache.get(sys.argv[1], "u4")
except Exception as e:
    pass
else:
    raise SystemExit("featcache.get still serves u4")
PY

# a manifest line without an id: nothing removed (the id it keeps cannot be told)
printf '{"id": "u1", "audio_filepath": "wavs/u1.wav", "text": "one."}\n{"text": "x"}\n' >bad.jsonl
run bad-line 2 --manifest bad.jsonl st
grep -q '^cache-prune: bad.jsonl:2: .*nothing removed$' err || { fail "bad-line message"; cat err; }
: >empty.csv
run empty-manifest 2 --manifest empty.csv st
expect_err empty-manifest "cache-prune: empty.csv: names no utterance: refusing to remove every one"
verify after-refusals 0 st

# a split store: pruned part by part, reported as one
tone wavs/u5.wav 0.4 1000
tone wavs/u6.wav 0.5 1100
printf 'u1|one.|one.\nu2|two.|two.\nu5|five.|five.\nu6|six.|six.\n' >s.csv
"$FZ" -q --writers 2 --device cpu --manifest s.csv -o sp || fail "featurize split"
tone wavs/u5.wav 0.6 1200
tone wavs/u6.wav 0.6 1300
"$FZ" -q --device cpu --manifest s.csv -o sp || fail "featurize split again"
verify split-orphans 1 sp
run split 0 --json sp
expect_err split "cache-prune: sp: removed 2 orphan records (2 feat, 0 tok; 0.0 MB); 4 utterances stay (pages freed in data.mdb, reused by later writes)"
grep -q '^{"store":"sp","parts":2,' out || { fail "split --json"; cat out; }
verify split-pruned 0 sp
run twice 2 sp sp/part-1
expect_err twice "cache-prune: sp/part-1: given twice (also as part 1 of sp)"

# a manifest that keeps none of the STOREs' utterances (the wrong file, ids spelled otherwise)
# would have had every one removed ("0 utterances stay", exit 0): refused, exit 2, nothing
# removed, the dry run alike. One that keeps an utterance of one STORE of several is taken.
st_sum=$(md5sum <st/data.mdb)
printf 'LJ001-0001|one.|one.\nLJ001-0002|two.|two.\n' >other.csv
for dry in "" -n; do
  run "keeps-none$dry" 2 $dry --json --manifest other.csv st
  expect_err "keeps-none$dry" "cache-prune: other.csv: keeps none of the STOREs' utterances (3 audio, 3 text entries): its ids, such as 'LJ001-0001', name none of theirs, such as 'u1' (the wrong file, or ids spelled otherwise?); nothing removed"
  [ -s out ] && fail "keeps-none$dry: --json printed $(cat out) on a usage error"
done
run keeps-none-several 2 --manifest other.csv st sp
grep -q "^cache-prune: other.csv: keeps none of the STOREs' utterances (7 audio, 3 text entries): " err ||
  { fail "keeps-none-several"; cat err; }
[ "$(md5sum <st/data.mdb)" = "$st_sum" ] || fail "keeps-none: st was changed"
verify keeps-none-sp 0 sp
printf 'u5|five.|five.\n' >only5.csv
run keeps-one 0 -n --manifest only5.csv st sp
grep -q '^cache-prune: st: would remove .* 3 utterances not in the manifest .*; 0 utterances stay$' err &&
  grep -q '^cache-prune: sp: would remove .*; 1 utterance stays$' err || { fail "keeps-one"; cat err; }

# several STOREs: each pruned and reported in turn
run several 0 -n st sp
[ "$(grep -c '^cache-prune: \(st\|sp\): would remove 0 orphan records' err)" = 2 ] ||
  { fail "several: want a line for each store"; cat err; }

# a store's name is quoted as in every message (a newline would split the line)
cp -r st "$(printf 'odd\nname')"
run odd-name 0 "$(printf 'odd\nname')"
expect_err odd-name 'cache-prune: "odd\nname": removed 0 orphan records (0 feat, 0 tok; 0.0 MB); 3 utterances stay: nothing to remove'

# a record two ids share (the same audio, the same text) stays when one of them is dropped
cp wavs/u1.wav wavs/twin.wav
printf 'u1|one.|one.\ntwin|one.|one.\n' >d.csv
"$FZ" -q --writers 1 --device cpu --manifest d.csv -o dd || fail "featurize dd"
"$TK" -q --manifest d.csv --vocab v.txt -o dd || fail "tokenize dd"
grep '^u1|' d.csv >d1.csv
run shared 0 --manifest d1.csv dd
expect_err shared "cache-prune: dd: removed 0 orphan records (0 feat, 0 tok; 0.0 MB) and 1 utterance not in the manifest (1 audio, 1 text entries, 0 failure records; 0.0 MB); 1 utterance stays (pages freed in data.mdb, reused by later writes)"
verify shared-verify 0 --manifest d1.csv --expect-tokens dd
"$PY" -c 'import featcache, sys; featcache.get(sys.argv[1], "u1", tokens="chars")' dd ||
  fail "shared: u1 no longer served"

# the writer lock: a writer holding the store open refuses the prune; a writer opening it while
# the prune holds it waits for it
cat >hold.py <<'PY'
import ctypes, featcache, sys
if len(sys.argv) > 3:  # a command name of its own
    open("/proc/self/comm", "w").write(sys.argv[3])
lib = ctypes.CDLL(featcache.find_library())
s = ctypes.c_void_p()
rc = lib.fc_store_open(sys.argv[1].encode(), int(sys.argv[2]), ctypes.byref(s))
print(rc, flush=True)
sys.stdin.read()  # held until its stdin closes
lib.fc_store_close(s)
PY
mkfifo ctl
rm -f held
"$PY" hold.py st 0 <ctl >held &
exec 3>ctl
for _ in $(seq 100); do [ -s held ] && break; sleep 0.1; done
[ "$(cat held)" = 0 ] || fail "hold.py could not open st: $(cat held)"
run busy 1 st
# the holder named, as /proc/locks tells it (it was a list of the tools that might have it)
# and the summary that ends every exit 1, one STORE's too
expect_err busy "cache-prune: st: in use: process $! ($(cat /proc/$!/comm)) has it open for writing; nothing removed: run cache-prune when it has finished
cache-prune: done: 0 of 1 store pruned (1 failed)"
run busy-dry 0 -n st
exec 3>&-
wait
run free-again 0 -q st
# a command name that holds an escape (any process names itself) is quoted as names are: it
# reached the terminal as it was
rm -f held # (the first holder's "0" was read as this one's before it had opened the store)
"$PY" hold.py st 0 "h$(printf '\033')[2J" <ctl >held &
exec 3>ctl
for _ in $(seq 100); do [ -s held ] && break; sleep 0.1; done
run busy-odd 1 st
expect_err busy-odd "cache-prune: st: in use: process $! (\"h\\033[2J\") has it open for writing; nothing removed: run cache-prune when it has finished
cache-prune: done: 0 of 1 store pruned (1 failed)"
exec 3>&-
wait

: >held
"$PY" hold.py st 64 <ctl >held & # FC_STORE_EXCLUSIVE, as cache-prune holds it
exec 3>ctl
for _ in $(seq 100); do [ -s held ] && break; sleep 0.1; done
[ "$(cat held)" = 0 ] || fail "hold.py could not open st exclusively: $(cat held)"
"$TK" --manifest m3.csv --vocab v.txt -o st >tk.out 2>&1 3>&- &
tk=$!
sleep 1
kill -0 $tk 2>/dev/null || fail "tokenize did not wait for the exclusive holder"
grep -qx 'tokenize: st: cache-prune is running on it: waiting until it has finished' tk.out ||
  { fail "tokenize waits without a word"; cat tk.out; }
exec 3>&-
wait $tk || { fail "tokenize after the wait"; cat tk.out; }
wait
verify after-wait 0 st

# cache-merge into a store and cache-config --drop from one say so too while cache-prune holds it
# waits_for NAME TOOL ARGS...: TOOL run while hold.py holds st2 exclusively waits, with a word
waits_for() {
  local name=$1 tool=$2
  shift 2
  : >held
  "$PY" hold.py st2 64 <ctl >held &
  exec 3>ctl
  for _ in $(seq 100); do [ -s held ] && break; sleep 0.1; done
  [ "$(cat held)" = 0 ] || fail "$name: hold.py could not open st2 exclusively: $(cat held)"
  "$FC_BIN/$tool" "$@" >w.out 2>&1 3>&- &
  local pid=$!
  sleep 1
  # still running (a finished child stays a zombie until waited for: kill -0 would pass)
  grep -q '^State:.*[RSD]' /proc/$pid/status 2>/dev/null ||
    fail "$name: did not wait for the exclusive holder"
  grep -qx "$tool: st2: cache-prune is running on it: waiting until it has finished" w.out ||
    { fail "$name: waits without a word"; cat w.out; }
  exec 3>&-
  wait $pid || { fail "$name: after the wait"; cat w.out; }
  wait
}
cp -r st st2
waits_for merge-wait cache-merge -o st2 st
waits_for drop-wait cache-config --drop chars st2

# Ctrl-C while cache-config --drop waits for cache-prune: interrupted (130), nothing dropped — it
# was exit 2, "cannot open the store: FC_EINTR: interrupted", a usage error by the exit status
cp -r st st3
: >held
"$PY" hold.py st3 64 <ctl >held &
exec 3>ctl
for _ in $(seq 100); do [ -s held ] && break; sleep 0.1; done
[ "$(cat held)" = 0 ] || fail "drop-int: hold.py could not open st3 exclusively: $(cat held)"
sigint_default "$FC_BIN/cache-config" --drop chars st3 >w.out 2>&1 3>&- &
pid=$!
for _ in $(seq 100); do grep -q 'waiting until it has finished' w.out && break; sleep 0.05; done
sleep 0.2
kill -INT $pid
wait $pid
rc=$?
exec 3>&-
wait
[ $rc = 130 ] && grep -qx 'cache-config: st3: interrupted while waiting for cache-prune to finish: nothing dropped' w.out ||
  { fail "drop-int: exit $rc"; cat w.out; }
"$FC_BIN/cache-config" st3 | grep -q ' chars ' || fail "drop-int: the config went: $("$FC_BIN/cache-config" st3)"

# featurize, tokenize and cache-merge interrupted (SIGINT, SIGTERM) while they wait for
# cache-prune: 130/143, nothing done, the store as it was — featurize installed its handlers only
# after the wait, so a signal its parent had it ignore (a script's background job) went unheard and
# the job ran on; cache-merge said "nothing written (the inputs were being read for conflicts)"
for sig in INT TERM; do
  want=$([ $sig = INT ] && echo 130 || echo 143)
  for tool in featurize tokenize cache-merge; do
    rm -rf st4 && cp -r st st4
    "$FC_BIN/cache-config" st4 >before.cfg
    : >held
    "$PY" hold.py st4 64 <ctl >held &
    exec 3>ctl
    for _ in $(seq 100); do [ -s held ] && break; sleep 0.1; done
    [ "$(cat held)" = 0 ] || fail "$tool-$sig: hold.py could not open st4 exclusively: $(cat held)"
    if [ $tool = featurize ]; then
      sigint_default "$FZ" -o st4 wavs/u1.wav wavs/u5.wav >w.out 2>&1 3>&- &
    elif [ $tool = cache-merge ]; then
      sigint_default "$FC_BIN/cache-merge" -o st4 st >w.out 2>&1 3>&- &
    else
      sigint_default "$TK" --manifest m3.csv --vocab v.txt -o st4 >w.out 2>&1 3>&- &
    fi
    pid=$!
    for _ in $(seq 100); do grep -q 'waiting until it has finished' w.out && break; sleep 0.05; done
    sleep 0.2
    kill -$sig $pid
    # the holder is let go only once the tool has ended, or after 10 s (a tool deaf to the
    # signal then finishes its job: a failure, not a hang)
    for _ in $(seq 100); do grep -q '^State:.*Z' /proc/$pid/status 2>/dev/null && break; sleep 0.1; done
    exec 3>&-
    wait $pid
    rc=$?
    wait
    [ $rc = $want ] &&
      grep -qx "$tool: st4: interrupted while waiting for cache-prune to finish: nothing done" w.out ||
      { fail "$tool-$sig: exit $rc, want $want"; cat w.out; }
    "$CV" --strict st4 >/dev/null 2>&1 || fail "$tool-$sig: the store after: $("$CV" --strict st4 2>&1)"
    [ "$("$FC_BIN/cache-config" st4)" = "$(cat before.cfg)" ] ||
      fail "$tool-$sig: the store's configs changed"
  done
done

[ $fails = 0 ] && echo "cache_prune: ok"
exit $((fails > 0))
