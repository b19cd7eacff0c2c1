#!/bin/bash
# verify-repair.sh — verify and repair agree with reads: a shard whose HDF5 metadata alone is damaged reads, verify says so and repair writes it again byte for byte from its own chunks; damaged parity objects fail verify; every UNREPAIRABLE means exit 1; repair DATASET finds a latest version whose manifest is the damaged object; protect, compact and push refuse unsound versions (push --force sends one).
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
S="$WORK/store"
export MATORAGE_CONFIG="$WORK/config.json"
cd "$WORK" || exit 1

# shard DATASET[@V] I: the sha256 of shard I, from the manifest.
shard() { $M info "$1" --json | $PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$2]['sha256'])"; }
# flip FILE OFFSET N: invert N bytes of FILE from OFFSET, in place (same size).
flip() {
	$PY - "$@" <<'PYEOF'
import sys
path, off, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = bytearray(open(path, "rb").read())
for i in range(off, off + n):
    b[i] ^= 0xFF
open(path, "wb").write(b)
PYEOF
}

$T make a.npy float32 120x16 1
check "put a: 4 shards of 30 rows" $M put a x=a.npy --shard-rows 30 --chunk-size 640

# ---- HDF5 metadata damaged, data intact ----------------------------------------
s3=$(shard a 3)
F="$S/datasets/a/shards/$s3.h5"
cp "$F" orig.h5
flip "$F" 100 16 # the superblock and root group: bytes the chunk reader never reads
check "every row still reads right" bash -c "$M get a x -o o.npy && $T same a.npy o.npy"
out=$($M verify a 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^BAD shard 3 $s3: .*HDF5 metadata damaged; data intact; repair rebuilds it" &&
	echo "$out" | grep -q "^a@v1: damaged, repairable from its own chunks"; echo $?) \
	"verify: HDF5 metadata damaged, data intact, repairable"
echo "$out" | sed 's/^/# /'
fails "protect refuses the version while it is not sound" 1 "protect refuses a version that is not sound" \
	$M protect a --parity 2+1
fails "compact refuses it too" 1 "compact refuses a version that is not sound" \
	$M compact a --shard-rows 60
out=$($M repair a --no-remotes 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^rebuilt a@v1 shard 3 (rows 90..119) .*from its own chunks"; echo $?) \
	"repair, with no parity and no other store, writes the shard again from its own chunks"
echo "$out" | sed 's/^/# /'
ok $(cmp -s orig.h5 "$F"; echo $?) "byte for byte the shard that was written"
check "and verify says sound" $M verify a

# Chunk data damaged as well: the metadata rebuild is no source (its sha256 would not hold).
cp orig.h5 chunk.h5
flip chunk.h5 100 16
off=$($PY -c "import h5py,sys; print(h5py.File(sys.argv[1], 'r')['x'].id.get_chunk_info(0).byte_offset + 4)" orig.h5)
flip chunk.h5 "$off" 1
cp chunk.h5 "$F"
out=$($M repair a --no-remotes 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^UNREPAIRABLE a@v1 shard 3"; echo $?) \
	"damaged chunks too: unrepairable without parity, exit 1"
cp orig.h5 "$F"

# ---- parity objects are verified --------------------------------------------------
check "protect a with 2+1" $M protect a --parity 2+1
check "verify a protected version: sound" $M verify a
P=$(ls "$S/datasets/a/parity" | head -1)
flip "$S/datasets/a/parity/$P" 10 16
out=$($M verify a 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^BAD parity of group [0-9] datasets/a/parity/$P: sha256 is" &&
	echo "$out" | grep -q "^2 parity objects verified, 1 damaged" &&
	echo "$out" | grep -q "^a@v1: damaged, repairable from parity"; echo $?) \
	"verify: a damaged parity object fails, naming it"
echo "$out" | sed 's/^/# /'
rm "$S/datasets/a/parity/$P"
out=$($M verify a 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^BAD parity of group [0-9] datasets/a/parity/$P: missing"; echo $?) \
	"verify: a missing parity object fails"
out=$($M repair a --no-remotes 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^rebuilt a@v1 parity of group"; echo $?) "repair rebuilds it"
check "verify: sound again" $M verify a

# ---- a damaged record: every UNREPAIRABLE exits 1 ----------------------------------
cp "$S/datasets/a/protect/v1.json" rec.json
flip "$S/datasets/a/protect/v1.json" 100 16
out=$($M repair a --no-remotes 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^UNREPAIRABLE a@v1 record datasets/a/protect/v1.json"; echo $?) \
	"repair: a damaged record nothing holds is UNREPAIRABLE and exit 1"
out=$($M repair a@v1 --dry-run --no-remotes 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^UNREPAIRABLE"; echo $?) "repair --dry-run: the same"
check "protect writes a new record" $M protect a@v1 --parity 2+1
check "verify: sound" $M verify a

# ---- repair DATASET when the latest manifest is the damaged object ------------------
$T make b.npy float32 60x16 2
check "put b twice" bash -c "$M put b x=a.npy --shard-rows 40 && $M put b x=b.npy --shard-rows 40"
check "protect b@v2" $M protect b@v2 --parity 2+1
cp "$S/datasets/b/versions/v2.json" v2.json
size=$(stat -c %s v2.json)
pass=0
for seed in 1 2 3 4 5 6 7 8 9 10 11 12; do
	cp v2.json "$S/datasets/b/versions/v2.json"
	flip "$S/datasets/b/versions/v2.json" $(( (seed * 7919) % (size - 16) )) 16
	$M repair b --no-remotes > out.txt 2>&1 && cmp -s v2.json "$S/datasets/b/versions/v2.json" &&
		grep -q "^rebuilt b@v2 manifest datasets/b/versions/v2.json: .*from protection record" out.txt &&
		pass=$((pass + 1))
done
ok $([ $pass -eq 12 ]; echo $?) "repair b rebuilds its damaged latest manifest byte for byte: $pass of 12 offsets"
cp v2.json "$S/datasets/b/versions/v2.json"

# ---- push refuses an unsound version unless --force ---------------------------------
flip "$F" 100 16
fails "push refuses a version that is not sound, naming --force" 1 "push: a@v1 is not sound.*--force" \
	$M push a@v1 "$WORK/other"
ok $([ ! -e "$WORK/other/datasets/a/versions/v1.json" ]; echo $?) "and nothing was committed there"
fails "the same for every version of the dataset" 1 "push: a@v1 is not sound" $M push a "$WORK/other"
out=$($M push a@v1 "$WORK/other" --force 2>&1)
ok $([ $? -eq 1 ] && ! echo "$out" | grep -q "not sound" && echo "$out" | grep -q "sha256 is"; echo $?) \
	"push --force goes on to the copy, which still sends no object under a name its bytes do not have"
cp orig.h5 "$F"
check "push of the sound version" $M push a@v1 "$WORK/other"
check "the copy verifies" $M --store "$WORK/other" verify a

done_testing
