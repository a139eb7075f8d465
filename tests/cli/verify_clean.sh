#!/bin/bash
# cache-verify on a clean store of 10,000 records (written by the py-lmdb fixture): exit 0, the
# report, --json fields, --status, -q, and one store clean next to one that is not there.
set -u
V="$FC_BIN/cache-verify"
[ -x "$V" ] || { echo "FAIL: $V not built"; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
"$FC_PYTHON" "$FC_SRC/tests/reference/test_verify_store.py" make s --n 10000 --min-samples 256 \
  --max-samples 1000 --tokens --manifest m.csv >/dev/null ||
  { echo "FAIL: the fixture writer (test_verify_store.py make) failed"; exit 1; }
fail=0

"$V" --finite --expect-preset hifigan --expect-tokens=chars --manifest m.csv s >out 2>err
rc=$?
[ $rc = 0 ] || { echo "FAIL clean: exit $rc"; cat out err; fail=1; }
sed -E 's/checked in [0-9.]+ s \([0-9.]+ GB\/s, [0-9]+ threads\)/checked in T/' out >got
cat >want <<'W'
s: 0 errors, 0 warnings; 20000 records (0.008 GB) checked in T; 10000 audio, 10000 text entries; 1 mel, 1 token configs
W
diff -u want got || fail=1
[ "$(cat err)" = "cache-verify: done: 1 of 1 stores clean" ] || { echo "FAIL clean stderr"; cat err; fail=1; }

"$V" --json -q -j 2 s >out 2>err || { echo "FAIL json exit"; fail=1; }
[ -s err ] && { echo "FAIL -q wrote to stderr"; cat err; fail=1; }
"$FC_PYTHON" - out <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
want = {"store": "s", "ok": True, "records_checked": 20000, "errors": [], "warnings": [],
        "error_count": 0, "warning_count": 0, "stopped": False, "threads": 2}
bad = {k: (r.get(k), v) for k, v in want.items() if r.get(k) != v}
assert not bad, bad
assert r["entries"] == {"audio": 10000, "text": 10000, "feat": 10000, "tok": 10000, "meta": 3}, r
assert r["bytes_checked"] > 10000 * 64 and r["wall_seconds"] > 0, r
assert r["map_used"] <= r["data_size"] and r["stale_readers"] == 0, r
PY

"$V" --status s >out 2>err; rc=$?
[ $rc = 0 ] && [ ! -s out ] && [ ! -s err ] || { echo "FAIL --status: exit $rc"; fail=1; }

# a clean store and a missing one: exit 1 (the job ran, one store failed it; 2 is "nothing
# done"), the clean one reported; under -q too, exit 1 comes with its summary
"$V" -q s nope >out 2>err; rc=$?
[ $rc = 1 ] || { echo "FAIL two stores: exit $rc"; fail=1; }
[ "$(cat err)" = "cache-verify: nope: cannot open the store: No such file or directory
cache-verify: done: 1 of 2 stores clean (1 not checked)" ] || { echo "FAIL two stores stderr"; cat err; fail=1; }
grep -q '^s: 0 errors, 0 warnings;' out || { echo "FAIL two stores stdout"; cat out; fail=1; }

# a store no process has open (no lock.mdb; or read-only: directory not writable): opened with
# NOLOCK, nothing written, not even lock.mdb
rm -f s/lock.mdb; chmod a-w s
sum1=$(md5sum s/data.mdb)
"$V" --json -q s >out 2>err; rc=$?
chmod u+w s
[ $rc = 0 ] || { echo "FAIL read-only store: exit $rc"; cat err; fail=1; }
grep -q '"nolock":true' out || { echo "FAIL read-only store not opened NOLOCK"; fail=1; }
[ ! -e s/lock.mdb ] || { echo "FAIL lock.mdb written on a read-only store"; fail=1; }
[ "$sum1" = "$(md5sum s/data.mdb)" ] || { echo "FAIL data.mdb changed"; fail=1; }

# a teammate's store (its lock.mdb there, not this user's to write): read lock-free too, and said
# on stderr (it was silent): a writer committing meanwhile may reuse the pages being checked, so
# a finding then may be no damage. Nothing with --status. Root reads and writes anything:
# as_owner.bash drops the capabilities that let it.
. "$FC_SRC/tests/cli/as_owner.bash"
as_user=("${as_owner[@]}")
"$FC_PYTHON" -c 'import lmdb, sys; lmdb.open(sys.argv[1], readonly=True, max_dbs=8).close()' s # lock.mdb made
chmod a-w s s/lock.mdb
"${as_user[@]}" "$V" -q s >out 2>err; rc=$?
"${as_user[@]}" "$V" --status s >sout 2>serr; src=$?
# --clear-stale-readers there cannot clear anything (lock.mdb is not this user's): said, not silent
"${as_user[@]}" "$V" -q --clear-stale-readers s >cout 2>cerr; crc=$?
chmod u+w s s/lock.mdb
[ $crc = 0 ] && [ "$(tail -n 1 cerr)" = "cache-verify: s: --clear-stale-readers: nothing cleared, its reader slots not even read (lock.mdb is not this user's to write: its owner can clear them)" ] ||
  { echo "FAIL teammate's store, --clear-stale-readers: exit $crc"; cat cerr; fail=1; }
[ $rc = 0 ] && [ "$(cat err)" = "cache-verify: s: not writable by this user (lock.mdb): LMDB cannot take its reader lock: read without it (MDB_NOLOCK); a writer committing meanwhile could make sound records look damaged" ] ||
  { echo "FAIL teammate's store: exit $rc"; cat err; fail=1; }
[ $src = 0 ] && [ ! -s sout ] && [ ! -s serr ] || { echo "FAIL teammate's store, --status: exit $src"; cat sout serr; fail=1; }
exit $fail
