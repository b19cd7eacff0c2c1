#!/bin/bash
# model-repair.sh — repair and protect cover models: a flipped or removed tensor object comes back from another store (--from) byte for byte, protect model:NAME adds parity, repair rebuilds from it, and reading a protected checkpoint (C: model export; Python: load_checkpoint) heals a damaged tensor on the fly; without a source the damage is UNREPAIRABLE, exit 1.  The catalog keeps each object's health: a tensor object two checkpoints share is damaged for both after verify of one, sound for both after repair of the other; verify names a damaged or missing parity object and repair codes it again; a tensor object an unprotected checkpoint shares with a protected one comes back from that one's parity.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
S="$WORK/store"
export MATORAGE_STORE="$S" MATORAGE_CONFIG="$WORK/config.json"
cd "$WORK" || exit 1

# py_load SPEC FILE: Python's load_checkpoint of SPEC against the tensors of safetensors
# FILE; prints "python healed N" when all N match.
py_load() {
	pymt - "$S" "$1" "$2" <<'PYEOF' 2>&1
import json, struct, sys
import numpy as np
import matorage
back = matorage.load_checkpoint(sys.argv[1], sys.argv[2], as_numpy=True)
raw = open(sys.argv[3], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = {k: v for k, v in json.loads(raw[8:8 + n]).items() if not k.startswith("__")}
for k, v in hdr.items():
    a, b = v["data_offsets"]
    want = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).reshape(v["shape"])
    assert np.array_equal(back[k], want), k
print("python healed", len(hdr))
PYEOF
}

