#!/bin/bash
# s3-head.sh — on S3 each commit keeps a copy of the newest manifest as datasets/<d>/head.json, requested with the listing of versions, so the latest opens in one round trip; a head that is stale, of another dataset, garbage, too big, or not the bytes the listing gives for the newest manifest is never taken for it, and rm takes a head naming the removed version with it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
MT_TEST_STORE=s3 use_store
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
HEAD=datasets/h/head.json

$T make "$WORK/x1.npy" float32 10x4 1
$T make "$WORK/x2.npy" float32 20x4 2
check "put h@v1" $M put h x="$WORK/x1.npy" --description first
check "put h@v2" $M put h x="$WORK/x2.npy" --description second
obj_get $HEAD "$WORK/head" && obj_get datasets/h/versions/v2.json "$WORK/v2.json" &&
	obj_get datasets/h/versions/v1.json "$WORK/v1.json"
ok $(cmp -s "$WORK/head" "$WORK/v2.json"; echo $?) "the head is the newest manifest, byte for byte"

# latest WHAT: info of h (the latest) shows v2's 20 rows, and the proxy's log whether
# v2's manifest was read (1) or not (0).
latest() {
	s3_log_clear
	local out
	out=$($M info h 2>&1)
	local read=0
	s3_log | grep -q "/datasets/h/versions/v2.json" && read=1
	echo "# $1: manifest read $read"
	ok $(echo "$out" | grep -Eq 'rows:? *20$' && echo "$out" | grep -q 'second'; echo $?) \
		"$1: the latest is v2"
	LATEST_READ=$read
}

latest "with its head"
ok $LATEST_READ "the latest opens from the head: its manifest is not read"
n=$(s3_log | grep -c "/datasets/h/meta/" || true)
ok $([ "$n" -eq 1 ]; echo $?) "info still reads the metadata object (got $n)"

# A loader opens the latest with the listing and the head at once and reads no metadata.
s3_log_clear
out=$("$top_builddir/bench/loader-epoch" "$MATORAGE_STORE" h x 5 1 1048576)
ok $([ "${out%% *}" = 20 ]; echo $?) "a loader epoch of the latest delivers v2's 20 rows"
n=$(s3_log | grep -c -E "/versions/v2.json|/meta/" || true)
ok $([ "$n" -eq 0 ]; echo $?) "the loader reads neither the manifest nor the metadata object (got $n)"

obj_put "$WORK/v1.json" $HEAD
latest "a stale head (v1's manifest)"
ok $([ "$LATEST_READ" = 1 ]; echo $?) "a stale head is passed over: v2's manifest is read"

check "put g@v1" $M put g x="$WORK/x2.npy"
obj_get datasets/g/versions/v1.json "$WORK/g.json"
obj_put "$WORK/g.json" $HEAD
latest "the head of another dataset"

printf 'not a manifest' > "$WORK/junk"
obj_put "$WORK/junk" $HEAD
latest "a head that is not JSON"

head -c 2000000 /dev/zero | tr '\0' ' ' > "$WORK/big"
obj_put "$WORK/big" $HEAD
latest "a head over 1 MiB"

# The manifest edited in place, the head still its old bytes: the listing's ETag tells them
# apart, so the edit is read and caught by the manifest's own checksum, as without a head.
obj_put "$WORK/v2.json" $HEAD
sed 's/"second"/"SECOND"/' "$WORK/v2.json" > "$WORK/v2-edited.json"
ok $([ "$(wc -c < "$WORK/v2-edited.json")" = "$(wc -c < "$WORK/v2.json")" ]; echo $?) \
	"the edit keeps the manifest's size"
obj_put "$WORK/v2-edited.json" datasets/h/versions/v2.json
fails "an edited manifest behind an intact head fails on its checksum" 1 \
	"datasets/h/versions/v2\.json: checksum" $M info h
out=$("$top_builddir/bench/loader-epoch" "$MATORAGE_STORE" h x 5 1 1048576 2>&1)
ok $([ $? -ne 0 ] && echo "$out" | grep -q "versions/v2.json: checksum"; echo $?) \
	"so does a loader of the latest"
