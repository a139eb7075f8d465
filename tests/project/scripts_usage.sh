#!/usr/bin/env bash
# The README's commands answer --help without doing anything: scripts/demo --help and
# scripts/test --help print what they do (exit 0), scripts/setup --help too, and an argument they
# do not take is a usage error (exit 2) — never the start of an apt install, a build and a
# half-hour run. They run in a copy of scripts/ whose setup is a stand-in that records being run.
# scripts/gpu-check, scripts/scaleout/slurm-submit, parallel.sh and scripts/format answer --help as well.
set -u
SRC=${FC_SRC:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

mkdir -p "$tmp/tree/scripts"
cp "$SRC/scripts/demo" "$SRC/scripts/test" "$tmp/tree/scripts/"
cat >"$tmp/tree/scripts/setup" <<'SH'
#!/bin/sh
echo "setup ran: $*" >>"$(dirname "$0")/../setup-ran"
exit 3
SH
chmod +x "$tmp/tree/scripts/setup"

for s in demo test; do
  for a in --help -h; do
    rm -f "$tmp/tree/setup-ran"
    timeout 30 "$tmp/tree/scripts/$s" $a >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 0 ] && [ ! -s "$tmp/err" ] && grep -q "^scripts/$s — " "$tmp/out" ||
      fail "scripts/$s $a: exit $rc: $(head -c 300 "$tmp/out" "$tmp/err")"
    [ -e "$tmp/tree/setup-ran" ] && fail "scripts/$s $a ran scripts/setup"
  done
  rm -f "$tmp/tree/setup-ran"
  timeout 30 "$tmp/tree/scripts/$s" --bogus >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc = 2 ] && [ ! -s "$tmp/out" ] && grep -q "^scripts/$s: unknown argument '--bogus'" "$tmp/err" ||
    fail "scripts/$s --bogus: exit $rc: $(head -c 300 "$tmp/out" "$tmp/err")"
  [ -e "$tmp/tree/setup-ran" ] && fail "scripts/$s --bogus ran scripts/setup"
done

# scripts/setup itself (its argument check comes before anything is installed)
out=$("$SRC/scripts/setup" --help 2>&1)
rc=$?
[ $rc = 0 ] && grep -q '^scripts/setup — ' <<<"$out" || fail "scripts/setup --help: exit $rc: ${out:0:300}"
out=$("$SRC/scripts/setup" --bogus 2>&1)
rc=$?
[ $rc = 2 ] && grep -q "^scripts/setup: unknown argument '--bogus'" <<<"$out" ||
  fail "scripts/setup --bogus: exit $rc: ${out:0:300}"

# the GPU check and the scale-out launchers: --help is text, not a build into a folder named
# --help or a job queued (run with no GPU, no MANIFEST and no Slurm: each would stop early anyway)
for s in gpu-check scaleout/slurm-submit scaleout/parallel.sh; do
  out=$(env -u MANIFEST timeout 30 "$SRC/scripts/$s" --help 2>&1)
  rc=$?
  [ $rc = 0 ] && grep -qF "$(basename "$s")" <<<"$out" ||
    fail "scripts/$s --help: exit $rc: ${out:0:300}"
done
# parallel.sh's help is its whole header comment, to its last line
out=$(env -u MANIFEST timeout 30 "$SRC/scripts/scaleout/parallel.sh" --help 2>&1)
[ "$(tail -n 1 <<<"$out")" = "(MERGE_OPTS=\"--prefer first\": a file replaced under its id, which CACHE holds, takes the shards')." ] ||
  fail "scripts/scaleout/parallel.sh --help stops short of its header's end: $(tail -n 2 <<<"$out")"

# the Slurm job scripts (run by sbatch, executable too): --help prints the header, exit 0, and
# needs no MANIFEST, WORK or CACHE; the #SBATCH lines still come before any command
for s in featcache-array.sbatch featcache-merge.sbatch; do
  out=$(env -u MANIFEST -u WORK -u CACHE timeout 30 "$SRC/scripts/scaleout/$s" --help 2>&1)
  rc=$?
  [ $rc = 0 ] && grep -q "^featcache" <<<"$out" && ! grep -q SBATCH <<<"$out" ||
    fail "scripts/scaleout/$s --help: exit $rc: ${out:0:300}"
  awk '/^#SBATCH/ { if (cmd) bad = 1 } /^[^#]/ && NF { cmd = 1 } END { exit bad }' "$SRC/scripts/scaleout/$s" ||
    fail "scripts/scaleout/$s: an #SBATCH line after a command (sbatch stops reading them there)"
done

# scripts/format: --help is its header, exit 0, and formats nothing; an unknown argument is exit 2
out=$("$SRC/scripts/format" --help 2>&1)
rc=$?
[ $rc = 0 ] && grep -q '^scripts/format — ' <<<"$out" || fail "scripts/format --help: exit $rc: ${out:0:300}"
out=$("$SRC/scripts/format" --bogus 2>&1)
rc=$?
[ $rc = 2 ] && grep -q "^scripts/format: unknown argument '--bogus'" <<<"$out" ||
  fail "scripts/format --bogus: exit $rc: ${out:0:300}"

[ $fails = 0 ] && echo "ok: scripts/demo, scripts/test and scripts/setup answer --help and refuse what they do not take" && exit 0
exit 1
