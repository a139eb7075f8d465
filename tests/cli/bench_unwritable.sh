#!/usr/bin/env bash
# cache-bench on a store this user cannot write (a shared dataset, a colleague's cache): LMDB
# opens lock.mdb for writing even to read, so the open failed with a bare "Permission denied"
# that --read-only did not cure. It is refused with a line that says why and what to do (exit 2),
# as on a read-only mount, and --read-only benches it (MDB_NOLOCK).
# As root the permissions bind no one: the runs drop the capabilities that let root past them
# (as_owner.bash).
set -u
bin=$FC_BIN/cache-bench
fail() { echo "FAIL: $*" >&2; exit 1; }
t=$(mktemp -d); trap 'chmod -R u+w "$t"; rm -rf "$t"' EXIT
"$FC_PYTHON" -c "import sys; sys.path.insert(0, '$FC_SRC/tests/reference'); import test_bench_fixture as f; f.make_store('$t/s', 6, frames=20)" \
  || fail "fixture"
chmod 555 "$t/s" && chmod 444 "$t/s"/*.mdb
. "$FC_SRC/tests/cli/as_owner.bash"
as=("${as_owner[@]}")

"${as[@]}" "$bin" -q --no-probe "$t/s" >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 2 ] || fail "not writable: exit $rc, want 2 ($(cat "$t/err"))"
[ -s "$t/out" ] && fail "not writable: wrote to stdout"
want="cache-bench: $t/s: store is not writable by this user (lock.mdb): LMDB cannot take its reader lock, so a writer elsewhere could change it under the benchmark; pass --read-only to bench it anyway"
[ "$(cat "$t/err")" = "$want" ] || fail "stderr
got:  $(cat "$t/err")
want: $want"

"${as[@]}" "$bin" --read-only --no-probe --json -p sequential -s warm -b 2 --duration 0 "$t/s" \
  >"$t/out" 2>"$t/err"; rc=$?
[ $rc -eq 0 ] || fail "--read-only: exit $rc: $(cat "$t/err")"
[ "$(grep -c '"record":"pass"' "$t/out")" -eq 2 ] || fail "--read-only: want 2 passes: $(cat "$t/out")"
[ "$(cat "$t/err")" = "cache-bench: done: 2 of 2 passes" ] || fail "--read-only: stderr: $(cat "$t/err")"

# a directory that is no store still says so, writable or not
mkdir "$t/empty" && chmod 555 "$t/empty"
"${as[@]}" "$bin" -q "$t/empty" >/dev/null 2>"$t/err"; rc=$?
[ $rc -eq 2 ] && [ "$(cat "$t/err")" = "cache-bench: $t/empty: not a featcache store (no data.mdb)" ] ||
  fail "no store: exit $rc: $(cat "$t/err")"
echo ok
