#!/bin/bash
# python-loader.sh — the matorage Python package (python/matorage): the loader as numpy batches and as a torch IterableDataset, and a model trained on it.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
"$PY" - "$WORK" <<'PYEOF'
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
x = rng.standard_normal((3000, 16)).astype(np.float32)
w = rng.standard_normal(16).astype(np.float32)
np.save(f"{d}/x.npy", x)
np.save(f"{d}/y.npy", (x @ w > 0).astype(np.int64))
np.save(f"{d}/id.npy", np.arange(3000, dtype=np.int64))
PYEOF
check "a dataset" $M put pyds x="$WORK/x.npy" y="$WORK/y.npy" id="$WORK/id.npy" --shard-rows 500

check "numpy batches: values, order, shuffle, resume, read_rows, errors" pymt - "$WORK" "$MATORAGE_STORE" <<'PYEOF'
import sys
import numpy as np
import matorage
d, url = sys.argv[1], sys.argv[2]
x, ids = np.load(f"{d}/x.npy"), np.load(f"{d}/id.npy")
store = matorage.Store(url)
l = matorage.Loader(store, "pyds", batch_rows=100)
got = list(l)
assert len(got) == len(l) == 30, len(got)
assert (np.concatenate([b["x"] for b in got]) == x).all()
assert (np.concatenate([b["_rows"] for b in got]) == np.arange(3000)).all()
l = matorage.Loader(store, "pyds", attrs=["id", "x"], batch_rows=64, shuffle=True, seed=3,
                    shuffle_rows=600)
rows = np.concatenate([b["id"] for b in l])
assert sorted(rows.tolist()) == list(range(3000)) and (rows != np.arange(3000)).any()
l.set_epoch(0)
it = iter(l)
head = [next(it)["id"] for _ in range(10)]
tok = l.state()
rest = matorage.Loader(store, "pyds", attrs=["id", "x"], batch_rows=64, resume=tok)
tail = np.concatenate([b["id"] for b in rest])
assert (np.concatenate(head + [tail]) == rows).all(), "resume"
b = l.read_rows([7, 2999, 0])
assert b["id"].tolist() == [7, 2999, 0] and (b["x"][1] == x[2999]).all()
try:
    matorage.Loader(store, "nosuch")
    raise SystemExit("no error for a missing dataset")
except matorage.MatorageError as e:
    assert "nosuch" in str(e) and e.code == -4, (str(e), e.code)
print("numpy ok")
PYEOF

if ! "$PY" -c 'import torch' 2> /dev/null; then
	ok 0 "# SKIP python3-torch is not installed"
	done_testing
	exit
fi
check "torch: DataLoader workers share the rows, a model learns from them" pymt - "$MATORAGE_STORE" <<'PYEOF'
import sys
import numpy as np
import torch
import matorage
torch.manual_seed(0)
url = sys.argv[1]
ds = matorage.TorchDataset(url, "pyds", attrs=["id", "x", "y"], batch_rows=50, shuffle=True,
                           seed=1, shuffle_rows=500)
seen = []
for b in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2):
    seen.append(b["id"])
seen = torch.cat(seen).tolist()
assert sorted(seen) == list(range(3000)), "2 workers: every row exactly once"
# Two ranks of two workers each: still every row once.
both = []
for rank in (0, 1):
    r = matorage.TorchDataset(url, "pyds", attrs=["id"], batch_rows=50, rank=rank, world=2)
    for b in torch.utils.data.DataLoader(r, batch_size=None, num_workers=2):
        both.extend(b["id"].tolist())
assert sorted(both) == list(range(3000)), "2 ranks x 2 workers"
model = torch.nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for epoch in range(5):
    ds.set_epoch(epoch)
    for b in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(b["x"]), b["y"])
        loss.backward()
        opt.step()
test = matorage.TorchDataset(url, "pyds", attrs=["x", "y"], batch_rows=3000)
b = next(iter(test))
acc = (model(b["x"]).argmax(1) == b["y"]).float().mean().item()
print(f"accuracy {acc:.3f}")
assert acc > 0.95, acc
PYEOF
done_testing
