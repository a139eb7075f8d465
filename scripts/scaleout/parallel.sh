#!/bin/bash
# featcache on a few machines or cores with GNU parallel: N shards, then one merge. The one-liner:
#
#   seq 0 15 | parallel -j4 'featurize -q -j1 --shard {}/16 -o shards/s{} --manifest metadata.csv && tokenize -q -j1 --build-vocab --shard {}/16 -o shards/s{} metadata.csv' && cache-merge -o cache shards/s*/
#
# and the same, with settings:  MANIFEST=... SHARDS=16 JOBS=4 WORK=shards CACHE=cache scripts/scaleout/parallel.sh
# Across machines add --sshloginfile (each machine writes its shards to its own local disk; copy
# them somewhere shared before the merge). Reruns are cheap: finished shards say "nothing to do".
set -euo pipefail
: "${MANIFEST:?set MANIFEST}"
SHARDS=${SHARDS:-16} JOBS=${JOBS:-4} WORK=${WORK:-shards} CACHE=${CACHE:-cache} BIN=${BIN:-}
FEATURIZE_OPTS=${FEATURIZE_OPTS:---preset hifigan} TOKENIZE_OPTS=${TOKENIZE_OPTS:---build-vocab}
export MANIFEST SHARDS WORK BIN FEATURIZE_OPTS TOKENIZE_OPTS
mkdir -p "$WORK"
seq 0 $((SHARDS - 1)) | parallel --halt now,fail=1 -j"$JOBS" \
  '"${BIN:+$BIN/}featurize" -q -j1 --shard {}/$SHARDS $FEATURIZE_OPTS -o "$WORK/s{}" --manifest "$MANIFEST" && "${BIN:+$BIN/}tokenize" -q -j1 --shard {}/$SHARDS $TOKENIZE_OPTS -o "$WORK/s{}" "$MANIFEST"'
"${BIN:+$BIN/}cache-merge" -o "$CACHE" "$WORK"/s*/
