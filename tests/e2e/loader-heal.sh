#!/bin/bash
# loader-heal.sh — the loader over a protected version with lost and damaged shards delivers the intact version's batches, batch for batch and in the same order (shuffled, ranks, shard cache, in memory), counts what it healed, and train-softmax reaches the same accuracy; beyond M it fails naming dataset, version, shard, key and rows.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
TRAIN=${TRAIN_SOFTMAX:-$(dirname "$MATORAGE")/../../examples/train-softmax}

"$PY" - "$WORK" <<'PYEOF'
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
np.save(f"{d}/x.npy", rng.standard_normal((6000, 32)).astype(np.float32))
np.save(f"{d}/label.npy", rng.integers(0, 10, 6000).astype(np.int64))
PYEOF
# 12 shards of 500 rows, x in chunks of 128 rows: groups of shards 0-3, 4-7, 8-11.
check "put d" $M put d x="$WORK/x.npy" label="$WORK/label.npy" --shard-rows 500 --chunk-size 16384
check "protect d with 4+2" $M protect d --parity 4+2
cp -r "$WORK/store" "$WORK/intact"

# key I: the path of shard I of d@v1 in the store.
key() {
	echo "$WORK/store/datasets/d/shards/$($M info d --json |
		$PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$1]['sha256'])").h5"
}
# damage KIND I [J]: flip (a bit in the middle of x's chunk 1), index (a bit of the chunk
# index), truncate (to half), replace (by shard J's bytes) or delete shard I.
damage() {
	local f
	f=$(key "$2")
	case $1 in
	delete) rm -f "$f" ;;
	truncate) truncate -s $(($(stat -c %s "$f") / 2)) "$f" ;;
	replace) cp -f "$(key "$3")" "$f" ;;
	*)
		chmod u+w "$f"
		"$PY" - "$f" "$1" "$($M info d --json)" "$2" <<'PYEOF'
