#!/bin/bash
# python-api.sh — the matorage Python package: Writer/Reader round trips of every dtype and of ragged attributes, bad input refused with clear errors, errors that pickle, datasets/versions, Loader validation.
. "$(dirname "$0")/lib.sh"
URL=$MATORAGE_STORE

check "every dtype and ragged attributes round-trip through Writer, Reader and Loader" pymt - "$URL" <<'PYEOF'
import sys
import numpy as np
import matorage
url = sys.argv[1]
seed = 7
print("seed", seed)
rng = np.random.default_rng(seed)
assert len(matorage.DTYPES) == 12, matorage.DTYPES
cols = {}
for name in matorage.DTYPES:
    dt = np.dtype(name)
    if dt.kind == "b":
        v = rng.integers(0, 2, (50, 3)).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, (50, 3), dtype=dt, endpoint=True)
    else:
        v = rng.standard_normal((50, 3)).astype(dt)
    cols["a_" + name] = v
cols["img"] = rng.integers(0, 255, (50, 4, 5), dtype=np.uint8)
cols["be"] = np.arange(50, dtype=">i4")          # big-endian in, int32 out
tokens = [rng.integers(0, 1000, rng.integers(0, 7)) for _ in range(50)]
points = [rng.standard_normal((rng.integers(1, 4), 3)).astype(np.float32) for _ in range(50)]
store = matorage.Store(url)
w = matorage.Writer(store, "every", description="all dtypes", tags=["t1"])
w.append(**{k: v[:20] for k, v in cols.items()}, tokens=tokens[:20], points=points[:20])
w.append(**{k: v[20:] for k, v in cols.items()},
         tokens=matorage.Ragged(np.concatenate(tokens[20:]),
                                np.cumsum([0] + [len(t) for t in tokens[20:]])),
         points=points[20:])
assert w.commit() == "every@v1"
with matorage.Reader(url, "every@v1") as r:           # a URL where a Store goes
    assert r.rows == len(r) == 50 and r.version == "v1" and r.info["tags"] == ["t1"]
    for k, v in cols.items():
        got = r.read(k)
        assert got.dtype == np.dtype(v.dtype.name) and got.shape == v.shape, (k, got.dtype, got.shape)
        assert (got == v).all() or (np.isnan(got) == np.isnan(v)).all() and \
            (got[~np.isnan(got)] == v[~np.isnan(v)]).all(), k
        assert (r.read(k, 10, 13) == v[10:13]).all() or v.dtype.kind == "f"
    assert r.attributes["tokens"].ragged and r.attributes["tokens"].shape == ()
    assert r.attributes["points"] == matorage.Attr("points", np.dtype(np.float32), (3,), True)
    vals, offs = r.read("tokens", 5, 30)
    for i in range(25):
        assert (vals[offs[i]:offs[i + 1]] == tokens[5 + i]).all(), i
    vals, offs = r.read("points")
    for i in range(50):
        assert (vals[offs[i]:offs[i + 1]] == points[i]).all(), i
    assert r.read("tokens", 3, 3)[0].shape == (0,)
seen = 0
for b in matorage.Loader(url, "every@v1", attrs=["a_float64", "tokens", "img"], batch_rows=16):
    rows = b["_rows"]
    assert (b["a_float64"] == cols["a_float64"][rows]).all() and (b["img"] == cols["img"][rows]).all()
    vals, offs = b["tokens"]
    for i, row in enumerate(rows):
        assert (vals[offs[i]:offs[i + 1]] == tokens[row]).all()
    seen += len(rows)
assert seen == 50
print("round trips ok")
PYEOF

check "bad input: dtype, shape, row counts, closed writer, unsupported dtypes, abort on exception" pymt - "$URL" <<'PYEOF'
import sys
import numpy as np
import matorage
url = sys.argv[1]

def fails(cls, words, fn, *a, **kw):
    try:
        fn(*a, **kw)
    except cls as e:
        for w in words:
            assert w in str(e), (w, str(e))
        assert isinstance(e, matorage.Error) and e.code < 0 and e.message == str(e)
        return e
    raise AssertionError(f"no {cls.__name__} from {fn.__name__}{a}")

w = matorage.Writer(url, "bad")
w.append(x=np.zeros((4, 2), np.float32), y=np.arange(4))
fails(matorage.InvalidArgument, ["x", "float64", "float32"], w.append,
      x=np.zeros((2, 2)), y=np.arange(2))
