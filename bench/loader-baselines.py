#!/usr/bin/python3
"""loader-baselines.py — one shuffled epoch over a matorage file store's shards without matorage, for bench/loader.sh.

usage: loader-baselines.py h5py|torch|limit STORE DATASET ATTR[,ATTR...] BATCH WINDOW SEED [THREADS]
prints "rows bytes seconds" like bench/loader-epoch.

Every contender does the loader's work (doc/loader.md, src/lib/loader/loader-plan.c): the
version's rows are cut into units of WINDOW/2 consecutive rows inside one shard, the units
are shuffled, consecutive units are grouped into windows of at most WINDOW rows, and each
window's rows are delivered in a random order, BATCH rows at a time, every batch a fresh
gathered copy. The random generator differs from the loader's (numpy's, seeded), the
shuffle's reach is the same. The time covers opening the shards.

  h5py   one process: each unit read with h5py slices (whole chunks decoded once, by
         HDF5's zstd filter), a numpy permutation within each window, batches by np.take;
  torch  the same as a torch IterableDataset, windows dealt round-robin to THREADS
         DataLoader worker processes;
  limit  no shuffle, no copy, no checksum: zstd decompression of the very chunk frames
         (taken out of the shards with h5py's read_direct_chunk before the timer starts)
         into one preallocated buffer, on THREADS threads.
"""
import ctypes
import json
import os
import sys
import threading
import time

import h5py
import numpy as np


def shards(store, ds):
    with open(f"{store}/datasets/{ds}/versions/v1.json") as f:
        m = json.load(f)
    return [(f"{store}/datasets/{ds}/shards/{s['sha256']}.h5", s["rows"]) for s in m["shards"]]


def plan(files, window, seed):
    """The windows: lists of (shard, first row in shard, rows), units shuffled."""
    unit = max(1, window // 2)
    units = [(i, a, min(unit, rows - a)) for i, (_, rows) in enumerate(files)
             for a in range(0, rows, unit)]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(units))
    windows, cur, n = [], [], 0
    for k in order:
        u = units[k]
        if cur and n + u[2] > window:
            windows.append(cur)
            cur, n = [], 0
        cur.append(u)
        n += u[2]
    if cur:
        windows.append(cur)
    return windows


def window_batches(handles, attrs, win, batch, rng):
    """Read one window unit by unit, then yield its rows in a random order, batch by batch."""
    n = sum(u[2] for u in win)
    cols = []
    for a in attrs:
        d0 = handles[win[0][0]][a]
        buf = np.empty((n,) + d0.shape[1:], d0.dtype)
        off = 0
        for s, first, rows in win:
            handles[s][a].read_direct(buf, np.s_[first:first + rows], np.s_[off:off + rows])
            off += rows
        cols.append(buf)
    perm = rng.permutation(n)
    for i in range(0, n, batch):
        idx = perm[i:i + batch]
        yield [np.take(c, idx, axis=0) for c in cols]


def run_h5py(files, attrs, batch, windows, seed):
    rows = nbytes = 0
    handles = [h5py.File(p, "r") for p, _ in files]
    rng = np.random.default_rng(seed + 1)
    for win in windows:
        for b in window_batches(handles, attrs, win, batch, rng):
            rows += len(b[0])
            nbytes += sum(x.nbytes for x in b)
    return rows, nbytes


def run_torch(files, attrs, batch, windows, seed, workers):
    import torch

    class Windows(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            wid, nw = (info.id, info.num_workers) if info else (0, 1)
            handles = [h5py.File(p, "r") for p, _ in files]
            rng = np.random.default_rng([seed + 1, wid])
            for win in windows[wid::nw]:
                for b in window_batches(handles, attrs, win, batch, rng):
                    yield tuple(torch.from_numpy(x) for x in b)

    rows = nbytes = 0
    dl = torch.utils.data.DataLoader(Windows(), batch_size=None, num_workers=workers)
    for b in dl:
        rows += b[0].shape[0]
        nbytes += sum(x.numel() * x.element_size() for x in b)
    return rows, nbytes


def frames(files, attrs):
    out = []
    for p, _ in files:
        with h5py.File(p, "r") as f:
            for a in attrs:
                d = f[a]
                for i in range(d.id.get_num_chunks()):
                    out.append(d.id.read_direct_chunk(d.id.get_chunk_info(i).chunk_offset)[1])
    return out


def run_limit(chunks, workers):
    z = ctypes.CDLL("libzstd.so.1")
    z.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
    z.ZSTD_getFrameContentSize.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    z.ZSTD_decompress.restype = ctypes.c_size_t
    z.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    z.ZSTD_isError.argtypes = [ctypes.c_size_t]
    sizes = [z.ZSTD_getFrameContentSize(c, len(c)) for c in chunks]
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    out = np.empty(int(offs[-1]), np.uint8)
    out.fill(0)  # faulted in before the timer, as the loader's reused window buffers are
    base = out.ctypes.data
    errors = []

    def work(k):
        for i in range(k, len(chunks), workers):
            r = z.ZSTD_decompress(base + int(offs[i]), sizes[i], chunks[i], len(chunks[i]))
            if z.ZSTD_isError(r):
                errors.append(i)

    t = time.perf_counter()
    ts = [threading.Thread(target=work, args=(k,)) for k in range(workers)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    secs = time.perf_counter() - t
    if errors:
        sys.exit(f"loader-baselines: {len(errors)} frames failed to decompress")
    return secs, int(offs[-1])


def main():
    if len(sys.argv) < 8:
        sys.exit(__doc__)
    who, store, ds, attrs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
    batch, window, seed = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
    workers = int(sys.argv[8]) if len(sys.argv) > 8 else os.cpu_count()
    files = shards(store, ds)
    if who == "limit":
        secs, nbytes = run_limit(frames(files, attrs), workers)
        print(0, nbytes, f"{secs:.3f}")
        return
    t = time.perf_counter()
    windows = plan(files, window, seed)
    if who == "h5py":
        rows, nbytes = run_h5py(files, attrs, batch, windows, seed)
    elif who == "torch":
        rows, nbytes = run_torch(files, attrs, batch, windows, seed, workers)
    else:
        sys.exit(f"loader-baselines: unknown contender {who}")
    print(rows, nbytes, f"{time.perf_counter() - t:.3f}")


if __name__ == "__main__":
    main()
