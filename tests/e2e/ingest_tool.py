#!/usr/bin/env python3
"""ingest_tool.py — records for the ingest tests, and checks of what was committed.

gen FORMAT N FIRST SEED [DELAY]   N records on stdout (jsonl, csv or npy batches of 10 rows):
                                  x float32 (3,), y int64 = FIRST + i, z float16 (2, 2);
                                  DELAY seconds after each record (a slow producer)
expect N FIRST SEED DIR           the arrays gen made, as DIR/{x,y,z}.npy
same A.npy B.npy                  equal dtype, shape and values
prefix Y.npy N FIRST              Y is FIRST, FIRST+1, ... (an exact prefix of N rows)
interleaved Y.npy A:N B:N ...     Y holds each run FIRST..FIRST+N-1 exactly, each in order
rgen FORMAT N FIRST SEED [DELAY]  N records with ragged attributes (jsonl, csv or npy batches
                                  of 10 rows, a ragged attribute as two arrays: its rows'
                                  int64 lengths, then their items): t int32
                                  ragged (0 to 12 tokens), y int64 = FIRST + i, p float32
                                  ragged items of (2,) (0 to 2 of them)
rcheck DIR N FIRST SEED           DIR/{y,t,tlen,p,plen}.npy (get --lengths) are an exact
                                  prefix of rgen's N records; prints how many rows
spell N SEED DIR                  N records of a float64 (3,), b int32, c bool, d float32,
                                  h float16 spelled every way JSON allows (key order, blanks,
                                  exponents, -0, escaped keys) on stdout; the
                                  values they mean as DIR/{a,b,c,d,h}.npy
"""
import io
import os
import random
import sys
import time

import numpy as np


def records(n, first, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-1000, 1000, size=(n, 3)).astype(np.float32) / 8
    y = np.arange(first, first + n, dtype=np.int64)
    z = (rng.integers(-64, 64, size=(n, 2, 2)) / 4).astype(np.float16)
    return x, y, z


def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def gen(fmt, n, first, seed, delay=0.0):
    x, y, z = records(n, first, seed)
    out = sys.stdout.buffer
    if fmt == "csv":
        out.write(b"y,x.0,x.1,x.2,z.0,z.1,z.2,z.3\n")
    step = 10 if fmt == "npy" else 1
    for i in range(0, n, step):
        if fmt == "jsonl":
            line = '{"x": [%r, %r, %r], "y": %d, "z": [[%r, %r], [%r, %r]]}\n' % (
                *map(float, x[i]), int(y[i]), *map(float, z[i].ravel()))
            out.write(line.encode())
        elif fmt == "csv":
            vals = [str(int(y[i]))] + [repr(float(v)) for v in x[i]] + \
                [repr(float(v)) for v in z[i].ravel()]
            out.write((",".join(vals) + "\n").encode())
        else:
            for a in (x[i:i + step], y[i:i + step], z[i:i + step]):
                out.write(npy_bytes(a))
        out.flush()
        if delay:
            time.sleep(delay)


def spell(n, seed, outdir):
    rng = random.Random(seed)
    print("# spell seed %d" % seed, file=sys.stderr)
    cols = {"a": [], "b": [], "c": [], "d": [], "h": []}

    def real(v, exact=False):
        forms = [repr(v), "%.17g" % v, "%.6e" % v] + ([] if exact else ["%.3E" % v])
        t = rng.choice(forms)
        return t if any(ch in t for ch in ".eE") else t + ".0"

    def blank():
        return rng.choice(["", " ", "  ", "\t", "\r"])

    def key(k):
        return '"%s"' % k if rng.random() < 0.9 else '"\\u%04x"' % ord(k)

    for _ in range(n):
        a = [rng.choice([rng.uniform(-1e6, 1e6), rng.uniform(-1, 1) * 10 ** rng.randint(-300, 300),
                         float(rng.randint(-5, 5)), -0.0]) for _ in range(3)]
        b = rng.randint(-2 ** 31, 2 ** 31 - 1)
        c = rng.random() < 0.5
        d = rng.uniform(-1e30, 1e30) if rng.random() < 0.5 else float(rng.randint(-100, 100))
        hv = rng.randint(-2048, 2048) / 16
        ta = [real(x) for x in a]
        td = real(d) if rng.random() < 0.7 or abs(d) >= 2 ** 53 or d != int(d) else str(int(d))
        text = {
            "a": "[" + ",".join(blank() + t + blank() for t in ta) + "]",
            "b": str(b),
            "c": rng.choice([("true" if c else "false"), ("1" if c else "0")]),
            "d": td,
            "h": real(hv, exact=True),
        }
        a = [float(t) for t in ta]  # what the text means
        d = float(td)
        keys = list(text)
        rng.shuffle(keys)
        parts = [key(k) + blank() + ":" + blank() + text[k] for k in keys]
        sys.stdout.write("{" + blank() + ("," + blank()).join(parts) + blank() + "}\n")
        cols["a"].append(a); cols["b"].append(b); cols["c"].append(c)
        cols["d"].append(d); cols["h"].append(hv)
    np.save(outdir + "/a.npy", np.array(cols["a"], dtype=np.float64))
    np.save(outdir + "/b.npy", np.array(cols["b"], dtype=np.int32))
    np.save(outdir + "/c.npy", np.array(cols["c"], dtype=np.bool_))
    np.save(outdir + "/d.npy", np.array(cols["d"], dtype=np.float64).astype(np.float32))
    np.save(outdir + "/h.npy", np.array(cols["h"], dtype=np.float16))


