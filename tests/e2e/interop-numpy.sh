#!/bin/bash
# interop-numpy.sh — numpy writes, matorage stores across many shards and chunks, numpy reads back equal arrays.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"

$PY -c "
import numpy as np
rng = np.random.default_rng(3)
np.save('$WORK/img.npy', rng.integers(0, 255, (3000, 28, 28), dtype=np.uint8))
np.save('$WORK/emb.npy', rng.standard_normal((3000, 64)).astype(np.float16))
np.save('$WORK/y.npy', rng.integers(0, 10, 3000))
"
check "put 3000 rows in ~300 KB shards" $M put mix img="$WORK/img.npy" emb="$WORK/emb.npy" y="$WORK/y.npy" --shard-size 300K --chunk-size 16K
nsh=$($M info mix --json | $PY -c 'import json,sys; print(len(json.load(sys.stdin)["shards"]))')
ok $([ "$nsh" -ge 8 ]; echo $?) "the version spans $nsh shards"
for a in img emb y; do
	check "numpy reads $a back equal" bash -c "$M get mix $a -o $WORK/$a.out.npy && $T same $WORK/$a.npy $WORK/$a.out.npy"
done
for r in 0:1 999:1001 1234:2987 2999:3000; do
	check "rows $r equal numpy's slice" bash -c "$M get mix img -o $WORK/s.npy --rows $r && $T same $WORK/img.npy $WORK/s.npy $r"
done
check "np.load opens the output without allow_pickle" $PY -c "import numpy as np; a=np.load('$WORK/img.out.npy', allow_pickle=False); assert a.flags['C_CONTIGUOUS']"
done_testing
