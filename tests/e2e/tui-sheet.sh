#!/bin/bash
# tui-sheet.sh — a vector attribute as a sheet (a row a line, a column per element, columns hidden whole at 40x10 and none cut at 120x30, scrolling on across pages), its per-column min/max/mean/std over every row computed by a job and kept per version (checked against NumPy), and the frequency view of an int64 label (values by count, largest first, with shares).
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
SEED=31
echo "# seed $SEED"
"$PY" - "$WORK" "$SEED" << 'PYEOF'
import sys
import numpy as np
w, seed = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(seed)
# Columns of different scales, so widths differ and 40 columns cannot hold them all.
scale = np.array([1, 10, 100, 1000] * 4, dtype=np.float32)
emb = (rng.standard_normal((1200, 16)).astype(np.float32) * scale).round(3)
np.save(f"{w}/emb.npy", emb)
label = np.repeat(np.array([3, 0, 7, 1], dtype=np.int64), [600, 300, 200, 100])
rng.shuffle(label)
np.save(f"{w}/label.npy", label)
x = emb.astype(np.float64)
with open(f"{w}/expect.txt", "w") as f:
    for c in range(16):
        f.write(f"{c} {x[:, c].min()!r} {x[:, c].max()!r} {x[:, c].mean()!r} {x[:, c].std()!r}\n")
PYEOF
check "a dataset with a float32 (16,) vector and an int64 label" \
	$M put vec emb="$WORK/emb.npy" label="$WORK/label.npy" --shard-rows 500
row0=$("$PY" -c "import numpy as np; print(' '.join('%.6g' % v for v in np.load('$WORK/emb.npy')[0]))")
echo "# row 0: $row0"

