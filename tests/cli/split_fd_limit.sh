#!/usr/bin/env bash
# A split store (featurize --writers 4) opened under a low open-file limit: each part holds 3
# files, so 4 parts and the tool's own pass a soft limit of 12. featurize raised its soft limit
# only after the store was open (for its workers), tokenize never: both failed at the open,
# "featurize: s/part-2: Too many open files", exit 2, where the hard limit allowed far more.
# Now the soft limit is raised before the open (ulimit -Sn 12: the runs pass); past the hard one,
# which no process raises (ulimit -n 12 sets both), the message says so and what to do.
set -u
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
for i in 1 2 3 4; do
  sox -n -r 22050 -b 16 "a$i.wav" synth 0.3 sine $((100 * i + 200)) || { echo "FAIL: sox failed"; exit 1; }
done
printf 'a1|one\na2|two\n' >t.csv
[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 64 ] || { echo "skipped: hard open-file limit $(ulimit -Hn) < 64"; exit 77; }

(ulimit -Sn 12 && exec "$B/featurize" -q --device cpu --writers 4 -o s a1.wav a2.wav) >out 2>err ||
  fail "featurize --writers 4 under ulimit -Sn 12: exit $?: $(cat err)"
(ulimit -Sn 12 && exec "$B/featurize" -q --device cpu -o s a3.wav) >out 2>err ||
  fail "featurize into the split store under ulimit -Sn 12: exit $?: $(cat err)"
(ulimit -Sn 12 && exec "$B/tokenize" -q --manifest t.csv --build-vocab -o s) >out 2>err ||
  fail "tokenize into the split store under ulimit -Sn 12: exit $?: $(cat err)"
"$B/cache-verify" -q s >/dev/null 2>err || fail "cache-verify: $(cat err)"

# the hard limit too: said, with what to do
msg="Too many open files: this process may open 12 files at most (its hard limit: ulimit -Hn), and a store of 4 parts holds 3 a part beside the tool's own: raise it (ulimit -n 1024 in a new shell) and run again; nothing done"
(ulimit -n 12 && exec "$B/featurize" -q --device cpu -o s a4.wav) >out 2>err
rc=$?
[ $rc = 2 ] && [ "$(sed 's/part-[0-9]/part-N/' err)" = "featurize: s/part-N: $msg" ] || fail "featurize, ulimit -n 12: exit $rc: $(cat err)"
(ulimit -n 12 && exec "$B/tokenize" -q --manifest t.csv --build-vocab -o s) >out 2>err
rc=$?
[ $rc = 2 ] && [ "$(sed 's/part-[0-9]/part-N/' err)" = "tokenize: s/part-N: $msg" ] || fail "tokenize, ulimit -n 12: exit $rc: $(cat err)"

[ $fails = 0 ] || exit 1
echo "split_fd_limit: ok"
