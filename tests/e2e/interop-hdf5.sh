#!/bin/bash
# interop-hdf5.sh — shards are plain HDF5: h5py (+hdf5plugin or our plugin) and h5dump read the values that went in.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
STORE=$WORK/store

for dt in float32 float16 bool int64 uint8; do
	$T make "$WORK/$dt.npy" $dt 40x3x2 5
done
$M put h5 a="$WORK/float32.npy" b="$WORK/float16.npy" c="$WORK/bool.npy" d="$WORK/int64.npy" \
	e="$WORK/uint8.npy" --chunk-size 100 >/dev/null
shard=$(ls "$STORE"/datasets/h5/shards/*.h5)
ok $([ "$(echo "$shard" | wc -l)" -eq 1 ]; echo $?) "one shard written"
# Debian 12 ships no zstd HDF5 plugin (python3-hdf5plugin relies on system
# plugins), so h5py finds filter 32015 through our plugin.
for pair in a:float32 b:float16 c:bool d:int64 e:uint8; do
	check "h5py (hdf5plugin imported) reads the ${pair#*:} attribute" \
		env HDF5_PLUGIN_PATH="$MT_PLUGIN_DIR" $T h5 "$shard" "${pair%%:*}" "$WORK/${pair#*:}.npy" hdf5plugin
done
check "h5py alone reads the float32 attribute through our plugin" \
	env HDF5_PLUGIN_PATH="$MT_PLUGIN_DIR" $T h5 "$shard" a "$WORK/float32.npy" ours
check "h5py writes zstd chunks (hdf5plugin.Zstd) that our plugin round-trips" \
	env HDF5_PLUGIN_PATH="$MT_PLUGIN_DIR" $PY -c "
import hdf5plugin, h5py, numpy as np
a = np.arange(10000, dtype=np.float64).reshape(100, 100)
with h5py.File('$WORK/w.h5', 'w') as f:
    f.create_dataset('a', data=a, chunks=(10, 100), **hdf5plugin.Zstd(clevel=5))
with h5py.File('$WORK/w.h5', 'r') as f:
    assert f['a']._filters.get('32015') == (5,)
    assert (f['a'][...] == a).all()
"
check "sha256 of the shard equals its name" bash -c "[ \"\$(sha256sum $shard | cut -c1-64)\" = \"\$(basename $shard .h5)\" ]"

$PY -c "import numpy as np; np.save('$WORK/ar.npy', np.arange(24, dtype=np.int32).reshape(4, 6))"
$M put h5d x="$WORK/ar.npy" >/dev/null
shard=$(ls "$STORE"/datasets/h5d/shards/*.h5)
out=$(HDF5_PLUGIN_PATH="$MT_PLUGIN_DIR" h5dump -d /x "$shard" 2>&1)
ok $(echo "$out" | grep -q "(2,0): 12, 13, 14, 15, 16, 17"; echo $?) "h5dump with our plugin prints the values"
echo "$out" | head -20 | sed 's/^/# /'
out=$(HDF5_PLUGIN_PATH=/nonexistent h5dump -d /x "$shard" 2>&1)
ok $(! echo "$out" | grep -q "(2,0): 12, 13"; echo $?) "without the plugin h5dump cannot decode (the filter is really used)"
check "root attributes identify the shard" $PY -c "
import h5py
f = h5py.File('$shard', 'r')
assert f.attrs['matorage_format'] == 1 and f.attrs['dataset'] in (b'h5d', 'h5d') and f.attrs['rows'] == 4
assert f['x']._filters.get('32015') == (3,)
"
done_testing
