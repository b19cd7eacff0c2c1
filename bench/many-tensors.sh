#!/bin/bash
# many-tensors.sh — `matorage model import` of a safetensors file of N small tensors (16 float32 each, all different): wall time and newfstatat calls, to show the per-tensor cost stays flat.
# Usage: bench/many-tensors.sh MATORAGE [RUNS] [N]...   (defaults: 3 runs; 2000 4000 8000)
set -euo pipefail
M=$1
RUNS=${2:-3}
shift $(($# < 2 ? $# : 2))
read -r -a SIZES <<< "${*:-2000 4000 8000}"
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-tensors}
mkdir -p "$DIR"
export MATORAGE_STORE="file://$DIR/store"

stats() { sort -n | awk '{a[NR]=$1} END {printf "%s %s %s", a[int((NR+1)/2)], a[1], a[NR]}'; }
secs() { local s e; s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }

echo "# machine: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); median min max of $RUNS runs"
for n in "${SIZES[@]}"; do
	$PY - "$DIR/m.safetensors" "$n" <<'PY'
import json, struct, sys
import numpy as np
path, n = sys.argv[1], int(sys.argv[2])
head, blobs, off = {}, [], 0
for i in range(n):
    b = (np.arange(16, dtype=np.float32) + i * 16).tobytes()
    head["t%06d" % i] = {"dtype": "F32", "shape": [16], "data_offsets": [off, off + len(b)]}
    blobs.append(b)
    off += len(b)
h = json.dumps(head).encode()
h += b" " * (-len(h) % 8)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
	t=()
	for r in $(seq "$RUNS"); do
		rm -rf "$DIR/store"
		t+=("$(secs "$M" model import net "$DIR/m.safetensors")")
	done
	calls=-
	if command -v strace > /dev/null; then
		rm -rf "$DIR/store"
		calls=$(strace -f -c -e trace=newfstatat -o "$DIR/strace" "$M" model import net \
			"$DIR/m.safetensors" > /dev/null && awk '$NF == "newfstatat" {print $4}' "$DIR/strace")
	fi
	echo "model import $n tensors: $(printf '%s\n' "${t[@]}" | stats) s, $calls newfstatat"
done
rm -rf "$DIR"