fails(matorage.InvalidArgument, ["x", "(3,)", "(2,)"], w.append,
      x=np.zeros((2, 3), np.float32), y=np.arange(2))
fails(matorage.InvalidArgument, ["row counts", "x 3", "y 2"], w.append,
      x=np.zeros((3, 2), np.float32), y=np.arange(2))
fails(matorage.InvalidArgument, ["z"], w.append, x=np.zeros((1, 2), np.float32), z=np.arange(1))
fails(matorage.InvalidArgument, ["x"], w.append, x=np.zeros((1, 2), np.float32))
fails(matorage.InvalidArgument, ["scalar"], w.append, x=np.float32(1), y=np.int64(1))
assert w.commit() == "bad@v1"
fails(matorage.StateError, ["committed"], w.append, x=np.zeros((1, 2), np.float32), y=np.arange(1))
fails(matorage.StateError, ["committed"], w.commit)
fails(matorage.InvalidArgument, ["complex64", "not supported"],
      matorage.Writer(url, "bad2").append, c=np.zeros(3, np.complex64))
fails(matorage.InvalidArgument, ["|S1", "not supported"],
      matorage.Writer(url, "bad2").append, s=np.array([b"a", b"b"]))
fails(matorage.InvalidArgument, ["ragged row 1"],
      matorage.Writer(url, "bad2").append, r=[np.zeros(2, np.int32), np.zeros(2, np.int64)])
fails(matorage.StateError, ["nothing to commit"], matorage.Writer(url, "bad2").commit)
fails(matorage.InvalidArgument, ["tags"], matorage.Writer, url, "bad2", tags="a")
fails(matorage.InvalidArgument, ["levl"], matorage.Writer, url, "bad2", levl=3)
try:
    with matorage.Writer(url, "aborted") as w:
        w.append(x=np.arange(10))
        raise KeyError("in the block")
except KeyError:
    pass
assert w._state == "aborted"
fails(matorage.NotFound, ["aborted"], matorage.versions, url, "aborted")
assert "aborted" not in matorage.datasets(url)
with matorage.Writer(url, "bad", level=19, shard_rows=3) as w:   # the context manager commits
    w.append(x=np.ones((5, 2), np.float32), y=np.arange(5))
assert w.version == "v2" and matorage.versions(url, "bad") == ["v1", "v2"]
w2 = matorage.Writer(url, "bad@v1")
fails(matorage.AlreadyExists, ["bad@v1"], w2.append, x=np.ones((1, 2), np.float32), y=np.arange(1))
print("bad input ok")
PYEOF

check "errors pickle with class, code and message; datasets and versions; Reader errors" pymt - "$URL" <<'PYEOF'
import pickle
import sys
import numpy as np
import matorage
url = sys.argv[1]
for cls in (matorage.Error, matorage.NotFound, matorage.InvalidArgument, matorage.IOFailure,
            matorage.Corrupt, matorage.StateError, matorage.AccessDenied, matorage.NetworkError,
            matorage.OutOfRange, matorage.LibraryNotFound):
    e = cls("what failed: key k", cls.code)
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is cls and e2.code == e.code and e2.message == e.message == str(e2), cls
    # How torch's DataLoader re-raises a worker's exception: the class with one text.
    e3 = cls("Caught in worker\n" + str(e))
    assert e3.code == cls.code and "what failed" in str(e3)
try:
    matorage.Loader(url, "nosuch")
except matorage.NotFound as e:
    e2 = pickle.loads(pickle.dumps(e))
    assert e2.code == -4 and "nosuch" in str(e2) and isinstance(e2, LookupError), str(e2)
store = matorage.Store(url)
assert matorage.datasets(store) == store.datasets() == ["bad", "every"], store.datasets()
assert matorage.versions(url, "bad") == ["v1", "v2"]
with matorage.Reader(store, "bad") as r:          # no version: the newest
    assert r.version == "v2" and r.rows == 5
    for fn, a, cls in ((r.read, ("nope",), matorage.NotFound),
                       (r.read, ("x", 3, 9), matorage.OutOfRange),
                       (r.read, ("x", 4, 2), matorage.OutOfRange)):
        try:
            fn(*a)
            raise AssertionError(a)
        except cls as e:
            assert "bad@v2" in str(e), str(e)
try:
    r.read("x")
    raise AssertionError("read after close")
except matorage.StateError as e:
    assert "closed" in str(e)
