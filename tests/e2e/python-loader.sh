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
np.save(f"{d}/id2.npy", np.arange(10000, 10500, dtype=np.int64))
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

check "copy=False: read-only views equal to the copies until the next call; copies kept unchanged" pymt - "$WORK" "$MATORAGE_STORE" <<'PYEOF'
import sys
import numpy as np
import matorage
d, url = sys.argv[1], sys.argv[2]
x = np.load(f"{d}/x.npy")
seed = 11
rng = np.random.default_rng(seed)
print("seed", seed)
tokens = [rng.integers(0, 1000, rng.integers(0, 9)) for _ in range(300)]
with matorage.Writer(url, "rag") as w:
    w.append(t=tokens, v=np.arange(300, dtype=np.int32))
opts = dict(batch_rows=37, shuffle=True, seed=5, shuffle_rows=120)
kept = list(matorage.Loader(url, "rag", **opts))      # copies: each batch its own arrays
assert all(b["v"].flags.writeable for b in kept)
assert not any(np.shares_memory(a["v"], b["v"]) or np.shares_memory(a["_rows"], b["_rows"])
               for a, b in zip(kept, kept[1:])), "two batches share memory"
l = matorage.Loader(url, "rag", copy=False, **opts)
first = None
for i, b in enumerate(l):
    k = kept[i]
    assert not b["v"].flags.writeable and not b["t"][0].flags.writeable
    assert (b["_rows"] == k["_rows"]).all() and (b["v"] == k["v"]).all()
    assert (b["t"][0] == k["t"][0]).all() and (b["t"][1] == k["t"][1]).all()
    for j, r in enumerate(b["_rows"]):
        assert (b["t"][0][b["t"][1][j]:b["t"][1][j + 1]] == tokens[r]).all(), r
    try:
        b["v"][0] = -1
        raise SystemExit("a view of the loader's buffer is writable")
    except ValueError:
        pass
    if first is None:
        first, first_vals = b["v"], b["v"].copy()
assert i + 1 == len(kept) == 9, i
# The first batch's view was overwritten by later batches, as documented; the copies
# taken by the default loader still hold their own batch.
assert not (first == first_vals).all(), "a view outlived its batch unchanged: the test proves nothing"
for k in kept:
    assert (k["v"] == k["_rows"]).all() and all(
        (k["t"][0][k["t"][1][j]:k["t"][1][j + 1]] == tokens[r]).all() for j, r in enumerate(k["_rows"]))
# read_rows follows the same option; no rows, even first thing, is an empty batch.
b = l.read_rows([299, 0])
assert b["v"].tolist() == [299, 0] and not b["v"].flags.writeable
for copy in (True, False):
    e = matorage.Loader(url, "rag", copy=copy).read_rows([])
    assert e["v"].shape == (0,) and e["t"][0].shape == (0,) and e["t"][1].tolist() == [0], e
# A view keeps its loader open when the loader's last other reference goes; without
# views left, the loader goes (and closes) at once, not at some later garbage collection.
v = matorage.Loader(url, "rag", copy=False).read_rows([5, 7])["v"]
assert v.tolist() == [5, 7], v
import gc, weakref
gc.disable()
l2 = matorage.Loader(url, "rag", copy=False)
for b in l2:
    pass
gone = weakref.ref(l2)
del l2
assert gone() is not None, "the last batch's views keep the loader"
del b
assert gone() is None, "a reference cycle keeps the loader after its last batch"
gc.enable()
lx = matorage.Loader(url, "pyds", attrs=["x"], batch_rows=1000, copy=False)
assert (np.concatenate([b["x"].copy() for b in lx]) == x).all()
print("views ok")
PYEOF

check "copy=True: big columns held in their window, writable, unchanged across windows and after close, let go with their arrays" pymt - "$WORK" "$MATORAGE_STORE" <<'PYEOF'
import gc, sys
import numpy as np
import matorage
d, url = sys.argv[1], sys.argv[2]
x = np.load(f"{d}/x.npy")
# x: 300 rows of 64 bytes a batch, held; id (2,400 bytes) and the row numbers copied.
opts = dict(attrs=["x", "id"], batch_rows=300, shuffle=True, seed=7, shuffle_rows=600)
ref = [b["_rows"].copy() for b in matorage.Loader(url, "pyds", copy=False, **opts)]
l = matorage.Loader(url, "pyds", **opts)
kept = []
for i, b in enumerate(l):
    assert b["x"].flags.writeable and b["_rows"].flags.writeable and b["id"].flags.writeable
    assert (b["_rows"] == ref[i]).all() and (b["x"] == x[b["_rows"]]).all(), i
    assert b["id"].flags.owndata and b["_rows"].flags.owndata
    if i % 2 == 0:
        kept.append((i, b))
