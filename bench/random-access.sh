#!/bin/bash
# random-access.sh — rows by index from a Fashion-MNIST-shaped version (60,000 uint8 28x28 images and
# int64 labels, synthetic: shapes on a dark background, as bench/make-images.py makes them; default
# shards and 1 MiB chunks): a map-style torch DataLoader over 20,000 shuffled indices through
# matorage.TorchMapDataset (the chunk cache; and in_memory=True) against the same DataLoader over an
# in-memory dataset of the same tensors (same sampler, batch size, tuples, workers), and
# Loader.read_rows of 1,000 random rows, cold and once the chunks are cached, against the same rows
# read one by one with the chunk cache off (a decode per row, as before the cache) and numpy
# indexing of the arrays in memory.  Each run is a fresh process; RUNS runs alternating; medians and
# ranges.  The decode limit beside them: one full read of both attributes (every chunk decoded on
# all cores).
# Usage: bench/random-access.sh [BUILD_DIR] [RUNS]   (default build/bench, 5; build with
# CFLAGS="-O2 -g" and no sanitizers)
BENCH_NAME=random
. "$(dirname "$0")/lib.sh"
RUNS=${2:-5}
export MATORAGE_LIB=$BUILD/src/lib/.libs/libmatorage.so PYTHONPATH=$here/../python
echo "# command: bench/random-access.sh ${1:-build/bench} $RUNS"
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$DIR" <<'PYEOF'
import sys
import numpy as np
import matorage
d = sys.argv[1]
rng = np.random.default_rng(0)
img = (rng.random((60000, 28, 28)) < 0.3).astype(np.uint8) * rng.integers(0, 255, (60000, 1, 1), dtype=np.uint8)
lab = rng.integers(0, 10, 60000).astype(np.int64)
np.save(f"{d}/image.npy", img)
np.save(f"{d}/label.npy", lab)
with matorage.Writer(f"file://{d}/store", "fm") as w:
    w.append(image=img, label=lab)
with matorage.Reader(f"file://{d}/store", "fm") as r:
    print(f"# data: 60000 x 28x28 uint8 + int64 labels, {r.info['shards']} shard(s), "
          f"{r.info['stored_bytes']} bytes stored, {r.info['raw_bytes']} raw")
