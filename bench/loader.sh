#!/bin/bash
# loader.sh — shuffled batches through the loader vs h5py, torch DataLoader over h5py, zarr, and the raw limits (zstd -d, cat).
# Usage: bench/loader.sh [BUILD_DIR]   (default build/bench; build with CFLAGS="-O2 -g")
# Two datasets: small rows (784-byte uint8 images + int64 labels) and large rows (150 KB float32).
# Every contender reads the same data with a warm page cache; the baselines that need a
# chunk decompressed per row are timed over their first batches and reported as rates.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
M=$BUILD/src/cli/matorage
EPOCH=$BUILD/bench/loader-epoch
export HDF5_PLUGIN_PATH=$BUILD/plugins/.libs
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-loader}
BUDGET=$((256 << 20))
S3RVER=${S3RVER:-$here/../tests/s3/node_modules/s3rver/bin/s3rver.js}
rm -rf "$DIR"
mkdir -p "$DIR"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
	rm -rf "$DIR"
}
trap cleanup EXIT
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m); budget $((BUDGET >> 20)) MiB"

"$PY" - "$DIR" <<'PYEOF'
import gzip, os, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
fm = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
if os.path.exists(fm):
    with gzip.open(fm) as f:
        img = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(fm.replace("images-idx3", "labels-idx1")) as f:
        lab = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    img, lab = np.concatenate([img] * 3), np.concatenate([lab] * 3)
else:  # shapes on a dark background, as image data looks to a compressor
    img = (rng.random((180000, 28, 28)) < 0.3).astype(np.uint8) * rng.integers(0, 255, (180000, 1, 1), dtype=np.uint8)
    lab = rng.integers(0, 10, 180000).astype(np.int64)
np.save(f"{d}/image.npy", img)
np.save(f"{d}/label.npy", lab)
big = np.lib.format.open_memmap(f"{d}/big.npy", mode="w+", dtype=np.float32, shape=(3000, 38400))
for i in range(0, 3000, 100):
    big[i:i + 100] = np.round(rng.standard_normal((100, 38400)), 3)
