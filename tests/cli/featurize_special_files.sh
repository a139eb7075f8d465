#!/usr/bin/env bash
# featurize given files that are not regular files. A FIFO is read once its writer comes, as cat
# reads one; one whose writer never comes holds its worker, and the first SIGINT (or SIGTERM) waits
# for the inputs in flight, saying so at once: a second one ends the process at once, exit 130
# (143), with a line that says so, and the work committed before it stays in a sound store. A character or block device
# (/dev/zero, a terminal) is no audio file: it fails at once with its reason, where /dev/zero was
# read into memory without end and a terminal waited for input (/dev/null stands for them here: a
# regression with /dev/zero would eat the machine's memory).
set -u
. "$FC_SRC/tests/cli/stop_site.bash" # sigint_default
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
sox -n -r 22050 -b 16 a.wav synth 0.5 sine 300 || { echo "FAIL: sox failed"; exit 1; }
mkfifo stray.wav

in_fifo_open() { grep -qx wait_for_partner /proc/"$1"/task/*/wchan 2>/dev/null; }

# 1. a FIFO nobody writes: one signal waits for it, the second ends the process
for sig in INT TERM; do
  want=$((128 + $(kill -l $sig)))
  rm -rf "s$sig"
  sigint_default "$B/featurize" -j 1 --batch 1 --device cpu -o "s$sig" a.wav stray.wav >out 2>err &
  pid=$!
  # until the worker waits in stray.wav's open (a FIFO's: wait_for_partner), a.wav done before
  for _ in $(seq 400); do in_fifo_open $pid && break; sleep 0.05; done
  in_fifo_open $pid || { echo "skipped: featurize was not seen in the FIFO's open" >&2; exit 77; }
  kill -$sig $pid
  sleep 0.3
  kill -0 $pid 2>/dev/null || fail "SIG$sig: the first signal ended the process: $(cat err)"
  grep -qx "featurize: interrupted: stopping after the work in flight (interrupt again to stop at once)" err ||
    fail "SIG$sig: the first signal was not acknowledged: $(cat err)"
  kill -$sig $pid
  for _ in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then
    fail "SIG$sig: still running 5 s after the second signal"
    kill -9 $pid
  fi
  wait $pid
  rc=$?
  [ $rc = $want ] || fail "SIG$sig: exit $rc, want $want"
  grep -qx "featurize: interrupted again: stopping now; work committed before stays in the store" err ||
    fail "SIG$sig: stderr: $(cat err)"
  "$B/cache-verify" -q "s$sig" >/dev/null 2>verr || fail "SIG$sig: cache-verify: $(cat verr)"
done

# 2. a FIFO whose writer comes: read as a file
(sleep 0.5; cat a.wav >stray.wav) &
timeout -s KILL 20 "$B/featurize" -q --device cpu -o f stray.wav 2>err ||
  fail "a FIFO with its writer: exit $?: $(cat err)"

# 3. devices: refused at once, by name and kind
timeout -s KILL 20 "$B/featurize" --device cpu -o d /dev/null a.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "devices: exit $rc, want 1"
sort >want <<'TXT'
featurize: /dev/null: not a regular file or a pipe (a device)
featurize: done: 1 of 2 (1 new, 0 already stored, 1 failed)
TXT
sort err | diff -u want - || fail "devices: stderr differs"

# 4. a device as the manifest: refused before the store is touched (/dev/zero was read as one
# line without end)
timeout -s KILL 20 "$B/featurize" --device cpu -o m --manifest /dev/null >out 2>err
rc=$?
[ $rc = 2 ] || fail "device manifest: exit $rc, want 2"
[ "$(cat err)" = "featurize: /dev/null: not a regular file or a pipe (a device)" ] ||
  fail "device manifest: $(cat err)"
[ -e m ] && fail "device manifest: a store was made"

# 5. a symbolic link to nothing (a corpus linked from a disk that moved): said so, with its
# target, where "No such file or directory" named a file ls lists
ln -s ../gone/b.wav dangling.wav
"$B/featurize" --device cpu -o l dangling.wav a.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "dangling link: exit $rc, want 1"
grep -qx 'featurize: dangling.wav: No such file or directory (a symbolic link to ../gone/b.wav)' err ||
  fail "dangling link: $(cat err)"

# a git-annex (DataLad) dataset installed without its content: each file a link into
# .git/annex/objects that is not there yet; said how to get it
mkdir -p ds/wav
ln -s ../.git/annex/objects/Xk/9Q/MD5E-s44144--0cc1.wav/MD5E-s44144--0cc1.wav ds/wav/c.wav
"$B/featurize" --device cpu -o l ds/wav/c.wav >out 2>err
grep -qx 'featurize: ds/wav/c.wav: No such file or directory (a git-annex file whose content is not here: git annex get, or datalad get)' err ||
  fail "git-annex link: $(cat err)"

# symbolic links in a loop (ln -s with its two names the wrong way round, or two links to each
# other, one of them across folders): said so, where "Too many levels of symbolic links" left it
# to the user to find; a chain only longer than the system follows is not called a loop
ln -s self.wav self.wav
mkdir lp && ln -s ../lp/y lp/x && ln -s x lp/y
touch t && prev=t && for i in $(seq 1 45); do ln -s "$prev" "c$i"; prev=c$i; done
"$B/featurize" --device cpu -o lo self.wav lp/x c45 a.wav >out 2>err
rc=$?
[ $rc = 1 ] || fail "link loops: exit $rc, want 1"
for w in 'self.wav: Too many levels of symbolic links (symbolic links in a loop: it links to self.wav, which leads back to it)' \
  'lp/x: Too many levels of symbolic links (symbolic links in a loop: it links to ../lp/y, which leads back to it)' \
  'c45: Too many levels of symbolic links (a chain of more symbolic links than the system follows: it links to c44)' \
  'done: 1 of 4 (1 new, 0 already stored, 3 failed)'; do
  grep -qxF "featurize: $w" err || fail "link loops: want '$w': $(cat err)"
done

[ $fails = 0 ] || exit 1
echo "featurize_special_files: ok"