PYEOF
cat "$DIR"/store/datasets/*/shards/* > /dev/null

# map MODE: one process, two passes of a DataLoader over 20,000 shuffled indices (batch 256,
# tuples (image, label), no workers); prints "MODE-1 s" and "MODE-2 s" (first and second pass)
# and, for the matorage modes, the time to make the dataset.
map_run() {
	"$PY" - "$DIR" "$1" <<'PYEOF'
import sys, time
import numpy as np
import torch
import torch.utils.data as tud
import matorage
d, mode = sys.argv[1], sys.argv[2]
url = f"file://{d}/store"
matorage._lib.lib()
idx = np.random.default_rng(7).permutation(60000)[:20000].tolist()


class Memory(tud.Dataset):
    """The baseline: the same tensors in memory, rows as tuples."""

    def __init__(self):
        self.image = torch.from_numpy(np.load(f"{d}/image.npy"))
        self.label = torch.from_numpy(np.load(f"{d}/label.npy"))

    def __len__(self):
        return len(self.label)

    def __getitem__(self, i):
        return self.image[i], self.label[i]


t0 = time.monotonic()
if mode == "memory":
    ds = Memory()
else:
    ds = matorage.TorchMapDataset(url, "fm", as_tuple=("image", "label"),
                                  in_memory=(mode == "in_memory"))
made = time.monotonic() - t0
if mode != "memory":
    print(f"{mode}-make {made:.4f}")
for p in (1, 2):
    dl = tud.DataLoader(ds, batch_size=256, sampler=idx)
    t0 = time.monotonic()
    n = 0
    for img, lab in dl:
        n += len(lab)
    t1 = time.monotonic()
    assert n == 20000
    print(f"{mode}-{p} {t1 - t0:.4f}")
PYEOF
}

# rows: Loader.read_rows of 1,000 random rows (seeded per run): cold, then 1,000 others once
# the chunks are cached; the same 1,000 one by one with the cache off; numpy on the arrays.
rows_run() {
	"$PY" - "$DIR" "$1" <<'PYEOF'
import sys, time
import numpy as np
import matorage
d, run = sys.argv[1], int(sys.argv[2])
url = f"file://{d}/store"
rng = np.random.default_rng(100 + run)
a, b = rng.integers(0, 60000, 1000), rng.integers(0, 60000, 1000)
l = matorage.Loader(url, "fm", batch_rows=1, prefetch_bytes=1 << 20)
l.read_rows([0])  # the shard's chunk index, as any first read pays
matorage.clear_chunk_cache()
t0 = time.monotonic()
l.read_rows(a)
t1 = time.monotonic()
got = l.read_rows(b)
t2 = time.monotonic()
print(f"rows-cold {t1 - t0:.4f}\nrows-warm {t2 - t1:.4f}")
matorage.set_chunk_cache(0)
t0 = time.monotonic()
for r in a:
    l.read_rows([r])
t1 = time.monotonic()
print(f"rows-perrow {t1 - t0:.4f}")
img, lab = np.load(f"{d}/image.npy"), np.load(f"{d}/label.npy")
t0 = time.monotonic()
x, y = img[b], lab[b]
t1 = time.monotonic()
assert (got["image"] == x).all() and (got["label"] == y).all()
print(f"rows-numpy {t1 - t0:.5f}")
with matorage.Reader(url, "fm") as r:
    t0 = time.monotonic()
    r.read("image")
    r.read("label")
    t1 = time.monotonic()
print(f"fullread {t1 - t0:.4f}")
l.close()
PYEOF
}

for r in $(seq "$RUNS"); do
	for m in memory cache in_memory; do
		map_run "$m" >> "$DIR/times"
	done
	rows_run "$r" >> "$DIR/times"
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
stats() { sort -n | awk '{ a[NR] = $1 } END { printf "%.4f (%.4f-%.4f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
get() { awk -v k="$1" '$1 == k { print $2 }' "$DIR/times"; }
printf '| map-style DataLoader, 20,000 shuffled indices, batch 256, tuples | s, median (min-max) of %d | rows/s | vs in-memory |\n|---|---|---|---|\n' "$RUNS"
base1=$(get memory-1 | med)
base2=$(get memory-2 | med)
for m in memory cache in_memory; do
	for p in 1 2; do
		v=$(get "$m-$p" | med)
		b=$([ "$p" = 1 ] && echo "$base1" || echo "$base2")
		printf '| %s, pass %d | %s | %.0f | %.2fx |\n' "$m" "$p" "$(get "$m-$p" | stats)" \
			"$(echo "20000 / $v" | bc -l)" "$(echo "$b / $v" | bc -l)"
	done
done
printf '| making TorchMapDataset (chunk cache / in_memory: columns read whole) | %s / %s | | |\n' \
	"$(get cache-make | stats)" "$(get in_memory-make | stats)"
printf '\n| 1,000 random rows of 60,000 | s, median (min-max) of %d |\n|---|---|\n' "$RUNS"
printf '| Loader.read_rows, cold (chunk cache empty) | %s |\n' "$(get rows-cold | stats)"
printf '| Loader.read_rows, other rows, chunks cached | %s |\n' "$(get rows-warm | stats)"
printf '| the same rows one read_rows each, cache off (a decode per row) | %s |\n' "$(get rows-perrow | stats)"
printf '| numpy fancy indexing of the arrays in memory | %s |\n' "$(get rows-numpy | stats)"
printf '| decode limit: Reader.read of both attributes whole (every chunk, all cores) | %s |\n' "$(get fullread | stats)"
