#!/bin/bash
# tui-fragments-remote.sh — a format-2 version's fragments repaired in the browser (100x30) from parity and from a mirror remote: a fragment deleted is found by v, shown by H and rebuilt by R from parity; two of one 2+1 group lost here (parity cannot) are repairable from the remote, and one the remote lacks too beside its partner the remote holds is repairable from parity once that is back: v (and repair --dry-run) say so as R then does, every fragment back byte for byte and the version sound, H naming the mirror by its remote's name ("rebuilt (from mirror)"; "(remote)" when the name does not fit) at 100, 80 and 40 columns and a fragment's view (Enter) giving the URL whole; v's result, when a fragment stops the verify, leads with the fragment (number, rows, shards, key) and counts the shards the repair check read, those of a lost fragment as not checked; with both of a group gone there too, v and R say lost naming the version, fragments and rows, the verdict outlives a sync, and nothing is written under their names.
# MT_TEST_STORE=s3 (s3-tui-fragments-remote.sh) runs it on s3rver behind the signing proxy, the mirror another S3 prefix and the objects deleted with awscli.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
M=$MATORAGE
export MATORAGE_CONFIG="$WORK/config.json"
use_store
. "$(dirname "$0")/tui-lib.sh"
. "$(dirname "$0")/frag-lib.sh"
cd "$WORK" || exit 1
if [ "$OBJ_MODE" = s3 ]; then
	MIRROR=$OBJ_BASE-mirror
	MIRROR_URL=$MIRROR
else
	MIRROR=$WORK/mirror
	MIRROR_URL=file://$MIRROR
fi
frag_put d
mapfile -t K < <(frag_keys d 0 1 2 3 4 5)
obj_sums datasets/d/fragments/ > "$WORK/frags.sums"
# same NAME: a case passing when every fragment object is there with the sha256 it is named for.
same() {
	obj_sums datasets/d/fragments/ > "$WORK/now.sums"
	check "$1" cmp "$WORK/frags.sums" "$WORK/now.sums"
}
# frag_row NAME J HEALTH: a case passing when H's row of fragment J (rows 8J..8J+7) reads HEALTH (a regex).
frag_row() {
	expect_re "$1" "^ +$2 +$(($2 * 8))\\.\\.$(($2 * 8 + 7)) +$3"
}

# Parity alone (no remote yet): a fragment deleted, found by v, rebuilt by R.
frag_rm "$OBJ_BASE" "${K[1]}"
tui_start 100 30 tui --open d
tui_synced local
expect "the version" "v1"
keys H
expect "H shows the fragments" "FRAG"
keys v
frag_row "v finds fragment 1 missing, repairable" 1 'missing \(repairable\)'
frag_row "fragment 0 is sound" 0 'sound'
expect "verify ends, saying first what is wrong with the fragment" "verify local:d@v1: fragment 1 (rows 8..15, shards 4..7) missing: ${K[1]:0:10}"
keys E
expect_whole "its log names the fragment's object and rows" "d@v1: fragment ${K[1]} (rows 8 to 15, shards 4 to 7): missing"
expect_whole "its result counts the shards the repair check read through the rebuilt fragment" \
	"d@v1 failed: fragment 1 (rows 8..15, shards 4..7) missing: ${K[1]}; 24 shards sound, 0 damaged; repairable from parity (R repairs)"
expect_not "no count of shards nothing checked" "0 shards sound"
expect "and says parity rebuilds it" "d@v1: repairable from parity (R repairs)"
keys Escape
keys R
frag_row "R rebuilds fragment 1 from parity" 1 'rebuilt \(from parity\)'
expect "the repair ends, sound" "repair local:d@v1: sound"
same "the fragment is back byte for byte"
keys q
tui_exited
ok $? "q quits"

