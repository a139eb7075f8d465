#!/bin/bash
# featcache on a few machines or cores with GNU parallel: N shards, then one merge. The one-liner:
#
#   seq 0 15 | parallel -j4 'featurize -q -j1 --shard {}/16 --max-failed 10% -o shards/s{} --manifest metadata.csv && tokenize -q -j1 --build-vocab --shard {}/16 -o shards/s{} metadata.csv' && cache-merge -o cache shards/s*/
#
# and the same, with settings:  MANIFEST=... SHARDS=16 JOBS=4 WORK=shards CACHE=cache scripts/scaleout/parallel.sh
# Bad audio files do not stop it: a shard tolerates MAX_FAILED (default 10%) of its inputs failing;
# they are recorded in the stores and merged, and cache-verify --manifest lists them apart.
# Across machines add --sshloginfile (each machine writes its shards to its own local disk; copy
# them somewhere shared before the merge). Reruns are cheap: finished shards say "nothing to do".
set -euo pipefail
: "${MANIFEST:?set MANIFEST}"
SHARDS=${SHARDS:-16} JOBS=${JOBS:-4} WORK=${WORK:-shards} CACHE=${CACHE:-cache} BIN=${BIN:-}
FEATURIZE_OPTS=${FEATURIZE_OPTS:---preset hifigan} TOKENIZE_OPTS=${TOKENIZE_OPTS:---build-vocab}
MAX_FAILED=${MAX_FAILED:-10%}
export MANIFEST SHARDS WORK BIN FEATURIZE_OPTS TOKENIZE_OPTS MAX_FAILED
mkdir -p "$WORK"
seq 0 $((SHARDS - 1)) | parallel --halt now,fail=1 -j"$JOBS" \
  '"${BIN:+$BIN/}featurize" -q -j1 --shard {}/$SHARDS --max-failed "$MAX_FAILED" $FEATURIZE_OPTS -o "$WORK/s{}" --manifest "$MANIFEST" && "${BIN:+$BIN/}tokenize" -q -j1 --shard {}/$SHARDS $TOKENIZE_OPTS -o "$WORK/s{}" "$MANIFEST"'
"${BIN:+$BIN/}cache-merge" -o "$CACHE" "$WORK"/s*/
