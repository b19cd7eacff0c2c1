#!/usr/bin/env python3
"""torch-workers.py — an epoch of matorage.Loader (numpy) and of matorage.TorchDataset at
several DataLoader num_workers, over one local version: which setting is fastest.

    MATORAGE_LIB=build/src/lib/.libs/libmatorage.so PYTHONPATH=python \\
        python3 bench/torch-workers.py [ROWS [FLOATS_PER_ROW [BATCH_ROWS]]]

Each setting runs two epochs and reports the second (workers started, files cached);
every batch is touched (a sum) as a training step would.
"""
import os
import sys
import tempfile
import time

import numpy as np
import torch

import matorage


def timed(batches):
    t, n = time.perf_counter(), 0
    for b in batches:
        n += len(b["y"])
        float(b["x"].sum())
    return time.perf_counter() - t, n


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    width = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 512
    d = tempfile.mkdtemp(prefix="mt-bench-")
    url = "file://" + d
    rng = np.random.default_rng(0)
    with matorage.Writer(url, "bench", level=1) as w:
        for a in range(0, rows, 50_000):
            n = min(50_000, rows - a)
            w.append(x=rng.standard_normal((n, width)).astype(np.float32),
                     y=np.arange(a, a + n, dtype=np.int64))
    mb = rows * (width * 4 + 8) / 1e6
    print(f"{rows} rows of {width} float32 + 1 int64 ({mb:.0f} MB), batch_rows {batch}, "
          f"{os.cpu_count()} CPUs")
    opts = dict(batch_rows=batch, shuffle=True, seed=1, shuffle_rows=65536)
    l = matorage.Loader(url, "bench", **opts)
    for e in range(2):
        l.set_epoch(e)
        s, n = timed(l)
    assert n == rows
    print(f"{'Loader (numpy, in process)':34s} {s:6.2f} s  {mb / s:7.0f} MB/s")
    l.close()
    for k in (0, 1, 2, 4):
        ds = matorage.TorchDataset(url, "bench", **opts)
        dl = ds.dataloader(num_workers=k, persistent_workers=k > 0)
        for e in range(2):
            ds.set_epoch(e)
            s, n = timed(dl)
        assert n == rows, n
        print(f"{'TorchDataset num_workers=%d' % k:34s} {s:6.2f} s  {mb / s:7.0f} MB/s")
        del dl
    import shutil
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
