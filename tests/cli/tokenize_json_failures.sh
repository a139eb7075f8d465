#!/usr/bin/env bash
# tokenize --json lists its failed lines, in the shape featurize --json lists its failed inputs:
# "failures":[{"id","source","line","error","reason"}] (id null for a line without one, source the
# manifest as given, error fc_strerror of the code, reason the text of the stderr line) and
# "failures_listed"; at most 10,000 are listed, "failed" counts them all. Golden: the whole object
# but wall_seconds and config_digest. A line the manifest reader refuses whole — not UTF-8, no
# text column — gave "id":null though its first column names it ("c|Bad \xC3( text."): now that
# column is its id in the list when it is one (a TSV's too); null where it is not UTF-8.
set -u
T=${FC_BIN:?}/tokenize
PY=${FC_PYTHON:-python3}
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cd "$d" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
golden() { sed -E 's/"wall_seconds":[0-9.]+/"wall_seconds":W/; s/"config_digest":"[0-9a-f]{32}"/"config_digest":D/' "$1"; }

# six lines, four bad: empty text (2), invalid UTF-8 (3), a duplicate id (4), no text column (5)
{
  printf 'a|Hello there.\n'
  printf 'b|   \n'
  printf 'c|Bad \xC3\x28 text.\n'
  printf 'a|Again.\n'
  printf 'e\n'
  printf 'f|The "last" one.\n'
} >m.csv
"$T" -q --build-vocab --json --max-failed 4 -o st m.csv >out 2>err
rc=$?
[ $rc = 0 ] || fail "exit $rc, want 0: $(cat err)"
cat >want <<'JSON'
{"processed":2,"skipped_existing":0,"failed":4,"not_started":0,"lines":6,"tokens":27,"unknown":0,"wall_seconds":W,"config_digest":D,"tokenizer":"chars","checked_read_only":false,"not_stored":0,"max_failed":"4","failed_allowed":true,"failures":[{"id":"b","source":"m.csv","line":2,"error":"FC_EEMPTY: empty input (no samples, no text)","reason":"text is only white space"},{"id":"c","source":"m.csv","line":3,"error":"FC_EUTF8: invalid UTF-8","reason":"invalid UTF-8 (byte 0xC3 at column 7: Latin-1 or Windows-1252 text? convert the manifest: iconv -f WINDOWS-1252 -t UTF-8)"},{"id":"a","source":"m.csv","line":4,"error":"FC_EDUPLICATE: duplicate id","reason":"duplicate id 'a'"},{"id":"e","source":"m.csv","line":5,"error":"FC_EMANIFEST: malformed manifest line","reason":"missing text column (expected id|text[|normalized])"}],"failures_listed":4}
JSON
golden out >got
diff want got >diff || fail "--json failures: $(cat diff)"
# each listed reason is the stderr line's
"$PY" - out err <<'PY' || fail "the listed reasons are not the stderr lines: $(cat err)"
import json, sys
r = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().splitlines()
want = ["tokenize: %s:%d: %s" % (f["source"], f["line"], f["reason"]) for f in r["failures"]]
assert lines[:len(want)] == want, (lines, want)
PY

# a TSV's refused lines name their first column too; a JSON line refused whole has none
printf 'a\tHello.\nc\tBad \xC3\x28 text.\nd\n' >m.tsv
printf '{"id": "a", "text": "Hi."}\n{"id": "c", "text": "Bad \xC3\x28"}\n' >m.jsonl
for m in m.tsv m.jsonl; do
  "$T" -q --build-vocab --json --max-failed 2 -o "st-$m" "$m" >out 2>err || fail "$m: exit $?: $(cat err)"
  "$PY" - out "$m" <<'PY' || fail "$m: the ids listed: $(cat out)"
import json, sys
ids = [(f["line"], f["id"]) for f in json.load(open(sys.argv[1]))["failures"]]
want = [(2, "c"), (3, "d")] if sys.argv[2] == "m.tsv" else [(2, None)]
assert ids == want, ids
PY
done

# a clean rerun of the good lines: an empty list
head -n 1 m.csv >good.csv
"$T" -q --build-vocab --json -o st2 good.csv >out 2>err || fail "clean run: $(cat err)"
grep -q '"failed_allowed":true,"failures":\[\],"failures_listed":0}$' out || fail "clean run: $(cat out)"

# stdin: the source is "-" (stderr says "(stdin)"); a line whose id is not UTF-8 has a null id
printf 'a|Hello.\n\xff|Bad id.\n' | "$T" -q --build-vocab --json -o st3 - >out 2>err
[ $? = 1 ] || fail "stdin: want exit 1: $(cat err)"
"$PY" - out <<'PY' || fail "stdin: $(cat out)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["failed"] == 1 and r["failures_listed"] == 1, r
f = r["failures"][0]
assert f["id"] is None and f["source"] == "-" and f["line"] == 2, f
assert f["error"].startswith("FC_EUTF8"), f
PY

# more than 10,000 failed lines: 10,000 listed, all counted
{ echo 'ok|Fine.'; for i in $(seq 1 10005); do echo "x$i|"; done; } >many.csv
"$T" -q --build-vocab --json --max-failed 100% -o st4 many.csv >out 2>err || fail "many: $(tail -n 1 err)"
"$PY" - out <<'PY' || fail "10,005 failures: $(head -c 600 out)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["failed"] == 10005 and r["failures_listed"] == 10000 == len(r["failures"]), r["failed"]
assert r["failures"][0]["id"] == "x1" and r["failures"][-1]["id"] == "x10000", r["failures"][-1]
PY

if [ $fails -gt 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo ok
