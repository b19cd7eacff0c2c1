#!/bin/bash
# lua-recipes.sh — (on the file store, or on S3 with MT_TEST_STORE=s3) matorage run/rerun: bindings, readers, the sandbox, limits, errors that commit nothing, provenance, the CSV and derive examples.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE
EX=$top_srcdir/lua/examples
cd "$WORK" || exit 1
mkdir -p in

# shard hashes of a version, one a line
shards() { $M info --shards "$1" | sed -n 's/^ *[0-9][0-9]* *\([0-9a-f]\{64\}\).*/\1/p'; }
# same_shards A B: both have shards, and the same ones
same_shards() { [ -n "$(shards "$1")" ] && [ "$(shards "$1")" = "$(shards "$2")" ]; }

check "tensor bindings (tests/lua/tensor.lua)" $M run "$top_srcdir/tests/lua/tensor.lua"

# ---- readers against files numpy wrote ----
"$PY" - in <<'PYEOF'
import gzip, os, sys
import numpy as np
d = sys.argv[1]
a = np.array([[1, -2, 3], [4, 5, -6]], dtype=">i2")
head = bytes([0, 0, 0x0B, 2]) + (2).to_bytes(4, "big") + (3).to_bytes(4, "big")
open(f"{d}/small.idx", "wb").write(head + a.tobytes())
gzip.open(f"{d}/small.idx.gz", "wb").write(head + a.tobytes())
gzip.open(f"{d}/short.idx.gz", "wb").write(head + a.tobytes()[:-3])
np.save(f"{d}/in.npy", np.arange(12, dtype=np.float64).reshape(4, 3) / 2)
np.arange(1, 7, dtype=">u2").tofile(f"{d}/raw.bin")
open(f"{d}/table.csv", "w").write("a,b,label\n1,2,0\n3,,1\n2.5,NA,0\n")
os.makedirs(f"{d}/tree/sub")
for f in ("tree/a.txt", "tree/b.dat", "tree/sub/c.txt"):
    open(f"{d}/{f}", "w").write("x")
PYEOF
check "readers: IDX (gzip and plain), .npy, raw, CSV, directory walk (tests/lua/io.lua)" \
	$M run "$top_srcdir/tests/lua/io.lua" dir=in
check "datasets: rows one by one, batches, ranges, derive with append (tests/lua/read.lua)" \
	$M run "$top_srcdir/tests/lua/read.lua"
[ "$($M cat rows@v2 k | tr '\n' ' ')" = "10 20 30 40 50 60 70 51 61 71 " ]
ok $? "the appended derivation holds the parent's rows, then the mapped ones"
$M info rows@v2 | grep -q "^parent: *v1$" && [ -n "$(shards rows@v1)" ] &&
	[ "$(shards rows@v1)" = "$(shards rows@v2 | head -n "$(shards rows@v1 | wc -l)")" ]
ok $? "its parent is v1, whose shards it reuses"
check "write_npy writes what numpy reads" "$PY" -c '
import numpy as np
a = np.load("in/out.npy")
assert a.dtype == np.float32 and a.shape == (3, 4), (a.dtype, a.shape)
assert np.array_equal(a, (np.arange(12).reshape(4, 3) / 2).T.astype(np.float32))'
echo 'matorage.read_idx("in/short.idx.gz")' > short.lua
fails "a truncated IDX file is an error naming it" 1 "read_idx: in/short.idx.gz: file ends early" $M run short.lua
echo 'matorage.read_csv("in/table.csv")' > nofill.lua
fails "a missing CSV value names file, line and column" 1 "in/table.csv:3: column 2 is missing a value" $M run nofill.lua
printf 'a,b\n1,x\n' > in/bad.csv
echo 'matorage.read_csv("in/bad.csv")' > badcsv.lua
fails "a non-number in a CSV names file, line and column" 1 "in/bad.csv:2: column 2: 'x' is not a number" $M run badcsv.lua

# ---- the sandbox ----
mkdir -p "$WORK/outside"
echo secret > "$WORK/outside/f"
mkdir -p inner && cd inner || exit 1
for f in 'os.execute("true")' 'io.popen("true")' 'package.loadlib("libc.so.6", "*")' 'os.getenv("HOME")'; do
	echo "$f" > s.lua
	fails "sandbox: $f is not available" 1 "attempt to (call|index) a nil value" $M run s.lua
done
echo 'require("lfs")' > s.lua
fails "sandbox: C modules cannot be required" 1 "module 'lfs' is not available in the sandbox" $M run s.lua
echo 'assert(load(string.dump(function() end))) ' > s.lua
fails "sandbox: bytecode cannot be loaded" 1 "attempt to load a binary chunk" $M run s.lua
echo 'io.open("../outside/f")' > s.lua
fails "sandbox: a file outside the allowed paths is refused, naming it" 1 \
	"io.open: '../outside/f' is outside the paths this script may read" $M run s.lua
