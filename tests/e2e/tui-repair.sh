#!/bin/bash
# tui-repair.sh — repair and protection in the browser: :protect shows K+M and health, a damaged shard verifies as repairable, R repairs it with a log and health becomes sound, damage nothing can rebuild shows lost, a version whose manifest is lost stays listed as lost and :repair DATASET brings it back as the CLI does, read-only refuses saying why.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
"$PY" -c "import numpy as np; np.save('$WORK/x.npy', np.arange(800 * 16, dtype=np.float32).reshape(800, 16))"
check "a dataset of 8 shards" $M put p x="$WORK/x.npy" --shard-rows 100
check "another, never protected" $M put u x="$WORK/x.npy" --shard-rows 400
# shard_file DATASET I: the file of shard I of DATASET@v1.
shard_file() {
	echo "$WORK/store/datasets/$1/shards/$($M info "$1@v1" --json |
		$PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$2]['sha256'])").h5"
}

tui_start 200 40 tui --open p
expect "the browser opens on p's versions" "never checked"
expect "an unprotected version reads none" "none"
keys ":protect p@v1 4+2" Enter
expect "the protect job ends" "protected with 4+2"
expect "the version shows its protection" "4+2"
expect "and its health: every shard was read to be coded" "sound"

flip_byte "$(shard_file p 2)"
keys v
expect "verify finds the damaged shard repairable" "repairable"
keys Enter
expect "the version's health says from what" "repairable from parity"
keys S
expect "the shard view marks the damaged shard" "repairable (parity)"
keys j j R
expect "R on the shard starts a repair" "repair local:p@v1"
keys J
wait_for "repair" 10
keys Enter
expect "the repair's log names the shard it rebuilt" "rebuilt shard 2 (rows 200..299) from parity"
expect "and its result" "sound: "
# One Escape at a time: two in a row may read as an Alt key.
keys Escape
expect "back at the jobs" "JOB"
keys Escape
expect "the shard is rebuilt" "rebuilt (parity)"
keys Escape
expect "back at the version" "attributes"
keys Escape
expect "back at the versions" "PROTECT"
expect "the version is sound again" "sound"
# (" repairable": the repair's summary, the command's, counts "0 unrepairable")
expect_not "and no longer repairable" " repairable"
ok $(cmp -s <($M verify p >/dev/null 2>&1; echo $?) <(echo 0); echo $?) "matorage verify agrees"

# Nothing can rebuild a shard of a version without parity or another copy.
flip_byte "$(shard_file u 1)"
keys ":repair u@v1" Enter
expect "a repair that cannot rebuild says what is lost" "lost shard 1 (rows 400..799)"
keys ":q" Enter
tui_exited
ok $? "q quits"
tui_start 200 40 tui --open u
expect "u's version shows lost" "lost"
keys q
tui_exited

# A version whose manifest is lost, its protection record left: still listed, as lost, and
# :repair DATASET rebuilds it, as `matorage repair DATASET` does.
check "a dataset w" $M put w x="$WORK/x.npy" --shard-rows 200
check "and a child of it" $M put w x="$WORK/x.npy" --append --shard-rows 200
check "protect w@v2" $M protect w@v2 --parity 4+2
rm -f "$WORK/store/datasets/w/versions/v2.json"
tui_start 200 40 tui --open w
expect "the browser opens on w" "v1"
# synced_v2: r, then until v2's line shows lost (at most 20 s); that line in $out.
synced_v2() {
	keys r
	for i in $(seq 200); do
		screen | grep -qE '\bv2\b.*lost' && break
		sleep 0.1
	done
	out=$(screen | grep -E '\bv2\b')
}
synced_v2
ok $(echo "$out" | grep -q 'lost'; echo $?) "after a sync v2 is still listed, as lost: $out"
# wait_file FILE: until it exists (at most 30 s).
wait_file() {
	for i in $(seq 300); do
		[ -f "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
keys ":repair w@v2" Enter
expect "a version the catalog lists only from its record is repaired" "sound: "
wait_file "$WORK/store/datasets/w/versions/v2.json"
ok $? "the manifest is back"
rm -f "$WORK/store/datasets/w/versions/v2.json"
keys ":repair w" Enter
wait_file "$WORK/store/datasets/w/versions/v2.json"
ok $? ":repair DATASET checks every version, the lost one too: the manifest is back again"
keys J
wait_for "repair local:w@v2"
ok $(screen | grep -qE 'repair local:w$'; echo $?) "the jobs list shows the dataset's repair"
keys ":q" Enter
tui_exited
ok $? "q quits"
ok $($M get w@v2 x -o "$WORK/o2.npy" >/dev/null 2>&1; echo $?) "w@v2 reads again"

# A version whose manifest is lost here and that a remote holds: listed as lost, and
# :repair DATASET brings it back from there. One removed here (a tombstone) is not lost.
check "m@v1..v3" bash -c "$M put m x='$WORK/x.npy' --shard-rows 400 && $M put m x='$WORK/x.npy' --append --shard-rows 400 && $M put m x='$WORK/x.npy' --append --shard-rows 400"
check "a remote mirror" $M remote add mirror "file://$WORK/mirror"
check "holding m" $M push m mirror
rm -f "$WORK/store/datasets/m/versions/v2.json"
check "m@v1 removed by another machine (its catalog)" env MATORAGE_CATALOG="$WORK/other.db" $M rm m@v1
tui_start 200 40 tui --open m
expect "the browser opens on m" "v3"
synced_v2
ok $(echo "$out" | grep -q 'lost'; echo $?) "after a sync v2, which the mirror holds, is listed as lost: $out"
ok $(! screen | grep -qE '^v1 '; echo $?) "v1, removed here, is not listed"
keys ":repair m" Enter
wait_file "$WORK/store/datasets/m/versions/v2.json"
ok $? ":repair DATASET brings v2's manifest back from the mirror"
keys ":q" Enter
tui_exited
ok $($M get m@v2 x -o "$WORK/o3.npy" >/dev/null 2>&1; echo $?) "m@v2 reads again"
ok $(! $M info m@v1 >/dev/null 2>&1; echo $?) "and m@v1 stays removed"

tui_start 200 40 --read-only tui --open p
expect "read-only browser" "v1"
keys ":repair p@v1" Enter
expect "read-only refuses :repair saying why" "read-only: repair writes"
keys R
expect "and R, saying why" "read-only"
keys q
tui_exited
ok $? "q quits"
done_testing
