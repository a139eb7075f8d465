#!/bin/bash
# A store whose data.mdb was cut short (a copy that ran out of space): every reader and writer
# says so and goes no further — cache-merge, cache-config, cache-bench and featurize exit 2 naming
# the store, the Python loader raises FeatcacheError — where each died of SIGBUS (exit 135) when
# LMDB read a page past the end of the mapped file. cache-verify has its own report of it
# (verify_damage.sh).
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 6 || exit 1
"$FC_BIN/featurize" -q --device cpu --writers 1 -o s --manifest c/metadata.csv || exit 1
cp -r s s2 # a sound store to merge into the truncated one
printf 'a\thello\n' >t.tsv
truncate -s $(($(stat -c %s s/data.mdb) / 2)) s/data.mdb
sum=$(md5sum s/data.mdb)
msg="FC_ETRUNCATED: data.mdb is truncated (it ends before its last committed page)"
expect() { # name want-stderr command...
  local name=$1 want=$2; shift 2
  "$@" >out 2>err; local rc=$?
  [ $rc = 2 ] || { echo "FAIL $name: exit $rc, want 2"; cat out err; fail=1; }
  [ "$(cat err)" = "$want" ] || { echo "FAIL $name stderr:"; cat err; echo "want: $want"; fail=1; }
}
expect merge "cache-merge: s: cannot open the store: $msg" "$FC_BIN/cache-merge" -q -o m s
[ -e m ] && { echo "FAIL merge created its output"; fail=1; }
expect config "cache-config: s: cannot open the store: $msg" "$FC_BIN/cache-config" s
expect bench "cache-bench: s: cannot open the store: $msg" \
  "$FC_BIN/cache-bench" --no-probe -q -s warm -p sequential --duration 0.1 s
expect featurize "featurize: s: cannot open the store: $msg" \
  "$FC_BIN/featurize" -q --device cpu --writers 1 -o s --manifest c/metadata.csv
# the tools whose page check comes before their open: the open says it, as without the check
# (the check said "damaged (env data.mdb: truncated: ...)", exit 1)
expect "featurize --check-pages" "featurize: s: cannot open the store: $msg" \
  "$FC_BIN/featurize" -q --device cpu --writers 1 --check-pages -o s --manifest c/metadata.csv
expect "tokenize --check-pages" "tokenize: s: cannot open the store: $msg" \
  "$FC_BIN/tokenize" -q --build-vocab --check-pages -o s t.tsv
expect prune "cache-prune: s: cannot open the store: $msg" "$FC_BIN/cache-prune" -q s
expect "config --drop" "cache-config: s: cannot open the store: $msg" \
  "$FC_BIN/cache-config" --drop hifigan s
expect "merge -o s" "cache-merge: s: cannot open the output store: $msg" \
  "$FC_BIN/cache-merge" -q -o s s2
"$PY" - <<'PY' || fail=1
import featcache
try:
    featcache.Loader(["s"], batch_size=2)
except featcache.FeatcacheError as e:
    assert "FC_ETRUNCATED" in str(e), e
else:
    raise SystemExit("FAIL loader: opened a truncated store")
PY
[ "$sum" = "$(md5sum s/data.mdb)" ] || { echo "FAIL the truncated store was written"; fail=1; }
exit $fail
