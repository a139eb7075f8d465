#!/usr/bin/env bash
# cache-config's listing names a store as every tool names it (git's way: "st\nore", "caf\xe9"),
# so that a table's first line, "STORE: N configs", stays one line that a script can read; it
# printed the name as it is (a store named st<newline>ore split that line in two, a Latin-1 name
# made stdout not UTF-8). --json keeps the name as a JSON string (U+FFFD for such a byte).
set -u
B=${FC_BIN:?}
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
nl=$'\n'
printf 'a|Hello there.\n' >m.csv
"$B/tokenize" -q -o st --manifest m.csv --manifest-format ljspeech --build-vocab || fail "tokenize"
cp -r st "st${nl}ore" && cp -r st $'caf\xe9' || exit 1
for s in "st${nl}ore|\"st\\nore\"" $'caf\xe9|"caf\\xe9"' "st|st"; do
  name=${s%%|*} shown=${s#*|}
  "$B/cache-config" "$name" >out 2>err || fail "$shown: exit $?: $(cat err)"
  [ "$(head -n 1 out)" = "$shown: 1 config" ] || { fail "$shown: first line"; cat out; }
  [ "$(wc -l <out)" = 3 ] || { fail "$shown: $(wc -l <out) lines, want 3"; cat out; }
  "$B/cache-config" --json "$name" >out 2>err || fail "$shown --json: exit $?"
  "$PY" -c 'import json
o = json.load(open("out", encoding="utf-8"))
assert isinstance(o["store"], str) and o["parts"] == 1, o' || fail "$shown --json: not one JSON object"
done
[ "$fails" = 0 ] && echo ok
exit $((fails > 0))
