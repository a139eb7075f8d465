#!/usr/bin/env bash
# Every docs/ page with a "# name(N) — summary" first line is built into a man page, and each one
# reads cleanly on an 80-column terminal: `MANWIDTH=80 man -l` and groff with every warning on
# print no warning, no rendered line is wider than 80 characters, no Markdown escape leaks
# (`slaney\|htk`), no code block sits inside a list item (go-md2man runs it into the item's
# text), options print with ASCII hyphens (copied from the page, they work), and no page
# points to what a reader of the installed page cannot open (files outside the repository, the
# test suite, issue numbers). Every tool's --help names its man page, lists its options under
# headings, each of which the page documents (-h/--help and --version in the same words in every
# tool), and each usage form --help prints is in that page's SYNOPSIS. The pages are rendered as a UTF-8 terminal shows them
# (LC_ALL=C.UTF-8, which every Debian 12 has): in the C locale man renders for ASCII, which has no
# glyph for the phonemes, arrows and superscripts the pages hold.
set -u
export LC_ALL=C.UTF-8
SRC=${FC_SRC:?}
MAN=${FC_BIN:?}/man
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for t in man groff preconv; do
  command -v "$t" >/dev/null || { echo "FAIL: $t not found (scripts/test installs man-db and groff)"; exit 1; }
done

pages=0
for md in "$SRC"/docs/*.md; do
  first=$(head -n 1 "$md")
  [[ $first =~ ^#\ ([a-z][a-z0-9-]*)\(([1-9])\) ]] || continue
  name=${BASH_REMATCH[1]} sec=${BASH_REMATCH[2]}
  page=$MAN/$name.$sec
  pages=$((pages + 1))
  [ -s "$page" ] || { fail "$(basename "$md"): no man page $page (go-md2man missing at configure?)"; continue; }
  MANWIDTH=80 MAN_KEEP_FORMATTING= man -l "$page" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc = 0 ] && [ ! -s "$tmp/err" ] || fail "$name($sec): man exit $rc: $(head -c 600 "$tmp/err")"
  preconv "$page" | groff -t -man -Tutf8 -ww -z -rLL=80n 2>"$tmp/gerr"
  [ -s "$tmp/gerr" ] && fail "$name($sec): groff -ww: $(head -c 600 "$tmp/gerr")"
  # characters, not bytes: a wide line is one the terminal wraps
  "$PY" - "$tmp/out" "$name($sec)" >"$tmp/wide" <<'PY'
import sys
for n, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    line = line.rstrip("\n")
    if len(line) > 80:
        print(f"{sys.argv[2]}: line {n} has {len(line)} columns: {line.strip()[:70]}")
PY
  [ -s "$tmp/wide" ] && fail "$(head -n 5 "$tmp/wide") ($(wc -l <"$tmp/wide") lines over 80)"
  # prose is set ragged-right: justified, a line holding a long name (fc_featurize_run(), a
  # code span) spreads its other words apart ("The     library     call     is"); code blocks
  # (.nf), tables (.TS) and the footer line keep their own spacing
  sed '/^\.nf/,/^\.fi/d; /^\.TS/,/^\.TE/d' "$page" >"$tmp/prose.roff"
  MANWIDTH=80 man -l "$tmp/prose.roff" 2>/dev/null |
    awk 'NR > 1 && substr($0, 16) ~ /[^ ]     +[^ ]/ { print "line " NR ": " $0 }' |
    grep -v "$name($sec) *\$" | head -n 3 >"$tmp/spread"
  [ -s "$tmp/spread" ] && fail "$name($sec): words spread apart: $(cat "$tmp/spread")"
  grep -n '\\|' "$tmp/out" | head -n 3 >"$tmp/esc"
  [ -s "$tmp/esc" ] && fail "$name($sec): a Markdown escape shows: $(cat "$tmp/esc")"
  grep -q '‐‐' "$tmp/out" && fail "$name($sec): options print with U+2010 hyphens (not \\-)"
  grep -nE 'DESIGN\.md|\.\./shared|[Ii]ssue [0-9]+|tests/' "$tmp/out" | head -n 3 >"$tmp/ref"
  [ -s "$tmp/ref" ] && fail "$name($sec): points outside the installed docs: $(cat "$tmp/ref")"
  grep -q '^NAME$' "$tmp/out" || fail "$name($sec): no NAME section"
  # go-md2man runs a code block inside a list item into the item's text ("reported ascache-merge:")
  # and breaks the paragraph after it into lines of one word: such an example is inline code
  awk -v n="$name($sec)" '/^(- |[0-9]+\. )/ { item = 1; blank = 0; next }
    /^[ \t]*$/ { blank = 1; next }
    item && blank && /^      +[^ ]/ { print n ": line " NR ": a code block inside a list item"; exit }
    !/^ / { item = 0 }
    { blank = 0 }' "$md" >"$tmp/block"
  [ -s "$tmp/block" ] && fail "$(cat "$tmp/block")"
done
[ $pages -ge 8 ] || fail "only $pages man pages found in docs/"

# every table row of every page (and the README) has its header's cells: a pipe inside a cell,
# even in a code span, ends the cell unless written \| (GitHub then drops the cells past the
# header's, and the man page ran the pieces together as "id; text")
"$PY" - "$SRC" >"$tmp/cells" <<'PY'
import glob, os, re, sys
src = sys.argv[1]
for md in sorted(glob.glob(f"{src}/docs/**/*.md", recursive=True) + [f"{src}/README.md"]):
    fence, head = False, None
    for n, line in enumerate(open(md, encoding="utf-8"), 1):
        if line.lstrip().startswith("```"):
            fence, head = not fence, None
            continue
        if fence or not re.match(r"^\s*\|.*\|\s*$", line):
            head = None
            continue
        cells = re.sub(r"\\\|", "", line.strip())[1:-1].count("|") + 1
        if head is None:
            head = (cells, n)
        elif cells != head[0]:
            print(f"{os.path.relpath(md, src)}:{n}: {cells} cells, the header (line {head[1]}) {head[0]}")
