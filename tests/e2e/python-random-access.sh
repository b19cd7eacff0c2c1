#!/bin/bash
# python-random-access.sh — rows by number from Python: Loader.read_rows and Reader.read_rows equal a full read over random indices, through the chunk cache (one decode per chunk); in_memory holds the decoded rows; TorchMapDataset and TorchDataset with as_tuple.
. "$(dirname "$0")/lib.sh"
SEED=20261128
echo "# seed $SEED"

check "a version of 6000 rows (image 8x8 uint8, label int64, ragged tok), 3 shards" \
	pymt - "$MATORAGE_STORE" "$SEED" <<'PYEOF'
import sys
import numpy as np
import matorage
url, seed = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(seed)
n = 6000
image = rng.integers(0, 256, (n, 8, 8), dtype=np.uint8)
label = rng.integers(0, 10, n).astype(np.int64)
lens = rng.integers(0, 5, n)
offs = np.zeros(n + 1, dtype=np.int64)
np.cumsum(lens, out=offs[1:])
tok = rng.integers(0, 1000, int(offs[-1])).astype(np.int32)
# 6400-byte chunks: 100 images, 800 labels a chunk.
with matorage.Writer(url, "ra", shard_rows=2000, chunk_bytes=6400) as w:
    w.append(image=image, label=label, tok=matorage.Ragged(tok, offs))
PYEOF

check "Loader.read_rows and Reader.read_rows equal a full read, in any order, cached per chunk" \
	pymt - "$MATORAGE_STORE" "$SEED" <<'PYEOF'
import sys
import numpy as np
import matorage
url, seed = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(seed + 1)
with matorage.Reader(url, "ra") as r:
    image, label = r.read("image"), r.read("label")
    tv, to = r.read("tok")
    rows = rng.integers(0, r.rows, 1000)
    matorage.clear_chunk_cache()
    st0 = matorage.chunk_cache_stats()
    assert st0["chunks"] == 0 and st0["budget"] == 256 << 20, st0
    got = r.read_rows("image", rows)
    assert (got == image[rows]).all()
    assert (r.read_rows("label", rows[::-1]) == label[rows[::-1]]).all()
    assert r.read_rows("image", []).shape == (0, 8, 8)
    try:
        r.read_rows("tok", [1])
        raise SystemExit("a ragged attribute read by rows")
    except matorage.InvalidArgument as e:
        print("# ragged:", e)
    try:
        r.read_rows("image", [r.rows])
        raise SystemExit("a row past the end")
    except matorage.OutOfRange as e:
        print("# past the end:", e)
    st = matorage.chunk_cache_stats()
    # 60 image chunks and 9 label chunks hold them: each decoded once, then kept.
    assert st["chunks"] == 69 and st["misses"] - st0["misses"] == 69, (st0, st)
    again = r.read_rows("image", rows)
    st2 = matorage.chunk_cache_stats()
    assert (again == got).all() and st2["misses"] == st["misses"], st2
    print("# reader:", st2)
l = matorage.Loader(url, "ra", batch_rows=64)
for k in range(3):
    rows = rng.integers(0, l.rows, 500)
    b = l.read_rows(rows)
    assert (b["_rows"] == rows).all()
    assert (b["image"] == image[rows]).all() and (b["label"] == label[rows]).all()
    vals, offs = b["tok"]
    for j, i in enumerate(rows):
        assert (vals[offs[j]:offs[j + 1]] == tv[to[i]:to[i + 1]]).all(), (k, j, i)
assert matorage.chunk_cache_stats()["chunks"] >= 69
assert l.cache_stats()["budget"] == matorage.chunk_cache_stats()["budget"]
sorted_rows = np.arange(0, 6000, 7)
assert (l.read_rows(sorted_rows)["image"] == image[sorted_rows]).all()
matorage.set_chunk_cache(0)
assert matorage.chunk_cache_stats()["chunks"] == 0
assert (l.read_rows(rows)["image"] == image[rows]).all()
assert matorage.chunk_cache_stats()["chunks"] == 0
matorage.set_chunk_cache(1 << 20)
try:
    matorage.set_chunk_cache(-1)
    raise SystemExit("a negative budget")
except matorage.InvalidArgument:
    pass
l.close()
PYEOF

check "in_memory: the decoded rows held by the loader, epochs and read_rows right" \
	pymt - "$MATORAGE_STORE" "$SEED" <<'PYEOF'
import sys
import numpy as np
import matorage
url, seed = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(seed + 2)
with matorage.Reader(url, "ra") as r:
    image, label = r.read("image"), r.read("label")
l = matorage.Loader(url, "ra", attrs=["image", "label"], batch_rows=100, shuffle=True, seed=4,
                    in_memory=True)
for e in range(2):
    l.set_epoch(e)
    for b in l:
        assert (b["image"] == image[b["_rows"]]).all() and (b["label"] == label[b["_rows"]]).all()
    st = l.cache_stats()
    if e == 0:
        first = st
