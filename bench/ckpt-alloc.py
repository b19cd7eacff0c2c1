"""ckpt-alloc.py — where the time of a Python checkpoint load goes: the same 32 tensors read
with mt_ckpt_read into one reused buffer (the read and check alone), into a fresh numpy array
each (what load_checkpoint does, then torch.from_numpy without a copy), into a fresh
torch.empty tensor each, and load_checkpoint itself.  The data: float32 normal (numpy seed 7),
saved once with save_checkpoint to DIR/pystore; the objects stay in the page cache.
Usage: MATORAGE_LIB=build/bench/src/lib/.libs/libmatorage.so \\
       python3 bench/ckpt-alloc.py python DIR [MiB] [TENSORS] [ROUNDS]"""
import ctypes
import sys
import time

import numpy as np
import torch

sys.path.insert(0, sys.argv[1])
import matorage  # noqa: E402
from matorage import _lib  # noqa: E402

d = sys.argv[2]
mib, nt, rounds = (int(x) for x in (sys.argv[3:6] + ["512", "32", "3"][len(sys.argv[3:6]):]))
flat = torch.from_numpy(np.random.default_rng(7).standard_normal(mib * 262144, dtype=np.float32))
per = flat.numel() // nt
state = {f"layer{i}.weight": flat[i * per:(i + 1) * per].clone() for i in range(nt)}
matorage.save_checkpoint(d + "/pystore", "bench", state)
del flat, state


def load_with(alloc):
    s = matorage.Store(d + "/pystore")
    ck = ctypes.c_void_p()
    _lib.call("mt_ckpt_open", s.handle, b"bench", ctypes.byref(ck))
    out = []
    t0 = time.monotonic()
    for i in range(nt):
        buf, ptr = alloc(per)
        _lib.call("mt_ckpt_read", ck, f"layer{i}.weight".encode(), ctypes.c_void_p(ptr),
                  ctypes.c_size_t(per * 4))
        out.append(buf)
    t = time.monotonic() - t0
    _lib.lib().mt_ckpt_close(ck)
    s.close()
    return t


reuse = np.empty(per, np.float32)


def fresh_numpy(n):
    a = np.empty(n, np.float32)
    return a, a.ctypes.data


def fresh_torch(n):
    a = torch.empty(n, dtype=torch.float32)
    return a, a.data_ptr()


with open("/proc/loadavg") as f:
    print(f"# {mib} MiB in {nt} float32 tensors, load {f.read().split()[0]}")
for r in range(rounds):
    res = {"reused buffer": load_with(lambda n: (reuse, reuse.ctypes.data))}
    # Which fresh allocator goes first alternates: the second may reuse what the first freed.
    for name, fn in ([("fresh numpy", fresh_numpy), ("fresh torch", fresh_torch)][::1 - 2 * (r % 2)]):
        res[name] = load_with(fn)
    t0 = time.monotonic()
    matorage.load_checkpoint(d + "/pystore", "bench")
    res["load_checkpoint"] = time.monotonic() - t0
    print(" | ".join(f"{k} {v:.3f} s" for k, v in res.items()), flush=True)
