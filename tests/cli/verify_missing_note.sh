#!/bin/bash
# A config under which many records are missing — the mark of a run that stopped before it
# finished it (a second preset being added, killed) — gets one note after the store's error lines
# (each missing record is an error line: thousands of them, and nothing said what they meant):
# how many of the store's entries lack it, what likely happened, and the two ways out (run it
# again; cache-config --drop HEX STORE, naming a split store, not its part, since a part alone is
# refused). The command it gives works. One record missing is no such mark: no note.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
V="$FC_BIN/cache-verify"
make_corpus c 8 || exit 1
"$FC_BIN/featurize" -q -o st --manifest c/metadata.csv || exit 1
head -n 3 c/metadata.csv >c/three.csv
"$FC_BIN/featurize" -q --preset kaldi -o st --manifest c/three.csv || exit 1 # kaldi stopped at 3 of 8
kaldi=$("$FC_BIN/cache-config" --json st | "$PY" -c 'import json, sys
print(next(c["digest"] for c in json.load(sys.stdin)["configs"] if c["name"] == "kaldi"))')
"$V" st >out 2>err; check "kaldi on 3 of 8" 1 $?
[ "$(grep -c "^st: error: feat .*: missing: no feature record for mel config kaldi $kaldi\$" out)" = 5 ] ||
  { echo "FAIL: the 5 error lines"; cat out; fail=1; }
note="st: note: 5 of 8 audio entries have no feature record of mel config kaldi $kaldi (the errors above): a featurize run under it stopped before it finished, or a newer config replaced it? complete it (run that again) or drop it (cache-config --drop $kaldi st)"
[ "$(grep note out)" = "$note" ] || { echo "FAIL: the note"; cat out; fail=1; }
[ "$(tail -n 1 out | cut -d' ' -f2-3)" = "5 errors," ] || { echo "FAIL: the summary after the note"; cat out; fail=1; }
# the way out it gives works
cache_config_drop=$(sed -n 's/.*(\(cache-config --drop [^)]*\))$/\1/p' out)
read -r -a cmd <<<"$cache_config_drop"
"$FC_BIN/${cmd[0]}" -q "${cmd[@]:1}" || { echo "FAIL: $cache_config_drop"; fail=1; }
"$V" -q st >out 2>err; check "after the drop" 0 $?

# one record missing: no note
"$FC_BIN/featurize" -q --preset kaldi -o st --manifest c/metadata.csv || exit 1
"$PY" - st "$kaldi" <<'PY' || exit 1
import sys, lmdb, struct
env = lmdb.open(sys.argv[1], max_dbs=16)
feat = env.open_db(b"feat")
with env.begin(write=True) as t:
    for k, v in t.cursor(db=feat):  # the first kaldi record (header bytes 32..47: its config)
        if bytes(v[32:48]).hex() == sys.argv[2]:
            t.delete(k, db=feat)
            break
    else:
        sys.exit("no kaldi record found")
PY
"$V" st >out 2>err; check "one kaldi record gone" 1 $?
grep -q "missing: no feature record for mel config kaldi" out || { echo "FAIL: the one error"; cat out; fail=1; }
grep -q note out && { echo "FAIL: a note for one record"; cat out; fail=1; }

# a split store: each part's note names the split store for the drop
"$FC_BIN/featurize" -q --writers 2 -o sp --manifest c/metadata.csv || exit 1
"$FC_BIN/featurize" -q --preset kaldi -o sp --manifest c/three.csv || exit 1
"$V" sp >out 2>err; check "split" 1 $?
grep -q "^sp/part-[01]: note: .*(cache-config --drop $kaldi sp)\$" out || { echo "FAIL: split: the note"; cat out; fail=1; }
"$FC_BIN/cache-config" -q --drop "$kaldi" sp || { echo "FAIL: split: the drop"; fail=1; }

[ $fail = 0 ] && echo "ok: many records missing under one config: one note, a way out that works"
exit $fail
