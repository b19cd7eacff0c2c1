#!/usr/bin/python3
"""repair_campaign.py — the seeded fault campaign behind repair-campaign.sh: random protected versions, random damage, repair must give back byte-identical objects; beyond parity, repair names the lost shards and --salvage keeps exactly the rows of the intact chunks.

Usage: repair_campaign.py MATORAGE WORKDIR file|s3
The store is $MATORAGE_STORE (a directory, or an S3 prefix behind the test proxy at
$S3_ENDPOINT, whose fault rules are set during repairs).  MT_SEED picks the seed (the
default is fixed, so a run is reproducible); MT_CAMPAIGN_ROUNDS sets the rounds, a fixed
number by default so that every run does the same work however loaded the machine;
MT_CAMPAIGN_SECONDS instead runs rounds for that long (exploration).
Prints TAP lines; the seed is printed first, to run a failure again.
"""
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.request

import numpy as np

MT, WORK, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
SEED = int(os.environ.get("MT_SEED", "20261123"))
ROUNDS = int(os.environ.get("MT_CAMPAIGN_ROUNDS", "6" if MODE == "file" else "4"))
BUDGET = float(os.environ.get("MT_CAMPAIGN_SECONDS", "0"))
STORE = os.environ["MATORAGE_STORE"]
rng = random.Random(SEED)
T_N = 0
FAILED = 0


def ok(cond, name, detail=""):
    global T_N, FAILED
    T_N += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (T_N, name))
    if not cond:
        FAILED += 1
        for line in str(detail).splitlines()[-20:]:
            print("# " + line)
    sys.stdout.flush()
    return cond


