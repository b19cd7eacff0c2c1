#!/bin/bash
# demo.sh — build matorage in build/demo and show it working on a small demo dataset in the local store.
# The dataset goes to the default store ($MATORAGE_STORE, else ~/.local/share/matorage/store)
# and is made once; run the script again to just rebuild and look at it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=$ROOT/build/demo
M=$BUILD/src/cli/matorage

step() { echo "==> $*"; }

step "installing build dependencies"
scripts/install-deps.sh
step "building in build/demo (output in build/demo/build.log)"
mkdir -p "$BUILD"
if ! { ./autogen.sh && cd "$BUILD" && "$ROOT/configure" && make -j"$(nproc)"; } \
	> "$BUILD/build.log" 2>&1; then
	tail -n 30 "$BUILD/build.log"
	echo "demo.sh: the build failed; the whole log is $BUILD/build.log" >&2
	exit 1
fi
cd "$ROOT"

if grep -qx demo <<< "$("$M" ls)"; then
	step "the demo dataset is already in the store"
else
	step "making the demo dataset: 1000 28x28 float32 images and their int64 labels"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	/usr/bin/python3 - "$tmp" <<'EOF'
import sys
import numpy as np
out = sys.argv[1]
rng = np.random.default_rng(1)
labels = rng.integers(0, 10, size=1000).astype(np.int64)
# Each image is a noisy bar at an angle set by its label on a black background, in steps of
# 1/255 like scanned digits, so it compresses like real images do.
yy, xx = np.mgrid[0:28, 0:28] - 13.5
angles = labels * np.pi / 10
dist = np.abs(np.cos(angles)[:, None, None] * yy - np.sin(angles)[:, None, None] * xx)
bar = np.clip(1.0 - dist / 3.0, 0, 1)
noisy = np.clip(bar + rng.normal(0, 0.1, size=bar.shape), 0, 1) * (bar > 0)
images = np.round(noisy * 255) / 255
np.save(f"{out}/image.npy", images.astype(np.float32))
np.save(f"{out}/label.npy", labels)
EOF
	"$M" put demo image="$tmp/image.npy" label="$tmp/label.npy" \
		--description "matorage demo: synthetic 28x28 images with labels" --tag demo
fi

FM=/usr/share/datasets/fashion-mnist
if grep -qx fashion-mnist-train <<< "$("$M" ls)"; then
	step "Fashion-MNIST is already in the store"
else
	step "matorage run lua/examples/fashion_mnist.lua: Debian's IDX files into two datasets"
	"$M" run lua/examples/fashion_mnist.lua --allow "$FM"
fi
step "examples/train-softmax: three epochs on the recipe's datasets"
# Without --store it trains from the same default store.
"$BUILD/examples/train-softmax" --train fashion-mnist-train --test fashion-mnist-test --epochs 3 |
	tail -n 1
cat <<EOF

The demo lives in the default local store (matorage(1), FILES). Try next:
  $M                  (the browser: Enter opens, ? lists the keys, q quits)
  $M ls -l
  $M info demo --shards
  $M search demo
  $M get demo image -o /tmp/demo-images.npy --rows 0:100
  $M verify demo
  $M info fashion-mnist-train          # its recipe and arguments
  $M rerun fashion-mnist-train --allow $FM   # rebuilds identical shards
  man $ROOT/doc/matorage.1
EOF
"$M" sync local > /dev/null
# On a terminal the demo ends in the browser, on the Fashion-MNIST versions;
# elsewhere (a pipe, CI) it prints what the browser would have shown.
if [ -t 0 ] && [ -t 1 ]; then
	step "opening the browser on fashion-mnist-train (q quits)"
	exec "$M" tui --open fashion-mnist-train
fi
step "matorage info fashion-mnist-train"
"$M" info fashion-mnist-train
