#!/usr/bin/env bash
# cache-bench and a store whose name holds a newline or a byte that is not UTF-8 (a Latin-1 name
# from an old archive): its table, verdict, chart and progress lines name it as the other tools'
# reports and messages do (quoted, "we\nird", "lat\xe9"). They printed it raw: the verdict, one
# line for scripts (grep '^verdict:'), was split in two; stdout and the progress on stderr were
# not UTF-8; and the SVG, declared UTF-8, was not well-formed XML. --json keeps its rule (U+FFFD
# for such a byte; the verdict inside it is the quoted line).
set -u
bin=${FC_BIN:?}/cache-bench
PY=${FC_PYTHON:-python3}
fail() { echo "FAIL: $*" >&2; exit 1; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
nl="$t/we
ird"
lat="$t/lat$(printf '\351')"
"$PY" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store(sys.argv[1], 4, frames=10); f.make_store(sys.argv[2], 4, frames=10, seed=1)" "$nl" "$t/l" ||
  fail "fixture"
mv "$t/l" "$lat" # (py-lmdb takes no path that is not UTF-8)
utf8() { "$PY" -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$1" 2>/dev/null; }
run() { "$bin" --no-probe -p random -s warm -b 2 --duration 0 "$@" >"$t/out" 2>"$t/err" || fail "$*: exit $?: $(cat -v "$t/err")"; }

run -q "$nl"
grep -qxF "store: \"$t/we\\nird\"  (4 records, 0.0 MB payload, data.mdb 0.1 MB)" "$t/out" ||
  fail "store line: $(cat -v "$t/out")"
[ "$(grep -c '^verdict: ' "$t/out")" = 1 ] && grep -q "^verdict: \"$t/we\\\\nird\" keeps up with 1 GPU" "$t/out" ||
  fail "verdict: $(cat -v "$t/out")"
[ "$(grep -c . "$t/out")" = "$(grep -cE '^(store: |device: |note: |pattern |random |latencies |verdict: |recommendation: )' "$t/out")" ] ||
  fail "a line not of the report: $(cat -v "$t/out")"

run --progress --svg "$t/c.svg" "$lat"
utf8 "$t/out" || fail "stdout is not UTF-8: $(cat -v "$t/out")"
utf8 "$t/err" || fail "stderr (progress) is not UTF-8: $(cat -v "$t/err")"
grep -q "^verdict: \"$t/lat\\\\xe9\" keeps up" "$t/out" || fail "verdict: $(cat -v "$t/out")"
grep -q "^cache-bench: \"$t/lat\\\\xe9\": pass 1 of 2: random warm" "$t/err" || fail "progress: $(cat -v "$t/err")"
"$PY" - "$t/c.svg" "\"$t/lat\\xe9\"" <<'PY' || fail "chart: $(head -c 300 "$t/c.svg" | cat -v)"
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()  # well-formed, or this raises
titles = [e.text for e in root.iter("{http://www.w3.org/2000/svg}title") if e.text]
assert any(t.startswith(sys.argv[2] + ": random warm") for t in titles), titles
PY

# several stores as one dataset and side by side
run -q "$nl" "$lat"
grep -qF "store: \"$t/we\\nird\" + \"$t/lat\\xe9\"  (one dataset of 2 stores: 8 records, " "$t/out" ||
  fail "dataset store line: $(cat -v "$t/out")"
utf8 "$t/out" || fail "dataset: stdout is not UTF-8: $(cat -v "$t/out")"
run -q --separate "$nl" "$lat"
[ "$(grep -c '^verdict: "' "$t/out")" = 2 ] && utf8 "$t/out" || fail "--separate: $(cat -v "$t/out")"
grep -qxF "[2] store: \"$t/lat\\xe9\"  (4 records, 0.0 MB payload, data.mdb 0.1 MB)" "$t/out" ||
  fail "--separate store line: $(cat -v "$t/out")"

# --json: valid UTF-8, the store as the JSON rule has it, the verdict quoting it
run -q --json "$lat"
"$PY" - "$t/out" "$t/lat" <<'PY' || fail "--json: $(cat -v "$t/out")"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
s = objs[-1]
assert s["store"] == sys.argv[2] + "\ufffd", s["store"]
assert s["verdict"].startswith('"' + sys.argv[2] + '\\xe9" keeps up'), s["verdict"]
PY
echo ok