# A checkpoint of 5 tensors (seeded values): safetensors written with struct + numpy.
"$PY" - "$WORK" << 'EOF2'
import json, struct, sys
import numpy as np
rng = np.random.default_rng(7)
t = {f"layer{i}.weight": rng.standard_normal((16, 8 + i)).astype(np.float32) for i in range(4)}
t["layer0.bias"] = np.arange(16, dtype=np.float32)
hdr, blobs, off = {}, [], 0
for k, a in t.items():
    b = a.tobytes()
    hdr[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
    blobs.append(b)
    off += len(b)
h = json.dumps(hdr).encode()
open(f"{sys.argv[1]}/a.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
EOF2
check "checkpoint net@v1 of 5 tensors" $M model import net "$WORK/a.safetensors"
check "a second store holds the same objects" cp -a "$S" "$WORK/mirror"
check "export the sound checkpoint" $M model export net -o "$WORK/good.safetensors"

# tensor I: the object key of tensor I of net@v1.
tensor() {
	echo "$S/models/net/tensors/$($M model info net@v1 --json |
		$PY -c "import json,sys; t=list(json.load(sys.stdin)['tensors'].values()); print(t[$1]['sha256'])")"
}
t1=$(tensor 1) t3=$(tensor 3)
cp "$t1" t1.orig
flip_byte "$t1"
rm -f "$t3"
fails "verify finds the damage" 1 "damaged or missing" $M verify model:net
out=$($M repair model:net --no-remotes 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^UNREPAIRABLE model:net@v1 tensor 1 " &&
	echo "$out" | grep -q "^UNREPAIRABLE model:net@v1 tensor 3 .*missing"; echo $?) \
	"without another store or parity the damage is unrepairable, exit 1"
echo "$out" | sed 's/^/# /'
out=$($M repair model:net --from "$WORK/mirror" --no-remotes --dry-run 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^repairable model:net@v1 tensor 1 .*; from file://$WORK/mirror" &&
	[ ! -e "$t3" ]; echo $?) "--dry-run says what the other store would rebuild and writes nothing"
out=$($M repair model:net --from "$WORK/mirror" --no-remotes 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^rebuilt model:net@v1 tensor 3 .*missing; from file://$WORK/mirror" &&
	echo "$out" | grep -q "2 rebuilt, 0 unrepairable"; echo $?) "repair --from brings both back from the other store"
echo "$out" | sed 's/^/# /'
ok $(cmp -s t1.orig "$t1"; echo $?) "byte for byte"
check "the model verifies" $M verify model:net

# Parity.
out=$($M protect model:net --parity 2+1 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "protected with 2+1 parity"; echo $?) "protect model:net --parity 2+1: $out"
ok $([ -f "$S/models/net/protect/v1.json" ] && [ "$(ls "$S/models/net/parity" | wc -l)" -eq 3 ]; echo $?) \
	"its record, and one parity object per group of 2 of the 5 tensors"
fails "protecting it again is refused" 1 "already protected with 2.1 parity" $M protect model:net --parity 2+1
flip_byte "$t1"
check "C: model export heals the damaged tensor from parity" bash -c \
	"$M model export net -o $WORK/healed.safetensors && cmp $WORK/good.safetensors $WORK/healed.safetensors"
ok $(cmp -s t1.orig "$t1"; [ $? -ne 0 ]; echo $?) "reading heals in memory: the stored object is still damaged"
out=$(py_load net "$WORK/good.safetensors")
ok $(echo "$out" | grep -q "^python healed 5$"; echo $?) "Python: load_checkpoint heals it too: $out"
rm -f "$t3"
out=$($M repair model:net --no-remotes 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^rebuilt model:net@v1 tensor 1 .*; from parity" &&
	echo "$out" | grep -q "^rebuilt model:net@v1 tensor 3 .*missing; from parity"; echo $?) \
	"repair rebuilds a flipped and a removed tensor from parity"
echo "$out" | sed 's/^/# /'
ok $(cmp -s t1.orig "$t1"; echo $?) "byte for byte"
check "the model verifies" $M verify model:net
# Two of a group of 2 + 1 lost: more than parity makes up.
t0=$(tensor 0)
rm -f "$t0" "$t1"
out=$($M repair model:net --no-remotes 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^UNREPAIRABLE model:net@v1 tensor 0"; echo $?) \
	"two lost members of one group are beyond 1 parity object: unrepairable"
check "the mirror still brings them back" $M repair model:net --from "$WORK/mirror" --no-remotes
check "the model verifies" $M verify model:net

# Health in the catalog, per object: v2 shares all but one tensor with v1.
"$PY" - "$WORK" << 'EOF2'
import json, struct, sys
raw = open(f"{sys.argv[1]}/a.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
a, b = hdr["layer0.bias"]["data_offsets"]
body = bytearray(raw[8 + n:])
body[a:b] = struct.pack("<16f", *range(100, 116))
open(f"{sys.argv[1]}/b.safetensors", "wb").write(raw[:8 + n] + bytes(body))
EOF2
check "checkpoint net@v2, sharing four tensor objects with v1" $M model import net "$WORK/b.safetensors"
export MATORAGE_CATALOG="$WORK/cat.db"
check "a catalog of the store" $M sync
# health SHA: the health the catalog recorded of tensor object SHA ("none": no record).
health() {
	"$PY" -c 'import sqlite3, sys
r = sqlite3.connect(sys.argv[1]).execute("select health from model_objects where object = ?",
    ("tensors/" + sys.argv[2],)).fetchone()
print(r[0] if r else "none")' "$WORK/cat.db" "$1"
}
sha1=$(basename "$t1")
ok $([ "$(health "$sha1")" = none ]; echo $?) "before any check the shared object has no health"
flip_byte "$t1"
fails "verify model:net@v2 finds the shared tensor damaged" 1 "damaged or missing" $M verify model:net@v2
h=$(health "$sha1")
ok $([ "$h" = repairable ]; echo $?) \
	"verify of v2 recorded the shared object repairable ($h): v2 is not protected, v1's parity holds it"
check "repair model:net@v1 rebuilds it from v1's parity" $M repair model:net@v1 --no-remotes
h=$(health "$sha1")
ok $([ "$h" = rebuilt ]; echo $?) "repair of v1 recorded it rebuilt ($h): v2 is sound again too"
check "v2 verifies" $M verify model:net@v2
check "v2 exported while sound" $M model export net@v2 -o "$WORK/good2.safetensors"
flip_byte "$t1"
check "C: model export of the unprotected v2 heals the shared tensor from v1's parity" bash -c \
	"$M model export net@v2 -o $WORK/healed2.safetensors && cmp $WORK/good2.safetensors $WORK/healed2.safetensors"
out=$(py_load net@v2 "$WORK/good2.safetensors")
ok $(echo "$out" | grep -q "^python healed 5$"; echo $?) "Python: load_checkpoint of v2 heals it too: $out"
out=$($M repair model:net@v2 --no-remotes 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^rebuilt model:net@v2 tensor .*; from parity of v1"; echo $?) \
	"repair of the unprotected v2 rebuilds the shared tensor from v1's parity"
echo "$out" | sed 's/^/# /'
ok $(cmp -s t1.orig "$t1"; echo $?) "byte for byte"

# Parity objects of a protected checkpoint.
p0=$(ls "$S/models/net/parity" | head -1) p1=$(ls "$S/models/net/parity" | sed -n 2p)
cp "$S/models/net/parity/$p0" p0.orig
rm -f "$S/models/net/parity/$p0"
flip_byte "$S/models/net/parity/$p1"
out=$($M verify model:net@v1 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "parity object of group .*$p0.*: missing" &&
	echo "$out" | grep -q "parity object of group .*$p1.*: its bytes do not hash" &&
	echo "$out" | grep -q "5 tensor object(s) intact, 2 parity"; echo $?) \
	"verify names the missing and the damaged parity object, the tensors intact"
echo "$out" | sed 's/^/# /'
out=$($M repair model:net@v1 --no-remotes 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^rebuilt model:net@v1 parity of group .*$p0: missing" &&
	echo "$out" | grep -q "^rebuilt model:net@v1 parity of group .*$p1"; echo $?) \
	"repair codes both again from the tensors"
echo "$out" | sed 's/^/# /'
ok $(cmp -s p0.orig "$S/models/net/parity/$p0"; echo $?) "byte for byte"
check "the model verifies, parity included" $M verify model:net@v1
rm -f "$S"/models/net/parity/* "$t1"
out=$($M repair model:net@v1 --no-remotes 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^UNREPAIRABLE model:net@v1 tensor 1 .*missing" &&
	echo "$out" | grep -q "^UNREPAIRABLE model:net@v1 parity of group 0 .*missing" &&
	echo "$out" | grep -q "^rebuilt model:net@v1 parity of group 1 .*missing"; echo $?) \
	"tensor 1 and every parity object lost: tensor 1 and its group's parity unrepairable, the other groups' parity coded again"
echo "$out" | sed 's/^/# /'
out=$($M repair model:net@v1 --from "$WORK/mirror" --no-remotes 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^rebuilt model:net@v1 tensor 1 .*; from file://$WORK/mirror" &&
	echo "$out" | grep -q "^rebuilt model:net@v1 parity of group 0 .*; from the checkpoint's tensors"; echo $?) \
	"with the mirror, the tensor comes back, then its group's parity in the same repair"
check "and then the parity is whole" $M verify model:net@v1

done_testing
