#!/bin/bash
# integrity.sh — a manifest binds what readers read: a replaced shard object or an edited manifest fails get, cat and verify naming dataset, version and shard; older manifests still read.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"

# Two datasets of the same layout (float32[16], 100 rows in shards of 30, 30, 30, 10), other values.
$T make "$WORK/a.npy" float32 100x16 1
$T make "$WORK/b.npy" float32 100x16 2
check "put a" $M put a x="$WORK/a.npy" --shard-rows 30 --chunk-size 640
check "put b, the same layout with other values" $M put b x="$WORK/b.npy" --shard-rows 30 --chunk-size 640
MAN=datasets/a/versions/v1.json
obj_get $MAN "$WORK/v1.json"

# shard DATASET I: the sha256 of shard I of DATASET@v1, from its manifest.
shard() { $M info "$1" --json | $PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$2]['sha256'])"; }

ok $($PY - "$WORK/v1.json" <<'PYEOF'
import hashlib, json, re, sys
text = open(sys.argv[1], "rb").read()
m = re.search(rb',"checksum":"sha256:([0-9a-f]{64})"\}\Z', text)
ok = m and hashlib.sha256(text[:m.start()] + b"}").hexdigest() == m.group(1).decode()
ok = ok and all(re.fullmatch("[0-9a-f]{16}", s["index_xxh3"]) for s in json.loads(text)["shards"])
sys.exit(0 if ok else 1)
PYEOF
echo $?) "the manifest ends with the sha256 of the rest (recomputed here), each shard names its index's xxh3"

# ---- a shard object replaced by another valid shard of the same layout ----
sa=$(shard a 1)
sb=$(shard b 1)
obj_get "datasets/a/shards/$sa.h5" "$WORK/keep.h5"
obj_get "datasets/b/shards/$sb.h5" "$WORK/other.h5"
obj_put "$WORK/other.h5" "datasets/a/shards/$sa.h5"
fails "get: a replaced shard fails, naming dataset, version and shard" 1 \
	"a@v1: shard 1: datasets/a/shards/$sa\.h5: the shard's chunk index is not the one the manifest names" \
	$M get a x -o "$WORK/o.npy"
ok $([ ! -e "$WORK/o.npy" ]; echo $?) "and leaves no output file"
fails "cat: the same" 1 "a@v1: shard 1: .*$sa" $M cat a x --rows 45
check "rows of the other shards still read" bash -c \
	"$M get a x -o $WORK/o1.npy --rows 60:100 && $T same $WORK/a.npy $WORK/o1.npy 60:100"
