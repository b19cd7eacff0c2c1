#!/bin/bash
# tui-views.sh — what the browser shows to judge a dataset: a row's other attributes beside its picture, a version's diff against another, lists sorted by a key, a dataset whose versions are all gone.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
"$PY" - "$WORK" << 'EOF2'
import sys
import numpy as np
w = sys.argv[1]
np.save(f"{w}/image.npy", (np.arange(3 * 6 * 6) % 251).astype(np.uint8).reshape(3, 6, 6))
np.save(f"{w}/label.npy", np.array([7, 8, 9], dtype=np.int64))
np.save(f"{w}/score.npy", np.array([[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]], dtype=np.float32))
EOF2
check "a dataset of pictures with labels" $M put tiny image="$WORK/image.npy" label="$WORK/label.npy" score="$WORK/score.npy"
"$PY" -c "import numpy as np
np.save('$WORK/x.npy', np.arange(40).reshape(20, 2))
np.save('$WORK/y.npy', np.arange(100, 110).reshape(5, 2))"
check "a dataset of 4 shards" $M put grow x="$WORK/x.npy" --shard-rows 5
check "appended: 1 shard more" $M put grow x="$WORK/y.npy" --append --shard-rows 5
check "the same data again" $M put grow x="$WORK/x.npy" --shard-rows 5
"$PY" -c "import numpy as np; np.save('$WORK/none.npy', np.zeros((0, 2), dtype=np.int64))"
check "an append of no rows: every shard its parent's" $M put grow x="$WORK/none.npy" --append

# diff on the command line: against the parent by default, or a version named.
out=$($M diff grow@v2)
ok $(grep -q "^grow@v2 against grow@v1" <<< "$out" && grep -q "^shared *4 shards .* 20 rows" <<< "$out" &&
	grep -q "^new *1 shard .* 5 rows" <<< "$out" && grep -q "^removed *0 shards" <<< "$out"; echo $?) \
	"diff against the parent: 4 shards shared, 1 new: $out"
out=$($M diff grow@v1 grow@v2 --shards)
ok $(grep -q "^removed *1 shard .* 5 rows" <<< "$out" && [ "$(grep -c '^  shared ' <<< "$out")" = 4 ]; echo $?) \
	"diff against a later version: 1 removed, and --shards lists the 4 shared: $out"
out=$($M diff grow@v3 grow@v1)
ok $(grep -q "^shared *4 shards" <<< "$out" && grep -q "^new *0 shards" <<< "$out" && grep -q "^removed *0 shards" <<< "$out"; echo $?) \
	"the same data put again shares every shard: $out"
check "v2 checked" $M verify grow@v2
fails "a version without a parent needs another named" 1 "tiny@v1 has no parent version" $M diff tiny@v1
fails "a missing version is an error naming it" 1 "v9" $M diff grow@v2 grow@v9
fails "three versions are a usage error" 2 "usage" $M diff grow@v1 grow@v2 grow@v3

tui_start 120 30
expect "the browser opens" "sync local:"
keys Enter Enter / tiny Enter Enter Enter A Enter
expect "the matrix viewer on the picture" "row 0 of 3"
expect "the row's label beside it" "label: 7"
expect "and its short vector" "score: [0.5 1.5]"
keys i
expect "the label stays beside the preview" "label: 7"
keys ']'
expect "the next row's label" "label: 8"
expect "and vector" "score: [2.5 3.5]"
keys BSpace BSpace BSpace BSpace / grow Enter Enter
expect "grow's versions" "VERSION  CREATED"
expect "the list says how much of its parent each version shares" "v1 (4/5 shared)"
expect "or that it shares all" "v3 (all shared)"
keys / v2 Enter Enter
expect "the version's details say what it shares with its parent" "4 of 5 shards with v1"
keys d
expect "d asks for the version to compare with, the parent by default" "against version (its parent): v1"
keys Enter
expect "the diff: shards shared" "shared        4 shards"
expect "and new" "new           1 shard"
expect "a line per shard" "new      "
keys BSpace BSpace / v3 Enter d C-u v1 Enter
expect "the same data again: every shard shared" "every shard is shared"
keys BSpace d C-u v9 Enter
expect "a missing version fails with a reason" "v9"

# o cycles the order; the title says which; the versions list has a health column.
expect "still on the versions" "VERSION  CREATED"
expect "the versions list has a health column" "HEALTH"
first() { screen | grep -m1 -oE '^v[0-9]+ '; }
keys o
expect "o sorts by name" "(by name)"
keys o
expect "then by size" "(by size)"
ok $([ "$(first)" = "v2 " ]; echo $?) "the largest version first: $(first)"
keys o
expect "then by date" "(by date)"
ok $([ "$(first)" = "v4 " ]; echo $?) "the newest first: $(first)"
keys o
expect "then by health" "(by health)"
ok $([ "$(first)" = "v2 " ]; echo $?) "the one checked sound first: $(first)"
keys o
expect_gone "then as the catalog lists them" "(by "
keys '?' / 'sort the list' Enter
expect "the help lists the sort key" "sort the list: by name, size, date or health"
keys / 'compare the version' Enter
expect "the diff key" "compare the version with another of its dataset"
keys / 'go to a version' Enter
expect "the source key" "go to a version this one was built from"
keys / 'export a row' Enter
expect "and the export key" "export a row range of the attribute"
keys Escape
keys q
ok $(tui_exited; echo $?) "q quits"

