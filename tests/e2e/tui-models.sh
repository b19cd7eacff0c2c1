#!/bin/bash
# tui-models.sh — models in the browser: M switches a bucket between datasets and models, a model's checkpoints, a checkpoint's tensors (shared or new), a 2-D tensor's values in the matrix viewer, a 1-D one as a row, verify and delete with the name typed.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1

# Two checkpoints as safetensors files (struct + json + numpy, no randomness):
# fc.weight 3 x 4 = 1.5 * (0..11) in both, fc.bias changed in the second.
"$PY" - "$WORK" << 'EOF2'
import json, struct, sys
import numpy as np
w = sys.argv[1]
def write(path, t):
    hdr, blobs, off = {}, [], 0
    codes = {'float32': 'F32', 'int64': 'I64'}
    for k, a in t.items():
        b = a.astype(a.dtype.newbyteorder('<')).tobytes()
        hdr[k] = {'dtype': codes[a.dtype.name], 'shape': list(a.shape), 'data_offsets': [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(hdr).encode()
    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + b''.join(blobs))
weight = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5
bias = np.array([7, 8, 9], dtype=np.int64)
write(f"{w}/a.safetensors", {'fc.weight': weight, 'fc.bias': bias})
write(f"{w}/b.safetensors", {'fc.weight': weight, 'fc.bias': bias + 100})
np.save(f"{w}/x.npy", np.arange(6).reshape(3, 2))
EOF2
check "a dataset beside the model" $M put table x="$WORK/x.npy"
check "checkpoint v1" $M model import net "$WORK/a.safetensors"
check "checkpoint v2: the weight unchanged" $M model import net "$WORK/b.safetensors"
out=$($M sync)
ok $(grep -q "^local: 1 model(s), 2 checkpoint(s): 2 read, 0 unchanged$" <<< "$out"; echo $?) "sync indexes the model's checkpoints: $out"
out=$($M search net)
ok $(grep -q "^local	model:net@v1	" <<< "$out" && grep -q "^local	model:net@v2	" <<< "$out"; echo $?) "search finds the model's checkpoints: $out"
out=$($M search bias)
ok $(grep -q "model:net@v2" <<< "$out"; echo $?) "and a tensor's key: $out"

tui_start 130 30
expect "the browser opens" "sync local:"
keys Enter Enter
expect "a bucket lists its datasets first" "table"
expect "the footer offers the models" "M models"
expect "the title says the bucket has a model" "(+1 model: M)"
keys M
expect "M lists the bucket's models" "MODEL  CHECKPOINTS"
ok $(screen | grep -qE '^net +2 +unverified +v2'; echo $?) "with its checkpoints, its health (never checked) and the latest"
expect_not "and not the datasets" "table"
keys M
expect "M again: the datasets" "DATASET  VERSIONS"
keys M Enter
expect "Enter on a model: its checkpoints" "CHECKPOINT  HEALTH"
expect "with tensors, bytes, stored and new bytes" "TENSORS  BYTES  STORED  NEW"
ok $(screen | grep -qE '^v2 .* 2 +72 B +[0-9]+ B +29 B +v1'; echo $?) "v2 added only the bias's bytes, beside its parent"
keys j Enter
expect "Enter on a checkpoint: its tensors" "TENSOR     DTYPE    SHAPE"
ok $(screen | grep -qE '^fc\.weight +float32 +\(3, 4\) +48 B .* shared'; echo $?) "the weight is its parent's"
ok $(screen | grep -qE '^fc\.bias +int64 +\(3,\) +24 B .* new'; echo $?) "the bias is new"
keys Enter
expect "Enter on a 2-D tensor: the matrix viewer" "tensor fc.weight  float32 (3, 4)  of net@v2  grid 3x4"
ok $(screen | grep -qE '^ +1 +6 +7\.5 +9 +10\.5$'; echo $?) "its second row's values"
ok $(screen | grep -qE '^max +12 +13\.5 +15 +16\.5$'; echo $?) "each column's maximum"
expect_not "no row keys for a tensor" "row+"
keys Escape j Enter
expect "a 1-D tensor is one row" "tensor fc.bias  int64 (3,)  of net@v2  grid 1x3"
ok $(screen | grep -qE '^ +0 +107 +108 +109$'; echo $?) "with its values"
keys Escape Escape
expect "back on the checkpoints" "CHECKPOINT  HEALTH"
keys v
expect "v verifies the checkpoint's tensors" "2 tensor objects checked: all sound"
expect "and its row reads sound" "v2          sound"
keys D
expect "D asks for the name" "delete net@v2 from local? type its name to confirm:"
keys net@v1 Enter
expect "a wrong name deletes nothing" "not deleted: 'net@v1' is not 'net@v2'"
keys D net@v2 Enter
expect "the right name deletes it" "deleted from file://"
expect_gone "and it leaves the list" "v2    "
ok $([ -e "$WORK/store/models/net/versions/v2.removed" ] && [ ! -e "$WORK/store/models/net/versions/v2.json" ]; echo $?) "its manifest is gone, a tombstone in its place"
keys F bias Enter
expect "F finds no dataset version, says there is a checkpoint" "search: bias (+1 checkpoint: M)"
keys M
expect "M: the checkpoints that match" "local   net    v1"
expect "the title says which" "search models: bias"
keys Enter
expect "Enter on one: its tensors" "TENSOR     DTYPE    SHAPE"
keys Escape
keys '?' / 'switch a bucket' Enter
expect "the help lists the M key" "switch a bucket's list between its datasets and its models"
keys Escape q
ok $(tui_exited; echo $?) "q quits"

tui_start 130 30 --read-only
expect "read-only browser" "sync local:"
keys Enter Enter M Enter
expect "the checkpoints read-only" "CHECKPOINT  HEALTH"
expect_not "no delete in the footer" "D delete"
keys q
ok $(tui_exited; echo $?) "q quits"
done_testing