def mt(*args):
    p = subprocess.run([MT, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


# ---- raw objects, bypassing matorage ----

def aws(*args):
    return subprocess.run(["/usr/bin/aws", "--endpoint-url", os.environ["S3_ENDPOINT"], "s3", *args],
                          capture_output=True)


def obj_get(key):
    if MODE == "s3":
        tmp = os.path.join(WORK, "obj")
        if aws("cp", "--quiet", "%s/%s" % (STORE, key), tmp).returncode:
            return None
        return open(tmp, "rb").read()
    try:
        return open(os.path.join(STORE, key), "rb").read()
    except FileNotFoundError:
        return None


def obj_put(key, data):
    if MODE == "s3":
        tmp = os.path.join(WORK, "obj")
        open(tmp, "wb").write(data)
        aws("cp", "--quiet", tmp, "%s/%s" % (STORE, key))
    else:
        open(os.path.join(STORE, key), "wb").write(data)


def obj_rm(key):
    if MODE == "s3":
        aws("rm", "--quiet", "%s/%s" % (STORE, key))
    else:
        os.remove(os.path.join(STORE, key))


def faults(rules):
    if MODE != "s3":
        return
    ep = os.environ["S3_ENDPOINT"] + "/__faults"
    req = urllib.request.Request(ep, method="DELETE" if rules is None else "POST",
                                 data=None if rules is None else json.dumps({"rules": rules}).encode())
    urllib.request.urlopen(req).read()


# ---- damage ----

def damage(key, kind, others):
    data = obj_get(key)
    if kind == "delete" or data is None:
        obj_rm(key)
        return
    b = bytearray(data)
    if kind == "truncate":
        b = b[: rng.randrange(len(b))]
    elif kind == "flip":
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == "zero":
        a = rng.randrange(len(b))
        n = rng.randint(1, max(1, len(b) - a))
        b[a:a + n] = bytes(n)
    elif kind == "replace":
        # Another shard of the version, one still there.
        for other in rng.sample(others, len(others)):
            o = obj_get(other)
            if o is not None:
                b = bytearray(o)
                break
    if hashlib.sha256(bytes(b)).hexdigest() == hashlib.sha256(data).hexdigest():
        b = b[:-1]  # a flip that cancelled out, a zero range over zeros: still damage
    obj_put(key, bytes(b))


KINDS = ["delete", "truncate", "flip", "zero", "replace"]


def rows_of_group(rec, ds, g):
    """(key, what) for every row of group g: members, then parity."""
    grp = rec["groups"][g]
    out = [("datasets/%s/shards/%s.h5" % (ds, m["sha256"]), ("shard", m["shard"]))
           for m in grp["members"]]
    out += [("datasets/%s/parity/%s" % (ds, q["sha256"]), ("parity", g)) for q in grp["parity"]]
    return out


def all_objects(rec, ds):
    return [kw for g in range(len(rec["groups"])) for kw in rows_of_group(rec, ds, g)]


def named_right(rec, ds):
    bad = []
    for key, _ in all_objects(rec, ds):
        data = obj_get(key)
        name = os.path.basename(key).split(".")[0]
        if data is None or hashlib.sha256(data).hexdigest() != name:
            bad.append(key)
    return bad


# ---- one round ----

def make_version(r):
    ds = "c%d" % r
    k, m = rng.randint(2, 5), rng.randint(1, 3)
    dtype = rng.choice(["float32", "int16", "uint8", "float64"])
    cols = rng.choice([3, 8, 16])
    rows = rng.randint(60, 300)
    shard_rows = rng.choice([15, 20, 30, 40])
    chunk_rows = rng.choice([4, 5, 7])
    a = np.random.default_rng(rng.randrange(1 << 30)).integers(0, 100, (rows, cols)).astype(dtype)
    path = os.path.join(WORK, ds + ".npy")
    np.save(path, a)
    row_bytes = cols * a.dtype.itemsize
    rc, out = mt("put", ds, "x=" + path, "--shard-rows", str(shard_rows), "--chunk-size",
                 str(row_bytes * chunk_rows), "--parity", "%d+%d" % (k, m))
    ok(rc == 0, "%s: put %d rows of %s[%d], shards of %d rows, chunks of %d, parity %d+%d"
       % (ds, rows, dtype, cols, shard_rows, chunk_rows, k, m), out)
    rec = json.loads(obj_get("datasets/%s/protect/v1.json" % ds))
    return ds, a, rec, shard_rows, chunk_rows


def fault_rules():
    return [{"match": "^GET .*/(shards|parity)/", "action": "503", "count": rng.randint(1, 3),
             "after": rng.randint(0, 6)},
            {"match": "^PUT .*/(shards|parity)/", "action": "drop", "count": 1},
            {"match": "^HEAD ", "action": "503", "count": 1, "after": rng.randint(0, 4)}]


def repairable_round(ds, a, rec):
    """Up to M damaged rows per group, parity objects among them: all come back."""
    m = rec["m"]
    shards = [kw[0] for kw in all_objects(rec, ds) if kw[1][0] == "shard"]
    done = []
    for g in range(len(rec["groups"])):
        rows = rows_of_group(rec, ds, g)
        for key, _ in rng.sample(rows, rng.randint(0, min(m, len(rows)))):
            kind = rng.choice(KINDS)
            damage(key, kind, [s for s in shards if s != key])
            done.append("%s %s" % (kind, os.path.basename(key)[:12]))
    faults(fault_rules())
    rc, out = mt("repair", ds, "--no-remotes")
    faults(None)
    ok(rc == 0, "%s: repair of %d damaged object(s) (%s) exits 0" % (ds, len(done), ", ".join(done)), out)
    bad = named_right(rec, ds)
    ok(not bad, "%s: every shard and parity object is byte-identical to its name" % ds, bad)
    rc, out = mt("get", ds, "x", "-o", os.path.join(WORK, "o.npy"))
    ok(rc == 0 and np.array_equal(np.load(os.path.join(WORK, "o.npy")), a),
       "%s: the rows read back identical" % ds, out)


def intact_rows(ds, a, shard, first, nrows, chunk_rows):
    """The oracle: rows of a damaged shard the reader still delivers, chunk by chunk."""
    kept = []
    for c0 in range(first, first + nrows, chunk_rows):
        c1 = min(c0 + chunk_rows, first + nrows)
        out = os.path.join(WORK, "chunk.npy")
        rc, _ = mt("get", ds + "@v1", "x", "-o", out, "--rows", "%d:%d" % (c0, c1))
        if rc == 0 and np.array_equal(np.load(out), a[c0:c1]):
            kept.extend(range(c0, c1))
    return kept


def beyond_round(ds, a, rec, shard_rows, chunk_rows):
    """M + 1 damaged rows in one group: exit 1 naming them, then --salvage."""
    m = rec["m"]
    g = rng.randrange(len(rec["groups"]))
    rows = rows_of_group(rec, ds, g)
    members = [kw for kw in rows if kw[1][0] == "shard"]
    first = rng.choice(members)
    pick = [first] + rng.sample([kw for kw in rows if kw != first], m)
    shards = [kw[0] for kw in all_objects(rec, ds) if kw[1][0] == "shard"]
    for key, what in pick:
        kind = rng.choice(KINDS)
        # A shard whose chunks and index survive is rebuilt from them (its HDF5 metadata
        # alone damaged): beyond parity, a member must lose its data.
        if what[0] == "shard" and kind not in ("delete", "replace"):
            kind = "delete"
        damage(key, kind, [s for s in shards if s != key])
    faults(fault_rules())
    rc, out = mt("repair", ds, "--no-remotes")
    faults(None)
    lost = sorted(w[1] for _, w in pick if w[0] == "shard")
    named = sorted(int(x) for x in re.findall(r"^UNREPAIRABLE %s@v1 shard (\d+) \(rows" % ds, out, re.M))
    ok(rc == 1 and named == lost, "%s: %d damaged rows in a group of %d+%d: exit 1 naming shard(s) %s"
       % (ds, len(pick), rec["k"], m, lost), out)
    # Which rows the reader still delivers, before the salvage touches anything.
    keep = []
    for s, entry in enumerate(json.loads(mt("info", ds + "@v1", "--json")[1])["shards"]):
        f, n = entry["first_row"], entry["rows"]
        keep += intact_rows(ds, a, s, f, n, chunk_rows) if s in lost else list(range(f, f + n))
    rc, out = mt("repair", ds + "@v1", "--no-remotes", "--salvage")
    mo = re.search(r"^salvaged %s@v1 as %s@(\S+): (\d+) rows kept" % (ds, ds), out, re.M)
    ok(rc == 1 and mo and int(mo.group(2)) == len(keep),
       "%s: --salvage keeps %d of %d rows" % (ds, len(keep), len(a)), out)
    if not mo:
        return
    o = os.path.join(WORK, "s.npy")
    rc, out = mt("get", "%s@%s" % (ds, mo.group(1)), "x", "-o", o)
    ok(rc == 0 and np.array_equal(np.load(o), a[keep]),
       "%s: the salvaged version holds exactly the rows of the intact chunks" % ds, out)


def main():
    print("# seed %d (MT_SEED=%d to run this campaign again)" % (SEED, SEED))
    start = time.time()
    r = 0
    while (r < 2 or time.time() - start < BUDGET) if BUDGET else r < ROUNDS:
        ds, a, rec, shard_rows, chunk_rows = make_version(r)
        repairable_round(ds, a, rec)
        if r % 2 == 0:
            beyond_round(ds, a, rec, shard_rows, chunk_rows)
        r += 1
        if r >= 40:
            break
    print("# %d rounds in %.1f s" % (r, time.time() - start))
    print("1..%d" % T_N)
    return 1 if FAILED else 0


sys.exit(main())
