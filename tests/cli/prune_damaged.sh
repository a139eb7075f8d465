#!/usr/bin/env bash
# A record damaged in place (a flipped payload byte, as bit rot or a torn write leaves it) though
# its entry still refers to it: cache-verify names it and says how to mend it; featurize and
# tokenize run again skip it (it is stored); cache-prune without --damaged leaves it (it reads no
# payload); cache-prune --damaged -n says what would go and changes nothing; cache-prune --damaged
# removes the damaged records — a feat record two ids share, a tok record — and takes those ids
# out of their configs' indexes (cache-verify then finds them missing, not an index naming a
# record that is gone); featurize and tokenize run again store them anew, byte for byte as
# before, and the store verifies clean; in a merged store the next merge copies the input's sound
# copy. A failure injected at each write leaves the indexes sound. docs/cache-prune.md "Damaged
# records".
set -u
FZ=${FC_BIN:?}/featurize
TK=$FC_BIN/tokenize
CV=$FC_BIN/cache-verify
CP=$FC_BIN/cache-prune
CM=$FC_BIN/cache-merge
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
run() { # NAME WANT_RC ARGS...: cache-prune, stdout in out, stderr in err
  local name=$1 want=$2
  shift 2
  "$CP" "$@" >out 2>err
  local rc=$?
  [ "$rc" = "$want" ] || { fail "$name: exit $rc, want $want"; cat out err; }
}
expect_err() { [ "$(cat err)" = "$2" ] || { fail "$1: stderr:"; cat err; echo "want:"; echo "$2"; }; }
tone() { sox -n -r 22050 -b 16 "$1" synth "$2" sine "$3" || { echo "FAIL: sox failed"; exit 1; }; }

mkdir wavs
for i in 1 2 3 4; do tone "wavs/u$i.wav" 0.$((i + 2)) $((200 * i)); done
cp wavs/u1.wav wavs/u5.wav # the same audio: one feat record, two ids refer to it
printf 'u1|one.|one.\nu2|two.|two.\nu3|three.|three.\nu4|four.|four.\nu5|five.|five.\n' >m.csv
"$FZ" -q --writers 1 --device cpu --manifest m.csv -o st || fail "featurize"
"$TK" -q --manifest m.csv --build-vocab --export-vocab v.txt -o st || fail "tokenize"
"$CV" st >/dev/null 2>&1 || fail "the store does not verify clean"

# dump DIR FILE: every feat and tok record's bytes, by key (to compare the mended store with)
dump() {
  "$PY" - "$1" "$2" <<'PY' || fail "dump $1"
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=200, readonly=True, lock=False)
with open(sys.argv[2], "w") as f, env.begin() as t:
    for name in (b"feat", b"tok"):
        for k, v in t.cursor(env.open_db(name, txn=t)):
            f.write(f"{name.decode()} {k.hex()} {v.hex()}\n")
PY
}
dump st before.txt
# damage DIR DB:ID:OFFSET...: flip one byte of each id's record (at OFFSET of the value) through
# LMDB, so that only the records' own checksums can tell (the B-tree stays sound); prints
# "DB ID KEY" for each
damage() {
  "$PY" - "$@" <<'PY' || fail "damage $*"
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=200)
with env.begin(write=True) as t:
    names = [k for k, _ in t.cursor() if k.startswith(b"index/")]
    for spec in sys.argv[2:]:
        rec_db, uid, offset = spec.split(":")
        db = env.open_db(rec_db.encode(), txn=t)
        # the index of the one config of that kind names the id's record (docs/FORMAT.md "Index")
        keys = [v[:16] for v in (t.get(uid.encode(), db=env.open_db(n, txn=t)) for n in names)
                if v is not None and t.get(v[:16], db=db) is not None]
        assert len(keys) == 1, (spec, keys)
        v = bytearray(t.get(keys[0], db=db))
        v[int(offset)] ^= 0x40
        t.put(keys[0], bytes(v), db=db)
        print(rec_db, uid, keys[0].hex())