# 60 image chunks and 9 label chunks, kept decoded; the second epoch decodes nothing.
assert first["chunks"] == 69 and st["misses"] == first["misses"], (first, st)
rows = rng.integers(0, 6000, 2000)
b = l.read_rows(rows)
assert (b["image"] == image[rows]).all() and l.cache_stats()["misses"] == first["misses"]
l.close()
# Too small a budget for the decoded rows: the compressed shards are held instead.
l = matorage.Loader(url, "ra", attrs=["image", "label"], in_memory=True, cache_bytes=100000)
assert l.cache_stats()["budget"] == matorage.chunk_cache_stats()["budget"]
assert (l.read_rows(rows)["label"] == label[rows]).all()
l.close()
PYEOF

if ! "$PY" -c 'import torch' 2> /dev/null; then
	ok 0 "# SKIP python3-torch is not installed"
	done_testing
	exit 0
fi

check "TorchMapDataset over a shuffled sampler: rows right, dicts and as_tuple, in_memory" \
	pymt - "$MATORAGE_STORE" "$SEED" <<'PYEOF'
import sys
import numpy as np
import torch
import matorage
url, seed = sys.argv[1], int(sys.argv[2])
with matorage.Reader(url, "ra") as r:
    image, label = r.read("image"), r.read("label")
    tv, to = r.read("tok")
g = torch.Generator().manual_seed(seed)
need = 6000 * (64 + 8)
for kw in ({}, {"in_memory": True}, {"in_memory": True, "cache_bytes": need},
           {"in_memory": True, "cache_bytes": need - 1}):
    ds = matorage.TorchMapDataset(url, "ra", attrs=["image", "label"], as_tuple=("label", "image"),
                                  **kw)
    held = "in_memory" in kw and kw.get("cache_bytes", need) == need
    assert (ds._cols is not None) == held, kw
    dl = torch.utils.data.DataLoader(ds, batch_size=128, sampler=torch.utils.data.RandomSampler(
        ds, generator=g))
    seen = []
    for lab, img in dl:
        assert img.shape[1:] == (8, 8) and img.dtype == torch.uint8
        seen.append(img)
    allimg = torch.cat(seen).numpy()
    assert len(allimg) == 6000
    # Every image once: sorted the same as the version's.
    key = lambda a: a.reshape(len(a), -1)[np.lexsort(a.reshape(len(a), -1).T[::-1])]
    assert (key(allimg) == key(image)).all(), kw
    lab, img = ds[17]
    assert int(lab) == label[17] and (img.numpy() == image[17]).all()
    lab, img = ds[-1]
    assert int(lab) == label[-1]
    try:
        ds[6000]
        raise SystemExit("row 6000 of 6000")
    except IndexError:
        pass
    print("# ok:", kw)
ds = matorage.TorchMapDataset(url, "ra")
row = ds[1234]
assert set(row) == {"image", "label", "tok", "_rows"} and int(row["_rows"]) == 1234
assert (row["tok"].numpy() == tv[to[1234]:to[1235]]).all()
ds = matorage.TorchMapDataset(url, "ra", in_memory=True, as_tuple=("tok", "_rows"))
t, i = ds[4321]
assert int(i) == 4321 and (t.numpy() == tv[to[4321]:to[4322]]).all()
rows = ds.__getitems__([5, 3, 5])
assert [int(r[1]) for r in rows] == [5, 3, 5]
ds = matorage.TorchMapDataset(url, "ra", attrs=["label"], as_tuple=("label",),
                              transform=lambda r: dict(r, label=r["label"] + 1))
assert int(ds[9][0]) == label[9] + 1
for bad in ("label", ("nope",), ()):
    try:
        matorage.TorchMapDataset(url, "ra", as_tuple=bad)
        raise SystemExit(f"as_tuple={bad!r}")
    except matorage.InvalidArgument as e:
        print("# as_tuple", repr(bad), "->", e)
PYEOF

check "TorchDataset(as_tuple=...) yields tuples in that order" \
	pymt - "$MATORAGE_STORE" <<'PYEOF'
import sys
import numpy as np
import matorage
url = sys.argv[1]
with matorage.Reader(url, "ra") as r:
    image, label = r.read("image"), r.read("label")
ds = matorage.TorchDataset(url, "ra", attrs=["image", "label"], batch_rows=256, shuffle=True,
                           seed=2, as_tuple=("image", "label", "_rows"))
n = 0
for img, lab, rows in ds.dataloader():
    assert (img.numpy() == image[rows.numpy()]).all() and (lab.numpy() == label[rows.numpy()]).all()
    n += len(rows)
assert n == 6000, n
try:
    matorage.TorchDataset(url, "ra", attrs=["image"], as_tuple=("image", "label"))
    raise SystemExit("as_tuple names an attribute not loaded")
except matorage.InvalidArgument as e:
    print("#", e)
PYEOF
done_testing