import json, sys
import h5py
path, kind, info, i = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
data = bytearray(open(path, "rb").read())
if kind == "index":
    off, n = info["shards"][i]["index"]
    data[off + n // 3] ^= 0x02
else:
    with h5py.File(path, "r") as f:
        c = f["x"].id.get_chunk_info(1)
    data[c.byte_offset + c.size // 2] ^= 0x40
open(path, "wb").write(data)
PYEOF
		;;
	esac
}
damage delete 1
damage flip 2
damage truncate 5
damage replace 6 7
damage delete 8
damage index 11

check "epochs over the damaged version are the intact version's, batch for batch" \
	pymt - "file://$WORK/intact" "$MATORAGE_STORE" "$WORK" <<'PYEOF'
import sys
import numpy as np
import matorage
intact, damaged, work = matorage.Store(sys.argv[1]), matorage.Store(sys.argv[2]), sys.argv[3]
configs = [
    dict(batch_rows=64, shuffle=True, seed=3, shuffle_rows=1000),
    dict(batch_rows=100),
    dict(batch_rows=50, shuffle=True, seed=5, rank=1, world=3, drop_last=True),
    dict(batch_rows=64, shuffle=True, seed=3, cache_dir=work + "/cache-{}"),
    dict(batch_rows=64, shuffle=True, seed=3, in_memory=True),
    dict(batch_rows=32, shuffle=True, seed=9, decode_threads=1, fetch_threads=1),
]
for n, c in enumerate(configs):
    runs = []
    for store, name in ((intact, "intact"), (damaged, "damaged")):
        c2 = dict(c)
        if "cache_dir" in c2:
            c2["cache_dir"] = c2["cache_dir"].format(name)
        l = matorage.Loader(store, "d", **c2)
        epochs = []
        for e in (0, 1):
            l.set_epoch(e)
            epochs.append(list(l))
        runs.append((epochs, l.stats()))
        l.close()
    (a, sa), (b, sb) = runs
    for e in (0, 1):
        assert len(a[e]) == len(b[e]) > 0, (n, e, len(a[e]), len(b[e]))
        for i, (x, y) in enumerate(zip(a[e], b[e])):
            for k in x:
                assert np.array_equal(x[k], y[k]), f"config {n} epoch {e} batch {i}: {k} differs"
    assert sa == {"healed_chunks": 0, "healed_indexes": 0, "heal_bytes": 0}, sa
    assert sb["healed_chunks"] > 0 and sb["healed_indexes"] > 0 and sb["heal_bytes"] > 0, sb
    print(f"config {n}: {len(a[0])} batches an epoch, identical; damaged: {sb}")
l = matorage.Loader(damaged, "d", batch_rows=8)
rows = [4000, 750, 5999, 0, 2999]
got, want = l.read_rows(rows), matorage.Loader(intact, "d").read_rows(rows)
assert all(np.array_equal(got[k], want[k]) for k in want), "read_rows"
print("read_rows of lost shards:", l.stats())
PYEOF

# ---- train-softmax on Fashion-MNIST: the same run on both ----
FM=/usr/share/datasets/fashion-mnist
if [ -f "$FM/train-images-idx3-ubyte.gz" ]; then
	"$PY" - "$FM" "$WORK" <<'PYEOF'
import gzip, sys
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
def idx(name):
    with gzip.open(f"{src}/{name}-ubyte.gz", "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)
# A fifth of each set, in shards of 1,000 rows: the same three groups of 4+2 as the whole set
# in shards of 5,000, at a fifth of the training time (two runs under ASan on a loaded machine).
for part, pre, n in (("train", "train", 12000), ("test", "t10k", 2000)):
    np.save(f"{dst}/{part}-image.npy", idx(f"{pre}-images-idx3")[:n])
    np.save(f"{dst}/{part}-label.npy", idx(f"{pre}-labels-idx1")[:n].astype(np.int64))
PYEOF
	for s in fm fm-intact; do
		$M --store "$WORK/$s" put fm-train image="$WORK/train-image.npy" label="$WORK/train-label.npy" \
			--shard-rows 1000 > /dev/null
		$M --store "$WORK/$s" put fm-test image="$WORK/test-image.npy" label="$WORK/test-label.npy" \
			> /dev/null
	done
	check "protect the training set with 4+2" $M --store "$WORK/fm" protect fm-train --parity 4+2
	# One member of each of the three groups lost or damaged.
	for i in 1 6 9; do
		sha=$($M --store "$WORK/fm" info fm-train --json |
			$PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$i]['sha256'])")
		f=$WORK/fm/datasets/fm-train/shards/$sha.h5
		case $i in
		1) rm -f "$f" ;;
		6) truncate -s 100000 "$f" ;;
		9) chmod u+w "$f" && printf 'X' | dd of="$f" bs=1 seek=200000 conv=notrunc status=none ;;
		esac
	done
	want=$("$TRAIN" --store "$WORK/fm-intact" --train fm-train --test fm-test --epochs 2 --seed 1 2>&1)
	ok $? "train-softmax on the intact version"
	got=$("$TRAIN" --store "$WORK/fm" --train fm-train --test fm-test --epochs 2 --seed 1 2>&1)
	ok $? "train-softmax on the damaged, protected version"
	echo "$got" | sed 's/^/# /'
	ok $([ "$(echo "$want" | tail -1)" = "$(echo "$got" | tail -1)" ]; echo $?) \
		"the same test accuracy ($(echo "$want" | tail -1))"
	ok $([ "$(echo "$want" | grep -c '^epoch')" = 2 ] && [ "$(echo "$want" | grep '^epoch' | sed 's/;.*//')" = \
		"$(echo "$got" | grep '^epoch' | sed 's/;.*//')" ]; echo $?) "the same loss and accuracy every epoch"
	ok $(echo "$got" | grep -q "^epoch 1: .*; [1-9][0-9]* chunks healed from parity"; echo $?) \
		"train-softmax reports the healed chunks"
else
	ok 0 "# SKIP dataset-fashion-mnist is not installed (scripts/install-deps.sh)"
fi

# ---- beyond M: 3 of group 0's 4 members lost ----
damage delete 0
damage delete 3
check "3 members of a 4+2 group lost: the loader fails naming dataset, version, shard, key and rows" \
	pymt - "$MATORAGE_STORE" <<'PYEOF'
import re, sys
import matorage
try:
    list(matorage.Loader(matorage.Store(sys.argv[1]), "d", batch_rows=100))
    raise SystemExit("no error")
except matorage.MatorageError as e:
    print(e)
    assert re.match(r"d@v1: shard 0 \(datasets/d/shards/[0-9a-f]{64}\.h5\) is missing \(rows 0\.\.499\); "
                    r"parity cannot rebuild", str(e)), str(e)
PYEOF
done_testing
