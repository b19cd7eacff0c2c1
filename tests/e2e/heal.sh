#!/bin/bash
# heal.sh — get and cat of a protected version heal lost and damaged shards from parity (identical output, a warning counting what was healed); beyond M per group, or unprotected, they fail naming dataset, version, shard, key and rows.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"

# 120 rows in 10 shards of 12; x (float32[16]) in chunks of 5 rows, y (int64) in one chunk
# a shard.  Protected 4+2: groups of shards 0-3, 4-7 and 8-9.
$T make "$WORK/x.npy" float32 120x16 1
$T make "$WORK/y.npy" int64 120 2
check "put a" $M put a x="$WORK/x.npy" y="$WORK/y.npy" --shard-rows 12 --chunk-size 320
check "put b, the same rows, unprotected" $M put b x="$WORK/x.npy" y="$WORK/y.npy" \
	--shard-rows 12 --chunk-size 320
check "protect a with 4+2" $M protect a --parity 4+2
$M cat a x > "$WORK/intact-x.txt"
$M cat a y > "$WORK/intact-y.txt"

# shard DATASET I: the key of shard I of DATASET@v1.
shard() {
	echo "datasets/$1/shards/$($M info "$1" --json |
		$PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$2]['sha256'])").h5"
}

# damage DATASET I KIND [ARG]: damage shard I of DATASET@v1 in the store, bypassing matorage:
# delete; truncate (to half); flip ATTR:CHUNK (one bit in the middle of that chunk); index (one
# bit of the chunk index); replace J (the bytes of shard J instead).
damage() {
	local key
	key=$(shard "$1" "$2")
	case $3 in
	delete) obj_rm "$key" ;;
	replace) obj_get "$(shard "$1" "$4")" "$WORK/dmg.h5" && obj_put "$WORK/dmg.h5" "$key" ;;
	*)
		obj_get "$key" "$WORK/dmg.h5"
		$PY - "$WORK/dmg.h5" "$3" "${4:-}" "$($M info "$1" --json)" "$2" <<'PYEOF'
import json, os, sys
import h5py
path, kind, arg, info, i = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5])
data = bytearray(open(path, "rb").read())
if kind == "truncate":
    data = data[:len(data) // 2]
elif kind == "index":
    off, n = info["shards"][i]["index"]
    data[off + n // 2] ^= 0x08
elif kind == "flip":
    attr, chunk = arg.split(":")
    with h5py.File(path, "r") as f:
        c = f[attr].id.get_chunk_info(int(chunk))
    data[c.byte_offset + c.size // 2] ^= 0x40
os.chmod(path, 0o644)
open(path, "wb").write(data)
PYEOF
		obj_put "$WORK/dmg.h5" "$key"
		;;
	esac
}

# ---- unprotected: the errors of a damaged version are what they were ----
damage b 2 flip x:1
fails "unprotected: a damaged chunk fails, naming dataset, version, shard, key and rows" 1 \
	"^matorage: b@v1: shard 2 \($(shard b 2)\): x chunk 1 \(rows 29\.\.33\) fails its checksum, read twice$" \
	$M cat b x
damage b 0 delete
fails "unprotected: a missing shard fails as before" 1 \
	"^matorage: b@v1: shard 0 \(datasets/b/shards/[0-9a-f]{64}\.h5\) is missing$" $M get b x -o "$WORK/b.npy"
ok $([ ! -e "$WORK/b.npy" ]; echo $?) "and leaves no output file"

# ---- protected: one chunk ----
damage a 2 flip x:1
out=$($M cat a x 2> "$WORK/err")
ok $([ "$out" = "$(cat "$WORK/intact-x.txt")" ]; echo $?) "cat: a damaged chunk is healed: the same rows"
ok $(grep -q "^matorage: warning: a@v1: healed 1 chunks and 0 chunk indexes from parity .*run 'matorage repair a@v1'" \
	"$WORK/err"; echo $?) "cat: a warning counts the healed chunk"
sed 's/^/# /' "$WORK/err"
check "cat of rows whose chunks are sound heals nothing" bash -c \
	"$M cat a x --rows 0:24 2>&1 >/dev/null | (! grep -q healed)"

# ---- protected: M = 2 members of every group lost or damaged ----
damage a 0 delete
damage a 5 truncate
damage a 6 replace 3
damage a 8 index
damage a 9 delete
$M get a x -o "$WORK/x-healed.npy" 2> "$WORK/err"
ok $? "get: 2 of each group's members lost or damaged: exit 0"
check "get: the values are the intact version's" $T same "$WORK/x.npy" "$WORK/x-healed.npy"
ok $(grep -Eq "warning: a@v1: healed [1-9][0-9]* chunks and [1-9] chunk indexes from parity" \
	"$WORK/err"; echo $?) "get: a warning counts the healed chunks and chunk indexes"
sed 's/^/# /' "$WORK/err"
check "get y: the same" bash -c "$M get a y -o $WORK/y-healed.npy 2>/dev/null && $T same $WORK/y.npy $WORK/y-healed.npy"
out=$($M cat a x 2> /dev/null)
ok $([ "$out" = "$(cat "$WORK/intact-x.txt")" ]; echo $?) "cat x: the intact version's text"
out=$($M cat a y --rows 40:120 2> /dev/null)
ok $([ "$out" = "$(tail -n 80 "$WORK/intact-y.txt")" ]; echo $?) "cat y --rows 40:120: the same"
check "get of one row of a lost shard" bash -c \
	"$M get a x --rows 110 -o $WORK/one.npy 2>/dev/null && $T same $WORK/x.npy $WORK/one.npy 110:111"
check "nothing was written back: the store still holds the damage" bash -c \
	"! $M verify a > /dev/null 2>&1"

# ---- a transient bad read is read again, not rebuilt ----
if [ "$OBJ_MODE" = s3 ]; then
	k=$(shard a 1)
	s3_log_clear
	s3_faults "{\"rules\": [{\"match\": \"GET /mt-test/[^ ]*${k##*/}\", \"action\": \"corrupt\", \"count\": 1, \"after\": 1}]}"
	$M cat a x --rows 12:24 > "$WORK/t.txt" 2> "$WORK/err"
	ok $? "s3: a chunk corrupted once in transit reads on the second try"
	ok $(s3_log | grep -q "${k##*/}.* corrupted"; echo $?) "s3: (the proxy did corrupt a read)"
	ok $(! grep -q healed "$WORK/err"; echo $?) "s3: and nothing is rebuilt from parity"
	s3_faults clear
fi

# ---- beyond M: 3 of group 0's 4 members ----
damage a 1 delete
damage a 3 delete
fails "3 members of a 4+2 group lost: fails naming dataset, version, shard, key and rows" 1 \
	"^matorage: a@v1: shard 0 \(datasets/a/shards/[0-9a-f]{64}\.h5\) is missing \(rows [0-9]+\.\.[0-9]+\); parity cannot rebuild" \
	$M get a x -o "$WORK/lost.npy"
ok $([ ! -e "$WORK/lost.npy" ]; echo $?) "and leaves no output file"
check "rows of the sound groups still read" bash -c \
	"$M get a x --rows 48:120 -o $WORK/rest.npy 2>/dev/null && $T same $WORK/x.npy $WORK/rest.npy 48:120"
done_testing
