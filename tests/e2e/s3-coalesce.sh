#!/bin/bash
# s3-coalesce.sh — over S3 a read fetches each run of adjacent chunks with one ranged GET: a shuffled loader epoch sends at most a few GETs per shard (not one per chunk) and delivers every row; a damaged chunk inside a run is still read twice, then healed from parity alone, or named exactly when the version is unprotected.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
MT_TEST_STORE=s3 use_store
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"

# 2400 rows in 3 shards of 800; x (float32[16], 64 B a row) in chunks of 20 rows: 40 chunks a
# shard, where one GET per chunk would take at least 120 for x alone.
$T make "$WORK/x.npy" float32 2400x16 1
$T make "$WORK/y.npy" int64 2400 2
check "put a" $M put a x="$WORK/x.npy" y="$WORK/y.npy" --shard-rows 800 --chunk-size 1280
check "put b, the same rows" $M put b x="$WORK/x.npy" y="$WORK/y.npy" --shard-rows 800 --chunk-size 1280
check "protect a with 2+1" $M protect a --parity 2+1
$M cat a x > "$WORK/intact-x.txt"

# epoch DATASET: one shuffled loader epoch; prints the rows it saw, sorted, and whether
# x matches the file row for row.
epoch() {
	pymt - "$MATORAGE_STORE" "$1" "$WORK/x.npy" <<'PYEOF'
import sys
import numpy as np
import matorage
url, name, x = sys.argv[1], sys.argv[2], np.load(sys.argv[3])
rows, same = [], True
for b in matorage.Loader(matorage.Store(url), name, batch_rows=64, shuffle=True, seed=4):
    ids = np.asarray(b["_rows"], dtype=np.int64)
    rows += ids.tolist()
    same = same and np.array_equal(np.asarray(b["x"]).reshape(len(ids), 16), x[ids])
print(sorted(rows) == list(range(len(x))), same)
PYEOF
}
# gets KEY: the GETs of the proxy's log for that shard key.
gets() { s3_log | grep -c "^GET [^ ]*${1##*/}" || true; }
shard() {
	echo "datasets/$1/shards/$($M info "$1" --json |
		$PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$2]['sha256'])").h5"
}

s3_log_clear
out=$(epoch b)
ok $([ "$out" = "True True" ]; echo $?) "a shuffled epoch over S3 delivers every row, x as put"
n=$(s3_log | grep -c "^GET [^ ]*/shards/" || true)
echo "# GETs of shard objects in the epoch: $n"
ok $([ "$n" -ge 3 ] && [ "$n" -le 12 ]; echo $?) "the epoch reads 3 shards in at most 12 GETs (one per chunk: over 120)"

# Opening the latest version takes its manifest from the dataset's head (doc/FORMAT.md,
# "Head"), read with the listing; without a head it reads the manifest once: the read that
# confirms the order marker is the one the reader keeps.
s3_log_clear
check "info of the latest over S3" $M info b
n=$(s3_log | grep -c "^GET [^ ]*/versions/v1.json" || true)
h=$(s3_log | grep -c "^GET [^ ]*/datasets/b/head.json" || true)
ok $([ "$n" -eq 0 ] && [ "$h" -eq 1 ]; echo $?) "opening the latest GETs the head once and no manifest (got $h, $n)"
obj_rm datasets/b/head.json
s3_log_clear
check "info of the latest over S3, no head" $M info b
n=$(s3_log | grep -c "^GET [^ ]*/versions/v1.json" || true)
ok $([ "$n" -eq 1 ]; echo $?) "without a head, opening the latest GETs its manifest once (got $n)"

# damage DATASET I CHUNK: one bit in the middle of x's chunk CHUNK of shard I, in the bucket.
damage() {
	local key
	key=$(shard "$1" "$2")
	obj_get "$key" "$WORK/dmg.h5"
	$PY - "$WORK/dmg.h5" "$3" <<'PYEOF'
import os, sys
import h5py
path, chunk = sys.argv[1], int(sys.argv[2])
data = bytearray(open(path, "rb").read())
with h5py.File(path, "r") as f:
    c = f["x"].id.get_chunk_info(chunk)
data[c.byte_offset + c.size // 2] ^= 0x40
os.chmod(path, 0o644)
open(path, "wb").write(data)
PYEOF
	obj_put "$WORK/dmg.h5" "$key"
}

# Chunk 7 of shard 1 sits inside the run that reads the whole shard's x.
damage b 1 7
fails "unprotected: the damaged chunk inside a run is named alone, with its rows" 1 \
	"^matorage: b@v1: shard 1 \($(shard b 1)\): x chunk 7 \(rows 940\.\.959\) fails its checksum, read twice$" \
	$M cat b x

damage a 1 7
k=$(shard a 1)
s3_log_clear
out=$($M cat a x 2> "$WORK/err")
ok $([ "$out" = "$(cat "$WORK/intact-x.txt")" ]; echo $?) "protected: cat heals the damaged chunk: the same rows"
ok $(grep -q "healed 1 chunks and 0 chunk indexes" "$WORK/err"; echo $?) "protected: exactly 1 chunk is healed"
sed 's/^/# /' "$WORK/err"
n=$(gets "$k")
echo "# GETs of the damaged shard: $n"
# The index, the run, then the damaged chunk alone, twice.
ok $([ "$n" -ge 3 ] && [ "$n" -le 6 ]; echo $?) "the damaged chunk is read alone, not the run again chunk by chunk"
out=$(epoch a)
ok $([ "$out" = "True True" ]; echo $?) "a shuffled epoch over the damaged, protected version delivers the intact rows"
done_testing
