"""npy_tool.py — numpy-side helpers for the end-to-end tests: make arrays, compare files, read shards with h5py."""
import sys

import numpy as np

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "float16", "float32", "float64"]


def sample(dtype, shape, seed):
    """Deterministic values that exercise the dtype's range."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    return (rng.standard_normal(size=shape) * 1000).astype(dt)


def make(path, dtype, shape, seed="1", order="C", endian="<", version=None):
    arr = sample(dtype, tuple(int(s) for s in shape.split("x") if s != ""), int(seed))
    if endian == ">":
        arr = arr.astype(arr.dtype.newbyteorder(">"))
    if order == "F":
        arr = np.asfortranarray(arr)
    with open(path, "wb") as f:
        ver = tuple(int(v) for v in version.split(".")) if version else None
        np.lib.format.write_array(f, arr, version=ver)


def same(a, b, rows=None):
    """Exit 0 when b holds the same values (dtype and shape) as a[rows]."""
    x, y = np.load(a), np.load(b)
    if rows:
        lo, hi = (int(v) if v else None for v in rows.split(":"))
        x = x[lo:hi]
    x = x.astype(x.dtype.newbyteorder("<"))
    if x.dtype != y.dtype or x.shape != y.shape:
        sys.exit(f"dtype/shape differ: {x.dtype}{x.shape} vs {y.dtype}{y.shape}")
    if x.tobytes() != np.ascontiguousarray(y).tobytes():
        sys.exit("values differ")


def makeall(folder, seed, *shapes):
    """FOLDER/DTYPE-SHAPE.npy for every dtype and shape: one process, where a make each costs a
    python start."""
    for dt in DTYPES:
        for shape in shapes:
            make("%s/%s-%s.npy" % (folder, dt, shape), dt, shape, seed)


def sameall(folder, out):
    """For each FOLDER/NAME.npy, "NAME ok" when OUT/NAME.npy holds the same values, else
    "NAME <what differs>"."""
    import os
    for name in sorted(n[:-4] for n in os.listdir(folder) if n.endswith(".npy")):
        try:
            same("%s/%s.npy" % (folder, name), "%s/%s.npy" % (out, name))
            print(name, "ok")
        except (SystemExit, OSError, ValueError) as e:
            print(name, e)


def h5(shard, name, npy, plugin):
    """Read dataset `name` of a shard with h5py (+hdf5plugin or our plugin)."""
    if plugin == "hdf5plugin":
        import hdf5plugin  # noqa: F401  registers the zstd filter
    import h5py
    with h5py.File(shard, "r") as f:
        got = f[name][...]
    want = np.load(npy)
    want = want.astype(want.dtype.newbyteorder("<"))
    if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
        sys.exit(f"h5py read {got.dtype}{got.shape}, wanted {want.dtype}{want.shape}")


def idx(src, dst, dtype="uint8"):
    """A gzip'ed IDX file (MNIST's format) as a .npy file of dtype."""
    import gzip
    with gzip.open(src, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    a = np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)
    np.save(dst, a.astype(dtype))


if __name__ == "__main__":
    globals()[sys.argv[1]](*sys.argv[2:])
