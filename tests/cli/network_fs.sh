#!/usr/bin/env bash
# The writers (featurize, tokenize, cache-merge's OUT) say, whatever -q, when the store they are
# about to write lies on a network file system (NFS, Lustre, SMB...), where LMDB's lock file and
# map are not reliable and a store can be corrupted silently (docs/scale-out.md "File systems");
# the run goes on. The mount table is the test's own (FC_MOUNTINFO): a folder of the test given as
# an nfs4 mount, another (its name with a space, escaped \040 in the table) as lustre, one mounted
# over the nfs4 one as ext4, the rest on the root's ext4. A store still to be made is judged by the
# folder it would be made in; readers say nothing.
set -u
PY=${FC_PYTHON:-python3}
FZ=$FC_BIN/featurize
TK=$FC_BIN/tokenize
MG=$FC_BIN/cache-merge
[ -x "$FZ" ] && [ -x "$TK" ] && [ -x "$MG" ] || { echo "FAIL: tools not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
tmp=$(pwd -P) # the real path: the table names mount points by theirs
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
"$PY" - <<'PY' || exit 1
import math, struct, wave
with wave.open("a.wav", "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / 5))) for i in range(22050)))
PY
printf 'a\thello there\n' >t.tsv
mkdir -p nfs/over "lus tre" local
cat >mounts <<TXT
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
90 22 0:50 / $tmp/nfs rw,relatime shared:40 - nfs4 server:/export/home rw,vers=4.2
91 22 0:51 / $tmp/lus\\040tre rw,relatime - lustre 10.0.0.1@tcp:/scratch rw
92 90 8:2 / $tmp/nfs/over rw,relatime - ext4 /dev/vdb1 rw
TXT
export FC_MOUNTINFO=$tmp/mounts
said() { # WHO STORE TYPE: the warning, once, in err
  [ "$(grep -c "^$1: $2: on a network file system ($3): LMDB writers need a local one, and a store written over the network can be corrupted silently: write it on local disk or tmpfs and copy it there when done (docs/scale-out.md \"File systems\")$" err)" = 1 ] ||
    { fail "$1 $2: want the $3 warning once"; cat err; }
}
quiet() { # WHAT: nothing in err
  [ -s err ] && { fail "$1: said: $(cat err)"; }
}
"$FZ" -q --device cpu -o nfs/st a.wav 2>err || fail "featurize into nfs/st: $(cat err)"
said featurize nfs/st nfs4
"$TK" -q --build-vocab -o nfs/st t.tsv 2>err || fail "tokenize into nfs/st: $(cat err)"
said tokenize nfs/st nfs4
[ -s nfs/st/data.mdb ] || fail "nfs/st was not written"
"$FZ" -q --device cpu -o "lus tre/st" a.wav 2>err || fail "featurize into 'lus tre/st': $(cat err)"
said featurize "lus tre/st" lustre
"$FZ" -q --device cpu -o nfs/over/st a.wav 2>err || fail "featurize into nfs/over/st: $(cat err)"
quiet "featurize into a local mount over the nfs one"
"$FZ" -q --device cpu -o local/st a.wav 2>err || fail "featurize into local/st: $(cat err)"
quiet "featurize into a local folder"
"$MG" -q -o nfs/m local/st 2>err || fail "cache-merge -o nfs/m: $(cat err)"
said cache-merge nfs/m nfs4
"$MG" -q -o local/m nfs/st 2>err || fail "cache-merge from nfs/st: $(cat err)"
quiet "cache-merge of an input on nfs into a local OUT"
"$FC_BIN/cache-verify" -q nfs/st >/dev/null 2>err || fail "cache-verify nfs/st: $(cat err)"
quiet "cache-verify (a reader) on nfs"
[ "$fails" = 0 ] && echo ok
exit $((fails > 0))
