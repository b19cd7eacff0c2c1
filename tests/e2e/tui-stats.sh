#!/bin/bash
# tui-stats.sh — statistics in the browser (tmux): s on an attribute runs a job and opens the numbers, histogram and class balance; a second s is served from the catalog; the matrix viewer says what its own statistics cover and shows the whole attribute's once known.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tui-lib.sh"
M=$MATORAGE
export MATORAGE_CONFIG="$WORK/config.json"
"$PY" - "$WORK" << 'PYEOF'
import sys
import numpy as np
w = sys.argv[1]
np.save(f"{w}/image.npy", (np.arange(100 * 4 * 5) % 256).astype(np.uint8).reshape(100, 4, 5))
np.save(f"{w}/label.npy", (np.arange(100) % 3).astype(np.int64))
PYEOF
check "a dataset with an image and a label" $M put tiny image="$WORK/image.npy" label="$WORK/label.npy"

tui_start 120 45
expect "the browser opens" "matorage › remotes"
expect "the store is synced into the catalog" "sync local:"
keys Enter
expect "remote > bucket" "BUCKET"
keys Enter
expect "bucket > datasets" "tiny"
keys / tiny Enter Enter
expect "dataset > versions" "VERSION  CREATED"
keys Enter A
expect "the version's attributes" "label"
expect "the footer offers s for statistics" "s stats"
keys j s
expect "s runs a job and opens the statistics of the label" "tiny@v1 label  int64  100 rows"
expect "with mean and std" "min 0   max 2   mean 0.99   std 0.818474"
expect "the class balance" "classes: 3 distinct values"
expect "a class's count and share" "0           34  34.00%"
expect "and says it computed them" "computed now in"
keys BSpace s
expect "a second s is served from the catalog" "from the catalog, computed"
out=$($M stats tiny label)
ok $([[ $out == *"from the catalog"* ]]; echo $?) "the command line finds the browser's result in the catalog"

keys BSpace Enter
expect "the matrix viewer on the label shows the whole attribute's numbers" \
	"whole attribute (100 rows): min 0  max 2  mean 0.99  std 0.8185"
expect "and says its own statistics cover the page of rows shown" \
	"below: each column over rows 0..99 (this page)"
keys BSpace k Enter
expect "the matrix viewer on the image says its statistics cover one row" \
	"below: each column over this row (row 0)"
expect "and that the whole attribute's are not known yet" "whole attribute: not computed yet"
keys s
expect "s in the matrix viewer computes the image's statistics" "tiny@v1 image  uint8  100 rows"
expect "over every pixel" "elements  2000"
expect "with a histogram" "histogram, 32 bins over [0, 255]"
keys BSpace
expect "back in the matrix viewer, the whole attribute's numbers show" \
	"whole attribute (100 rows): min 0  max 255"
keys q
ok $(tui_exited; echo $?) "the browser quits cleanly"
done_testing