assert i + 1 == len(ref) == 10, i
# Most are views of the window (held), not copies; the held keep their hold.
held = [b for _, b in kept if not b["x"].flags.owndata]
assert len(held) >= 3, (len(held), len(kept))
base = held[0]["x"]
while isinstance(base, np.ndarray):
    base = base.base
holds = base.owner.holds
del base
assert holds.live >= len(held), holds.live
# Windows of 600 rows were filled again while these were kept: each still has its rows.
assert l._holds.live == len(held) + (not b["x"].flags.owndata), l._holds.live  # and the last
for i, b in kept:
    assert (b["_rows"] == ref[i]).all() and (b["x"] == x[b["_rows"]]).all(), i
    assert (b["id"] == b["_rows"]).all(), i
# A write to one batch is that batch's alone, and what the loader reads is unchanged.
for i, b in kept:
    b["x"][:] = -i
for i, b in kept:
    assert (b["x"] == -i).all(), i
r = kept[2][1]["_rows"]
assert (l.read_rows(r)["x"] == x[r]).all()
# Closed and dropped with batches kept: they stay as they were (the loader's close frees
# all but their pages; its last part goes with the last of them).
l.close()
l.close()
del l, b
gc.collect()
for i, b in kept:
    assert (b["x"] == -i).all() and (b["_rows"] == ref[i]).all(), i
del kept, held, b, r
gc.collect()
assert holds.live == 0, holds.live
# A loop that drops each batch as it takes the next leaves nothing held.
l = matorage.Loader(url, "pyds", **opts)
n = sum(len(b["x"]) for b in l)
holds = l._holds
assert n == 3000 and holds.live == 0, (n, holds.live)
print("held ok")
PYEOF

if ! "$PY" -c 'import torch' 2> /dev/null; then
	ok 0 "# SKIP python3-torch is not installed"
	done_testing
	exit
fi
check "a second dataset" $M put pyds2 id="$WORK/id2.npy" --shard-rows 100

check "Mix: two loaders by weight, every row once, deterministic, set_epoch, resume, bad input" pymt - "$MATORAGE_STORE" <<'PYEOF'
import sys
import numpy as np
import matorage
url = sys.argv[1]
store = matorage.Store(url)
def loaders(resume=(None, None)):
    return [matorage.Loader(store, "pyds", attrs=["id"], batch_rows=50, shuffle=True, seed=1,
                            resume=resume[0]),
            matorage.Loader(store, "pyds2", attrs=["id"], batch_rows=50, shuffle=True, seed=2,
                            resume=resume[1])]
def run(mix):
    return [(b["_source"], b["id"].tolist()) for b in mix]
a = loaders()
full = run(matorage.Mix(a, weights=[3, 1], seed=9))
assert len(full) == 60 + 10, len(full)
rows = {0: [], 1: []}
for src, ids in full:
    rows[src] += ids
assert sorted(rows[0]) == list(range(3000)), "every row of pyds once"
assert sorted(rows[1]) == list(range(10000, 10500)), "every row of pyds2 once"
first = [s for s, _ in full[:40]]
assert 20 < first.count(0) < 40 and first.count(1) > 2, first  # drawn 3:1 while both last
b = loaders()
assert run(matorage.Mix(b, weights=[3, 1], seed=9)) == full, "the same draws again"
m = matorage.Mix(b, weights=[3, 1], seed=9)
assert len(m) == 70
m.set_epoch(1)
e1 = run(m)
assert e1 != full and sorted(sum((i for _, i in e1), [])) == sorted(sum((i for _, i in full), []))
c = loaders()
m = matorage.Mix(c, weights=[3, 1], seed=9)
it = iter(m)
head = [next(it) for _ in range(17)]
st = m.state()
m.close()
r = loaders(st["loaders"])
rest = run(matorage.Mix(r, weights=[3, 1], seed=9, resume=st["mix"]))
assert [(b["_source"], b["id"].tolist()) for b in head] + rest == full, "resume"
for bad, needle in ((dict(loaders=[]), "non-empty"), (dict(loaders=[a[0], a[0]]), "twice"),
                    (dict(loaders=a, weights=[1]), "1 weights for 2"),
                    (dict(loaders=a, weights=[1, 0]), "weight"),
                    (dict(loaders=a, weights=[1, float("nan")]), "weight"),
                    (dict(loaders=a, seed=-1), "seed"),
                    (dict(loaders=a, resume="junk"), "")):
    try:
        matorage.Mix(**bad)
        raise SystemExit(f"accepted {bad}")
    except matorage.MatorageError as e:
        assert needle in str(e), (needle, str(e))
print("mix ok")
PYEOF

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
