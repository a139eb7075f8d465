#!/usr/bin/env bash
# Every tool that reads stores, given a shell pattern that matched nothing (`cache-verify
# shards/s*/` before any shard was made: the shell passes the pattern as it is), says so, exit 2,
# instead of "No such file or directory" of a path with a star in it; a missing plain path is said
# as before.
set -u
B=${FC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
says="no such store: a pattern that matched nothing (the shell passes it as it is: no store made there yet?)"

# check NAME WANT_RC WANT_STDERR CMD...
check() {
  local name=$1 want_rc=$2 want_err=$3
  shift 3
  "$@" >out 2>err
  local rc=$?
  if [ "$rc" != "$want_rc" ] || [ "$(cat err)" != "$want_err" ]; then
    echo "FAIL $name: exit $rc (want $want_rc)"
    echo "  stderr: $(cat err)"
    echo "  want:   $want_err"
    fails=$((fails + 1))
  fi
}

check verify 2 "cache-verify: shards/s*/: $says
cache-verify: done: 0 of 1 stores clean (1 not checked)" "$B/cache-verify" 'shards/s*/'
check config 2 "cache-config: shards/s*/: $says" "$B/cache-config" 'shards/s*/'
check prune 2 "cache-prune: shards/s*/: $says" "$B/cache-prune" 'shards/s*/'
check prune-dry 2 "cache-prune: shards/s?: $says" "$B/cache-prune" --dry-run 'shards/s?'
check bench 2 "cache-bench: shards/s*/: $says" "$B/cache-bench" 'shards/s*/'
check loader-bench 2 "loader-bench: shards/s*/: $says" "$B/loader-bench" 'shards/s*/'
check merge 2 "cache-merge: shards/s*/: $says; nothing merged" "$B/cache-merge" -o m 'shards/s*/'

# --json says it as its "fatal" / "error"
"$B/cache-verify" --json 'shards/s*/' >out 2>/dev/null
grep -qF "\"fatal\":\"$says\"" out || { echo "FAIL verify --json: $(cat out)"; fails=$((fails + 1)); }
"$B/cache-config" --json 'shards/s*/' >out 2>/dev/null
grep -qF "\"error\":\"$says\"" out || { echo "FAIL config --json: $(cat out)"; fails=$((fails + 1)); }

# a plain path that is not there: as before
check verify-plain 2 "cache-verify: nope: cannot open the store: No such file or directory
cache-verify: done: 0 of 1 stores clean (1 not checked)" "$B/cache-verify" nope
check config-plain 2 "cache-config: nope: cannot open the store: No such file or directory" \
  "$B/cache-config" nope
check bench-plain 2 "cache-bench: nope: cannot open the store: No such file or directory" "$B/cache-bench" nope

[ "$fails" = 0 ] && echo "all unmatched-pattern checks passed"
exit "$fails"
