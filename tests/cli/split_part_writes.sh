#!/bin/bash
# One part of a split store given where the split store belongs: cache-merge -o PART and
# cache-config --drop CONFIG PART are refused (exit 2, the part unchanged), as featurize and
# tokenize refuse it — a merge would put other parts' ids in it, a drop would leave the config in
# the other parts; a drop from a split store with a part missing changes no part (exit 2); and
# cache-verify names a plain store put in a part's place (no meta part key) and the ids in it that
# belong to other parts, and a failure record in another part than its id's (where featurize,
# storing the id, never clears it).
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0

make_corpus c 12 || exit 1
"$FC_BIN/featurize" -q --device cpu --writers 3 -o sp --manifest c/metadata.csv || exit 1
"$FC_BIN/tokenize" -q --build-vocab -o sp c/metadata.csv || exit 1
"$FC_BIN/featurize" -q --device cpu --writers 1 -o plain --manifest c/metadata.csv || exit 1
"$FC_BIN/tokenize" -q --build-vocab -o plain c/metadata.csv || exit 1
sum=$(md5sum sp/part-*/data.mdb)

"$FC_BIN/cache-merge" -o sp/part-1 sp/part-0 >out 2>err; check merge-into-part 2 $?
[ "$(cat err)" = "cache-merge: sp/part-1: cannot open the output store: it is part 1 of a split store of 3 parts, which holds only the ids routed to it; merge into a plain store" ] ||
  { echo "FAIL merge-into-part stderr:"; cat err; fail=1; }
"$FC_BIN/cache-config" --drop chars sp/part-1 >out 2>err; check drop-from-part 2 $?
[ "$(cat err)" = "cache-config: sp/part-1: is part 1 of a split store of 3 parts: give the split store's directory (the config is dropped from every part)" ] ||
  { echo "FAIL drop-from-part stderr:"; cat err; fail=1; }
[ "$sum" = "$(md5sum sp/part-*/data.mdb)" ] || { echo "FAIL a refused write changed a part"; fail=1; }
"$FC_BIN/cache-verify" -q sp >out 2>err; check clean-after 0 $?

# a part missing: a drop, even by digest (no listing first), changes no part
rm -rf sp/part-1
sum=$(md5sum sp/part-[02]/data.mdb)
tok=$("$FC_BIN/cache-config" --json --no-count sp/part-0 | "$PY" -c '
import json, sys
print(next(c["digest"] for c in json.load(sys.stdin)["configs"] if c["kind"] == "tokens"))')
"$FC_BIN/cache-config" --drop "$tok" sp >out 2>err; check drop-part-missing 2 $?
[ "$(cat err)" = "cache-config: sp/part-1: missing (its writer stopped before making it?): featurize (or tokenize) -o sp again makes it, or put back the part that was moved away; nothing dropped" ] ||
  { echo "FAIL drop-part-missing stderr:"; cat err; fail=1; }
[ "$sum" = "$(md5sum sp/part-[02]/data.mdb)" ] || { echo "FAIL drop-part-missing dropped from some parts"; fail=1; }

# a plain store of the same corpus copied over part 1: every id of parts 0 and 2 in it is named
cp -r plain sp/part-1
"$FC_BIN/cache-verify" sp >out 2>err; check plain-as-part 1 $?
grep -Fqx "sp/part-1: error: meta part: missing: the store lies in part-1 of the split store sp of 3 parts, but does not say it is a part (a store copied in from elsewhere?): readers take it as part 1" out ||
  { echo "FAIL plain-as-part: no meta part finding"; cat out; fail=1; }
want=$("$PY" - sp <<'PY'
import xxhash, sys
ids = [l.split("|")[0] for l in open("c/metadata.csv")]
home = {i: ((xxhash.xxh3_64_intdigest(i.encode()) & 0xFFFFFFFF) * 3) >> 32 for i in ids}
print(sum(2 for i in ids if home[i] != 1))  # an audio and a text entry each
PY
)
got=$(grep -c "^sp/part-1: error: \(audio\|text\) .*: in part 1 of a split store of 3 parts; its id belongs in part [02]$" out)
[ "$want" -gt 0 ] && [ "$got" = "$want" ] || { echo "FAIL plain-as-part: $got misplaced-id errors, want $want"; cat out; fail=1; }
"$FC_BIN/cache-verify" -q sp/part-1 >out 2>err; check plain-as-part-alone 1 $?
grep -q "error: meta part: missing" out || { echo "FAIL plain-as-part-alone"; cat out; fail=1; }

# a failure record moved into another part than its id's
# (beside the corpus's wavs/, where an LJSpeech manifest's audio is)
cp c/metadata.csv c/m.csv && echo "gone|A file that is not there.|a file that is not there." >>c/m.csv
"$FC_BIN/featurize" -q --device cpu --writers 3 -o sf --manifest c/m.csv 2>/dev/null
[ $? = 1 ] || { echo "FAIL featurize with a missing file: want exit 1"; fail=1; }
moved=$("$PY" - <<'PY'
import lmdb, xxhash
home = ((xxhash.xxh3_64_intdigest(b"gone") & 0xFFFFFFFF) * 3) >> 32
other = (home + 1) % 3
a = lmdb.open(f"sf/part-{home}", max_dbs=20)
b = lmdb.open(f"sf/part-{other}", max_dbs=20)
with a.begin(write=True) as ta, b.begin(write=True) as tb:
    fa = a.open_db(b"failed", txn=ta, create=False)
    fb = b.open_db(b"failed", txn=tb, create=False)
    v = ta.get(b"gone", db=fa)
    assert v and ta.delete(b"gone", db=fa)
    tb.put(b"gone", v, db=fb)
print(home, other)
PY
) || { echo "FAIL: could not move the failure record"; fail=1; }
set -- $moved
"$FC_BIN/cache-verify" sf >out 2>err; check failure-in-other-part 1 $?
grep -Fqx "sf/part-$2: error: failed gone: in part $2 of a split store of 3 parts; its id belongs in part $1, where a run that stores it clears its failure record" out ||
  { echo "FAIL failure-in-other-part: no finding"; cat out; fail=1; }
exit $fail
