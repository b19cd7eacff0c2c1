#!/bin/bash
# staged.sh — `run --part K/N` stages parts, `commit --staged` merges them into one version with exactly one run's rows in order; a missing part is refused; gc removes old staged parts.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
cd "$WORK" || exit 1

# A recipe whose rows are 0..N-1 (y) and y/2 (x); part k of n takes rows (k-1)N/n .. kN/n-1.
cat > rows.lua <<'LUA'
local m = require("matorage")
local N = tonumber(arg.rows or "1000")
local k, n = m.part()
local first, last = (k - 1) * N // n, k * N // n - 1
local w = m.create(arg.name, {
	attributes = { { name = "x", dtype = "float32", shape = { 2 } }, { name = "y", dtype = "int64" } },
	description = "rows " .. N, tags = { "parts" }, shard_rows = 97,
})
if last >= first then
	local y = m.arange(first, last)
	local x = m.stack({ y:cast("float32"):div_(2), y:cast("float32") }, 2)
	w:append({ x = x, y = y })
end
w:commit()
LUA
# same A B: two versions hold the same rows of x and y.
same() {
	for a in x y; do
		$M get "$1" $a -o "$WORK/a.npy" && $M get "$2" $a -o "$WORK/b.npy" &&
			$PY -c 'import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); sys.exit(a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b))' "$WORK/a.npy" "$WORK/b.npy" || return 1
	done
}

check "a whole run" $M run rows.lua name=whole
$M run rows.lua name=parted --part 1/3 > out1 2>&1 &
p1=$!
$M run rows.lua name=parted --part 2/3 > out2 2>&1 &
p2=$!
$M run rows.lua name=parted --part 3/3 > out3 2>&1
r3=$?
wait $p1; r1=$?
wait $p2; r2=$?
ok $([ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ $r3 -eq 0 ]; echo $?) "three parts run at once"
ok $(grep -Eq '^parted@staged/run-[0-9a-f]{16}/2$' out2; echo $?) "a part prints where it was staged ($(cat out2))"
ok $( ! cat out1 out2 out3 | grep -v '^parted@staged/' | grep -q .; echo $?) "and nothing else: no warning about the catalog ($(cat out1 out2 out3 | grep -v '^parted@' | head -1))"
ok $( ! $M ls parted > /dev/null 2>&1; echo $?) "staged parts are no version yet"
check "commit --staged merges them" $M commit parted --staged
check "the committed version holds exactly the whole run's rows, in order" same whole parted
ok $([ "$($M info parted | awk '/^description:/ {print $2, $3}')" = "rows 1000" ]; echo $?) "it takes part 1's description"
ok $([ -z "$(find "$WORK/store/datasets/parted/staged" -type f 2>/dev/null)" ]; echo $?) "the part records are gone once committed"

# Onto an existing dataset: the merged parts are appended to the latest version.
for k in 1 2; do $M run rows.lua name=whole rows=10 --part $k/2 > /dev/null || exit 1; done
check "commit --staged appends to the latest version" $M commit whole --staged --description "ten more"
ok $([ "$($M info whole | awk '/^rows:/ {print $2}')" = 1010 ] && [ "$($M info whole | awk '/^parent:/ {print $2}')" = v1 ]; echo $?) \
	"whole@v2: 1010 rows, parent v1"

# A missing part is refused, naming it; nothing is committed.
$M run rows.lua name=miss --part 1/3 > /dev/null
$M run rows.lua name=miss --part 3/3 > /dev/null
fails "a missing part is refused, named" 1 "miss staging run-[0-9a-f]+: part 2 of 3 is missing; nothing was committed" \
	$M commit miss --staged
ok $( ! $M ls miss > /dev/null 2>&1; echo $?) "no version was made"
fails "a part staged twice is refused" 1 "part 1 of staging run-[0-9a-f]+ is staged already" \
	$M run rows.lua name=miss --part 1/3
