#!/bin/bash
# python-stream.sh — matorage.Stream (python/matorage/stream.py over mt_stream_*): rows appended from Python, committed by rows, time and on exit, read back by matorage get; ragged attributes too.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
mkdir -p "$WORK/store"

check "Python appends rows; commits by rows, by time (poll) and on leaving the with block" pymt - "$WORK" <<'PYEOF'
import sys, time
import numpy as np
import matorage
work = sys.argv[1]
store = matorage.Store("file://" + work + "/store")
with matorage.Stream(store, "py", {"x": ("float32", (3,)), "y": ("int64", ())},
                     commit_rows=100, commit_secs=1.0) as s:
    for i in range(0, 250, 10):
        y = np.arange(i, i + 10)
        s.append(x=np.stack([y, -y, y * 2], axis=1), y=y)
    assert s.pending == 50, s.pending
    wait = s.poll()
    assert wait is not None and wait > 0, wait
    time.sleep(1.1)
    assert s.poll() is None and s.pending == 0
    s.append({"x": [[1, 2, 3]], "y": [250]})
# leaving the block committed the last row
store.close()
PYEOF
ok $([ "$($M ls py | wc -l)" -eq 4 ]; echo $?) "four versions: 100, 200, 250 by rows and time, 251 on exit"
$M get py y -o "$WORK/y.npy" && $M get py x -o "$WORK/x.npy"
check "the rows come back in order, converted to the attributes' dtypes" "$PY" - "$WORK" <<'PYEOF'
import sys
import numpy as np
w = sys.argv[1]
y, x = np.load(w + "/y.npy"), np.load(w + "/x.npy")
assert y.dtype == np.int64 and np.array_equal(y, np.arange(251)), y[:5]
assert x.dtype == np.float32 and np.array_equal(x[:250, 1], -np.arange(250, dtype=np.float32))
assert np.array_equal(x[250], [1, 2, 3])
PYEOF
fails "rows of the wrong shape are refused" 1 "InvalidArgument: Stream.append: x: shape" pymt -c "
import numpy as np, matorage
s = matorage.Stream(matorage.Store('file://$WORK/store'), 'py', {'x': ('float32', (3,)), 'y': ('int64', ())})
s.append(x=np.zeros((2, 4)), y=[1, 2])"

check "ragged rows: lists of per-row arrays and a Ragged, empty rows too, committed by rows and on exit" pymt - "$WORK" <<'PYEOF'
import sys
import numpy as np
import matorage
from matorage.writer import Ragged
work = sys.argv[1]
with matorage.Stream("file://" + work + "/store", "tok",
                     {"tokens": ("int32", (), True), "label": ("int64", ())},
                     commit_rows=4) as s:
    s.append(tokens=[[5, 17, 3], [], [8]], label=[0, 1, 2])
    assert s.pending == 3
    s.append(tokens=Ragged(np.array([9, 9, 1, 2]), [0, 2, 4]), label=[3, 4])
    assert s.pending == 0, s.pending
    s.append(tokens=[np.arange(6)], label=[5])
r = matorage.Reader("file://" + work + "/store", "tok")
vals, offs = r.read("tokens")
assert r.rows == 6, r.rows
assert list(offs) == [0, 3, 3, 4, 6, 8, 14], list(offs)
assert list(vals) == [5, 17, 3, 8, 9, 9, 1, 2, 0, 1, 2, 3, 4, 5], list(vals)
PYEOF
fails "a ragged row of the wrong item shape is refused" 1 "InvalidArgument: Stream.append: p: row 1 has shape" pymt -c "
import matorage
s = matorage.Stream('file://$WORK/store', 'pts', {'p': ('float32', (2,), True)})
s.append(p=[[[1, 2]], [[1, 2, 3]]])"
check "a ragged attribute with an item shape: rows of (k, 2) items" pymt -c "
import numpy as np, matorage
with matorage.Stream('file://$WORK/store', 'pts', {'p': ('float32', (2,), True)}) as s:
    s.append(p=[[[1, 2], [3, 4]], [], [[5, 6]]])
v, o = matorage.Reader('file://$WORK/store', 'pts').read('p')
assert v.shape == (3, 2) and list(o) == [0, 2, 2, 3], (v.shape, list(o))"

done_testing
