#!/usr/bin/env bash
# tokenize -t phonemes reads a line with characters of other scripts than Latin in a child process
# (libcache/text/tokenize/tok_child.c): when espeak-ng dies there, that line fails with FC_EPHONEMIZE,
# naming the file and line, the other lines are stored as a run without the bad line stores them,
# and a rerun stores the missing line. The death is injected (FC_FAULT=espeak:1 aborts the first
# child), so this runs the same in every build with fault countdowns; under ASan, espeak-ng's own
# read of freed memory ("x \u02cc\u0552") is checked too. FC_PHONEMIZE_CHILD=all/none give the
# same ids as the default. A child that exits nonzero after writing its answer (FC_FAULT=espeakexit)
# and one that hangs (FC_FAULT=espeakhang, killed after FC_PHONEMIZE_TIMEOUT) fail their line alone.
set -u
T=${FC_BIN:?}/tokenize
[ -x "$T" ] || { echo "FAIL: $T not built"; exit 1; }
if ! grep -q '^FC_FAULT_INJECTION:BOOL=ON' "$FC_BIN/CMakeCache.txt" 2>/dev/null; then
  echo "skipped: this build has no fault countdowns (-DFC_FAULT_INJECTION=ON; scripts/test sets it)" >&2
  exit 77
fi
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; [ -f "$d/err" ] && sed 's/^/  stderr: /' "$d/err" | head -20; exit 1; }
dump() { "${FC_PYTHON:-python3}" - "$1" <<'PY'
import lmdb, sys
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8)
for name in (b"text", b"tok"):
    db = env.open_db(name, create=False)
    with env.begin() as t:
        for k, v in t.cursor(db):
            print(name.decode(), k.hex(), v.hex())
PY
}

# line 2: Armenian (a child process); lines 1, 3: Latin only (this process)
printf 'a\tHello there.\nb\tThe word \325\241\325\242 here.\nc\tWorld.\n' > "$d/in.tsv"
"$T" -t phonemes --build-vocab --export-vocab "$d/vocab.txt" -o "$d/ref" "$d/in.tsv" 2> "$d/err" ||
  fail "clean run: exit $?"
dump "$d/ref" > "$d/ref.txt" || fail "cannot read the store"
[ "$(wc -l < "$d/ref.txt")" = 6 ] || fail "clean run stored $(wc -l < "$d/ref.txt") entries, want 3 texts + 3 records"

FC_FAULT=espeak:1 "$T" -t phonemes --vocab "$d/vocab.txt" -o "$d/s" "$d/in.tsv" 2> "$d/err"
rc=$?
[ "$rc" = 1 ] || fail "a dead child: exit $rc, want 1"
grep -qx "tokenize: $d/in.tsv:2: FC_EPHONEMIZE: espeak-ng died or hung reading this text" "$d/err" ||
  fail "no FC_EPHONEMIZE line naming in.tsv:2"
grep -q 'done: 2 of 3 (2 new, 0 already stored, 1 failed' "$d/err" || fail "summary"
dump "$d/s" > "$d/s.txt"
[ "$(wc -l < "$d/s.txt")" = 4 ] || fail "stored $(wc -l < "$d/s.txt") entries, want 2 texts + 2 records"
grep -qvxFf "$d/ref.txt" "$d/s.txt" && fail "a record differs from the clean run's"
"$T" -t phonemes --vocab "$d/vocab.txt" -o "$d/s" "$d/in.tsv" 2> "$d/err" || fail "rerun: exit $?"
grep -q 'done: 3 of 3 (1 new, 2 already stored, 0 failed' "$d/err" || fail "rerun summary"
dump "$d/s" | cmp -s - "$d/ref.txt" || fail "after the rerun the store differs from the clean run's"

# a child that writes its whole answer and then exits 1: the answer is not trusted (that line fails);
# a child that hangs: killed after FC_PHONEMIZE_TIMEOUT seconds, that line fails, the others stored
for f in espeakexit espeakhang; do
  FC_FAULT=$f:1 FC_PHONEMIZE_TIMEOUT=2 "$T" -t phonemes --vocab "$d/vocab.txt" -o "$d/s-$f" \
    "$d/in.tsv" 2> "$d/err"
  rc=$?
  [ "$rc" = 1 ] || fail "FC_FAULT=$f:1: exit $rc, want 1"
  grep -qx "tokenize: $d/in.tsv:2: FC_EPHONEMIZE: espeak-ng died or hung reading this text" \
    "$d/err" || fail "FC_FAULT=$f:1: no FC_EPHONEMIZE line naming in.tsv:2"
  grep -q 'done: 2 of 3 (2 new, 0 already stored, 1 failed' "$d/err" || fail "FC_FAULT=$f:1: summary"
  dump "$d/s-$f" | grep -qvxFf "$d/ref.txt" && fail "FC_FAULT=$f:1: a record differs from the clean run's"
done

for m in all none; do
  FC_PHONEMIZE_CHILD=$m "$T" -t phonemes --vocab "$d/vocab.txt" -o "$d/s-$m" "$d/in.tsv" 2> "$d/err" ||
    fail "FC_PHONEMIZE_CHILD=$m: exit $?"
  dump "$d/s-$m" | cmp -s - "$d/ref.txt" || fail "FC_PHONEMIZE_CHILD=$m stored other records"
done

if [ "${FC_SANITIZE:-0}" = 1 ]; then # espeak-ng 1.51's own read of freed memory, in the child
  printf 'a\tHello there.\nb\tx \313\214\325\222 y\nc\tWorld.\n' > "$d/uaf.tsv"
  "$T" -t phonemes --vocab "$d/vocab.txt" -o "$d/u" "$d/uaf.tsv" 2> "$d/err"
  rc=$?
  [ "$rc" = 1 ] || fail "espeak-ng's read of freed memory: exit $rc, want 1"
  grep -q 'heap-use-after-free' "$d/err" || fail "no ASan report from the child"
  grep -qx "tokenize: $d/uaf.tsv:2: FC_EPHONEMIZE: espeak-ng died or hung reading this text" "$d/err" ||
    fail "no FC_EPHONEMIZE line naming uaf.tsv:2"
  grep -q 'done: 2 of 3 (2 new, 0 already stored, 1 failed' "$d/err" || fail "uaf summary"
fi
echo "tokenize_espeak_child: ok"
