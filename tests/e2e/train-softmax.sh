#!/bin/bash
# train-softmax.sh — Fashion-MNIST (Debian's IDX files) put into a store, then examples/train-softmax trains through the loader.
. "$(dirname "$0")/lib.sh"
FM=/usr/share/datasets/fashion-mnist
if [ ! -f "$FM/train-images-idx3-ubyte.gz" ]; then
	echo "1..0 # SKIP dataset-fashion-mnist is not installed (scripts/install-deps.sh)"
	exit 0
fi
M=$MATORAGE
TRAIN=${TRAIN_SOFTMAX:-$(dirname "$MATORAGE")/../../examples/train-softmax}
check "IDX files decoded to .npy" "$PY" - "$FM" "$WORK" <<'PYEOF'
import gzip, sys
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
def idx(name):
    with gzip.open(f"{src}/{name}-ubyte.gz", "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)
for part, pre in (("train", "train"), ("test", "t10k")):
    np.save(f"{dst}/{part}-image.npy", idx(f"{pre}-images-idx3"))
    np.save(f"{dst}/{part}-label.npy", idx(f"{pre}-labels-idx1").astype(np.int64))
PYEOF
check "put the training set" $M put fashion-mnist-train image="$WORK/train-image.npy" label="$WORK/train-label.npy"
check "put the test set" $M put fashion-mnist-test image="$WORK/test-image.npy" label="$WORK/test-label.npy"
out=$("$TRAIN" --store "$MATORAGE_STORE" --train fashion-mnist-train --test fashion-mnist-test@v1 \
	--epochs 3 --batch 64 --seed 1 2>&1)
ok $? "train-softmax runs"
echo "$out" | sed 's/^/# /'
acc=$(echo "$out" | tail -1 | sed -n 's/^test_accuracy=//p')
ok $(echo "${acc:-0} >= 0.80" | bc -l | grep -q 1; echo $?) "test accuracy ${acc:-none} is what softmax regression reaches (>= 0.80 after 3 epochs)"
again=$("$TRAIN" --store "$MATORAGE_STORE" --train fashion-mnist-train --test fashion-mnist-test \
	--epochs 1 --batch 64 --seed 5 2>&1 | tail -1)
again2=$("$TRAIN" --store "$MATORAGE_STORE" --train fashion-mnist-train --test fashion-mnist-test \
	--epochs 1 --batch 64 --seed 5 2>&1 | tail -1)
ok $([ -n "$again" ] && [ "$again" = "$again2" ]; echo $?) "the same seed trains to the same result ($again)"
$M put labels-only label="$WORK/test-label.npy" > /dev/null
fails "a dataset without images is named as such" 1 "labels-only@v1 has no attribute image" \
	"$TRAIN" --store "$MATORAGE_STORE" --train labels-only --test fashion-mnist-test --epochs 1
done_testing