# Lineage: a recipe's version names the versions it read, in its manifest, the
# catalog, matorage info and the browser, which goes to them.
mkdir -p "$WORK/other"
check "a dataset in another store" $M --store "file://$WORK/other" put far x="$WORK/x.npy"
cat > mix.lua << 'EOF2'
local m = require("matorage")
local far = m.store(arg.far):open("far")
m.derive({ from = "tiny", to = "mixed" })
EOF2
check "a recipe reading two datasets (the other store allowed)" $M run mix.lua far="file://$WORK/other" --allow-store "file://$WORK/other"
"$PY" - "$WORK/store/datasets/mixed/versions/v1.json" "file://$WORK/other" << 'EOF2'
import json, sys
m = json.load(open(sys.argv[1]))
want = [{"dataset": "far", "version": "v1", "store": sys.argv[2]}, {"dataset": "tiny", "version": "v1"}]
assert m["sources"] == want, m.get("sources")
EOF2
ok $? "the manifest records both sources, the store only for the other one"
out=$($M info mixed)
ok $(grep -q "^sources:$" <<< "$out" && grep -q "^  tiny@v1$" <<< "$out" &&
	grep -q "^  far@v1  file://$WORK/other$" <<< "$out"; echo $?) "matorage info lists them"
out=$($M info tiny)
ok $(grep -q "^sources: *-$" <<< "$out"; echo $?) "a version built by put has none"

tui_start 120 30
expect "the browser opens" "sync local:"
keys Enter Enter / mixed Enter Enter Enter
expect "the version's details list its sources" "tiny@v1"
expect "the other store's source with its URL" "far@v1  file://"
keys u
expect "u goes to the first source, in the other store (the catalog knows it from the put)" "› v1 › far@v1"
expect "its details name that store" "remote        file://$WORK/other"
keys BSpace / tiny@ Enter n Enter
expect "Enter on the source goes to its version" "› tiny@v1"
expect_gone "its details, which name no source" "far@v1"
keys q
ok $(tui_exited; echo $?) "q quits"

# Export: rows of an attribute to a local .npy from the matrix viewer, even
# read-only (a local file changes no store); a file there is replaced only
# when confirmed.
mkdir -p out
tui_start 120 30 --read-only
expect "the browser opens read-only" "read-only"
keys Enter Enter End Enter Enter A Enter
expect "the matrix viewer" "row 0 of 3"
expect "its footer offers export" "x export"
keys x
expect "x asks for the rows, the one on screen by default" "rows (FIRST:END, empty: all): 0:1"
keys C-u 0:3 Enter
expect "then for the file" "export to .npy file (Tab completes): tiny-image.npy"
keys C-u ou Tab
expect "Tab completes the path" "(Tab completes): out/"
keys img.npy Enter
expect "the export runs as a job and says what it wrote" "exported rows 0:3 of image to out/img.npy"
"$PY" -c "import numpy as np
a = np.load('out/img.npy'); b = np.load('$WORK/image.npy')
assert a.dtype == b.dtype and a.shape == b.shape and (a == b).all(), (a.dtype, a.shape)"
ok $? "numpy reads the exported rows: dtype, shape and values of the source"
keys x C-u 1: Enter C-u out/img.npy Enter
expect "an existing file needs a typed confirmation" "out/img.npy exists: type 'overwrite' to replace it"
keys no Enter
expect "anything else leaves it" "not exported: out/img.npy is left as it was"
keys x C-u 1: Enter C-u out/img.npy Enter overwrite Enter
expect "overwrite replaces it" "exported rows 1:3 of image to out/img.npy"
"$PY" -c "import numpy as np
a = np.load('out/img.npy'); b = np.load('$WORK/image.npy')[1:]
assert a.shape == b.shape and (a == b).all(), a.shape"
ok $? "with rows 1 to the end"
keys x C-u 5:9 Enter C-u out/bad.npy Enter
expect "a range past the end fails naming the rows" "rows 5:9: tiny@v1 has 3 rows"
ok $([ ! -e out/bad.npy ]; echo $?) "and writes nothing"
keys q
ok $(tui_exited; echo $?) "q quits"

# A dataset whose versions are all removed stays listed while its shards remain.
check "a dataset to remove" $M put gone x="$WORK/x.npy" --shard-rows 5
check "its only version removed" $M rm gone@v1
out=$($M ls)
ok $(! grep -q "^gone" <<< "$out"; echo $?) "matorage ls lists only datasets with versions: $out"
tui_start 120 30
expect "the browser opens" "sync local:"
keys Enter Enter
expect "the dataset with no versions is still listed" "(removed)"
expect "saying what is left and that gc collects it" "no versions left: 4 leftover shards (gc collects them)"
keys / gone Enter X
expect "gc's preview on it finds the young shards kept for the grace period" "kept for the 1 h grace period"
keys Escape Escape
check "gc deletes the leftovers" $M gc gone --grace 0 --delete
expect_gone "and the dataset leaves the list" "(removed)"
keys q
ok $(tui_exited; echo $?) "q quits"
done_testing
