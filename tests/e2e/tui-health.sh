#!/bin/bash
# tui-health.sh — health of whole datasets and buckets in the browser, at 80x24 and 40x10: a HEALTH column on dataset and bucket rows (the worst of their versions: unverified, repairable, lost, sound; "-" without versions), v/V and R and :verify/:repair alone on a dataset or bucket row verify and repair every version as one job with a summary, a narrow screen hides columns whole; R on a checkpoint repairs it from another store, and says so where R does nothing; checkpoint and model rows have a HEALTH column too, kept per tensor object: v on one checkpoint shows a damaged tensor object on both checkpoints naming it, R on the other shows both sound (at 80x24 and 40x10).
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
"$PY" -c "import numpy as np; np.save('$WORK/x.npy', np.arange(800 * 16, dtype=np.float32).reshape(800, 16))"
check "a dataset of 8 shards" $M put p x="$WORK/x.npy" --shard-rows 100
check "protected with 4+2" $M protect p@v1 --parity 4+2
check "another of 2 shards, never protected" $M put u x="$WORK/x.npy" --shard-rows 400
check "a dataset to remove" $M put gone x="$WORK/x.npy" --shard-rows 400
check "its only version removed" $M rm gone@v1
# shard_file DATASET I: the file of shard I of DATASET@v1.
shard_file() {
	echo "$WORK/store/datasets/$1/shards/$($M info "$1@v1" --json |
		$PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$2]['sha256'])").h5"
}
# row NAME REGEX [SECONDS]: a case passing when a line of the screen matches REGEX in time.
row() { expect_re "$1" "$2" "${3:-30}"; }
# cut_cells H: lines of the view (below the title, above the status line) holding a value cut short.
cut_cells() { screen | sed -n "2,$(($1 - 2))p" | grep -F "…"; }

tui_start 80 24
expect "the browser opens at 80x24" "sync local:"
keys Enter
row "the bucket has a health column: a version was never checked" "^BUCKET .*HEALTH"
row "the bucket reads unverified" "^file://.* 3 +2 +unverified"
keys Enter
row "the datasets list has a health column after the counts" "^DATASET +VERSIONS +HEALTH +LATEST"
row "p reads sound: protect read every shard to code it" "^p +1 +sound +v1"
row "a dataset whose versions were all removed shows -" "^gone +0 +- +\(removed\)"
flip_byte "$(shard_file p 2)"
keys g j V
expect "V on the dataset row verifies its every version as one job" "verify local:p (1 version)"
row "the dataset's health: repairable from its parity" "^p +1 +repairable +v1"
row "u is still unverified" "^u +1 +unverified"
keys J
wait_for "verify local:p" 10
keys Enter
expect "the job's log names the damaged shard" "p@v1 shard 2 "
expect "and says it is repairable" "p@v1: repairable from parity"
expect "the summary counts versions" "1 version: 0 sound, 1 repairable, 0 lost or damaged, 0 not verified"
expect "and shards" "shards sound, 1 damaged (R repairs)"
keys Escape
keys Escape
row "back on the datasets" "^p +1 +repairable"
keys R
expect "R on the dataset row repairs every version as one job" "repair local:p"
row "the dataset is sound again" "^p +1 +sound +v1"
ok $(cmp -s <($M verify p@v1 > /dev/null 2>&1; echo $?) <(echo 0); echo $?) "matorage verify agrees"
keys BSpace
row "the bucket's row" "^file://.* 3 +2 +unverified"
keys V
expect "V on the bucket row verifies every dataset" "verify local: every dataset (2, 2 versions)"
row "the whole bucket is sound" "^file://.* 3 +2 +sound"
flip_byte "$(shard_file u 1)"
keys : verify Enter
expect ":verify alone on the bucket row verifies it" "verify local: every dataset"
row "the bucket reads lost: nothing can rebuild u's shard" "^file://.* 3 +2 +lost"
keys : repair Enter
expect ":repair alone on the bucket row repairs every dataset" "repair local: every dataset (2)"
expect "and says what stays lost" "repair local: every dataset (2): lost: "
keys Enter
row "inside, u is lost" "^u +1 +lost"
row "and p sound" "^p +1 +sound"
keys o o o
expect "o sorts datasets by health" "(by health)"
ok $(screen | sed -n 3p | grep -qE '^u '; echo $?) "the lost one first: $(screen | sed -n 3p)"
keys o
keys '?' / 'every version of it' Enter
expect "the help says v works on a dataset or bucket row" "on a dataset or bucket row, every version of it as one job"
keys Escape
keys q
ok $(tui_exited; echo $?) "q quits"