check "a mirror remote" $M remote add mirror "$MIRROR" ${S3_ENDPOINT:+--endpoint "$S3_ENDPOINT"}
check "holding d" $M push d mirror
# Fragments 0 and 1 (one group) lost here: parity cannot, the mirror can.  Fragments 4 and 5
# lost here, 4 in the mirror too: 5 comes from the mirror, then 4 from parity.
frag_rm "$OBJ_BASE" "${K[0]}" "${K[1]}" "${K[4]}" "${K[5]}"
frag_rm "$MIRROR" "${K[4]}"
out=$($M repair d@v1 --dry-run 2>&1)
ok $? "repair --dry-run: every fragment repairable"
ok $(echo "$out" | grep -q "^repairable d@v1 fragment 4 (rows 32..39) ${K[4]}: missing; from parity" &&
	echo "$out" | grep -q "^repairable d@v1 fragment 5 (rows 40..47) ${K[5]}: missing; from $MIRROR_URL"; echo $?) \
	"it says fragment 4 comes from parity once fragment 5 is back from the mirror"
[ "$(echo "$out" | grep -c '^repairable')" -eq 4 ] || echo "$out" | sed 's/^/# /'
tui_start 100 30 tui --open d
tui_synced local mirror
keys H
expect "H shows the fragments" "FRAG"
keys v
expect "verify ends, naming the first fragment missing" "verify local:d@v1: fragment 0 (rows 0..7, shards 0..3) missing: ${K[0]:0:10}"
keys E
expect_whole "its result counts every shard (the mirror and parity rebuild the fragments)" \
	"; 24 shards sound, 0 damaged; repairable from"
keys Escape
keys E
expect_re "its log says the mirror and parity rebuild them" "^d@v1: repairable from ($MIRROR_URL, parity|parity, $MIRROR_URL) \\(R repairs\\)"
keys Escape
for j in 0 1 4 5; do
	frag_row "v: fragment $j is missing, repairable" $j 'missing \(repairable\)'
done
frag_row "fragment 2 is sound" 2 'sound'
keys Escape Enter
expect_re "the details: the version's health says from what" "^health +repairable from ($MIRROR_URL, parity|parity, $MIRROR_URL)"
expect_re "the last repair is still the one from parity (a dry run repairs nothing)" '^repaired .*: 1 rebuilt from parity, 0 unrepairable'
keys Escape
expect_re "the version is repairable" '^v1 .* repairable +2\+1'
keys H R
expect "R repairs" "repair local:d@v1: sound: "
for j in 0 1 5; do
	frag_row "fragment $j is rebuilt from the mirror, named by its remote's name" $j 'rebuilt \(from mirror\)'
done
frag_row "fragment 4 is rebuilt from parity" 4 'rebuilt \(from parity\)'
expect_not "no URL in the fragments' rows" "$MIRROR_URL"
same "every fragment is back byte for byte"
keys End Enter
expect "Enter: fragment 5's view" "fragment 5 of d@v1"
expect_re "its health as in the list" '^  health +rebuilt \(from mirror\)'
expect_whole "its note gives the store whole, with the remote's name" \
	"note missing, rebuilt from $MIRROR_URL (remote mirror)"
keys Escape
keys Escape Enter
expect_re "the details: every fragment sound" '^fragments +6: 6 sound, 0 not checked'
expect_re "the repair came from parity and the mirror" "^repaired .*: 4 rebuilt from ($MIRROR_URL|parity)"
keys Escape
expect_re "the version is sound" '^v1 .* sound +2\+1'
check "matorage verify agrees" $M verify d@v1
keys q
tui_exited
ok $? "q quits"
# At 40 columns the health column stays, the remote's name in it; the view gives the URL
# wrapped whole.
tui_start 40 16 tui --open d
keys J
until_screen 20 bash -c '[ "$(grep -cE "^ +[0-9]+ +sync +done")" -ge 2 ]'
screen_case "40x16: the start-up syncs of local and mirror end" $?
keys Escape H
expect "40x16: H shows the fragments" "FRAG"
frag_row "40x16: fragment 5 is rebuilt from the mirror" 5 'rebuilt \(from mirror\)'
frag_row "40x16: fragment 4 from parity" 4 'rebuilt \(from parity\)'
keys End Enter
expect "40x16: fragment 5's view" "fragment 5 of d@v1"
expect_whole "40x16: its note gives the store whole" "note missing, rebuilt from $MIRROR_URL (remote mirror)"
keys q
tui_exited
ok $? "40x16: q quits"
check "a remote whose name is too long for the column" $M remote add mirror-with-a-long-name "$MIRROR" ${S3_ENDPOINT:+--endpoint "$S3_ENDPOINT"}
check "and no mirror" $M remote rm mirror
tui_start 80 24 tui --open d
tui_synced local mirror-with-a-long-name
keys H
expect "80x24: H shows the fragments" "FRAG"
frag_row "80x24: fragment 5 is rebuilt from a remote, not named (no room in the column)" 5 'rebuilt \(remote\) +4'
frag_row "80x24: fragment 4 from parity" 4 'rebuilt \(from parity\)'
keys End Enter
expect_whole "80x24: its view names it" "note missing, rebuilt from $MIRROR_URL (remote mirror-with-a-long-name)"
keys q
tui_exited
ok $? "80x24: q quits"
check "the mirror back under its name" $M remote add mirror "$MIRROR" ${S3_ENDPOINT:+--endpoint "$S3_ENDPOINT"}
check "the long name gone" $M remote rm mirror-with-a-long-name

