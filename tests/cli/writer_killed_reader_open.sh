#!/bin/bash
# A writer killed while it holds LMDB's write lock, while another process keeps the store open (a
# training run's loader): LMDB resets lock.mdb — its write mutex among it — only when the first
# process opens the store, so here the next writer meets the mutex the dead process held. LMDB's
# mutex is robust (the next locker is told its owner died, and takes it over): featurize and
# tokenize after the kill complete, the loader reads on, and the store verifies. A lock that is not
# robust would leave every later writer waiting for good (the timeouts below say so). The writer
# is held with the lock, not timed: cache-prune --compact stopped (FC_FAULT_STOP=compact:1, its
# copy written, LMDB's write transaction open) and killed with SIGKILL.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
if ! grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON; scripts/test sets it)" >&2
  exit 77
fi
T=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 12 || exit 1
head -n 6 c/metadata.csv >c/six.csv
"$FC_BIN/featurize" -q -o st --manifest c/six.csv || exit 1
stopped() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ]; }

"$FC_BIN/cache-prune" -q --manifest c/six.csv st || exit 1 # (nothing to remove: a copy to make)
FC_FAULT_STOP=compact:1 "$FC_BIN/cache-prune" -q --compact st >/dev/null 2>prune.err &
prune=$!
for _ in $(seq 400); do stopped $prune && break; sleep 0.05; done
stopped $prune || { echo "FAIL: cache-prune --compact never stopped at compact:1"; cat prune.err; exit 1; }
# a reader opens the store now (the compaction's refusal of readers came before) and stays
mkfifo go
"$PY" -c 'import sys, featcache
ld = featcache.Loader(sys.argv[1], features="hifigan", batch_size=2)
print(sum(len(b) for b in ld), flush=True)
sys.stdin.read()
print(sum(len(b) for b in ld), flush=True)' st <go >reader.out 2>reader.err &
reader=$!
exec 3>go
for _ in $(seq 400); do [ -s reader.out ] && break; sleep 0.05; done
[ "$(head -n 1 reader.out)" = 6 ] || { echo "FAIL: the reader: $(cat reader.out reader.err)"; exit 1; }
kill -9 $prune
wait $prune 2>/dev/null

timeout 60 "$FC_BIN/featurize" -o st --manifest c/metadata.csv >out 2>err
rc=$?
[ $rc = 124 ] && echo "FAIL: featurize after the kill waited 60 s for the dead writer's lock"
[ $rc = 0 ] && grep -q "(6 new, 6 already stored" err || { echo "FAIL: featurize after the kill: exit $rc"; cat err; fail=1; }
timeout 60 "$FC_BIN/tokenize" -q --build-vocab -o st --manifest c/metadata.csv >out 2>err
rc=$?
[ $rc = 0 ] || { echo "FAIL: tokenize after the kill: exit $rc"; cat err; fail=1; }
exec 3>&-
wait $reader || { echo "FAIL: the reader: exit $?"; cat reader.err; fail=1; }
[ "$(sed -n 2p reader.out)" = 6 ] || { echo "FAIL: the reader's snapshot: $(cat reader.out)"; fail=1; }
"$FC_BIN/cache-verify" --expect-tokens --manifest c/metadata.csv st >out 2>err
[ $? = 0 ] && grep -q "compact copy a killed cache-prune --compact left" out &&
  [ "$(grep -c ': error' out)" = 0 ] || { echo "FAIL: cache-verify after"; cat out err; fail=1; }
"$FC_BIN/cache-prune" -q st || { echo "FAIL: cache-prune after"; fail=1; }
"$FC_BIN/cache-verify" -q --strict --expect-tokens --manifest c/metadata.csv st >out 2>err ||
  { echo "FAIL: cache-verify --strict after the copy was removed"; cat out err; fail=1; }

[ $fail = 0 ] && echo "ok: a writer killed holding LMDB's write lock beside a reader: the next writers complete"
exit $fail