PY
}
# u1's feat record (shared with u5) in its payload, u3's tok record in its first token
damage st feat:u1:264 tok:u3:64 >keys
# indexes DIR: fail unless every id each index holds has its record stored; print the ids of
# each index, sorted ("a b;c d")
indexes() {
  "$PY" - "$1" <<'PY'
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=200, readonly=True, lock=False)
with env.begin() as t:
    recs = [env.open_db(n, txn=t) for n in (b"feat", b"tok")]
    held = []
    for n in [k for k, _ in t.cursor() if k.startswith(b"index/")]:
        ids = []
        for uid, v in t.cursor(env.open_db(n, txn=t)):
            assert any(t.get(v[:16], db=r) for r in recs), (n, uid, "names a record not stored")
            ids.append(uid.decode())
        held.append(" ".join(sorted(ids)))
print(";".join(sorted(held)))
PY
}
fk=$(awk '$1 == "feat" {print $3}' keys)
tk=$(awk '$1 == "tok" {print $3}' keys)
[ -n "$fk" ] && [ -n "$tk" ] || { fail "keys: $(cat keys)"; exit 1; }

# cache-verify names both and how to mend them
"$CV" st >vout 2>/dev/null
[ $? = 1 ] || fail "verify damaged: want exit 1"
grep -qx "st: error: feat $fk (id u[15]): payload checksum mismatch: cache-prune --damaged removes it, and featurize run again stores it anew" vout ||
  { fail "verify: feat finding"; cat vout; }
grep -qx "st: error: tok $tk (id u3): payload checksum mismatch: cache-prune --damaged removes it, and tokenize run again stores it anew" vout ||
  { fail "verify: tok finding"; cat vout; }

# featurize and tokenize run again do not mend it: the records are stored
"$FZ" -q --device cpu --manifest m.csv -o st || fail "featurize rerun"
"$TK" -q --manifest m.csv --vocab v.txt -o st || fail "tokenize rerun"
"$CV" st >/dev/null 2>&1 && fail "a rerun mended the store: this test's premise is gone"

# cache-prune alone reads no payload: nothing removed
run plain 0 st
expect_err plain "cache-prune: st: removed 0 orphan records (0 feat, 0 tok; 0.0 MB); 5 utterances stay: nothing to remove"
cp -r st st.before
run dry 0 --damaged -n st
expect_err dry "cache-prune: st: would remove 0 orphan records (0 feat, 0 tok; 0.0 MB) and 2 damaged records (1 feat, 1 tok; 0.0 MB: run featurize and tokenize again to store them anew); 5 utterances stay"
cmp -s st/data.mdb st.before/data.mdb || fail "dry: data.mdb changed"

# reading every record takes minutes on a large store: a progress line (forced here; a terminal
# gets it unasked), none with -q
run progress 0 --damaged -n --progress st
grep -qx "cache-prune: st: [0-9.]* of [0-9.]* GB read for damaged records" err ||
  { fail "progress: no progress line"; cat err; }
run progress-quiet 0 --damaged -n -q --progress st
[ -s err ] && { fail "progress -q: stderr"; cat err; }
run damaged 0 --damaged --json st
expect_err damaged "cache-prune: st: removed 0 orphan records (0 feat, 0 tok; 0.0 MB) and 2 damaged records (1 feat, 1 tok; 0.0 MB: run featurize and tokenize again to store them anew); 5 utterances stay (pages freed in data.mdb, reused by later writes)"
"$PY" - <<'PY' || fail "damaged: --json"
import json
d = json.load(open("out"))
assert d["status"] == "done" and d["damaged"]["feat"] == 1 and d["damaged"]["tok"] == 1, d
assert d["damaged"]["ids"] == 3 and d["damaged"]["bytes"] > 64 * 2, d  # u1, u5; u3
assert d["bytes_freed"] == d["damaged"]["bytes"] and d["kept_ids"] == 5, d
PY
# what verify finds now: the three ids lack their records, and nothing else (no index entry
# names a record that is gone, no damaged record left)
"$CV" st >vout 2>/dev/null
[ "$(grep -c ': error: ' vout)" = 3 ] || { fail "after prune: want 3 errors"; cat vout; }
[ "$(grep -c ': error: feat [0-9a-f]* (id u[15]): missing: no feature record for mel config ' vout)" = 2 ] &&
  [ "$(grep -c ': error: tok [0-9a-f]* (id u3): missing: no token record for token config ' vout)" = 1 ] ||
  { fail "after prune: findings"; cat vout; }
