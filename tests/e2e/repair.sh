#!/bin/bash
# repair.sh — damaged shards are mended: by putting the same data again, by copying from a good store onto a version already there, and by `matorage repair` from other stores, parity or the protection record.
# With MT_TEST_STORE=s3 (s3-repair.sh) the stores are S3 prefixes behind the signing proxy.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
D="$OBJ_BASE"

# shard DATASET[@V] I [STORE]: the sha256 of shard I, from the manifest.
shard() {
	$M ${3:+--store "$3"} info "$1" --json |
		$PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$2]['sha256'])"
}
# damage KEY HOW: damage a raw object in place: flip (one bit in the middle, same size),
# truncate (half of it), zero (a zero-filled range), rm.
damage() {
	local key=$1 how=$2
	if [ "$how" = rm ]; then
		obj_rm "$key"
		return
	fi
	obj_get "$key" "$WORK/dmg"
	$PY - "$WORK/dmg" "$how" <<'PYEOF'
import sys
path, how = sys.argv[1:]
b = bytearray(open(path, "rb").read())
if how == "flip":
    b[len(b) // 2] ^= 0x10
elif how == "truncate":
    b = b[: len(b) // 2]
elif how == "zero":
    n = len(b) // 3
    b[n : 2 * n] = bytes(n)
open(path, "wb").write(b)
PYEOF
	obj_put "$WORK/dmg" "$key"
}
# sound DATASET[@V] [STORE]: verify passes.
sound() { $M ${2:+--store "$2"} verify "$1" > /dev/null 2>&1; }

$T make "$WORK/a.npy" float32 120x16 1
check "put a" $M put a x="$WORK/a.npy" --shard-rows 30 --chunk-size 640

# ---- putting the same data again mends a shard damaged in place ----
s1=$(shard a 1)
damage "datasets/a/shards/$s1.h5" flip
ok $(! sound a; echo $?) "a shard damaged in place (same size) fails verify"
check "put the same rows again" $M put a x="$WORK/a.npy" --shard-rows 30 --chunk-size 640
ok $(sound a@v1; echo $?) "the shard the new version shares was written again: a@v1 verifies"
check "and reads back identical" bash -c "$M get a@v1 x -o $WORK/o.npy && $T same $WORK/a.npy $WORK/o.npy"
[ "$OBJ_MODE" = s3 ] && s3_log_clear
check "a third put of the same rows (shards sound) reuses them" \
	$M put a x="$WORK/a.npy" --shard-rows 30 --chunk-size 640
if [ "$OBJ_MODE" = s3 ]; then
	ok $(! s3_log | grep -Eq '^(GET|PUT) .*/shards/'; echo $?) \
		"on S3 the ETag settles it: no shard was downloaded or sent again"
fi
ok $(sound a; echo $?) "and the version verifies"

# ---- push/pull onto a version the destination already has fills in what it lacks ----
B="$D/b"
check "push a@v1 to a second store" $M push a@v1 "$B"
damage "b/datasets/a/shards/$s1.h5" rm
s2=$(shard a 2)
damage "b/datasets/a/shards/$s2.h5" truncate
ok $(! sound a@v1 "$B"; echo $?) "the copy lost one shard and has another cut short"
out=$($M push a@v1 "$B" 2>&1)
ok $? "push again: $out"
ok $(echo "$out" | grep -q '^0 version(s) copied.*1 already there; 2 shard(s) sent'; echo $?) \
	"the manifest was there; the 2 missing or cut shards were sent"
ok $(sound a@v1 "$B"; echo $?) "the copy verifies again"
damage "b/datasets/a/shards/$s2.h5" rm
out=$($M --store "$B" pull "$D" a@v1 2>&1)
ok $(echo "$out" | grep -q '1 shard(s) sent'; echo $?) "pull into a store with the manifest sends the lost shard: $out"
ok $(sound a@v1 "$B"; echo $?) "and it verifies"

done_testing
