#!/bin/bash
# ckpt.sh — save and load of a ~1 GiB model state: matorage checkpoints (bench/ckpt-bench,
# file store) against torch.save / torch.load, same bytes, same disk, both from and into
# memory.  torch.save is followed by an fsync, since a matorage commit makes its objects
# durable before the manifest; both load from the page cache (the files were just written).
# The data: float32 weights drawn from a normal distribution (numpy seed 7), whose random
# mantissas leave zstd little to take, as with real trained weights.  A third contender is
# the same state dict of torch tensors through the Python package (save_checkpoint,
# load_checkpoint into torch tensors).
# Usage: bench/ckpt.sh [BUILD_DIR] [MiB] [TENSORS] [REPS]   (defaults: build/bench, 1024, 64, 3;
# build with CFLAGS="-O2 -g" and no sanitizers)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
MIB=${2:-1024} NT=${3:-64} REPS=${4:-3}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-ckpt}
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
export HOME=$DIR
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1 /proc/loadavg); $MIB MiB in $NT float32 tensors, $REPS runs"
$PY -c "import numpy as np; np.random.default_rng(7).standard_normal($MIB * 262144, dtype=np.float32).tofile('$DIR/data.bin')"
# The same state dict of torch tensors saved and loaded by torch or by matorage's Python package.
cat > "$DIR/state.py" <<'PYEOF'
import os, sys, time
import numpy as np, torch
who, d, nt = sys.argv[1], sys.argv[2], int(sys.argv[3])
flat = torch.from_numpy(np.fromfile(f"{d}/data.bin", dtype=np.float32))
per = flat.numel() // nt
state = {f"layer{i}.weight": flat[i * per:(i + 1) * per].clone() for i in range(nt)}
state["step"] = 1
if who == "torch":
    def save():
        with open(f"{d}/torch.pt", "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
    load = lambda: torch.load(f"{d}/torch.pt")
else:
    import matorage
    save = lambda: matorage.save_checkpoint(f"{d}/pystore", "bench", state)
    load = lambda: matorage.load_checkpoint(f"{d}/pystore", "bench")
t0 = time.monotonic()
save()
t1 = time.monotonic()
back = load()
t2 = time.monotonic()
assert all(torch.equal(back[k], state[k]) for k in state if k != "step")
print(f"save {t1 - t0:.3f} load {t2 - t1:.3f}")
PYEOF
run_mt() { "$BUILD/bench/ckpt-bench" "$DIR/store" "$DIR/data.bin" "$NT" 1 >> "$DIR/mt.txt"; }
run_torch() { $PY "$DIR/state.py" torch "$DIR" "$NT" >> "$DIR/torch.txt"; }
run_py() {
	MATORAGE_LIB=$BUILD/src/lib/.libs/libmatorage.so PYTHONPATH=$here/../python \
		$PY "$DIR/state.py" matorage "$DIR" "$NT" >> "$DIR/py.txt"
}
# Alternate the contenders run by run, and rotate who goes first: a save that follows
# another's gigabyte of writes finds the disk busier (on this VM by up to 2x), so each
# takes each place in turn.
order=(run_mt run_torch run_py)
for r in $(seq "$REPS"); do
	rm -rf "$DIR/store" "$DIR/pystore" "$DIR/torch.pt"
	sync
	for k in 0 1 2; do
		${order[$(((r + k) % 3))]}
	done
done
pt=$(stat -c %s "$DIR/torch.pt")
stored=$(awk '/^partial/ {s = $10} END {print s}' "$DIR/mt.txt")
stats() { sort -n | awk '{ a[NR] = $1 } END { printf "%.2f (%.2f-%.2f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
printf '| | save s, median (min-max) | load s, median (min-max) | bytes on disk |\n|---|---|---|---|\n'
printf '| matorage checkpoint | %s | %s | %s |\n' "$(awk '/^save/ {print $2}' "$DIR/mt.txt" | stats)" \
	"$(awk '/^save/ {print $4}' "$DIR/mt.txt" | stats)" "$stored"
printf '| matorage from Python: save_checkpoint/load_checkpoint of the torch state | %s | %s | %s |\n' \
	"$(awk '{print $2}' "$DIR/py.txt" | stats)" "$(awk '{print $4}' "$DIR/py.txt" | stats)" \
	"$(du -sb "$DIR/pystore/models/bench/tensors" | cut -f1)"
printf '| torch.save/torch.load | %s | %s | %s |\n' "$(awk '{print $2}' "$DIR/torch.txt" | stats)" \
	"$(awk '{print $4}' "$DIR/torch.txt" | stats)" "$pt"
partial=$(awk '/^partial/ {print $2}' "$DIR/mt.txt" | stats)
awk -v p="$partial" '/^partial/ { n++; c = $4; w = $6; t = $8 } END { printf "\nA second checkpoint of bench0 with %d of its bytes changed (%.1f%%): %s s, median (min-max) of %d; %d bytes written to the store (%.2f%% of the state; torch.save writes all of it).\n", c, 100 * c / t, p, n, w, 100 * w / t }' "$DIR/mt.txt"