obj_put "$WORK/v2.json" datasets/h/versions/v2.json
latest "the manifest put back"
ok $LATEST_READ "the head serves again once the manifest is its bytes"

check "describe h@v2" $M describe h@v2 -d "edited later"
out=$($M info h)
ok $(echo "$out" | grep -q "edited later"; echo $?) "info of the latest shows the edited description"

check "rm h@v1 (not the head's version)" $M rm h@v1
ok $(obj_ls datasets/h/ | grep -qx $HEAD; echo $?) "the head stays"
check "rm h@v2" $M rm h@v2
ok $(obj_ls datasets/h/ | grep -qx $HEAD && echo 1 || echo 0) "the head naming the removed version is gone"
check "put h@v3" $M put h x="$WORK/x1.npy"
obj_get $HEAD "$WORK/head3" && obj_get datasets/h/versions/v3.json "$WORK/v3.json"
ok $(cmp -s "$WORK/head3" "$WORK/v3.json"; echo $?) "the next commit writes the head again"

# gc keeps a head while its version is listed, and collects one whose version is gone (an rm
# that died between the manifest and the head) or that is garbage, once past the grace.
$M gc h --grace 0 --delete > /dev/null
ok $(obj_ls datasets/h/ | grep -qx $HEAD; echo $?) "gc keeps the head of a listed version"
obj_put "$WORK/v2.json" $HEAD
out=$($M gc h --grace 0)
ok $(echo "$out" | grep -q "	$HEAD$" && obj_ls datasets/h/ | grep -qx $HEAD; echo $?) \
	"gc without --delete lists the head of a removed version, and leaves it"
$M gc h --grace 3600 --delete > /dev/null
ok $(obj_ls datasets/h/ | grep -qx $HEAD; echo $?) "a head younger than the grace stays"
check "gc --delete" $M gc h --grace 0 --delete
ok $(obj_ls datasets/h/ | grep -qx $HEAD && echo 1 || echo 0) "gc deleted the head of a removed version"
ok $($M info h | grep -Eq "^version: +v3$"; echo $?) "the latest is still v3"
printf 'not a manifest' > "$WORK/junk"
obj_put "$WORK/junk" $HEAD
check "gc --delete (a garbage head)" $M gc h --grace 0 --delete
ok $(obj_ls datasets/h/ | grep -qx $HEAD && echo 1 || echo 0) "gc deleted the garbage head"
obj_put "$WORK/junk" datasets/h/head.json.mine
check "gc --delete (a key beside it)" $M gc h --grace 0 --delete
ok $(obj_ls datasets/h/ | grep -qx datasets/h/head.json.mine; echo $?) \
	"an object whose key only begins with the head's is not gc's"
obj_rm datasets/h/head.json.mine

# A copy into S3 leaves the newest version it copied as the head; a local store keeps none.
mkdir -p "$WORK/local"
check "put to a local store" $M --store "$WORK/local" put c x="$WORK/x1.npy"
check "append there" $M --store "$WORK/local" put c x="$WORK/x2.npy" --append
ok $([ ! -e "$WORK/local/datasets/c/head.json" ]; echo $?) "a local store has no head"
check "push c to S3" $M --store "$WORK/local" push c "$MATORAGE_STORE"
obj_get datasets/c/head.json "$WORK/headc" && obj_get datasets/c/versions/v2.json "$WORK/c2.json"
ok $(cmp -s "$WORK/headc" "$WORK/c2.json"; echo $?) "push leaves the newest pushed manifest as the head"

# Writers racing: whichever head lands last, the latest is the newest by the listing.
check "put r@v1" $M put r x="$WORK/x1.npy"
pids=
for i in 1 2 3 4; do
	$M put r x="$WORK/x1.npy" --append > /dev/null 2>&1 &
	pids="$pids $!"
done
wait $pids
newest=$($M ls r | tail -1)
ok $($M info r | grep -Eq "^version: +$newest$"; echo $?) "after 4 racing appends the latest is $newest"
done_testing