PY
[ -s "$tmp/cells" ] && fail "a table row's cells differ from its header's (an unescaped |): $(head -n 3 "$tmp/cells")"

for tool in featurize tokenize cache-verify cache-bench cache-merge loader-bench cache-config cache-prune; do
  "$FC_BIN/$tool" --help >"$tmp/help" 2>&1 || fail "$tool --help failed"
  grep -q "man $tool" "$tmp/help" || fail "$tool --help does not name its man page: $(tail -n 2 "$tmp/help")"
  grep -nE 'docs/|DESIGN|\.\./shared|tests/' "$tmp/help" >"$tmp/ref" && fail "$tool --help: $(cat "$tmp/ref")"
  # -h/--help and --version say the same words in every tool
  grep -qxE '  -h, --help +show this help and exit' "$tmp/help" ||
    fail "$tool --help: not '-h, --help  show this help and exit': $(grep -E -- '--help ' "$tmp/help")"
  grep -qxE '      --version +show the version and exit' "$tmp/help" ||
    fail "$tool --help: not '--version  show the version and exit': $(grep -E -- '--version ' "$tmp/help")"
  # options are listed under a heading ("Output:"), never run on from a paragraph of prose
  awk -v t="$tool" '/^  -[a-zA-Z0-9], --|^      --/ {
      if (prev !~ /^  -[a-zA-Z0-9], --|^      --|^                               [^ ]|^[A-Z][A-Za-z ()]*:$/)
        print t " --help: an option line right after [" prev "]" }
    { prev = $0 }' "$tmp/help" >"$tmp/layout"
  [ -s "$tmp/layout" ] && fail "$(cat "$tmp/layout")"
  # each long option of --help is documented on the page
  for o in $(grep -oE '^  -[a-zA-Z0-9], --[a-z0-9-]+|^      --[a-z0-9-]+' "$tmp/help" | grep -oE -- '--[a-z0-9-]+'); do
    grep -qF -- "$o" "$SRC/docs/$tool.md" || fail "$tool: --help lists $o, docs/$tool.md does not"
  done
  # each form of the usage --help prints is in the man page's SYNOPSIS (a synopsis line may wrap
  # onto a line indented further); spaces compared as one
  awk -v t="$tool" 'length($0) > 80 { print t " --help: line " NR " has " length($0) " columns" }' \
    "$tmp/help" >"$tmp/wide"
  [ -s "$tmp/wide" ] && fail "$(cat "$tmp/wide")"
  # (a usage form too long for a line goes on on the next, indented further than the forms)
  awk 'NR == 1 { sub(/^Usage: /, "") } /^$/ { exit }
    NR > 1 && /^         / { sub(/^ +/, ""); form = form " " $0; next }
    { if (form != "") print form; form = $0; sub(/^ +/, "", form) }
    END { if (form != "") print form }' "$tmp/help" >"$tmp/usage"
  awk 'function flush() { if (line != "") print line; line = "" }
    /^## / { flush(); p = ($0 == "## Synopsis"); next }
    p && /^      [^ ]/ { sub(/^ +/, ""); line = line " " $0; next }
    p && /^    [^ ]/ { flush(); line = $0; sub(/^ +/, "", line) }
    END { flush() }' "$SRC/docs/$tool.md" | tr -s ' ' >"$tmp/synopsis"
  while IFS= read -r form; do
    form=$(tr -s ' ' <<<"$form")
    grep -qxF -- "$form" "$tmp/synopsis" || fail "$tool: --help's usage '$form' is not in the SYNOPSIS of docs/$tool.md"
  done <"$tmp/usage"
done

[ $fails = 0 ] && echo "ok: $pages man pages clean at 80 columns" && exit 0
exit 1
