#!/bin/bash
# protect.sh — Reed–Solomon protection: records and parity objects as FORMAT.md lays them out, re-protect, appends reusing groups, rm and gc, copies, --parity on put/run/pull, a remote's default, and a lost shard rebuilt by PyECLib from the documented layout.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
S="$WORK/store"
DS="$S/datasets/d"
export MATORAGE_CONFIG="$WORK/config.json"
cd "$WORK" || exit 1
$T make x.npy float32 1000x64 1
$T make y.npy float32 300x64 2
$M put d x=x.npy --shard-rows 100 > /dev/null # 10 shards of about 25 KiB

# nparity DIR: parity objects of a dataset directory.
nparity() { ls "$1/parity" 2>/dev/null | wc -l; }

# ---- protect ---------------------------------------------------------------
out=$($M protect d@v1 --parity 4+2 2>&1)
ok $? "protect d@v1 with 4+2: $out"
ok $([ -f "$DS/protect/v1.json" ]; echo $?) "the record is protect/v1.json"
ok $([ "$(nparity "$DS")" = 6 ]; echo $?) "3 groups (4+4+2 shards) x 2 parity objects"
# Every parity object is its group's stripe long, and named by its sha256.
check "parity objects: stripe bytes each, named by their sha256, 2 per group" "$PY" - "$DS" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
rec = json.load(open(os.path.join(d, "protect", "v1.json")))
man = json.loads(rec["manifest"])
assert rec["k"] == 4 and rec["m"] == 2 and rec["code"] == "rs-gf256-cauchy", rec["k"]
assert [len(g["members"]) for g in rec["groups"]] == [4, 4, 2]
assert open(os.path.join(d, "versions", "v1.json")).read() == rec["manifest"]
for g in rec["groups"]:
    assert g["stripe"] == max(mb["bytes"] for mb in g["members"])
    for mb in g["members"]:
        s = man["shards"][mb["shard"]]
        assert (s["sha256"], s["bytes"]) == (mb["sha256"], mb["bytes"])
    assert len(g["parity"]) == 2
    for p in g["parity"]:
        b = open(os.path.join(d, "parity", p["sha256"]), "rb").read()
        assert len(b) == g["stripe"] == p["bytes"], (len(b), g["stripe"])
        assert hashlib.sha256(b).hexdigest() == p["sha256"]
PY
out=$($M protect d@v1 --parity 4+2 2>&1)
ok $([ $? -eq 0 ] && grep -q "already protected with 4+2" <<< "$out"; echo $?) \
	"protecting again with the same K+M does nothing: $out"
fails "another K+M is refused, naming the one it has" 1 "d@v1 is already protected with 4\+2 parity, not 3\+1" \
	$M protect d@v1 --parity 3+1
fails "--parity is required" 2 "--parity K\+M is required" $M protect d@v1
fails "a malformed K+M is a usage error" 2 "parity '4-2' is not K\+M" $M protect d@v1 --parity 4-2
fails "K past 64 is refused" 2 "K from 1 to 64" $M protect d@v1 --parity 65+1

# ---- a lost shard, rebuilt by another implementation ------------------------
lost=$("$PY" -c "import json; print(json.load(open('$DS/versions/v1.json'))['shards'][5]['sha256'])")
cp "$DS/shards/$lost.h5" "$WORK/saved.h5"
rm "$DS/shards/$lost.h5"
out=$("$PY" "$top_srcdir/tests/e2e/protect_decode.py" "$S" d v1 5 "$WORK/rebuilt.h5" 2>&1)
ok $? "PyECLib (isa_l_rs_cauchy) rebuilds lost shard 5 from the documented layout: $out"
ok $(cmp -s "$WORK/rebuilt.h5" "$WORK/saved.h5"; echo $?) "byte for byte"
out=$("$PY" "$top_srcdir/tests/e2e/protect_decode.py" "$S" d v1 9 "$WORK/rebuilt9.h5" 2>&1)
ok $? "and shard 9 of the short last group: $out"
cp "$WORK/saved.h5" "$DS/shards/$lost.h5"

# ---- appends reuse their parent's full groups --------------------------------
$M put d x=y.npy --append --shard-rows 100 > /dev/null # v2: 13 shards
before=$(nparity "$DS")
out=$($M protect d@v2 --parity 4+2 2>&1)
ok $? "protect the appended v2: $out"
ok $([ $(($(nparity "$DS") - before)) = 4 ] && grep -q "4 group(s), 2 reused; 4 parity object(s) sent" <<< "$out"; echo $?) \
	"v1's two full groups are reused; only 8..11 and 12 are coded (4 new parity objects)"
out=$($M put d x=y.npy --append --shard-rows 100 --parity 3+1 2>&1)
ok $([ $? -eq 0 ] && grep -q "^d@v3$" <<< "$out" && grep -q "d@v3: protected with 3+1 parity: 6 group(s), 0 reused" <<< "$out"; echo $?) \
	"put --parity protects the new version; another K+M reuses nothing: $out"

# ---- damage is never coded ---------------------------------------------------
$M put e x=y.npy --shard-rows 100 > /dev/null
sh=$(ls "$S/datasets/e/shards" | head -1)
printf 'X' | dd of="$S/datasets/e/shards/$sh" bs=1 seek=100 conv=notrunc 2> /dev/null
fails "a damaged shard is refused, not coded into parity" 1 "protect refuses a version that is not sound.*shard [0-9]: .*${sh:0:12}" \
	$M protect e --parity 2+1