for name, cls in (("bad@v9", matorage.NotFound), ("bad@", matorage.InvalidArgument),
                  ("", matorage.InvalidArgument)):
    try:
        matorage.Reader(url, name)
        raise AssertionError(name)
    except cls:
        pass
missing = url + "-missing"
for fn in (lambda: matorage.Store(missing, create=False), lambda: matorage.Reader(missing, "x"),
           lambda: matorage.datasets(missing)):
    try:
        fn()
        raise AssertionError("a missing store")
    except matorage.NotFound as e:
        assert "no store" in str(e), str(e)
import os
assert not os.path.exists(missing[len("file://"):]), "reading made the store"
print("errors ok")
PYEOF

check "Loader: bad options refused clearly, dataset@version, no noise from a failed Loader" pymt - "$URL" <<'PYEOF'
import sys
import numpy as np
import matorage
url = sys.argv[1]
store = matorage.Store(url)
for kw, words in (({"batch_rows": 0}, ["batch_rows", ">= 1"]), ({"world": 0}, ["world"]),
                  ({"rank": 2, "world": 2}, ["rank 2", "world size 2"]),
                  ({"attrs": "x"}, ["attrs", "['x']"]), ({"attrs": ["nope"]}, ["nope"]),
                  ({"resume": "garbage"}, ["not a resume token"])):
    try:
        matorage.Loader(store, "bad@v2", **kw)
        raise AssertionError(kw)
    except matorage.Error as e:
        for w in words:
            assert w in str(e), (kw, str(e))
l = matorage.Loader(url, "bad@v1", batch_rows=2, shuffle=True, seed=3)
assert len(l) == 2 and l.version == "v1"
it = iter(l)
next(it)
tok = l.state()
assert matorage.parse_token(tok)["seed"] == 3
for kw, words in (({"seed": 4}, ["seed 3", "4"]), ({"shuffle": False}, ["shuffle"]),
                  ({"shuffle_rows": 7}, ["shuffle_rows"])):
    try:
        matorage.Loader(url, "bad@v1", resume=tok, **kw)
        raise AssertionError(kw)
    except matorage.InvalidArgument as e:
        for w in words:
            assert w in str(e), (kw, str(e))
past = tok.rsplit(":", 1)[0] + ":9"
try:
    matorage.Loader(url, "bad@v1", resume=past)
    raise AssertionError("a token past the end")
except matorage.InvalidArgument as e:
    assert "past the end" in str(e), str(e)
try:
    matorage.Loader(url, "bad@v2", resume=tok)
    raise AssertionError("a token of another version")
except matorage.InvalidArgument as e:
    assert "v1" in str(e), str(e)
rest = matorage.Loader(url, "bad", resume=tok, seed=3, batch_rows=2)
assert len(list(rest)) == 1
b = l.read_rows([3, 0])
assert b["_rows"].tolist() == [3, 0]
try:
    l.read_rows([4])
    raise AssertionError("row 4 of 4")
except matorage.OutOfRange:
    pass
l.close()
l.close()
try:
    len(l)
except matorage.StateError:
    pass
print("loader ok")
PYEOF
err=$(pymt -c 'import matorage
try:
    matorage.Loader("'"$URL"'", "nosuch", batch_rows=4)
except matorage.NotFound:
    pass
try:
    matorage.Loader("'"$URL"'", "bad", batch_rows=0)
except matorage.InvalidArgument:
    pass
import gc; gc.collect()' 2>&1)
ok $([ -z "$err" ] && echo 0 || echo 1) "a failed Loader(...) leaves nothing on stderr"
[ -z "$err" ] || printf '%s\n' "$err" | sed 's/^/# /'

fails "a missing library: a clear error naming MATORAGE_LIB" 1 "MATORAGE_LIB=/nonexistent/libmatorage.so.0: cannot load" \
	env MATORAGE_LIB=/nonexistent/libmatorage.so.0 PYTHONPATH="$top_srcdir/python" "$PY" -c 'import matorage; matorage.Store()'

check "Writer(append=True) on a dataset with no version makes v1; a second saver continues it" pymt - "$URL" <<'PYEOF'
import sys
import numpy as np
import matorage
store = matorage.Store(sys.argv[1])
for i in range(2):
    with matorage.Writer(store, "savers", append=True) as w:
        w.append(x=np.arange(i * 5, i * 5 + 5, dtype=np.int64))
r = matorage.Reader(store, "savers")
assert r.version == "v2" and len(r) == 10, (r.version, len(r))
assert r.read("x").tolist() == list(range(10)), r.read("x")
PYEOF

done_testing
