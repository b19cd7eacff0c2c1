"""obj_tool.py — raw object access to a test store, bypassing matorage; on S3 in one client process
(an aws call costs a second).  BASE is a directory, or s3://BUCKET/ROOT with ENDPOINT its server.

obj_tool.py BASE ENDPOINT sums PREFIX     "KEY SHA256" for each object under PREFIX, sorted
obj_tool.py BASE ENDPOINT damage KEY HOW  flip one bit in the middle, truncate to half, zero the
                                          middle third, or rm (keys relative to BASE)
obj_tool.py BASE ENDPOINT cat KEY         the object's bytes on stdout
"""
import hashlib
import os
import sys



def damage(b, how):
    b = bytearray(b)
    if how == "flip":
        b[len(b) // 2] ^= 0x10
    elif how == "truncate":
        b = b[: len(b) // 2]
    elif how == "zero":
        n = len(b) // 3
        b[n : 2 * n] = bytes(n)
    else:
        sys.exit("obj_tool.py: unknown damage " + how)
    return bytes(b)


class Dir:
    """A file store's directory, with the calls main uses."""

    def __init__(self, root):
        self.root = root

    def keys(self, prefix):
        top = os.path.join(self.root, prefix)
        for d, _, names in os.walk(top):
            for n in names:
                yield os.path.relpath(os.path.join(d, n), self.root)

    def get(self, key):
        with open(os.path.join(self.root, key), "rb") as f:
            return f.read()

    def put(self, key, body):
        with open(os.path.join(self.root, key), "wb") as f:
            f.write(body)

    def rm(self, key):
        os.remove(os.path.join(self.root, key))


class Bucket:
    """An S3 prefix, through botocore (it signs as awscli does)."""

    def __init__(self, base, endpoint):
        import botocore.session  # only the S3 runs need it

        self.bucket, _, self.root = base[len("s3://") :].partition("/")
        session = botocore.session.get_session()
        self.c = session.create_client("s3", endpoint_url=endpoint, region_name="us-east-1")

    def keys(self, prefix):
        pages = self.c.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.root + "/" + prefix
        )
        for page in pages:
            for o in page.get("Contents", []):
                yield o["Key"][len(self.root) + 1 :]

    def get(self, key):
        return self.c.get_object(Bucket=self.bucket, Key=self.root + "/" + key)["Body"].read()

    def put(self, key, body):
        self.c.put_object(Bucket=self.bucket, Key=self.root + "/" + key, Body=body)

    def rm(self, key):
        self.c.delete_object(Bucket=self.bucket, Key=self.root + "/" + key)


def main():
    base, endpoint, cmd = sys.argv[1:4]
    store = Bucket(base, endpoint) if base.startswith("s3://") else Dir(base)
    if cmd == "sums":
        for key in sorted(store.keys(sys.argv[4])):
            print(key, hashlib.sha256(store.get(key)).hexdigest())
    elif cmd == "damage":
        key, how = sys.argv[4:6]
        if how == "rm":
            store.rm(key)
        else:
            store.put(key, damage(store.get(key), how))
    elif cmd == "cat":
        sys.stdout.buffer.write(store.get(sys.argv[4]))
    else:
        sys.exit("obj_tool.py: unknown command " + cmd)


main()