fails "--part must be K/N" 2 "expected K/N" $M run rows.lua name=miss --part 4/3
fails "commit needs --staged" 2 "--staged" $M commit miss
$M run rows.lua name=miss --part 1/2 --stage-id other > /dev/null
fails "two stagings: commit names them and asks for one" 1 "2 stagings \(other, run-" $M commit miss --staged
fails "an unknown id" 1 "no staged parts under the id nope" $M commit miss --staged --id nope

# gc: young staged parts (and their shards) stay; past the grace they go.
$M gc miss --delete > /dev/null
ok $([ "$(find "$WORK/store/datasets/miss/staged" -name '*.json' | wc -l)" -eq 3 ]; echo $?) "gc keeps staged parts younger than the grace"
$M run rows.lua name=miss --part 2/3 > /dev/null
check "and what it kept still commits" bash -c "$M commit miss --staged --id \$(ls $WORK/store/datasets/miss/staged | grep run-) > /dev/null"
$M get miss y -o "$WORK/y.npy" && ok $($PY -c 'import numpy as np, sys; y = np.load(sys.argv[1]); sys.exit(not np.array_equal(y, np.arange(1000)))' "$WORK/y.npy"; echo $?) "all 1000 rows in order"
sleep 1
$M gc miss --delete --grace 0 > /dev/null
ok $([ -z "$(find "$WORK/store/datasets/miss/staged" -name '*.json')" ] &&
	[ "$(find "$WORK/store/datasets/miss/shards" -type f | wc -l)" -eq "$($M info miss | awk '/^shards:/ {print $2}')" ]; echo $?) \
	"gc past the grace removes staged parts and the shards only they used"
check "the committed version still verifies" $M verify miss

# On S3 (s3rver behind the signing proxy): parts at once, committed, give the whole run.
if [ "${MT_TEST_S3:-both}" != rgw ] && s3_available && s3_start; then
	S=s3://mt-test/staged
	$M --store $S run rows.lua name=s3parted --part 1/2 > /dev/null 2>&1 &
	p=$!
	$M --store $S run rows.lua name=s3parted --part 2/2 > /dev/null 2>&1
	wait $p
	check "S3: two parts staged at once, committed" $M --store $S commit s3parted --staged
	ok $(for a in x y; do $M get whole@v1 $a -o a.npy && $M --store $S get s3parted $a -o b.npy && cmp -s a.npy b.npy || exit 1; done; echo $?) \
		"S3: exactly the whole run's rows, in order"
	ok $([ -z "$(aws_cli s3 ls --recursive s3://mt-test/staged/datasets/s3parted/staged/ 2>/dev/null)" ]; echo $?) \
		"S3: the part records are gone"
else
	ok 0 "# SKIP S3: s3rver or botocore not installed"
fi

# Fashion-MNIST (when installed): two parts at once give the one-run dataset.
FM=/usr/share/datasets/fashion-mnist
if [ -f "$FM/train-images-idx3-ubyte.gz" ]; then
	EX=$top_srcdir/lua/examples
	$M run "$EX/fashion_mnist.lua" --allow "$FM" prefix=fm1 > /dev/null
	$M run "$EX/fashion_mnist.lua" --allow "$FM" prefix=fm2 --part 1/2 > /dev/null &
	p=$!
	$M run "$EX/fashion_mnist.lua" --allow "$FM" prefix=fm2 --part 2/2 > /dev/null
	wait $p
	check "fashion_mnist.lua in two parts, committed" bash -c "$M commit fm2-train --staged > /dev/null && $M commit fm2-test --staged > /dev/null"
	for s in train test; do
		ok $(for a in image label; do $M get fm1-$s $a -o a.npy && $M get fm2-$s $a -o b.npy && cmp -s a.npy b.npy || exit 1; done; echo $?) \
			"fashion-mnist $s: the parts give exactly the one run's rows, in order"
	done
else
	ok 0 "# SKIP dataset-fashion-mnist is not installed"
fi

done_testing
