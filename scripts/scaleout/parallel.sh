#!/bin/bash
# featcache on a few machines or cores with GNU parallel: N shards, then one merge. The one-liner:
#
#   mkdir -p shards && seq 0 15 | parallel -j4 'featurize -q -j1 --shard {}/16 --max-failed 10% -o shards/s{} --manifest metadata.csv && tokenize -q -j1 --build-vocab --shard {}/16 --max-failed 10% -o shards/s{} metadata.csv' && cache-merge -o cache shards/s*/
#
# and the same, with settings:  MANIFEST=... SHARDS=16 JOBS=4 WORK=shards CACHE=cache scripts/scaleout/parallel.sh
# Bad audio files do not stop it: a shard tolerates MAX_FAILED (default 10%) of its inputs failing;
# they are recorded in the stores and merged, and cache-verify --manifest lists them apart. The
# same tolerance holds for bad transcript lines (tokenize --max-failed; not recorded).
# Across machines: PARALLEL_OPTS="--sshloginfile nodes" (any options of parallel's own), with
# MANIFEST, WORK and BIN absolute paths that each machine can use; the settings above reach the
# remote jobs (--env). Each machine writes its shards to WORK on its own local disk (an LMDB
# writer needs one); the merge runs once all N shards are in this machine's WORK, else it says
# which are not and exits 1: copy them here (mdb_copy, or rsync of a finished store) and run the
# script again. Reruns are cheap: finished shards say "nothing to do". MERGE_OPTS go to cache-merge
# (MERGE_OPTS="--prefer first": a file replaced under its id, which CACHE holds, takes the shards').
set -euo pipefail
case ${1:-} in
"") ;;
-h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;   # the header comment
*) echo "parallel.sh: unknown argument '$1' (settings go in the environment; --help)" >&2; exit 2 ;;
esac
# need VAR MESSAGE: a setting not given is a configuration error (exit 2), said
need() { [ -n "${!1:-}" ] || { echo "parallel.sh: $2" >&2; exit 2; }; }
need MANIFEST "set MANIFEST to the corpus manifest (LJSpeech csv, wav.scp, JSONL)"
SHARDS=${SHARDS:-16} JOBS=${JOBS:-4} WORK=${WORK:-shards} CACHE=${CACHE:-cache} BIN=${BIN:-}
FEATURIZE_OPTS=${FEATURIZE_OPTS:---preset hifigan} TOKENIZE_OPTS=${TOKENIZE_OPTS:---build-vocab}
MAX_FAILED=${MAX_FAILED:-10%} PARALLEL_OPTS=${PARALLEL_OPTS:-} MERGE_OPTS=${MERGE_OPTS:-}
TEXT=${TEXT-$MANIFEST}   # what tokenize reads; TEXT= (empty): no tokens (a wav.scp has no text)
case $SHARDS in
'' | *[!0-9]* | 0*) echo "parallel.sh: SHARDS='$SHARDS' is not a positive number of shards" >&2; exit 2 ;;
esac
settings=(MANIFEST SHARDS WORK BIN FEATURIZE_OPTS TOKENIZE_OPTS MAX_FAILED TEXT)
export "${settings[@]}"
# shellcheck disable=SC2046,SC2086  # word lists on purpose
seq 0 $((SHARDS - 1)) | parallel --halt now,fail=1 -j"$JOBS" $(printf -- '--env %s ' "${settings[@]}") $PARALLEL_OPTS \
  'mkdir -p "$WORK" && "${BIN:+$BIN/}featurize" -q -j1 --shard {}/$SHARDS --max-failed "$MAX_FAILED" $FEATURIZE_OPTS -o "$WORK/s{}" --manifest "$MANIFEST" && { [ -z "$TEXT" ] || "${BIN:+$BIN/}tokenize" -q -j1 --shard {}/$SHARDS --max-failed "$MAX_FAILED" $TOKENIZE_OPTS -o "$WORK/s{}" "$TEXT"; }'
# the N shards of this run, and only they (a shard another machine wrote is not here until copied)
shards=() missing=()
for ((k = 0; k < SHARDS; k++)); do
  shards+=("$WORK/s$k")
  [ -e "$WORK/s$k/data.mdb" ] || [ -e "$WORK/s$k/featcache-split" ] || missing+=("s$k")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "parallel.sh: ${#missing[@]} of $SHARDS shards not in $WORK (${missing[*]}): written on other machines? copy them into $WORK, then run again; nothing merged" >&2
  exit 1
fi
# shellcheck disable=SC2086  # word list on purpose
"${BIN:+$BIN/}cache-merge" $MERGE_OPTS -o "$CACHE" "${shards[@]}"