echo 'matorage.read_npy("'"$WORK"'/in/in.npy")' > s.lua
fails "sandbox: readers check the allowed paths too" 1 "read_npy: '$WORK/in/in.npy' is outside" $M run s.lua
check "--allow DIR opens a directory to the script" $M run s.lua --allow "$WORK/in"
echo 'assert(io.open("../outside/f"):read("l") == "secret"); os.execute("true")' > s.lua
check "--unsafe lifts the sandbox" $M run s.lua --unsafe
cd "$WORK" || exit 1

# ---- limits ----
printf 'local x = 0\nwhile true do\n  x = x + 1\nend\n' > loop.lua
fails "--max-instructions stops a runaway loop at its line" 1 "loop.lua:[23]: recipe stopped: instruction limit 1000000 reached \(raise with --max-instructions\)" \
	$M run loop.lua --max-instructions 1000000
echo 'while true do pcall(function() while true do end end) end' > catch.lua
fails "a script cannot catch the instruction limit with pcall and go on" 1 "instruction limit 1000000 reached" \
	timeout 20 $M run catch.lua --max-instructions 1000000
echo 'local t = {} for i = 1, 1e8 do t[i] = i end' > hog.lua
fails "--max-memory stops a script that holds too much" 1 "memory limit" $M run hog.lua --max-memory 16M
echo 'matorage.zeros({4096, 4096})' > big.lua
fails "tensors count against --max-memory" 1 "recipe stopped: memory limit 16.0 MiB reached \(raise with --max-memory\)" \
	$M run big.lua --max-memory 16M

# ---- errors commit nothing ----
cat > fail.lua <<'LUA'
local m = require("matorage")
local w = m.create("half", { attributes = { { name = "x", dtype = "float32", shape = { 2 } } } })
w:append({ x = m.zeros({ 3, 2 }) })
w:commit()
local function helper()
  error("something broke")
end
helper()
LUA
out=$($M run fail.lua 2>&1)
rc=$?
ok $([ $rc -eq 1 ]; echo $?) "a script error exits 1"
echo "$out" | head -1 | grep -q "^matorage: fail.lua:6: something broke (nothing was committed)$"
ok $? "the error names file:line"
echo "$out" | grep -q "fail.lua:8: in main chunk"
ok $? "a traceback follows"
[ -z "$(obj_ls datasets/half/versions)" ]
ok $? "nothing was committed, though the script had called commit()"

cat > never.lua <<'LUA'
local w = matorage.create("never", { attributes = { { name = "x", dtype = "int8" } } })
w:append({ x = matorage.zeros({ 1 }, "int8") })
LUA
fails "a version created but never committed is an error" 1 "dataset never: created but never committed" $M run never.lua

w='local w = matorage.create("d", { attributes = { { name = "x", dtype = "float32", shape = { 2 } } } })'
echo "$w; w:append({ x = matorage.zeros({ 3, 2 }, 'float64') })" > s.lua
fails "append: a wrong dtype names the attribute" 1 "append: batch.x: dtype float64, the attribute's is float32" $M run s.lua
echo "$w; w:append({ x = matorage.zeros({ 3, 5 }) })" > s.lua
fails "append: a wrong row shape names the attribute" 1 "append: batch.x: tensor\(float32, 3x5\) does not match the attribute's rows \(N, 2\)" $M run s.lua
echo "$w; w:append({ y = matorage.zeros({ 3, 2 }) })" > s.lua
fails "append: a missing attribute is named" 1 "append: batch.x: expected a tensor, got nil" $M run s.lua
echo 'matorage.create("d", { attributes = { { name = "x", dtype = "float8" } } })' > s.lua
fails "create: a bad dtype names the attribute" 1 "create: attributes\[1\].dtype: unknown dtype 'float8'" $M run s.lua
echo 'matorage.open("nosuch")' > s.lua
fails "open: a missing dataset is named" 1 "nosuch" $M run s.lua
fails "run: arguments must be KEY=VALUE" 2 "'oops' is not KEY=VALUE" $M run s.lua oops
fails "run: a missing script is named" 1 "nosuch.lua: No such file" $M run nosuch.lua

# ---- the CSV example, provenance ----
"$PY" - <<'PYEOF'
import numpy as np
rng = np.random.default_rng(3)
x = rng.normal(size=(200, 3)) * [1, 10, 100] + [0, 5, -50]
y = (x[:, 0] > 0).astype(int)
with open("iris.csv", "w") as f:
    f.write("sepal,petal,stem,label\n")
    for r, l in zip(x, y):
        f.write(",".join(f"{v:.6f}" for v in r) + f",{l}\n")