ok $([ ! -e "$S/datasets/e/protect/v1.json" ]; echo $?) "and nothing was recorded"

# ---- rm and gc -----------------------------------------------------------------
$M rm d@v3 > /dev/null
ok $([ ! -e "$DS/protect/v3.json" ]; echo $?) "rm deletes the record"
before=$(nparity "$DS")
$M gc d --grace 0 --delete > /dev/null
ok $([ "$(nparity "$DS")" = $((before - 6)) ]; echo $?) "gc deletes the 6 parity objects only v3's record named"
check "v1 and v2 still verify after gc" bash -c "$M verify d@v1 && $M verify d@v2"
# A manifest lost without a tombstone: the record keeps the version's objects.
$M put f x=y.npy --shard-rows 100 --parity 2+1 > /dev/null
rm "$S/datasets/f/versions/v1.json"
nsh=$(ls "$S/datasets/f/shards" | wc -l)
$M gc f --grace 0 --delete > /dev/null
ok $([ "$(ls "$S/datasets/f/shards" | wc -l)" = "$nsh" ] && [ "$(nparity "$S/datasets/f")" = 2 ] &&
	[ -e "$S/datasets/f/protect/v1.json" ]; echo $?) \
	"gc keeps the shards, parity and record of a version whose manifest is gone without a tombstone"
"$PY" -c "import json; open('$WORK/m.json','w').write(json.load(open('$S/datasets/f/protect/v1.json'))['manifest'])"
# (gc may have removed the emptied versions/ directory: a file store keeps no empty one)
mkdir -p "$S/datasets/f/versions"
cp "$WORK/m.json" "$S/datasets/f/versions/v1.json"
check "the embedded manifest brings the version back" $M verify f@v1
$M rm f@v1 > /dev/null
$M gc f --grace 0 --delete > /dev/null
ok $([ "$(ls "$S/datasets/f/shards" | wc -l)" = 0 ] && [ "$(nparity "$S/datasets/f")" = 0 ]; echo $?) \
	"once removed, gc takes its shards and parity"

# ---- copies carry protection ---------------------------------------------------
out=$($M push d@v2 "$WORK/b" 2>&1)
ok $? "push a protected version: $out"
ok $(cmp -s "$DS/protect/v2.json" "$WORK/b/datasets/d/protect/v2.json" && [ "$(nparity "$WORK/b/datasets/d")" = 8 ]; echo $?) \
	"its record and 8 parity objects went with it"
out=$($M --store "$WORK/b" protect d@v2 --parity 4+2 2>&1)
ok $([ $? -eq 0 ] && grep -q "already protected" <<< "$out"; echo $?) "the copy is protected: $out"
out=$($M --store "$WORK/c" pull "$S" d@v1 --parity 2+2 2>&1)
ok $([ $? -eq 0 ] && grep -q "d@v1: keeps its 4+2 protection" <<< "$out" && [ -e "$WORK/c/datasets/d/protect/v1.json" ]; echo $?) \
	"pull --parity of a protected version keeps the protection it brings: $out"
$M --store "$WORK/u" put u x=y.npy --shard-rows 100 > /dev/null
out=$($M --store "$WORK/c" pull "$WORK/u" u --parity 2+2 2>&1)
ok $([ $? -eq 0 ] && grep -q "u@v1: protected with 2+2 parity: 2 group(s)" <<< "$out"; echo $?) \
	"pull --parity protects what it copies: $out"
check "a copy of a version whose protection was added later gets it" bash -c \
	"$M --store '$WORK/u' protect u@v1 --parity 3+1 >/dev/null && $M --store '$WORK/u' push u@v1 '$WORK/d2' >/dev/null &&
	 $M --store '$WORK/d2' protect u@v1 --parity 3+1 | grep -q 'already protected'"

# ---- run and the remote default ------------------------------------------------
cat > r.lua <<'LUA'
local m = require("matorage")
local w = m.create("lua", { attributes = { { name = "x", dtype = "int64", shape = { 4 } } }, shard_rows = 10 })
w:append({ x = m.zeros({ 50, 4 }, "int64") })
w:commit()
LUA
out=$($M run r.lua --parity 2+1 2>&1)
ok $([ $? -eq 0 ] && grep -q "lua@v1: protected with 2+1 parity: 3 group(s)" <<< "$out"; echo $?) \
	"run --parity protects the versions the recipe commits: $out"
check "remote add --parity stores a default" $M remote add safe "$WORK/safe" --parity 2+1
ok $($M remote ls | grep -q "parity=2+1"; echo $?) "remote ls shows it"
out=$($M push d@v1 safe 2>&1)
ok $([ $? -eq 0 ] && grep -q "keeps its 4+2 protection" <<< "$out" && [ -e "$WORK/safe/datasets/d/protect/v1.json" ]; echo $?) \
	"a push to it carries v1's own 4+2 protection, which stays: $out"
out=$($M --store safe put g x=y.npy --shard-rows 100 2>&1)
ok $([ $? -eq 0 ] && grep -q "g@v1: protected with 2+1 parity" <<< "$out"; echo $?) \
	"a put to the remote takes its default: $out"
out=$($M --store safe put g x=y.npy --shard-rows 100 --parity 3+2 2>&1)
ok $([ $? -eq 0 ] && grep -q "g@v2: protected with 3+2 parity" <<< "$out"; echo $?) "--parity overrides it"
fails "a bad default is refused when added" 1 "remote bad: parity '2' is not K\+M" \
	$M remote add bad "$WORK/bad" --parity 2
done_testing
