#!/bin/bash
# cli-copy.sh — push, pull and sync between stores: only missing shards travel, manifest last, conflicts and damage refused.
# With MT_TEST_STORE=s3 the destination stores are S3 prefixes behind the signing proxy.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
A="$WORK/a"
# Destinations: directories under the test's store directory, or prefixes of its bucket,
# so obj_* reach their raw objects as b/..., e/...
D="$OBJ_BASE"
B="$D/b" C="$D/c" E="$D/e" F="$D/f"
$T make "$WORK/x.npy" float32 200x8 1
$T make "$WORK/y.npy" float32 100x8 2
$T make "$WORK/z.npy" int16 50 3
$M --store "$A" put ds x="$WORK/x.npy" --shard-rows 40 > /dev/null
$M --store "$A" put ds x="$WORK/y.npy" --shard-rows 40 --append > /dev/null
$M --store "$A" put other z="$WORK/z.npy" > /dev/null

# summary FIELD OUTPUT: a number from the one-line summary push/pull/sync print.
summary() {
	case $1 in
	versions) sed -n 's/^\([0-9]*\) version(s) copied.*/\1/p' <<< "$2" ;;
	shards) sed -n 's/.*; \([0-9]*\) shard(s) sent.*/\1/p' <<< "$2" ;;
	present) sed -n 's/.* sent ([^)]*), \([0-9]*\) already there.*/\1/p' <<< "$2" ;;
	esac
}

out=$($M --store "$A" push ds@v1 "$B" 2>&1)
ok $? "push ds@v1 to an empty store"
ok $([ "$(summary versions "$out")" = 1 ] && [ "$(summary shards "$out")" = 5 ]; echo $?) \
	"one version, its 5 shards sent: $out"
check "the copy reads back identical" bash -c \
	"$M --store '$B' get ds@v1 x -o $WORK/o.npy && $T same $WORK/x.npy $WORK/o.npy"
check "the copy verifies" $M --store "$B" verify ds@v1

out=$($M --store "$A" push ds "$B" 2>&1)
ok $? "push every version of ds"
ok $([ "$(summary versions "$out")" = 1 ] && [ "$(summary shards "$out")" = 3 ]; echo $?) \
	"only v2 is new and only its 3 own shards travel; v1's are already there: $out"
out=$($M --store "$A" push ds "$B" 2>&1)
ok $([ "$(summary versions "$out")" = 0 ] && [ "$(summary shards "$out")" = 0 ]; echo $?) \
	"a second push sends nothing: $out"
check "the appended version reads back" bash -c \
	"$M --store '$B' get ds@v2 x -o $WORK/o.npy --rows 200: && $T same $WORK/y.npy $WORK/o.npy"

out=$($M --store "$C" pull "$B" ds@latest 2>&1)
ok $? "pull ds@latest from B"
ok $([ "$($M --store "$C" ls ds | tr '\n' ' ')" = "v2 " ]; echo $?) "only the newest version arrived"
check "it verifies (its parent's shards came with it)" $M --store "$C" verify ds@v2

out=$($M sync "$A" "$E" 2>&1)
ok $? "sync every dataset from A to E"
ok $([ "$($M --store "$E" ls | tr '\n' ' ')" = "ds other " ] &&
	[ "$($M --store "$E" ls ds | tr '\n' ' ')" = "v1 v2 " ]; echo $?) \
	"E holds both datasets and all versions"
check "sync of one version between two other stores" $M sync "$A" "$D/g" other@v1

# A different version under the same name is refused; B keeps its own.
$M --store "$D/other" put ds@v1 x="$WORK/y.npy" > /dev/null
fails "a different ds@v1 is refused" 1 "ds@v1 already exists in .* with different content" \
	$M --store "$D/other" push ds@v1 "$B"
check "B's ds@v1 is untouched" bash -c \
	"$M --store '$B' get ds@v1 x -o $WORK/o.npy && $T same $WORK/x.npy $WORK/o.npy"

# A damaged source shard is caught by its hash; nothing is committed.
$M --store "$E" verify ds@v1 > /dev/null
sha=$($M --store "$E" info ds@v1 --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["shards"][0]["sha256"])')
key=datasets/ds/shards/$sha.h5 shard=e/datasets/ds/shards/$sha.h5
obj_get "$shard" "$WORK/shard.h5"
printf 'X' | dd of="$WORK/shard.h5" bs=1 seek=100 conv=notrunc 2> /dev/null
obj_put "$WORK/shard.h5" "$shard"
fails "push refuses a version that is not sound" 1 "ds@v1 is not sound, so it is not spread" \
	$M --store "$E" push ds@v1 "$F"
