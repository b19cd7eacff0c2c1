#!/bin/bash
# cli-stats.sh — `matorage stats` on Fashion-MNIST's test set (or seeded data like it) agrees with NumPy: counts, min and max exactly, mean and std to 1e-9, histogram edges and counts exactly, NaN/Inf counted, the class balance of the labels; a second run is served from the catalog.
# With MT_TEST_STORE=s3 (s3-stats.sh) the store is S3 behind the signing proxy.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE
FM=/usr/share/datasets/fashion-mnist

# The test set's images (uint8) and labels (int64), or seeded random data of the same
# shapes when the set is missing; and the images scaled to float32 with NaN and +/-Inf.
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
if [ -f "$FM/t10k-images-idx3-ubyte.gz" ]; then
	check "test images decoded" $T idx "$FM/t10k-images-idx3-ubyte.gz" "$WORK/image.npy"
	check "test labels decoded" $T idx "$FM/t10k-labels-idx1-ubyte.gz" "$WORK/label.npy" int64
else
	echo "# Fashion-MNIST is not installed: seeded data, seed 7"
	check "seeded data like it" "$PY" -c 'import sys, numpy as np
rng = np.random.default_rng(7)
np.save(sys.argv[1] + "/image.npy", rng.integers(0, 256, (10000, 28, 28), dtype=np.uint8))
np.save(sys.argv[1] + "/label.npy", rng.integers(0, 10, 10000).astype(np.int64))' "$WORK"
fi
check "images scaled to float32 with NaN and Inf" "$PY" - "$WORK" <<'PYEOF'
import sys
import numpy as np
image = np.load(sys.argv[1] + "/image.npy")
norm = (image.astype(np.float32) / np.float32(255)) * np.float32(3.7) - np.float32(1.1)
flat = norm.reshape(-1)
flat[13::9973] = np.nan
flat[29::65537] = np.inf
flat[31::131071] = -np.inf
np.save(sys.argv[1] + "/norm.npy", norm)
PYEOF
check "put the test set" $M put fmnist image="$WORK/image.npy" label="$WORK/label.npy" norm="$WORK/norm.npy"

# compare ATTR JSON_FILE: the stats against NumPy over the .npy file.
compare() {
	"$PY" - "$WORK/$1.npy" "$2" <<'PYEOF'
import json, sys
import numpy as np
x = np.load(sys.argv[1]).astype(np.float64).reshape(-1)
s = json.load(open(sys.argv[2]))
fin = x[np.isfinite(x)]
bad = []
def want(name, got, exp):
    if got != exp:
        bad.append(f"{name}: {got!r} != {exp!r}")
want("count", s["count"], x.size)
want("finite", s["finite"], fin.size)
want("nan", s["nan"], int(np.isnan(x).sum()))
want("posinf", s["posinf"], int(np.isposinf(x).sum()))
want("neginf", s["neginf"], int(np.isneginf(x).sum()))
want("min", s["min"], float(fin.min()))
want("max", s["max"], float(fin.max()))
for k, v in (("mean", fin.mean()), ("std", fin.std())):
    if abs(s[k] - v) > 1e-9 * abs(v):
        bad.append(f"{k}: {s[k]!r} vs {v!r}")
hist, edges = np.histogram(fin, bins=s["bins"], range=(fin.min(), fin.max()))
want("edges", s["edges"], [float(e) for e in edges])
want("hist", s["hist"], [int(h) for h in hist])
print("#", s["attr"], "mean", s["mean"], "std", s["std"], "nan", s["nan"])
for b in bad:
    print("#", b)
sys.exit(1 if bad else 0)
PYEOF
}

for attr in image label norm; do
	$M stats fmnist "$attr" --json > "$WORK/$attr.json"
	ok $? "stats of $attr ran"
	compare "$attr" "$WORK/$attr.json"
	ok $? "$attr: counts, min, max, mean, std and histogram agree with NumPy"
done

"$PY" - "$WORK/label.npy" "$WORK/label.json" <<'PYEOF'
import json, sys
import numpy as np
x = np.load(sys.argv[1])
s = json.load(open(sys.argv[2]))
v, c = np.unique(x, return_counts=True)
sys.exit(0 if s["classes"] == [[int(a), int(b)] for a, b in zip(v, c)] else 1)
PYEOF
ok $? "the labels' class balance is NumPy's np.unique counts"
"$PY" -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["classes"] is not None)' \
	"$WORK/image.json"
ok $? "pixels (not one value a row) have no class balance"

# A second run reads nothing: the catalog has the numbers.
out=$($M stats fmnist label 2>&1)
ok $([[ $out == *"from the catalog, computed"* ]]; echo $?) "a second run is served from the catalog"
$M stats fmnist label --json > "$WORK/again.json"
cmp -s "$WORK/again.json" "$WORK/label.json"
ok $? "with the same JSON, bit for bit"
out=$($M stats fmnist label --recompute 2>&1)
ok $([[ $out != *"from the catalog"* && $out == *"classes: 10 distinct"* ]]; echo $?) \
	"--recompute reads the attribute again"
$M stats fmnist norm --bins 7 --json > "$WORK/norm7.json"
compare norm "$WORK/norm7.json"
ok $? "--bins 7 gives NumPy's 7-bin histogram"
out=$($M stats fmnist image 2>&1)
ok $([[ $out == *"from the catalog"* && $out == *"histogram, 32 bins over [0, 255]"* ]]; echo $?) \
	"--bins 7 did not replace the 32-bin result kept in the catalog"
fails "an unknown attribute is named" 1 "no attribute 'nope'|nope" $M stats fmnist nope
fails "bins out of range is a usage error" 2 "bins" $M stats fmnist image --bins 0
done_testing
