#!/usr/bin/env bash
# cache-merge into an OUT that another process writes during the merge: an entry put there after
# the first pass (which found no conflict for its id) that differs from the inputs' was overwritten
# unseen. It is now kept, said as the conflict it is ("OUT: audio entry 'ID' differs from IN's:
# ...; kept OUT's", then how many, exit 1, --json changed_meanwhile), and a rerun meets it as a
# conflict (refused), which --prefer then settles. FC_FAULT_STOP=merge_copy:1 stops cache-merge
# between its first pass and the copy (test builds); the other process's put is made then.
set -u
M="$FC_BIN/cache-merge"
PY=${FC_PYTHON:-python3}
[ -x "$M" ] || { echo "FAIL: $M not built"; exit 1; }
grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null ||
  { echo "skip: no fault injection in this build"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# good and more: ids utt00000.. with other audio each (their seeds); out: a store of another id
for s in "good 1" "more 7"; do
  set -- $s
  "$PY" "$FC_SRC/tests/reference/test_verify_store.py" make $1 --n 8 --seed $2 --min-samples 4096 \
    --max-samples 6000 >/dev/null || { echo "FAIL: the fixture writer failed"; exit 1; }
done
"$PY" - <<'PY' || exit 1
import math, struct, wave
with wave.open("zz.wav", "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / 7))) for i in range(22050)))
PY
"$FC_BIN/featurize" -q --device cpu -o out zz.wav || { echo "FAIL: featurize out"; exit 1; }
entry() { # STORE ID: the audio entry's bytes, as hex
  "$PY" - "$@" <<'PY'
import lmdb, sys
env = lmdb.open(sys.argv[1], max_dbs=8, readonly=True, lock=False)
with env.begin() as t:
    v = t.get(sys.argv[2].encode(), db=env.open_db(b"audio", txn=t, create=False))
print(v.hex() if v is not None else "none")
PY
}
. "$FC_SRC/tests/cli/stop_site.bash" # stopped PID

FC_FAULT_STOP=merge_copy:1 "$M" --json -o out good >out.json 2>err &
pid=$!
if stopped $pid; then
  # another process puts more's entry of utt00000 into out meanwhile
  "$PY" - <<'PY' || fail "the other process's put"
import lmdb
src = lmdb.open("more", max_dbs=8, readonly=True, lock=False)
with src.begin() as t:
    v = t.get(b"utt00000", db=src.open_db(b"audio", txn=t, create=False))
env = lmdb.open("out", max_dbs=8)
with env.begin(write=True) as t:
    t.put(b"utt00000", v, db=env.open_db(b"audio", txn=t, create=False))
PY
  kill -CONT $pid
else
  fail "FC_FAULT_STOP=merge_copy:1: cache-merge never stopped there"
  kill -9 $pid
fi
wait $pid
rc=$?
[ $rc = 1 ] || { fail "a put meanwhile: exit $rc, want 1"; cat err; }
grep -qx "cache-merge: out: audio entry 'utt00000' differs from good's: different audio: .*; kept out's" err ||
  { fail "a put meanwhile: no conflict line"; cat err; }
grep -qxF "cache-merge: 1 entry put into out by another process during the merge differs from the inputs': out kept; run cache-merge again to see it as a conflict (--prefer chooses)" err ||
  { fail "a put meanwhile: no summary line"; cat err; }
grep -q '"changed_meanwhile":1}' out.json || fail "a put meanwhile: --json $(cat out.json)"
[ "$(entry out utt00000)" = "$(entry more utt00000)" ] || fail "a put meanwhile: out's entry was overwritten"
[ "$(entry out utt00001)" = "$(entry good utt00001)" ] || fail "a put meanwhile: the rest not merged"
# a rerun meets it as a conflict; --prefer settles it
"$M" -o out good >/dev/null 2>err
rc=$?
[ $rc = 1 ] && grep -q "1 id with differing entries; nothing merged" err ||
  { fail "rerun: exit $rc, want 1 and refused"; cat err; }
"$M" -q --prefer last -o out good 2>/dev/null || fail "rerun --prefer last: exit $?"
[ "$(entry out utt00000)" = "$(entry good utt00000)" ] || fail "rerun --prefer last: the input did not win"

[ "$fails" = 0 ] && echo ok
exit $((fails > 0))
