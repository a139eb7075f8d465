#!/usr/bin/env bash
# scripts/bench-cachebench compares cache-bench with fio on the same file; this checks what it asks
# each of them for, with stand-ins for both that only record their arguments (no benchmark runs:
# docs/HACKING.md "Benchmarks"):
# - fio's sequential read goes through the file in file order, so cache-bench's side of that row is
#   its `physical` pattern (map order); the script ran `sequential`, which is key order, the
#   content hashes' order, as scattered over the file as a random one (docs/cache-bench.md).
# - a store on a filesystem without a block device behind it (tmpfs: --dir /dev/shm) has no
#   read_ahead_kb in sysfs: the script died there with a traceback, after every measurement, and
#   printed no report.
set -u
PY=${FC_PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
mkdir "$tmp/bin" "$tmp/path"
cat >"$tmp/path/fio" <<'EOF'
#!/bin/sh
echo "fio $*" >>"$FAKE_LOG"
echo '{"jobs": [{"read": {"bw_bytes": 100000000}}]}'
EOF
cat >"$tmp/bin/cache-bench" <<'EOF'
#!/bin/sh
echo "cache-bench $*" >>"$FAKE_LOG"
for b in 1 32; do
  echo "{\"record\":\"pass\",\"batch\":$b,\"mb_per_s\":100.0,\"resident_fraction_before\":0.0}"
done
echo '{"record":"summary"}'
EOF
chmod +x "$tmp/path/fio" "$tmp/bin/cache-bench"

run() { # DIR: the script over 4 records in DIR, the stand-ins logging to $tmp/log
  : >"$tmp/log"
  FAKE_LOG=$tmp/log PATH="$tmp/path:$PATH" timeout 120 "$FC_SRC/scripts/bench-cachebench" \
    --bin "$tmp/bin" --records 4 --reps 1 --dir "$1" >"$tmp/out" 2>"$tmp/err"
}
mkdir "$tmp/disk"
run "$tmp/disk" || fail "exit $?: $(tail -n 5 "$tmp/err")"
grep -q -- '--rw=read ' "$tmp/log" || fail "no fio sequential read: $(cat "$tmp/log")"
# cache-bench: one cold run per pattern and io, the file-order one with the physical pattern
pats=$(grep '^cache-bench ' "$tmp/log" | grep -o -- '-p [a-z]*' | sort | uniq -c | awk '{print $3 "=" $1}' | tr '\n' ' ')
[ "$pats" = "physical=2 random=2 " ] || fail "cache-bench patterns: $pats (want physical and random, mmap and --direct)"
grep -q '^| file order (fio read, cache-bench physical) cold |' "$tmp/out" || fail "report rows: $(cat "$tmp/out")"

if [ -d /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ]; then
  shm=$(mktemp -d /dev/shm/bench-cachebench-test.XXXXXX)
  run "$shm"
  rc=$?
  rm -rf "$shm"
  [ $rc = 0 ] || fail "--dir on tmpfs: exit $rc: $(tail -n 3 "$tmp/err")"
  grep -q 'read-ahead unknown (no block device)' "$tmp/out" || fail "--dir on tmpfs: $(head -n 3 "$tmp/out")"
fi
[ $fails = 0 ] && echo "bench_cachebench_plan: ok"
[ $fails = 0 ]