# the indexes (docs/FORMAT.md "Index": an id an index holds has its record stored): u1 and u5
# left the mel config's, u3 the token config's, every other id is still there
indexes st >held || fail "after prune: the indexes"
[ "$(cat held)" = "u1 u2 u4 u5;u2 u3 u4" ] || fail "after prune: the indexes hold $(cat held)"
run again 0 --damaged st
expect_err again "cache-prune: st: removed 0 orphan records (0 feat, 0 tok; 0.0 MB) and 0 damaged records (0 feat, 0 tok; 0.0 MB); 5 utterances stay: nothing to remove"

# featurize and tokenize store them anew: the records as they were before the damage
"$FZ" --device cpu --manifest m.csv -o st 2>ferr || fail "featurize mends" # u1 and u5 both
grep -q '(2 new, 3 already stored, 0 failed)' ferr || { fail "featurize mends: counts"; cat ferr; }
"$TK" -q --manifest m.csv --vocab v.txt -o st || fail "tokenize mends"
"$CV" --strict st >vout 2>&1 || { fail "mended store does not verify clean"; cat vout; }
dump st after.txt
cmp -s before.txt after.txt || fail "mended records differ from the records before the damage"

# a merged store (cache-merge -o OUT): merging again does not replace a damaged record (a key OUT
# holds is skipped unread); cache-prune --damaged OUT, and the same merge copies the input's
# sound copy, indexed
"$CM" -q -o merged st 2>merr || { fail "merge"; cat merr; }
damage merged feat:u2:300 >/dev/null
"$CM" -q -o merged st || fail "merge again"
"$CV" merged >/dev/null 2>&1 && fail "a merge again mended OUT: this test's premise is gone"
"$CP" -q --damaged merged || fail "prune OUT"
"$CM" -q -o merged st || fail "merge after the prune"
"$CV" --strict merged >vout 2>&1 || { fail "merged store after prune and merge"; cat vout; }
[ "$(indexes merged)" = "u1 u2 u3 u4 u5;u1 u2 u3 u4 u5" ] || fail "merged store: indexes $(indexes merged)"

# cut short at each write (FC_FAULT=put:N, commit:N; --batch 1: a record and its ids' index
# entries per transaction): each run that fails leaves the indexes sound, and a rerun finishes
cp -r st.before probe
FC_FAULT=commit:1 "$CP" -q --batch 1 --damaged probe >/dev/null 2>&1
if [ $? = 0 ]; then
  [ "$fails" = 0 ] || exit 1
  echo "skip: the faults (built without -DFC_FAULT_INJECTION=ON); the rest passed"
  exit 77
fi
for site in put commit; do
  n=1
  while :; do
    rm -rf st.f && cp -r st.before st.f
    FC_FAULT=$site:$n "$CP" -q --batch 1 --damaged st.f >out 2>err
    rc=$?
    [ $rc = 0 ] && break
    [ $rc = 1 ] && grep -q '^cache-prune: st.f: ' err || { fail "$site:$n: exit $rc"; cat err; }
    indexes st.f >/dev/null || fail "$site:$n: an index names a record that is gone"
    "$CP" -q --damaged st.f || fail "$site:$n: the rerun"
    [ "$(indexes st.f)" = "u1 u2 u4 u5;u2 u3 u4" ] || fail "$site:$n: after the rerun"
    n=$((n + 1))
    [ $n -le 40 ] || { fail "$site: still failing at $n"; break; }
  done
  [ $n -gt 1 ] || fail "$site: never reached"
  echo "$site: $((n - 1)) failures injected, each left sound indexes"
done

[ "$fails" = 0 ] && echo "ok: damaged records named by cache-verify, removed by cache-prune --damaged, stored anew"
exit $((fails > 0))
