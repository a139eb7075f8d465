#!/bin/bash
# A store named twice on one command line — another spelling of one directory, a split store
# given twice, or a split store and one of its parts — is refused by the tools that open all their
# stores at once (LMDB: one open of an environment per process), exit 2 before any work, and the
# message names both as they were given: `sp/part-1: given twice (also as part 1 of sp)`, not the
# part paths the split store was read as.
set -u
. "$FC_SRC/tests/cli/scaleout.bash"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
make_corpus c 6 || exit 1
"$FC_BIN/featurize" -q --writers 2 -o sp --manifest c/metadata.csv || exit 1
"$FC_BIN/featurize" -q -o s --manifest c/metadata.csv || exit 1
[ -e sp/part-1/data.mdb ] || { echo "FAIL: no split store of 2 parts"; exit 1; }
twice() { # WANT-MESSAGE STORE...: each tool refuses, exit 2, the message as given
  local want=$1 tool
  shift
  for tool in "cache-merge -q -o $T/merged" "cache-verify -q" "cache-bench -q -s warm --duration 0"; do
    # shellcheck disable=SC2086 # the tool's words
    "$FC_BIN"/$tool "$@" >out 2>err
    local rc=$? name=${tool%% *}
    local suffix=
    [ "$name" = cache-bench ] && suffix=": a process must not open a store twice"
    if [ $rc != 2 ] || [ "$(head -1 err)" != "$name: $want$suffix" ]; then
      echo "FAIL $name $*: exit $rc (want 2)"
      echo "  got:  $(head -1 err)"
      echo "  want: $name: $want$suffix"
      fail=1
    fi
    [ -e "$T/merged" ] && { echo "FAIL $name $*: the merge wrote $T/merged"; rm -rf "$T/merged"; fail=1; }
  done
}
twice "./s: given twice (also as s)" s ./s
twice "sp: given twice (also as sp)" s sp sp
twice "./sp/: given twice (also as sp)" sp ./sp/
twice "sp/part-1: given twice (also as part 1 of sp)" sp sp/part-1
twice "sp: given twice (its part 0 also as sp/part-0)" sp/part-0 s sp
exit $fail