PYEOF
out=$($M run "$EX/csv_table.lua" csv=iris.csv dataset=iris 2>&1)
ok $? "the CSV example runs ($out)"
$M get iris features -o feat.npy > /dev/null && $M get iris label -o lab.npy > /dev/null
check "CSV rows are the standardized columns numpy computes" "$PY" -c '
import numpy as np
d = np.loadtxt("iris.csv", delimiter=",", skiprows=1)
x = d[:, :3]
want = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
got = np.load("feat.npy")
assert got.shape == (200, 3) and got.dtype == np.float32
assert np.allclose(got, want, atol=1e-5), abs(got - want).max()
assert np.array_equal(np.load("lab.npy"), d[:, 3].astype(np.int64))'
info=$($M info iris)
echo "$info" | grep -q "^  csv=iris.csv$" && echo "$info" | grep -q "^  dataset=iris$"
ok $? "info shows the recipe's arguments"
$M info --json iris | "$PY" -c '
import json, sys
r = json.load(sys.stdin)["recipe"]
assert len(r["sha256"]) == 64 and r["args"] == {"csv": "iris.csv", "dataset": "iris"}, r'
ok $? "info --json holds recipe.sha256 and recipe.args"
check "rerun rebuilds the CSV version" $M rerun iris@v1
same_shards iris@v1 iris@v2
ok $? "and its shards are identical"
$M push iris@v1 "file://$WORK/other" > /dev/null
[ "$($M --store "file://$WORK/other" info iris@v1 | sed -n 's/^recipe: *//p')" = \
	"$($M info iris@v1 | sed -n 's/^recipe: *//p')" ] &&
	$M --store "file://$WORK/other" rerun iris@v1 > /dev/null 2>&1 && same_shards iris@v1 iris@v2
ok $? "push carries the recipe: the copy can be rerun in the other store"
printf 'sepal,petal,stem,label\n1,2,,0\n' > holes.csv
fails "the CSV example names a missing value" 1 "holes.csv:2: column 3 is missing a value" \
	$M run "$EX/csv_table.lua" csv=holes.csv dataset=holes
check "fill= fills it" $M run "$EX/csv_table.lua" csv=holes.csv dataset=holes fill=0 standardize=0

$M put plain x=in/in.npy > /dev/null
fails "rerun of a version without a recipe says so" 1 "plain@v1 has no recipe" $M rerun plain
$M info --json plain | grep -q '"recipe"'
ok $([ $? -ne 0 ]; echo $?) "a put version's manifest has no recipe field"

# ---- the derive example on a small image set ----
"$PY" - <<'PYEOF'
import numpy as np
rng = np.random.default_rng(1)
np.save("img.npy", rng.random((500, 28, 28), dtype=np.float32))
np.save("lab.npy", (np.arange(500) % 10).astype(np.int64))
PYEOF
$M put small image=img.npy label=lab.npy > /dev/null
out=$($M run "$EX/derive_augment.lua" from=small to=small-tops seed=4 2>&1)
ok $? "the derive example runs ($out)"
$M get small-tops label -o tl.npy > /dev/null && $M get small-tops image -o ti.npy > /dev/null
check "derive keeps the chosen classes and augments within [0, 1]" "$PY" -c '
import numpy as np
l = np.load("tl.npy"); i = np.load("ti.npy"); src = np.load("img.npy")
assert sorted(set(l.tolist())) == [0, 2, 4, 6] and len(l) == 200, (set(l.tolist()), len(l))
assert i.min() >= 0 and i.max() <= 1
keep = np.isin(np.arange(500) % 10, [0, 2, 4, 6])
s = src[keep]
d = np.minimum(abs(i - s).mean((1, 2)), abs(i - s[:, :, ::-1]).mean((1, 2)))
assert d.max() < 0.05 and not np.array_equal(i, s), d.max()
flipped = abs(i - s[:, :, ::-1]).mean((1, 2)) < abs(i - s).mean((1, 2))
assert 0.3 < flipped.mean() < 0.7, flipped.mean()'
check "rerun of the derived version" $M rerun small-tops
same_shards small-tops@v1 small-tops@v2
ok $? "seeded augmentation gives identical shards on rerun"
$M run "$EX/derive_augment.lua" from=small to=small-tops seed=5 > /dev/null 2>&1
[ -n "$(shards small-tops@v3)" ] && ! same_shards small-tops@v1 small-tops@v3
ok $? "another seed gives other bytes"

# ---- gc: a recipe lives as long as a version uses it ----
cat > gc1.lua << 'EOF'
local m = require("matorage")
local w = m.create("gcd", { attributes = { { name = "x", dtype = "int64" } } })
w:append({ x = m.arange(0, 2) })
w:commit()
EOF
sed 's/0, 2/0, 3/' gc1.lua > gc2.lua
$M run gc1.lua > /dev/null && $M run gc2.lua > /dev/null
recipes() { obj_ls datasets/gcd/recipes | sed 's|.*/||' | tr '\n' ' '; }
ok $([ "$(recipes | wc -w)" -eq 2 ]; echo $?) "two versions, two recipe objects"
check "rm the first version" $M rm gcd@v1
check "gc --delete" $M gc gcd --delete --grace 0
left="$(recipes)"
want="$($M info gcd@v2 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["recipe"]["sha256"])').lua "
ok $([ "$left" = "$want" ]; echo $?) "gc deleted the recipe no version uses and kept v2's ($left)"
check "v2 still reruns from its kept recipe" $M rerun gcd@v2
done_testing