# cells ROW: the values the screen shows for attribute row ROW, from the lines after the
# header ("rows A-B of N") and the column numbers under it.
cells() { screen | awk -v r="$1" 'h == 2 && $1 == r { $1 = ""; sub(/^ /, ""); print; exit }
	h == 1 { h = 2 } / rows [0-9]+-[0-9]+ of / { h = 1 }'; }
# Every value shown for row ROW is the file's value of some column, whole.
row_whole() {
	"$PY" - "$WORK/emb.npy" "$1" "$2" << 'PYEOF'
import sys
import numpy as np
x = np.load(sys.argv[1])[int(sys.argv[2])]
want = ['%.6g' % v for v in x]
got = sys.argv[3].replace('›', '').replace('‹', '').split()
sys.exit(0 if got and all(g in want for g in got) and got == want[want.index(got[0]):][:len(got)] else 1)
PYEOF
}

tui_start 40 10 tui --open vec
expect "the browser opens on vec's versions" "v1"
keys Enter A
expect "the attributes" "label"
keys g Enter
expect "Enter on emb opens the sheet: rows of the page" "rows 0-"
got=$(cells 0)
ok $([ -n "$got" ] && row_whole 0 "$got"; echo $?) "at 40x10, row 0 shows whole values of consecutive columns: '$got'"
ok $(screen | grep -q '›'; echo $?) "and says that more columns are hidden on the right"
keys '$'
expect "\$ goes to the last column" " 15"
got=$(cells 0)
ok $([ -n "$got" ] && row_whole 0 "$got"; echo $?) "the last columns' values are whole too: '$got'"
keys q
ok $(tui_exited; echo $?) "q quits"

tui_start 120 30 tui --open vec
expect "the browser opens on vec's versions" "v1"
keys Enter A g Enter
expect "the sheet at 120x30" "rows 0-511 of 1200"
got=$(cells 0)
ok $([ -n "$got" ] && row_whole 0 "$got" && [ "$(wc -w <<< "$got")" -ge 10 ]; echo $?) \
	"at 120x30 row 0 shows the first columns' values whole: '$got'"
got=$(cells 3)
ok $([ -n "$got" ] && row_whole 3 "$got"; echo $?) "and row 3 as well: '$got'"
expect "the statistics below cover the page until computed" "each column over rows 0..511 (this page"
keys '$'
expect "\$ at 120x30 shows the last column" " 15"
# " 15" may be on the screen before the rows are drawn again: wait (20 s at most) for row
# 0's last cell to be its last value.
for i in $(seq 200); do
	got=$(cells 0)
	[ "${got##* }" = "${row0##* }" ] && break
	sleep 0.1
done
ok $([ -n "$got" ] && row_whole 0 "$got" && [ "${got##* }" = "${row0##* }" ]; echo $?) \
	"with row 0's values whole up to the last: '$got'"
keys 0
for _ in $(seq 30); do keys NPage; done
expect "page down past the page's end reads on from the next row" "rows 512-1023 of 1200"
keys G
expect "G reads the last page" "rows 688-1199 of 1200"
expect "and shows the last row" "1199 "
keys g
expect "g goes back to row 0" "rows 0-511 of 1200"
keys s
expect "s computes the statistics of every row as a job" "each column over all 1200 rows"
expect "and says where they are" "in the sheet's last lines"
# The std line and the rest against NumPy: each shown number is %.4g of the float64 value.
screen > "$WORK/sheet.txt"
"$PY" - "$WORK/sheet.txt" "$WORK/expect.txt" << 'PYEOF'
import sys
lines = open(sys.argv[1]).read().splitlines()
exp = {}
for l in open(sys.argv[2]):
    c, *v = l.split()
    exp[int(c)] = [float(x) for x in v]
head = next(i for i, l in enumerate(lines) if l.split()[:3] == ['0', '1', '2'] or l.strip().startswith('0 '))
cols = [int(x) for x in lines[head].split() if x.isdigit()]
bad, seen = [], 0
for k, name in enumerate(['min', 'max', 'mean', 'std']):
    row = next(l for l in lines if l.split() and l.split()[0] == name)
    vals = row.split()[1:]
    if len(vals) != len(cols):
        bad.append(f"{name}: {len(vals)} values for {len(cols)} columns")
        continue
    for c, v in zip(cols, vals):
        want = exp[c][k]
        seen += 1
        if abs(float(v) - want) > 5e-4 * max(abs(want), 1e-3) + 1e-9 and v != '%.4g' % want:
            bad.append(f"{name} of column {c}: {v} vs {want!r}")
print(f"# {seen} numbers compared")
for b in bad:
    print("# " + b)
sys.exit(1 if bad or seen < 40 else 0)
PYEOF
ok $? "min, max, mean and std of every column shown match NumPy's over all 1200 rows"
keys q
ok $(tui_exited; echo $?) "q quits"

out=$($M stats vec emb --json)
"$PY" - "$WORK/expect.txt" "$out" << 'PYEOF'
import json, sys
s = json.loads(sys.argv[2])
c = s["columns"]
bad = []
for l in open(sys.argv[1]):
    k, *v = l.split()
    k = int(k)
    for name, want in zip(["min", "max", "mean", "std"], map(float, v)):
        got = c[name][k]
        if abs(got - want) > 1e-9 * max(abs(want), 1):
            bad.append(f"{name}[{k}] {got!r} != {want!r}")
print("\n".join("# " + b for b in bad))
sys.exit(1 if bad or len(c["mean"]) != 16 else 0)
PYEOF
ok $? "the kept statistics (stats --json, from the catalog) hold each column's numbers to 1e-9 of NumPy's"
ok $([[ $($M stats vec emb) == *"from the catalog"* ]]; echo $?) "they were kept per version in the catalog"

tui_start 120 30 tui --open vec
expect "the browser opens on vec's versions" "v1"
keys Enter A g Enter
expect "a sheet opened again shows the kept per-column statistics at once" "each column over all 1200 rows"
keys BSpace / label Enter b
expect "b on the label computes and opens its frequency view" "frequency label"
expect "class balance first" "class balance: 4 classes; largest 3 50.00%, smallest 1 8.33%, ratio 6.00:1"
screen > "$WORK/freq.txt"
sed 's/^/# | /' "$WORK/freq.txt"
got=$(awk '$1 ~ /^[0-9]+$/ && $3 ~ /%$/ { printf "%s:%s:%s ", $1, $2, $3 }' "$WORK/freq.txt")
ok $([ "$got" = "3:600:50.00% 0:300:25.00% 7:200:16.67% 1:100:8.33% " ]; echo $?) \
	"values by count, largest first, with shares: $got"
ok $(grep '^ *3 *600' "$WORK/freq.txt" | grep -q '█'; echo $?) "with a bar"
keys BSpace Enter
expect "the matrix viewer on the label" "rows 0-"
keys b
expect "b there opens the frequency view from the kept statistics" "from the catalog"
keys BSpace BSpace / emb Enter b
expect "b on a float vector says why there is no frequency view" "counts are kept for integer attributes"
keys q
ok $(tui_exited; echo $?) "q quits"
done_testing
