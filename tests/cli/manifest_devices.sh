#!/usr/bin/env bash
# A device given as the manifest of any tool that reads one (tokenize, cache-verify, cache-prune,
# loader-bench, featurize) is refused before anything is read or written: exit 2, "TOOL: PATH: not
# a regular file or a pipe (a device)". /dev/zero was read as one line without end, into memory
# until the machine had none (tokenize, cache-verify, cache-prune, loader-bench); /dev/null stands
# for it here, as a regression with /dev/zero would eat the machine's memory. A pipe is still read
# (<(...)), and stdin ("-").
set -u
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
printf 'a\thello\n' >t.tsv
"$B/featurize" -q --device cpu -o st a.wav || fail "featurize st"
"$B/tokenize" -q -t chars --build-vocab -o st t.tsv || fail "tokenize st"
cp st/data.mdb before.mdb

refused() { # NAME TOOL ARGS...: exit 2, the one line, st unchanged, no store n made
  local name=$1 tool=$2
  shift 2
  timeout -s KILL 20 "$B/$tool" "$@" >out 2>err
  local rc=$?
  [ $rc = 2 ] || fail "$name: exit $rc, want 2"
  [ "$(cat err)" = "$tool: /dev/null: not a regular file or a pipe (a device)" ] ||
    fail "$name: $(cat err)"
  [ -e n ] && fail "$name: a store was made"
  cmp -s st/data.mdb before.mdb || fail "$name: st changed"
}
refused "tokenize" tokenize -q -t chars --build-vocab -o n /dev/null
refused "tokenize --manifest" tokenize -q -t chars --build-vocab -o n --manifest /dev/null
refused "tokenize into a store" tokenize -q -t chars --build-vocab -o st /dev/null
refused "cache-verify --manifest" cache-verify -q --manifest /dev/null st
refused "cache-prune --manifest" cache-prune --manifest /dev/null st
refused "loader-bench --manifest" loader-bench --manifest /dev/null st
refused "featurize --manifest" featurize -q --device cpu -o n --manifest /dev/null

# a pipe and stdin are manifests as before
"$B/tokenize" -q -t chars --build-vocab -o p <(cat t.tsv) || fail "tokenize <(...): exit $?"
"$B/tokenize" -q -t chars --build-vocab -o s - <t.tsv || fail "tokenize -: exit $?"
"$B/cache-verify" -q --manifest <(echo a.wav) st || fail "cache-verify --manifest <(...): exit $?"

[ "$fails" = 0 ] && echo ok
exit $((fails > 0))