# 40x10: the health column shows whole or not at all, and the same keys work.
check "u put again (a sound v2)" $M put u x="$WORK/x.npy" --shard-rows 400
flip_byte "$(shard_file p 5)"
tui_start 40 10
expect "the browser opens at 40x10" "sync local:"
keys Enter Enter
row "the datasets at 40x10" "^DATASET"
ok $([ -z "$(cut_cells 10)" ]; echo $?) "no value or header cut: $(cut_cells 10)"
ok $(screen | grep -q "HEALTH" && screen | grep -qE "^p +1 +sound" || ! screen | grep -q "HEALTH"; echo $?) \
	"HEALTH shows whole or not at all"
row "at 40 columns the health outranks the sizes" "^p +1 +sound"
row "u: v1 lost, v2 never checked: the worst shows" "^u +2 +lost"
keys g j V
row "V at 40x10: p's damage found" "^p +1 +repairable"
ok $([ -z "$(cut_cells 10)" ]; echo $?) "no value cut: $(cut_cells 10)"
keys R
row "R at 40x10: p sound again" "^p +1 +sound"
keys q
ok $(tui_exited; echo $?) "q quits"
ok $(cmp -s <($M verify p@v1 > /dev/null 2>&1; echo $?) <(echo 0); echo $?) "matorage verify agrees"

