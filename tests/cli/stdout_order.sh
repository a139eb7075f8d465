#!/usr/bin/env bash
# Several stores on one command line, stdout and stderr in one stream (`tool ... 2>&1 | tee log`,
# `>log 2>&1`): each store's report comes where it was produced, before the next store's messages
# — not all at the exit, after every later message (stdout into a pipe or a file is written in
# blocks, stderr at once; the tools write stdout at each end of line when both are one stream,
# and flush it before each message). Apart, stdout still carries only the reports.
set -u
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for i in 1 2 3; do
  sox -n -r 22050 -b 16 "a$i.wav" synth 0.5 sine $((200 * i)) || { echo "FAIL: sox failed"; exit 1; }
done
"$B/featurize" -q --device cpu -o s1 a1.wav a2.wav || fail "featurize s1"
"$B/featurize" -q --device cpu -o s2 a3.wav || fail "featurize s2"
mkdir notstore && echo x >notstore/f

# the order of the lines' first words: s1's report, notstore's message, s2's report
order() { sed -E 's/^(cache-[a-z]+: [a-z0-9]+|\{"store":"[a-z0-9]+"|[a-z0-9]+:).*/\1/' "$1" | tr '\n' ' '; }
"$B/cache-verify" s1 notstore s2 2>&1 | cat >log
want='s1: cache-verify: notstore s2: cache-verify: done '
[ "$(order log)" = "$want" ] || fail "cache-verify 2>&1 | cat: order '$(order log)', want '$want': $(cat log)"
"$B/cache-verify" s1 notstore s2 >log 2>&1
[ "$(order log)" = "$want" ] || fail "cache-verify >log 2>&1: order '$(order log)', want '$want'"
"$B/cache-config" --no-count s1 notstore s2 2>&1 | grep -v '^digest\|^[0-9a-f]\{32\}' >log
want='s1: cache-config: notstore s2: cache-config: done '
[ "$(order log)" = "$want" ] || fail "cache-config 2>&1 | cat: order '$(order log)', want '$want': $(cat log)"
"$B/cache-config" --json s1 notstore s2 2>&1 | cat >log
want='{"store":"s1" cache-config: notstore {"store":"notstore" {"store":"s2" cache-config: done '
[ "$(order log)" = "$want" ] || fail "cache-config --json 2>&1 | cat: order '$(order log)', want '$want': $(cat log)"

# apart: stdout holds the reports alone, stderr the message
"$B/cache-config" --json s1 notstore s2 >out 2>err
[ "$(grep -c '^{"store"' out)" = 3 ] && [ "$(wc -l <out)" = 3 ] || fail "cache-config --json >out: $(cat out)"
grep -q '^cache-config: notstore: not a featcache store' err || fail "cache-config 2>err: $(cat err)"

[ $fails = 0 ] || exit 1
echo "stdout_order: ok"
