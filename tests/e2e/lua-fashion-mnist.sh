#!/bin/bash
# lua-fashion-mnist.sh — lua/examples/fashion_mnist.lua builds the datasets numpy would from Debian's IDX files; rerun rebuilds identical shards; train-softmax trains on them.
. "$(dirname "$0")/lib.sh"
FM=/usr/share/datasets/fashion-mnist
if [ ! -f "$FM/train-images-idx3-ubyte.gz" ]; then
	echo "1..0 # SKIP dataset-fashion-mnist is not installed (scripts/install-deps.sh)"
	exit 0
fi
M=$MATORAGE
EX=$top_srcdir/lua/examples
TRAIN=${TRAIN_SOFTMAX:-$(dirname "$MATORAGE")/../../examples/train-softmax}
cd "$WORK" || exit 1

out=$($M run "$EX/fashion_mnist.lua" --allow "$FM" 2>&1)
ok $? "the recipe runs"
[ "$out" = "$(printf 'fashion-mnist-train@v1\nfashion-mnist-test@v1')" ]
ok $? "it prints the two versions it committed ($(echo $out))"

for part in train test; do
	$M get fashion-mnist-$part image -o "$WORK/$part-image.npy" &&
		$M get fashion-mnist-$part label -o "$WORK/$part-label.npy"
done
check "every row equals numpy's decoding of the IDX files (image/255 as float32, label as int64)" \
	"$PY" - "$FM" "$WORK" <<'PYEOF'
import gzip, sys
import numpy as np
src, work = sys.argv[1], sys.argv[2]
def idx(name):
    with gzip.open(f"{src}/{name}-ubyte.gz", "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)
for part, pre in (("train", "train"), ("test", "t10k")):
    img = np.load(f"{work}/{part}-image.npy")
    lab = np.load(f"{work}/{part}-label.npy")
    want_img = idx(f"{pre}-images-idx3").astype(np.float32) / np.float32(255)
    want_lab = idx(f"{pre}-labels-idx1").astype(np.int64)
    assert img.dtype == np.float32 and img.shape == want_img.shape, (part, img.dtype, img.shape)
    assert lab.dtype == np.int64 and lab.shape == want_lab.shape, (part, lab.dtype, lab.shape)
    assert np.array_equal(img, want_img), f"{part}: images differ"
    assert np.array_equal(lab, want_lab), f"{part}: labels differ"
    assert img.min() == 0.0 and img.max() == 1.0
PYEOF

info=$($M info fashion-mnist-train)
echo "$info" | grep -Eq '^recipe: +[0-9a-f]{64}$'
ok $? "info names the recipe"
sha=$(echo "$info" | sed -n 's/^recipe: *//p')
cmp -s "$EX/fashion_mnist.lua" "$WORK/store/datasets/fashion-mnist-train/recipes/$sha.lua"
ok $? "the script is stored byte for byte under recipes/<sha256>.lua"
echo "$sha  $EX/fashion_mnist.lua" | sha256sum -c --quiet - > /dev/null 2>&1
ok $? "its name is the sha256 of its bytes"

shards() { $M info --shards "$1" | sed -n 's/^ *[0-9][0-9]* *\([0-9a-f]\{64\}\).*/\1/p'; }
out=$($M rerun fashion-mnist-train@v1 --allow "$FM" 2>&1)
ok $? "rerun runs the stored recipe ($(echo $out))"
[ -n "$(shards fashion-mnist-train@v1)" ] && [ "$(shards fashion-mnist-train@v1)" = "$(shards fashion-mnist-train@v2)" ] &&
	[ "$(shards fashion-mnist-test@v1)" = "$(shards fashion-mnist-test@v2)" ]
ok $? "rerun produces identical shard hashes"

out=$("$TRAIN" --store "$MATORAGE_STORE" --train fashion-mnist-train --test fashion-mnist-test \
	--epochs 3 --batch 64 --seed 1 2>&1)
ok $? "train-softmax trains on the recipe's datasets directly"
acc=$(echo "$out" | tail -1 | sed -n 's/^test_accuracy=//p')
ok $(echo "${acc:-0} >= 0.80" | bc -l | grep -q 1; echo $?) "test accuracy ${acc:-none} is what softmax regression reaches (>= 0.80 after 3 epochs)"
done_testing