# A checkpoint: R repairs it from another store (a remote holding the same objects).
"$PY" - "$WORK" << 'EOF2'
import json, struct, sys
import numpy as np
w = sys.argv[1]
t = {f"layer{i}.weight": (np.arange(16 * (8 + i), dtype=np.float32) * 0.5).reshape(16, 8 + i) for i in range(3)}
hdr, blobs, off = {}, [], 0
for k, a in t.items():
    b = a.tobytes()
    hdr[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
    blobs.append(b)
    off += len(b)
h = json.dumps(hdr).encode()
open(f"{w}/a.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
EOF2
check "checkpoint net@v1" $M model import net "$WORK/a.safetensors"
"$PY" - "$WORK" << 'EOF2'
import json, struct, sys
raw = open(f"{sys.argv[1]}/a.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
a, b = json.loads(raw[8:8 + n])["layer0.weight"]["data_offsets"]
body = bytearray(raw[8 + n:])
body[a:a + 4] = struct.pack("<f", 99.0)
open(f"{sys.argv[1]}/b.safetensors", "wb").write(raw[:8 + n] + bytes(body))
EOF2
check "checkpoint net@v2: layer0 changed, layer1 and layer2 shared with v1" \
	$M model import net "$WORK/b.safetensors"
mkdir -p "$WORK/mirror"
check "a mirror holding the model's objects" cp -a "$WORK/store/models" "$WORK/mirror/models"
check "a remote for it" $M remote add mirror "file://$WORK/mirror"
t1="$WORK/store/models/net/tensors/$($M model info net@v1 --json |
	$PY -c "import json,sys; t=list(json.load(sys.stdin)['tensors'].values()); print(t[1]['sha256'])")"
cp "$t1" "$WORK/t1.orig"
flip_byte "$t1"
tui_start 80 24
expect "the browser opens" "REMOTE"
keys Enter Enter M
expect "the bucket's models" "MODEL  CHECKPOINTS"
# The start-up syncs of both remotes finish in either order and may overwrite
# the status line after R, so R (which changes nothing here) is pressed again
# until its message is the one shown.
for _ in 1 2 3 4 5; do
	keys R
	wait_for "R (repair) does nothing here" 2 && break
done
expect "R on a model row says it does nothing there" "R (repair) does nothing here"
keys Enter
row "its checkpoints, with their health first" "^CHECKPOINT +HEALTH +CREATED"
row "v1 was never checked" "^v1 +never checked "
row "nor v2" "^v2 +never checked "
keys j v
expect "v on v2 finds the flipped tensor it shares with v1" "1 damaged or"
row "v2 shows the damage (the mirror holds the object)" "^v2 +repairable "
row "and so does v1, which names the same object" "^v1 +repairable "
keys k R
expect "R on v1 repairs it" "repair local:model:net@v1"
expect "from the other store" "sound: "
row "v1 is sound" "^v1 +sound "
row "and so is v2, which was never repaired itself" "^v2 +sound "
keys Escape
row "the model row's health: the worst of its checkpoints" "^net +2 +sound "
keys J
wait_for "repair local:model:net@v1" 10
keys Enter
expect "the log names the tensor and where it came from" "rebuilt tensor 1"
keys q
ok $(tui_exited; echo $?) "q quits"
ok $(cmp -s "$WORK/t1.orig" "$t1"; echo $?) "the tensor object is back byte for byte"
check "the model verifies" $M verify model:net

flip_byte "$t1"
tui_start 40 10
expect "the browser opens at 40x10" "REMOTE"
keys Enter Enter M
row "at 40 columns the model's health shows whole" "^net +2 +sound"
keys Enter
row "so does each checkpoint's" "^v1 +sound"
ok $(cut_cells 10 | grep -q .; [ $? -ne 0 ]; echo $?) "no value cut short at 40 columns"
[ -z "$(cut_cells 10)" ] || cut_cells 10 | sed 's/^/# cut: /'
keys v
row "v on v1 at 40x10 finds the flipped tensor: v1 repairable" "^v1 +repairable"
row "v2 repairable" "^v2 +repairable"
keys j R
row "R on v2: v2 sound again" "^v2 +sound"
row "v1 sound again" "^v1 +sound"
keys q
ok $(tui_exited; echo $?) "q quits"
ok $(cmp -s "$WORK/t1.orig" "$t1"; echo $?) "the tensor object is back byte for byte"

# Checkpoints and models sort by health too: v2's own layer0 object damaged, model aaa sound.
t0v2="$WORK/store/models/net/tensors/$($M model info net@v2 --json |
	$PY -c "import json,sys; print(json.load(sys.stdin)['tensors']['layer0.weight']['sha256'])")"
flip_byte "$t0v2"
check "model aaa" $M model import aaa "$WORK/a.safetensors"
check "aaa verifies" $M verify model:aaa
fails "verify of net finds v2's layer0 damaged" 1 "damaged or missing" $M verify model:net
tui_start 80 24
expect "the browser opens" "REMOTE"
keys Enter Enter M
row "model net: v2 repairable (the mirror holds its layer0)" "^net +2 +repairable "
row "model aaa: sound" "^aaa +1 +sound "
# first_row: the list's first row (line 3, under the title and the header).
first_row() { screen | sed -n 3p; }
for _ in 1 2 3 4; do
	wait_for "(by health)" 1 && break
	keys o
done
expect "o sorts models by health" "(by health)"
ok $(first_row | grep -qE '^net '; echo $?) "the damaged model first: $(first_row)"
keys g Enter
row "net's checkpoints: v1 sound" "^v1 +sound "
row "v2 repairable" "^v2 +repairable "
ok $(first_row | grep -qE '^v1 '; echo $?) "in catalog order v1 first: $(first_row)"
# title_by ORDER: the screen's first line (the path of lists, this one's title last) ends
# with this list's order, "(by ORDER)"; the models list's order shows before it.
title_by() { sed -n 1p | grep -qE -- "\(by $1\) *\$"; }
ok $(screen | title_by '[a-z]+'; [ $? -ne 0 ]; echo $?) "the checkpoints in catalog order: $(screen | sed -n 1p)"
for by in name size date health; do
	keys o
	until_screen 10 title_by "$by"
	screen_case "o sorts checkpoints by $by" $?
done
ok $(first_row | grep -qE '^v2 '; echo $?) "the damaged checkpoint first: $(first_row)"
keys q
ok $(tui_exited; echo $?) "q quits"
done_testing