fails "with --force, the damaged shard still fails the copy by its hash" 1 "sha256 is [0-9a-f]+, not the" \
	$M --store "$E" push ds@v1 "$F" --force
ok $([ -z "$($M --store "$F" ls 2>/dev/null)" ]; echo $?) "no version appears in the destination"
ok $([ -z "$(obj_ls "f/$key")" ]; echo $?) "the damaged shard was not stored there"

# An interrupted copy (a shard missing at the source) commits nothing; the re-run sends only the rest.
$M sync "$A" "$D/h" ds@v2 > /dev/null
gone=$(obj_ls h/datasets/ds/shards | sed -n 2p)
obj_get "$gone" "$WORK/gone.h5"
obj_rm "$gone"
fails "a missing source shard fails the copy, naming it" 1 "${gone#h/}" \
	$M sync "$D/h" "$D/i" ds@v2
ok $([ -z "$($M --store "$D/i" ls 2>/dev/null)" ]; echo $?) "no manifest was written"
obj_put "$WORK/gone.h5" "$gone"
out=$($M sync "$D/h" "$D/i" ds@v2 2>&1)
ok $([ "$(summary versions "$out")" = 1 ] && [ "$(summary present "$out")" -ge 1 ] &&
	[ $(($(summary shards "$out") + $(summary present "$out"))) -eq 8 ]; echo $?) \
	"the re-run commits and sends only what was missing: $out"
check "the re-run's copy verifies" $M --store "$D/i" verify ds@v2

# A version made by a recipe: its recipe object is already in the destination from
# the first copy, and every later copy must see it there and go on (no crash).
cat > "$WORK/rec.lua" << 'EOF2'
local m = require("matorage")
local w = m.create("rec", { attributes = { { name = "x", dtype = "int64" } } })
w:append({ x = m.arange(0, 5) })
w:commit()
EOF2
$M --store "$A" run "$WORK/rec.lua" > /dev/null && $M --store "$A" rerun rec@v1 > /dev/null
ok $? "a recipe ran and reran (rec@v1, rec@v2)"
check "push of a recipe's versions" $M --store "$A" push rec "$D/r"
check "a second push, the recipe already there" $M --store "$A" push rec "$D/r"
check "a pull into a store holding the recipe" $M --store "$D/r2" pull "$A" rec@v1
check "and another pull, of the other version" $M --store "$D/r2" pull "$A" rec
check "a sync into a store holding the recipe" $M sync "$A" "$D/r2" rec
check "the copies verify" $M --store "$D/r2" verify rec@v2

# Usage errors.
# Parity objects travel with a protected version, counted apart from its shards.
$M --store "$A" protect other@v1 --parity 2+1 > /dev/null
out=$($M --store "$A" push other "$D/p" 2>&1)
ok $(echo "$out" | grep -Eq '; 1 shard\(s\) and [1-9][0-9]* parity object\(s\) sent'; echo $?) \
	"a protected version's summary counts its 1 shard apart from its parity objects: $out"

fails "push needs a destination" 2 "usage: matorage push" $M --store "$A" push ds
fails "--threads must be a number" 2 "threads" $M --store "$A" push ds "$B" --threads 0
fails "an unknown dataset" 1 "nosuch" $M --store "$A" push nosuch "$B"
fails "an unknown version" 1 "ds@v9: no such version" $M --store "$A" push ds@v9 "$B"

# A pull that reads nothing from its source creates no destination store.
fails "a pull of an unknown dataset" 1 "nosuch" $M --store "$WORK/pulled" pull "$B" nosuch
ok $([ ! -e "$WORK/pulled" ]; echo $?) "and leaves no destination directory behind"
if [ "$OBJ_MODE" = s3 ]; then
	fails "a pull with a wrong secret key" 1 "SignatureDoesNotMatch|signature|403" \
		env AWS_SECRET_ACCESS_KEY=wrong-test-secret $M --store "$WORK/pulled" pull "$B" ds
	ok $([ ! -e "$WORK/pulled" ]; echo $?) "and leaves no destination directory behind"
fi

done_testing
