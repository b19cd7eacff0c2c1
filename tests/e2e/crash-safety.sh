#!/bin/bash
# crash-safety.sh — kill -9 during a put: no version appears, gc removes the orphans, a re-run succeeds.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
STORE=$WORK/store

$PY -c "
import numpy as np
np.save('$WORK/big.npy', np.random.default_rng(1).standard_normal((48 * 1024, 1024), dtype=np.float32))
np.save('$WORK/lab.npy', np.arange(48 * 1024, dtype=np.int64))
"
$M put before x="$WORK/lab.npy" >/dev/null
$M put crash x="$WORK/big.npy" y="$WORK/lab.npy" --shard-size 4M --level 9 >/dev/null 2>&1 &
pid=$!
# Wait (bounded) until at least two shards are stored, then kill without warning.
for _ in $(seq 1 300); do
	n=$(ls "$STORE"/datasets/crash/shards/ 2>/dev/null | grep -c '\.h5$')
	[ "$n" -ge 2 ] && break
	sleep 0.05
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
ok $([ "${n:-0}" -ge 2 ]; echo $?) "put was killed after uploading ${n:-0} shards"
ok $(! $M ls | grep -qx crash; echo $?) "ls shows no crashed version"
ok $(! ls "$STORE"/datasets/crash/versions/*.json >/dev/null 2>&1; echo $?) "no manifest was written"
out=$($M gc --grace 0)
ok $(echo "$out" | grep -q "datasets/crash/shards/"; echo $?) "gc dry run lists the orphans"
ok $([ "$(ls "$STORE"/datasets/crash/shards/ | grep -c '\.h5$')" -ge 2 ]; echo $?) "dry run deleted nothing"
check "gc --delete removes them" $M gc --delete --grace 0
left=$(find "$STORE/datasets/crash" -type f 2>/dev/null | wc -l)
ok $([ "$left" -eq 0 ]; echo $?) "no orphan objects or temporary files remain ($left left)"
check "the untouched dataset still reads" $M get before x -o "$WORK/o.npy"
check "a re-run of the put succeeds" $M put crash x="$WORK/big.npy" y="$WORK/lab.npy" --shard-size 4M
check "and verifies" $M verify crash
done_testing