out=$($M verify a 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^BAD shard 1 $sa"; echo $?) "verify fails, naming the shard"
echo "$out" | sed 's/^/# /'
obj_put "$WORK/keep.h5" "datasets/a/shards/$sa.h5"
check "put back, the shard reads again" bash -c "$M get a x -o $WORK/o2.npy && $T same $WORK/a.npy $WORK/o2.npy"

# ---- edited manifests ----
# edit KIND [strip|old]: rewrite a@v1's manifest compactly (as a person with python would), with
# KIND changed; strip drops the checksum, old also every shard's index_xxh3.
edit() {
	$PY - "$WORK/v1.json" "$WORK/edit.json" "$1" "${2:-keep}" <<'PYEOF'
import json, sys
src, dst, kind, how = sys.argv[1:]
m = json.load(open(src))
s = m["shards"]
if how in ("strip", "old"):
    del m["checksum"]
if how == "old":
    for e in s:
        del e["index_xxh3"]
def renumber():
    row = 0
    for e in s:
        e["first_row"] = row
        row += e["rows"]
    m["rows"] = row
if kind == "dtype":
    m["attributes"][0]["dtype"] = "int32"
elif kind == "shape":
    m["attributes"][0]["shape"] = [4, 4]
elif kind == "rows":
    s[3]["rows"] = 5
    renumber()
elif kind == "swap":
    s[0], s[1] = s[1], s[0]
    renumber()
elif kind == "duplicate":
    s.insert(1, dict(s[0]))
    renumber()
elif kind == "drop":
    del s[1]
    renumber()
elif kind == "sha":
    s[2]["sha256"] = s[1]["sha256"]
open(dst, "w").write(json.dumps(m, separators=(",", ":"), ensure_ascii=False))
PYEOF
	obj_put "$WORK/edit.json" $MAN
}
restore() { obj_put "$WORK/v1.json" $MAN; }

for kind in dtype shape rows swap duplicate drop; do
	edit $kind
	fails "get of a manifest edited ($kind) fails on its checksum, naming the version" 1 \
		"datasets/a/versions/v1\.json: checksum: .*changed after it was written" $M get a x -o "$WORK/o.npy"
	out=$($M verify a 2>&1)
	ok $([ $? -eq 1 ] && echo "$out" | grep -q "datasets/a/versions/v1.json: checksum"; echo $?) \
		"verify of it fails too"
	restore
done
edit dtype
fails "push refuses to copy an edited manifest" 1 "v1\.json: checksum" $M push a "$WORK/copy0"
restore

# Without its checksum (as if written before checksums), the shards' chunk indexes still tell.
edit dtype strip
fails "no checksum, float32 -> int32: get names the difference" 1 \
	"a@v1: shard 0: .*x: the manifest says int32\[16\], the shard's chunk index says float32\[16\]" \
	$M get a x -o "$WORK/o.npy"
fails "cat too" 1 "a@v1: shard 3: .*says int32\[16\]" $M cat a x --rows 95
out=$($M verify a 2>&1)
ok $([ $? -eq 1 ] && [ "$(echo "$out" | grep -c "the manifest says int32\[16\]")" -eq 4 ]; echo $?) \
	"verify reports every shard"
edit shape strip
fails "no checksum, [16] -> [4,4]: get names the difference" 1 \
	"a@v1: shard 0: .*the manifest says float32\[4,4\], the shard's chunk index says float32\[16\]" \
	$M get a x -o "$WORK/o.npy"
out=$($M verify a 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "the manifest says float32\[4,4\]"; echo $?) "verify names it"
edit rows strip
fails "no checksum, 10 rows -> 5: get names the difference" 1 \
	"a@v1: shard 3: .*the manifest says 5 rows, the shard's chunk index says 10" $M get a x -o "$WORK/o.npy"
out=$($M verify a 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^BAD shard 3 .*5 rows"; echo $?) "verify names the shard"
edit sha strip
fails "no checksum, one shard entry naming another's object: its index hash tells" 1 \
	"a@v1: shard 2: .*not the one the manifest names" $M get a x -o "$WORK/o.npy"
out=$($M verify a 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^BAD shard 2"; echo $?) "verify names the shard"

# A manifest as matorage wrote it before index_xxh3 and checksum: read as before.
edit none old
check "a manifest without index_xxh3 and checksum still reads" bash -c \
	"$M get a x -o $WORK/o3.npy && $T same $WORK/a.npy $WORK/o3.npy"
check "cat reads it" $M cat a x --rows 99
check "verify passes it" $M verify a
restore

# ---- copies keep the checksum valid ----
check "push to another store" $M push a "$WORK/copy"
ok $(cmp -s "$WORK/v1.json" "$WORK/copy/$MAN"; echo $?) "the copy's manifest is the same bytes"
check "and reads there" bash -c \
	"$M --store $WORK/copy get a x -o $WORK/o4.npy && $T same $WORK/a.npy $WORK/o4.npy && $M --store $WORK/copy verify a"

# ---- one row convention: verify and get both count rows from the start of the dataset ----
obj_get "datasets/a/shards/$sa.h5" "$WORK/dmg.h5"
$PY - "$WORK/dmg.h5" <<'PYEOF'
import struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
ix = data.rfind(b"MTIX")
version, n = struct.unpack_from("<II", data, ix + 4)
p = ix + (20 if version >= 2 else 12)
nl = struct.unpack_from("<I", data, p)[0]
p += 4 + nl + 4
if version >= 2:
    p += 4 + 8 * struct.unpack_from("<I", data, p)[0]
p += 32 + 40  # the chunk grid, then chunk 0: damage chunk 1 (rows 10..19 of the shard)
off, size = struct.unpack_from("<QQ", data, p)
data[off + size // 2] ^= 0x55
open(path, "wb").write(bytes(data))
PYEOF
obj_put "$WORK/dmg.h5" "datasets/a/shards/$sa.h5"
out=$($M verify a 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "x chunk 1 (rows 40\.\.49) fails its checksum"; echo $?) \
	"verify: shard 1's chunk 1 holds dataset rows 40..49"
echo "$out" | sed 's/^/# /'
fails "get names the same rows" 1 "a@v1: shard 1 .*x chunk 1 \(rows 40\.\.49\) fails its checksum" \
	$M get a x -o "$WORK/o.npy" --rows 45

done_testing
