#!/usr/bin/python3
"""make-data.py PATH ROWS COLS — the benchmarks' input: a float32 .npy of activation-like values."""
import sys

import numpy as np

path, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# Normal values rounded to 3 decimals, so zstd has something to find.
rng = np.random.default_rng(0)
out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, cols))
step = 16384
for i in range(0, rows, step):
    out[i:i + step] = np.round(rng.standard_normal((min(step, rows - i), cols)), 3)
out.flush()
