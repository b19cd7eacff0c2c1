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

# Checkpoints: a run stopped mid-epoch and resumed ends exactly as an uninterrupted one
# (the same accuracy, and bit for bit the same weights: equal sha256 of the tensors).
$M put small image="$WORK/test-image.npy" label="$WORK/test-label.npy" --shard-rows 2000 > /dev/null
run_small() { "$TRAIN" --store "$MATORAGE_STORE" --train small --test small --epochs 2 --batch 64 "$@" 2>&1; }
full=$(run_small --seed 3 --checkpoint full)
ok $? "an uninterrupted run saves a checkpoint per epoch"
part=$(run_small --seed 3 --checkpoint part --stop-after 200)
ok $(grep -q "stopped after 200 batches" <<< "$part"; echo $?) "a run stops after 200 batches (mid second epoch) with a checkpoint"
rest=$(run_small --seed 77 --checkpoint part --resume)
ok $(grep -q "resumed from part@v2 at epoch 2, batch 43" <<< "$rest"; echo $?) "it resumes mid-epoch from its checkpoint, with its own seed"
echo "$rest" | sed 's/^/# /'
acc_full=$(tail -1 <<< "$full") acc_rest=$(tail -1 <<< "$rest")
ok $([ -n "$acc_full" ] && [ "$acc_full" = "$acc_rest" ] &&
	[ "$(grep '^epoch 2' <<< "$full")" = "$(grep '^epoch 2' <<< "$rest")" ]; echo $?) \
	"the resumed run reaches exactly the uninterrupted run's accuracy and loss ($acc_rest)"
wsha() { $M model info "$1" --json | "$PY" -c 'import json,sys; t=json.load(sys.stdin)["tensors"]; print(t["w"]["sha256"], t["b"]["sha256"])'; }
ok $([ "$(wsha full@v2)" = "$(wsha part@v3)" ]; echo $?) "and exactly the same weights"
done_testing