# Fragments 2 and 3 (one group) lost here and in the mirror: nothing rebuilds them.  A new
# catalog (another machine's) learns of it in a first sync, which lists the version damaged
# and reads it again at every sync after.
frag_rm "$OBJ_BASE" "${K[2]}" "${K[3]}"
frag_rm "$MIRROR" "${K[2]}" "${K[3]}"
rm -f "$XDG_DATA_HOME"/matorage/catalog.db*
check "a first sync of the damaged store" $M sync
tui_start 100 30 tui --open d
tui_synced local mirror
expect_re "the version is listed damaged" '^v1 .* damaged +2\+1'
keys H
expect "H shows the fragments" "FRAG"
frag_row "fragment 2 is missing" 2 'missing +4'
keys v
expect "verify ends, naming the lost fragment first" "verify local:d@v1: fragment 2 (rows 16..23, shards 8..11) missing: ${K[2]:0:10}"
keys E
expect_whole "its result counts the shards checked and those no check reached" \
	"d@v1 failed: fragment 2 (rows 16..23, shards 8..11) missing: ${K[2]}; 16 shards sound, 0 damaged, 8 not checked (their fragment is lost); lost fragment 2 (rows 16..23), fragment 3 (rows 24..31)"
expect "its log says they are lost, with their rows" "d@v1: lost fragment 2 (rows 16..23), fragment 3 (rows 24..31)"
keys Escape
frag_row "v: fragment 2 is missing, lost" 2 'missing \(lost\)'
frag_row "fragment 3 too" 3 'missing \(lost\)'
# The version is read again at every sync (the browser's own every few seconds): what v
# found must outlive it.
check "a sync" $M sync local
keys Escape H
expect "H again" "FRAG"
frag_row "after the sync fragment 2 is still lost" 2 'missing \(lost\)'
frag_row "fragment 3 too" 3 'missing \(lost\)'
keys R
expect "R ends saying lost, naming the fragments and their rows" \
	"repair local:d@v1: lost: "
keys E
expect "the job names fragment 2 and its rows" "LOST fragment 2 (rows 16..23): missing"
expect "and fragment 3" "LOST fragment 3 (rows 24..31): missing"
expect_whole "its result names both" "lost fragment 2 (rows 16..23), fragment 3 (rows 24..31)"
keys Escape Escape Enter
expect_re "the details: the version is lost, naming them" '^health +lost: fragment 2 \(rows 16\.\.23\), fragment 3 \(rows 24\.\.31\)'
keys Escape
expect_re "the version is lost" '^v1 .* lost +2\+1'
keys q
tui_exited
ok $? "q quits"
fails "matorage repair fails too, naming the version, fragment and rows" 1 \
	"d@v1: fragment 2 \(rows 16..23\): ${K[2]}: missing; no store holds it and its parity cannot rebuild it" \
	$M repair d@v1
n=$(obj_sums datasets/d/fragments/ | wc -l)
ok $([ "$n" -eq 4 ]; echo $?) "nothing was written in their place: 4 fragment objects (got $n)"
done_testing