def ragged_row(r, seed):
    """Row r's tokens and points: a function of r alone, so any prefix can be checked."""
    t = [(r * 31 + j * 17 + seed) % 50000 for j in range((r * 7 + seed) % 13)]
    p = [[r + j * 0.5, -r - j] for j in range(r % 3)]
    return t, p


def rgen_npy(n, first, seed, delay, out):
    """Batches of 10 rows: t's lengths and items, y, p's lengths and items."""
    for b in range(first, first + n, 10):
        rows = [ragged_row(r, seed) for r in range(b, min(b + 10, first + n))]
        t = [np.array(x, dtype=np.int32) for x, _ in rows]
        p = [np.array(q, dtype=np.float32).reshape(-1, 2) for _, q in rows]
        for a in (np.array([len(x) for x in t], dtype=np.int64), np.concatenate(t),
                  np.arange(b, b + len(rows), dtype=np.int64),
                  np.array([len(x) for x in p], dtype=np.int64), np.concatenate(p)):
            out.write(npy_bytes(a))
            out.flush()
            if delay:  # after each array: commits by time fall inside batches
                time.sleep(delay)


def rgen(fmt, n, first, seed, delay=0.0):
    out = sys.stdout.buffer
    if fmt == "npy":
        return rgen_npy(n, first, seed, delay, out)
    if fmt == "csv":
        out.write(b"y,t,p\n")
    for r in range(first, first + n):
        t, p = ragged_row(r, seed)
        if fmt == "jsonl":
            line = '{"t": %s, "y": %d, "p": %s}\n' % (t, r, p)
        else:
            line = '%d,%s,"%s"\n' % (r, " ".join(map(str, t)),
                                      " ".join(repr(v) for q in p for v in q))
        out.write(line.encode())
        out.flush()
        if delay:
            time.sleep(delay)


def rcheck(d, n, first, seed):
    y, t, tl, p, pl = (np.load("%s/%s.npy" % (d, a)) for a in ("y", "t", "tlen", "p", "plen"))
    if t.dtype != np.int32 or p.dtype != np.float32 or p.shape[1:] != (2,):
        sys.exit("dtypes: t %s, p %s %s" % (t.dtype, p.dtype, p.shape))
    if len(y) > n or not np.array_equal(y, np.arange(first, first + len(y))):
        sys.exit("y is not a prefix: %s" % y[:20])
    if len(tl) != len(y) or len(pl) != len(y):
        sys.exit("lengths: %d, %d for %d rows" % (len(tl), len(pl), len(y)))
    to = np.concatenate([[0], np.cumsum(tl)])
    po = np.concatenate([[0], np.cumsum(pl)])
    if to[-1] != len(t) or po[-1] != len(p):
        sys.exit("items: %d and %d, the lengths say %d and %d" % (len(t), len(p), to[-1], po[-1]))
    for k, r in enumerate(y):
        wt, wp = ragged_row(int(r), seed)
        if list(t[to[k]:to[k + 1]]) != wt or p[po[k]:po[k + 1]].tolist() != wp:
            sys.exit("row %d differs: %s %s" % (r, t[to[k]:to[k + 1]], p[po[k]:po[k + 1]]))
    print(len(y))


def main():
    cmd = sys.argv[1]
    if cmd == "gen":
        gen(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
            float(sys.argv[6]) if len(sys.argv) > 6 else 0.0)
    elif cmd == "rgen":
        rgen(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
             float(sys.argv[6]) if len(sys.argv) > 6 else 0.0)
    elif cmd == "rcheck":
        rcheck(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "spell":
        spell(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif cmd == "expect":
        x, y, z = records(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        for name, a in (("x", x), ("y", y), ("z", z)):
            np.save("%s/%s.npy" % (sys.argv[5], name), a)
    elif cmd == "same":
        a, b = np.load(sys.argv[2]), np.load(sys.argv[3])
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
            sys.exit("differ: %s %s vs %s %s" % (a.dtype, a.shape, b.dtype, b.shape))
    elif cmd == "prefix":
        y, n, first = np.load(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        if len(y) > n or not np.array_equal(y, np.arange(first, first + len(y))):
            sys.exit("not a prefix: %s" % y[:20])
        print(len(y))
    elif cmd == "interleaved":
        y = np.load(sys.argv[2])
        total = 0
        for run in sys.argv[3:]:
            first, n = map(int, run.split(":"))
            mine = y[(y >= first) & (y < first + n)]
            if not np.array_equal(mine, np.arange(first, first + n)):
                sys.exit("run %s: %d rows, not each once in order" % (run, len(mine)))
            total += n
        if len(y) != total:
            sys.exit("%d rows, wanted %d" % (len(y), total))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        # The reader stopped early (head -c, or an ingest that refused the input): say
        # nothing, or a traceback would land in the middle of the error a test matches.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
