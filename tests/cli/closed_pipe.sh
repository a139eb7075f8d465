#!/usr/bin/env bash
# A reader that stops early (`| head`): the tools keep SIGPIPE's default action, as cat, grep and
# git do, so the write after the reader went away ends them at once, killed by SIGPIPE (141 in
# the shell) — what docs/featurize.md and cache-verify.md "Exit status" say. featurize writes
# stdout only at the end, after every commit: a --json piped into `head -c` loses nothing of the
# store (all 3000 failure records are there, the store verifies). cache-verify stops at once
# rather than checking on for a reader that is gone.
set -u
B=${FC_BIN:?}
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
mkdir none
seq -f 'u%05g|x' 1 3000 >m.csv # 3000 missing files: a --json of ~400 KB, past a pipe's buffer

"$B/featurize" -q --json --device cpu --manifest m.csv --audio-dir none -o s 2>err | head -c 10 >out
st=("${PIPESTATUS[@]}")
[ "${st[0]}" = 141 ] || fail "featurize --json | head -c 10: exit ${st[0]}, want 141 (SIGPIPE)"
[ "$(cat out)" = '{"processe' ] || fail "featurize: stdout: $(cat out)"
n=$("$PY" - <<'PY'
import lmdb
env = lmdb.open("s", readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    print(t.stat(env.open_db(b"failed", txn=t, create=False))["entries"])
PY
)
[ "$n" = 3000 ] || fail "featurize: $n failure records, want 3000: the store was not complete"
"$B/cache-verify" -q s >/dev/null 2>verr || fail "cache-verify after the SIGPIPE: $(cat verr)"

"$B/cache-verify" --manifest m.csv s 2>/dev/null | head -n 1 >out
st=("${PIPESTATUS[@]}")
[ "${st[0]}" = 141 ] || fail "cache-verify | head -n 1: exit ${st[0]}, want 141 (SIGPIPE)"

[ $fails = 0 ] || exit 1
echo "closed_pipe: ok"
