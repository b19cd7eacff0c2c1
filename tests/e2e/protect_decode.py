#!/usr/bin/python3
"""protect_decode.py — rebuild a lost shard from doc/FORMAT.md's "Protection" layout alone,
with PyECLib's ISA-L Cauchy Reed-Solomon backend (liberasurecode), not matorage's code.

    protect_decode.py STORE_DIR DATASET VERSION SHARD OUT

Reads datasets/DATASET/protect/VERSION.json, checks its matrix against the format's
definition (inv((K + r) xor j) in GF(2^8) over 0x11d, computed here), re-encodes the
group's surviving rows with PyECLib and checks it yields the stored parity objects, then
decodes the group without shard SHARD (whose object may be gone) and writes the member's
bytes to OUT.  Exit 0 when the rebuilt bytes hash to the member's sha256, 1 otherwise.
"""
import hashlib
import json
import os
import sys

from pyeclib.ec_iface import ECDriver

# liberasurecode puts a fixed-size header before each fragment's payload.
HEADER = 80


def gf_mul(a, b):
    p = 0
    while b:
        if b & 1:
            p ^= a
        a = ((a << 1) ^ (0x1D if a & 0x80 else 0)) & 0xFF
        b >>= 1
    return p


def gf_inv(a):
    return next(b for b in range(1, 256) if gf_mul(a, b) == 1)


def read(path, size):
    """An object's bytes padded with zeros to `size`; None when it is gone."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    return data + bytes(size - len(data))


def main():
    root, dataset, version, shard, out = sys.argv[1:6]
    shard = int(shard)
    base = os.path.join(root, "datasets", dataset)
    with open(os.path.join(base, "protect", version + ".json"), encoding="utf-8") as f:
        rec = json.load(f)
    k, m = rec["k"], rec["m"]
    want = [[gf_inv((k + r) ^ j) for j in range(k)] for r in range(m)]
    if rec["matrix"] != want:
        print("the record's matrix is not inv((K + r) xor j)", file=sys.stderr)
        return 1
    group = next(g for g in rec["groups"] if any(mb["shard"] == shard for mb in g["members"]))
    stripe = group["stripe"]
    lost = next(i for i, mb in enumerate(group["members"]) if mb["shard"] == shard)
    # Rows: k members (missing ones of a short group are zeros), then m parity objects.
    rows = []
    for i in range(k):
        if i == lost:
            rows.append(None)
        elif i < len(group["members"]):
            sha = group["members"][i]["sha256"]
            rows.append(read(os.path.join(base, "shards", sha + ".h5"), stripe))
        else:
            rows.append(bytes(stripe))
    for p in group["parity"]:
        rows.append(read(os.path.join(base, "parity", p["sha256"]), stripe))
    driver = ECDriver(k=k, m=m, ec_type="isa_l_rs_cauchy", chksum_type="none")
    # Headers from an encoding of zeros of the same geometry; payloads are ours.
    template = driver.encode(bytes(k * stripe))
    frags = [template[i][:HEADER] + rows[i] for i in range(k + m) if rows[i] is not None]
    data = driver.decode(frags[:k])
    member = group["members"][lost]
    rebuilt = data[lost * stripe:lost * stripe + member["bytes"]]
    with open(out, "wb") as f:
        f.write(rebuilt)
    # The same library's parity over the rebuilt group must be the stored parity.
    parity = driver.encode(data)[k:]
    same_parity = all(parity[r][HEADER:] == rows[k + r] for r in range(m) if rows[k + r])
    sha = hashlib.sha256(rebuilt).hexdigest()
    print("k=%d m=%d stripe=%d member=%d sha256=%s parity_matches=%s" %
          (k, m, stripe, lost, sha, same_parity))
    return 0 if sha == member["sha256"] and same_parity else 1


if __name__ == "__main__":
    sys.exit(main())
