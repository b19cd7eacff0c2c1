#!/bin/bash
# python-text.sh — str attributes in Python: Writer takes lists and arrays of str, Reader and Loader give lists of str back (empty, multibyte, long rows), bad text refused naming the row with nothing committed, TorchDataset batches and TorchMapDataset rows hold str.
. "$(dirname "$0")/lib.sh"
URL=$MATORAGE_STORE

check "str rows round-trip through Writer, Reader and Loader" pymt - "$URL" <<'PYEOF'
import sys
import numpy as np
import matorage
url = sys.argv[1]
seed = 11
print("seed", seed)
rng = np.random.default_rng(seed)
alphabet = ["a", "Z", " ", "\u00e9", "\u00df", "\u65e5", "\u672c", "\U0001F389", "\n", "\t", "\\", "\""]
rows = ["".join(rng.choice(alphabet, rng.integers(0, 12))) for _ in range(300)]
rows[5] = ""
rows[77] = "\u00e9\u65e5" * 40000          # 200 KB: over a chunk
store = matorage.Store(url)
w = matorage.Writer(store, "notes", chunk_bytes=4096, shard_rows=64)
w.append(id=np.arange(100, dtype=np.int32), text=rows[:100])                  # a list
w.append(id=np.arange(100, 200, dtype=np.int32), text=np.array(rows[100:200]))  # numpy '<U'
w.append(id=np.arange(200, 300, dtype=np.int32), text=np.array(rows[200:], dtype=object))
assert w.commit() == "notes@v1"
with matorage.Reader(url, "notes") as r:
    at = r.attributes["text"]
    assert at.text and at.ragged and at.shape == (), at
    got = r.read("text")
    assert isinstance(got, list) and got == rows, "Reader.read"
    assert r.read("text", 70, 80) == rows[70:80]
    assert r.read("text", 3, 3) == []
seen = {}
with matorage.Loader(url, "notes", batch_rows=32, shuffle=True, seed=seed) as ld:
    for b in ld:
        assert isinstance(b["text"], list) and len(b["text"]) == len(b["_rows"])
        for i, t in zip(b["_rows"].tolist(), b["text"]):
            seen[i] = t
    assert [seen[i] for i in range(300)] == rows, "Loader batches"
    pick = [77, 5, 299, 0, 77]
    b = ld.read_rows(pick)
    assert b["text"] == [rows[i] for i in pick], "Loader.read_rows"
with matorage.Loader(url, "notes", batch_rows=50, copy=False) as ld:
    assert sum((b["text"] for b in ld), []) == rows, "Loader copy=False"
PYEOF

check "bad text is refused naming the attribute and row; nothing is committed" pymt - "$URL" <<'PYEOF'
import sys
import numpy as np
import matorage
url = sys.argv[1]
def refused(rows, want):
    w = matorage.Writer(url, "bad")
    try:
        w.append(text=rows)
    except matorage.Error as e:
        assert all(s in str(e) for s in want), str(e)
    else:
        raise AssertionError("accepted")
    w.abort()
refused(["ok", "lone \udc80 surrogate"], ["text", "row 1"])    # no UTF-8 for it
refused(["ok", "fine", "nul \0 inside"], ["text", "row 2"])     # the library refuses NUL
refused(["ok", 5], ["text", "row 1", "not str"])
try:
    matorage.Reader(url, "bad")
except matorage.NotFound:
    pass
else:
    raise AssertionError("a version was committed")
PYEOF

check "Stream: str rows appended in pieces, committed as versions, read back in Loader batches" pymt - "$URL" <<'PYEOF'
import sys
import numpy as np
import matorage
url = sys.argv[1]
seed = 23
print("seed", seed)
rng = np.random.default_rng(seed)
alphabet = ["a", "b", " ", "\u00e9", "\u65e5", "\U0001F389", "\n"]
rows = ["".join(rng.choice(alphabet, rng.integers(0, 9))) for _ in range(250)]
rows[0], rows[100] = "", "\u00df" * 5000
with matorage.Stream(url, "streamed", {"id": ("int64", ()), "text": ("str", ())},
                     commit_rows=100) as s:
    for a in range(0, 250, 25):
        part = rows[a:a + 25]
        s.append(id=np.arange(a, a + 25), text=part if a % 50 else np.array(part))
with matorage.Reader(url, "streamed") as r:
    assert r.attributes["text"].text and r.read("text") == rows, "Stream rows read back"
got = {}
with matorage.Loader(url, "streamed", batch_rows=16, shuffle=True, seed=seed) as ld:
    for b in ld:
        assert isinstance(b["text"], list) and all(isinstance(t, str) for t in b["text"])
        got.update(zip(b["id"].tolist(), b["text"]))
assert [got[i] for i in range(250)] == rows, "Loader batches of streamed text"
# Bad text in a stream: the append is refused naming the row; nothing waits from it.
s = matorage.Stream(url, "streamed", {"id": ("int64", ()), "text": ("str", ())})
for bad, want in ((["ok", 7], "row 1"), (["a\udc80"], "row 0"), ("abc", "one string a row")):
    try:
        s.append(id=np.arange(len(bad)), text=bad)
    except matorage.InvalidArgument as e:
        assert want in str(e) and "text" in str(e), str(e)
    else:
        raise AssertionError(f"accepted {bad!r}")
assert s.pending == 0 and s.commit() == ""
s.close()
try:
    matorage.Stream(url, "x", {"text": ("str", (3,))})
except matorage.InvalidArgument as e:
    assert "str takes no shape" in str(e), str(e)
else:
    raise AssertionError("a shaped str accepted")
PYEOF

if case "${MT_CFLAGS:-}" in *fsanitize=address*) true ;; *) false ;; esac; then
	ok 0 "# SKIP torch under the sanitizer runtime (python-torch.sh runs in the plain build)"
elif ! "$PY" -c 'import torch' 2> /dev/null; then
	ok 0 "# SKIP python3-torch is not installed"
else
	check "TorchDataset batches and TorchMapDataset rows hold str" pymt - "$URL" <<'PYEOF'
import sys
import torch
import matorage
url = sys.argv[1]
with matorage.Reader(url, "notes") as r:
    rows = r.read("text")
ds = matorage.TorchDataset(url, "notes", batch_rows=40)
got = []
for b in ds.dataloader(num_workers=0):
    assert isinstance(b["text"], list) and isinstance(b["id"], torch.Tensor)
    got += b["text"]
assert got == rows
m = matorage.TorchMapDataset(url, "notes", attrs=["id", "text"])
assert m[77]["text"] == rows[77] and m[5]["text"] == ""
dl = torch.utils.data.DataLoader(m, batch_size=8, sampler=[3, 77, 1, 299])
b = next(iter(dl))
assert b["text"] == [rows[3], rows[77], rows[1], rows[299]], "default collate keeps str"
held = matorage.TorchMapDataset(url, "notes", as_tuple=("text", "id"), in_memory=True)
assert held[-1][0] == rows[-1] and held[77][0] == rows[77]
PYEOF
fi
done_testing
