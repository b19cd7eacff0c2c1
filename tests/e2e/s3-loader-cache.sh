#!/bin/bash
# s3-loader-cache.sh — the loader's shard cache over S3: one download per shard even for two processes, later epochs local, the cap kept.
. "$(dirname "$0")/lib.sh"
s3_require
M=$MATORAGE
S=s3://cache/team
"$PY" -c "import numpy as np; np.save('$WORK/x.npy', np.random.default_rng(0).standard_normal((6000, 64)).astype(np.float32))"
check "a version of 6 shards in S3" $M --store $S put ds x="$WORK/x.npy" --shard-rows 1000
shard_bytes=$($M --store $S info ds --json | "$PY" -c 'import json,sys; print(max(s["bytes"] for s in json.load(sys.stdin)["shards"]))')

# epochs CACHE_DIR CAP N: read N shuffled epochs through the cache; print the rows seen per epoch.
epochs() {
	pymt - "$S" "$1" "$2" "$3" <<'PYEOF'
import sys
import matorage
url, cache, cap, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
store = matorage.Store(url)
where = {"in_memory": True} if cache == "memory" else {"cache_dir": cache}
l = matorage.Loader(store, "ds", batch_rows=256, shuffle=True, seed=2, shuffle_rows=2000,
                    cache_bytes=cap, **where)
for e in range(n):
    l.set_epoch(e)
    rows = sorted(int(r) for b in l for r in b["_rows"])
    print(len(rows), rows == list(range(6000)), flush=True)
    if e == 0 and n > 1 and cache == "memory":
        import os, time  # the test clears the proxy's log, then says go
        while not os.path.exists(os.environ["GO"]):
            time.sleep(0.05)
PYEOF
}
shard_gets() { s3_log | grep -Ec '^GET /cache/team/datasets/ds/shards/[0-9a-f]{64}\.h5 2'; }

s3_log_clear
out=$(epochs "$WORK/c1" 0 1)
ok $([ "$out" = "6000 True" ]; echo $?) "first epoch through an empty cache: every row ($out)"
ok $([ "$(shard_gets)" -eq 6 ]; echo $?) "each of the 6 shards was downloaded once ($(shard_gets) GETs)"
s3_log_clear
out=$(epochs "$WORK/c1" 0 2 | tr '\n' ' ')
ok $([ "$out" = "6000 True 6000 True " ]; echo $?) "two more epochs: every row each time"
ok $([ "$(shard_gets)" -eq 0 ]; echo $?) "without a single shard GET: the cache serves them"
ok $([ -z "$(find "$WORK/c1" -name '.tmp*')" ]; echo $?) "no temporary files left"
check "every cached file is what its name says" bash -c \
	"cd '$WORK/c1' && for f in *.h5; do [ \"\$(sha256sum \$f | cut -c1-64)\" = \"\${f%.h5}\" ] || exit 1; done"

# Two processes on one fresh cache directory: each shard still comes down once.
s3_log_clear
epochs "$WORK/c2" 0 1 > "$WORK/p1" &
p1=$!
epochs "$WORK/c2" 0 1 > "$WORK/p2" &
p2=$!
wait $p1
r1=$?
wait $p2
r2=$?
ok $([ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ "$(cat "$WORK/p1" "$WORK/p2" | tr '\n' ' ')" = "6000 True 6000 True " ]; echo $?) \
	"two processes sharing a cache both get every row"
ok $([ "$(shard_gets)" -eq 6 ]; echo $?) "and each shard was downloaded once between them ($(shard_gets) GETs)"

# A cap of two and a half shards: kept, and the epoch still complete.
cap=$((shard_bytes * 5 / 2))
out=$(epochs "$WORK/c3" $cap 2 | tr '\n' ' ')
ok $([ "$out" = "6000 True 6000 True " ]; echo $?) "with a cap of 2.5 shards every row still arrives"
used=$(find "$WORK/c3" -maxdepth 1 -name '*.h5' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
ok $([ "$used" -le "$cap" ]; echo $?) "the cache holds $used bytes, within its cap of $cap"
err=$(epochs "$WORK/c4" 1000 1 2>&1)
ok $(echo "$err" | grep -q 'more than the whole cache (1000 bytes)'; echo $?) \
	"a cap smaller than one shard is a clear error, not a hang"
echo "$err" | tail -1 | sed 's/^/# /'
# In memory: the first epoch downloads each shard once, the next ones read nothing from S3.
s3_log_clear
GO="$WORK/go" epochs memory 0 2 > "$WORK/mem.out" &
mem=$!
for _ in $(seq 300); do [ -s "$WORK/mem.out" ] && break; sleep 0.1; done
gets_first=$(shard_gets)
s3_log_clear
touch "$WORK/go"
wait $mem
first=$(sed -n 1p "$WORK/mem.out") second=$(sed -n 2p "$WORK/mem.out")
ok $([ "$first $second" = "6000 True 6000 True" ] && [ "$gets_first" -eq 6 ]; echo $?) \
	"in memory: every row, each shard downloaded once ($gets_first GETs; $first / $second)"
ok $([ "$(shard_gets)" -eq 0 ]; echo $?) "and the second epoch reads nothing from the store"
done_testing
