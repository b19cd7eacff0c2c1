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
keys q
ok $(tui_exited; echo $?) "q quits"
done_testing