big.flush()
PYEOF
"$M" -q --store "$DIR/store" put small image="$DIR/image.npy" label="$DIR/label.npy" > /dev/null
"$M" -q --store "$DIR/store" put large x="$DIR/big.npy" > /dev/null
rm "$DIR/big.npy"
cat "$DIR"/store/datasets/*/shards/* > /dev/null

# The baselines: h5py with numpy shuffle, torch DataLoader (2 workers) over h5py, zarr+zstd.
"$PY" - "$DIR" > "$DIR/baselines" <<'PYEOF'
import glob, json, os, sys, time
import h5py, hdf5plugin, numpy as np, zarr, numcodecs
d = sys.argv[1]
out = {}
def shards(ds):
    m = json.load(open(glob.glob(f"{d}/store/datasets/{ds}/versions/v1.json")[0]))
    return [f"{d}/store/datasets/{ds}/shards/{s['sha256']}.h5" for s in m["shards"]]
def h5py_rate(ds, attrs, batch, nbatches):
    rng = np.random.default_rng(1)
    files = shards(ds)
    rng.shuffle(files)
    rows = nbytes = 0
    t = time.perf_counter()
    for path in files:
        with h5py.File(path, "r") as f:
            n = f[attrs[0]].shape[0]
            perm = rng.permutation(n)
            for i in range(0, n, batch):
                idx = np.sort(perm[i:i + batch])
                for a in attrs:
                    nbytes += f[a][idx].nbytes
                rows += len(idx)
                nbatches -= 1
                if nbatches == 0:
                    return rows, nbytes, time.perf_counter() - t
    return rows, nbytes, time.perf_counter() - t
def torch_rate(ds, attrs, batch, nbatches):
    import torch
    files = shards(ds)
    counts = []
    for p in files:
        with h5py.File(p, "r") as f:
            counts.append(f[attrs[0]].shape[0])
    starts = np.cumsum([0] + counts)
    class H5(torch.utils.data.Dataset):
        def __init__(self):
            self.open = {}
        def __len__(self):
            return int(starts[-1])
        def __getitem__(self, i):
            s = int(np.searchsorted(starts, i, side="right") - 1)
            if s not in self.open:
                self.open[s] = h5py.File(files[s], "r")
            f = self.open[s]
            return tuple(torch.from_numpy(np.asarray(f[a][i - starts[s]])) for a in attrs)
    dl = torch.utils.data.DataLoader(H5(), batch_size=batch, shuffle=True, num_workers=2,
                                     generator=torch.Generator().manual_seed(1))
    rows = nbytes = 0
    t = time.perf_counter()
    for k, b in enumerate(dl):
        rows += b[0].shape[0]
        nbytes += sum(x.numel() * x.element_size() for x in b)
        if k + 1 == nbatches:
            break
    return rows, nbytes, time.perf_counter() - t
def zarr_rate(ds, attrs, batch, nbatches):
    arrs = {}
    for a in attrs:
        data = np.concatenate([h5py.File(p, "r")[a][...] for p in shards(ds)])
        row = data[0].nbytes
        z = zarr.open(f"{d}/zarr-{ds}-{a}", mode="w", shape=data.shape, dtype=data.dtype,
                      chunks=(max(1, (1 << 20) // row),) + data.shape[1:],
                      compressor=numcodecs.Zstd(level=3))
        z[...] = data
        arrs[a] = z
    n = arrs[attrs[0]].shape[0]
    perm = np.random.default_rng(1).permutation(n)
    rows = nbytes = 0
    t = time.perf_counter()
    for k in range(nbatches):
        idx = np.sort(perm[k * batch:(k + 1) * batch])
        for a in attrs:
            nbytes += arrs[a].oindex[idx].nbytes
        rows += len(idx)
    return rows, nbytes, time.perf_counter() - t
def raw_chunks(ds, path):
    with open(path, "wb") as out:
        for p in shards(ds):
            with h5py.File(p, "r") as f:
                for a in f:
                    if a.startswith("_"):
                        continue
                    dset = f[a]
                    for i in range(dset.id.get_num_chunks()):
                        info = dset.id.get_chunk_info(i)
                        out.write(dset.id.read_direct_chunk(info.chunk_offset)[1])
for ds, attrs, batch, nb in (("small", ["image", "label"], 256, 20), ("large", ["x"], 32, 20)):
    out[f"{ds} h5py"] = h5py_rate(ds, attrs, batch, nb)
    out[f"{ds} torch"] = torch_rate(ds, attrs, batch, nb)
    out[f"{ds} zarr"] = zarr_rate(ds, attrs, batch, nb)
    raw_chunks(ds, f"{d}/{ds}.zst")
for k, v in out.items():
    print(k.replace(" ", "_"), *v)
PYEOF

t() { local s=$(date +%s.%N); "$@" > /dev/null; echo "$(date +%s.%N) - $s" | bc; }
declare -A R B S RSS
run_loader() { # NAME STORE DATASET ATTRS BATCH
	local out
	out=$("$EPOCH" "$2" "$3" "$4" "$5" 1 $BUDGET)
	read -r R[$1] B[$1] S[$1] RSS[$1] <<< "$out"
}
run_loader small-file "$DIR/store" small image,label 256
run_loader large-file "$DIR/store" large x 32
raw_bytes() { "$M" --store "$DIR/store" info "$1" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["raw_bytes"])'; }
for ds in small large; do
	cat "$DIR/$ds.zst" > /dev/null
	S[$ds-zstd]=$(t zstd -q -d -c "$DIR/$ds.zst")
	B[$ds-zstd]=$(raw_bytes $ds)
	S[$ds-cat]=$(t bash -c "cat $DIR/store/datasets/$ds/shards/*")
	B[$ds-cat]=$(du -sb "$DIR/store/datasets/$ds/shards" | cut -f1)
done
while read -r name rows bytes secs; do
	R[$name]=$rows B[$name]=$bytes S[$name]=$secs
done < "$DIR/baselines"

# From s3rver: the same store pushed there, read with the loader's default threads.
if [ -f "$S3RVER" ]; then
	port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mkdir -p "$DIR/s3"
	node --openssl-legacy-provider "$S3RVER" --address 127.0.0.1 --port "$port" \
		--directory "$DIR/s3" --silent > /dev/null 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
	export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
	"$M" -q --store "$DIR/store" sync "$DIR/store" s3://bench > /dev/null
	run_loader small-s3 s3://bench small image,label 256
	run_loader large-s3 s3://bench large x 32
fi

rate() { echo "scale=0; $1 / $2" | bc; }
mbs() { echo "scale=1; $1 / 1048576 / $2" | bc; }
printf '| data | reader | rows/s | MB/s | loader speed-up |\n|---|---|---|---|---|\n'
for ds in small large; do
	lr=$(echo "${R[$ds-file]} / ${S[$ds-file]}" | bc -l)
	for who in file s3 h5py torch zarr zstd cat; do
		k=$ds-$who
		[ "$who" = h5py ] || [ "$who" = torch ] || [ "$who" = zarr ] && k=${ds}_$who
		[ -n "${S[$k]:-}" ] || continue
		case $who in
		file) label="matorage loader, file store (RSS peak ${RSS[$k]} KiB)" ;;
		s3) label="matorage loader, s3rver (RSS peak ${RSS[$k]} KiB)" ;;
		h5py) label="h5py + numpy shuffle, batch by batch" ;;
		torch) label="torch DataLoader over h5py, 2 workers" ;;
		zarr) label="zarr + zstd, shuffled batches" ;;
		zstd) label="zstd -d of the same chunks (limit)" ;;
		cat) label="cat of the shard files (limit)" ;;
		esac
		if [ -n "${R[$k]:-}" ]; then
			r=$(rate "${R[$k]}" "${S[$k]}")
			ratio=$(printf '%.2fx' "$(echo "$lr / (${R[$k]} / ${S[$k]})" | bc -l)")
		else
			r="-"
			ratio=$(printf '%.2fx (bytes)' "$(echo "(${B[$ds-file]} / ${S[$ds-file]}) / (${B[$k]} / ${S[$k]})" | bc -l)")
		fi
		printf '| %s | %s | %s | %s | %s |\n' "$ds" "$label" "$r" "$(mbs "${B[$k]}" "${S[$k]}")" "$ratio"
	done
done
