#!/bin/bash
# tui-fragments.sh — a format-2 version's fragments in the browser: a first sync of a version with a fragment deleted and one edited lists it as damaged (not dropped, the sync succeeds), its details and H's fragment view say which rows are missing or damaged, R rebuilds both byte for byte from parity and the health turns sound without a verify; damage after the catalog knew the version is found by v and shown the same at 40x10; a format-1 version has no fragments.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
M=$MATORAGE
export MATORAGE_CONFIG="$WORK/config.json"
MT_TEST_STORE=file use_store # fragment 4 is edited in place with sed
. "$(dirname "$0")/tui-lib.sh"
. "$(dirname "$0")/frag-lib.sh"
cd "$WORK" || exit 1
frag_put d
check "put f1: a format-1 version" env MATORAGE_MANIFEST_FORMAT=1 $M put f1 x="$WORK/x.npy" --shard-rows 8
read -r -d '' k1 k4 < <(frag_keys d 1 4)
cp "$OBJ_BASE/$k1" "$WORK/f1.json"
cp "$OBJ_BASE/$k4" "$WORK/f4.json"
damage() { # fragment 1 (rows 8..15) deleted, fragment 4 (rows 32..39) edited
	rm "$OBJ_BASE/$k1"
	sed -i '0,/"rows":2,/s//"rows":3,/' "$OBJ_BASE/$k4"
}
same() { cmp -s "$WORK/f1.json" "$OBJ_BASE/$k1" && cmp -s "$WORK/f4.json" "$OBJ_BASE/$k4"; }
damage

# A first sync of the damaged version (put recorded it sound: a new catalog) lists it, damaged.
rm -f "$XDG_DATA_HOME"/matorage/catalog.db*
out=$($M sync 2>&1)
ok $? "a sync of the damaged store succeeds"
echo "$out" | sed 's/^/# /'
if command -v sqlite3 > /dev/null; then
	h=$(sqlite3 "$XDG_DATA_HOME/matorage/catalog.db" "SELECT group_concat(f.idx || ':' || f.health, ' ') FROM fragments f JOIN versions v ON v.id = f.version_id JOIN datasets d ON d.id = v.dataset_id WHERE d.name = 'd'")
	ok $([ "$h" = "0:sound 1:missing 2:sound 3:sound 4:damaged 5:sound" ]; echo $?) "the catalog records each fragment's health (got $h)"
fi
tui_start 120 30 tui --open d
# The refresh at start ends with a status line of its own: wait for it, so it does not
# replace what a key says.
expect "the refresh at start ends" "sync local:"
expect_re "the version is listed, as damaged" '^v1 .* damaged +2\+1'
keys Enter
expect "its details name the missing fragment and its rows" "fragment 1 (rows 8..15) missing"
expect "and the damaged one" "fragment 4 (rows 32..39) damaged"
expect "and count the sound ones" "6: 4 sound, 0 not checked"
keys S
expect "the shard view says which fragments are bad" "fragments 1 (rows 8..15) missing, 4 (rows 32..39) damaged: H lists"
keys H
expect "H shows the fragments" "FRAG"
expect_re "fragment 1 (rows 8..15) is missing" '^ +1 +8\.\.15 +missing'
expect_re "fragment 4 (rows 32..39) is damaged" '^ +4 +32\.\.39 +damaged'
expect_re "fragment 0 is sound" '^ +0 +0\.\.7 +sound'
keys R
expect "R starts a repair of the version" "repair local:d@v1"
expect_re "fragment 1 is rebuilt from parity" '^ +1 +8\.\.15 +rebuilt \(from parity\)'
expect_re "fragment 4 is rebuilt from parity" '^ +4 +32\.\.39 +rebuilt \(from parity\)'
expect_not "none missing" "missing"
ok $(same; echo $?) "the fragments are byte for byte the originals"
keys Escape
expect_re "back at the shards: all 24 listed now (the sync after the repair read them)" '^ +23 +[0-9a-f]{10}' 
keys Escape
expect "back at the details: every fragment sound" "6: 6 sound, 0 not checked"
keys Escape
expect "back at the versions" "PROTECT"
expect_re "the version is sound" '^v1 .* sound +2\+1'
check "matorage verify agrees" $M verify d@v1
keys q
tui_exited
ok $? "q quits"

# Damage after the catalog knew the version: its root is unchanged, so v finds it.
damage
tui_start 40 10 tui --open d
expect "40x10: the refresh at start ends" "sync local:"
expect "40x10: the version" "v1"
keys H
expect "40x10: the fragment view" "FRAG"
keys v
expect "40x10: verify ends, saying first what is wrong with a fragment" "verify local:d@v1: fragmen"
keys E
expect_whole "40x10: its result leads with the fragment, wrapped whole" "failed: fragment 1 (rows 8..15, shards 4..7) missing: $k1; 24 shards sound, 0 damaged; repairable from parity"
keys Escape
expect_re "40x10: fragment 1 is missing, repairable" '^ +1 +8\.\.15 +missing \(repa'
expect_re "40x10: fragment 4 is damaged, repairable" '^ +4 +32\.\.39 +damaged \(repa'
keys R
expect "40x10: R repairs" "repair local:d@v1: sound"
expect_re "40x10: fragment 1 rebuilt" '^ +1 +8\.\.15 +rebuilt'
expect_re "40x10: fragment 4 rebuilt" '^ +4 +32\.\.39 +rebuilt'
ok $(same; echo $?) "40x10: the fragments are byte for byte the originals"
keys Escape
expect "40x10: the versions" "CREATED"
keys Enter
expect "40x10: its details" "FIELD"
keys /
keys "health" Enter
expect_re "40x10: the version's health is sound" '^health +sound'
keys q
tui_exited
ok $? "40x10: q quits"

# A format-1 version looks as before: no fragments row, H says why.
tui_start 120 30 tui --open f1
expect "the refresh at start ends" "sync local:"
expect "the format-1 version" "v1"
keys Enter
expect "its details" "attributes"
expect_not "no fragments row" "fragments"
keys H
expect "H says it has none" "no fragments"
keys q
tui_exited
ok $? "q quits"
done_testing
