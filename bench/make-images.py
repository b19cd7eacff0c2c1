#!/usr/bin/python3
"""make-images.py DIR — the benchmarks' small rows: DIR/image.npy, 180,000 uint8 28x28 images
(shapes on a dark background, as image data looks to a compressor), and DIR/label.npy, their
int64 labels."""
import sys

import numpy as np

d = sys.argv[1]
rng = np.random.default_rng(0)
img = (rng.random((180000, 28, 28)) < 0.3).astype(np.uint8) * rng.integers(0, 255, (180000, 1, 1), dtype=np.uint8)
np.save(f"{d}/image.npy", img)
np.save(f"{d}/label.npy", rng.integers(0, 10, 180000).astype(np.int64))
