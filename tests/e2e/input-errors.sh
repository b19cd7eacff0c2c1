#!/bin/bash
# input-errors.sh — inputs that were taken silently or refused vaguely now get one line naming what is wrong: a key given twice in an ingest record, a bad tensor key or matorage.state in model import, an empty -o.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
export MATORAGE_STORE="file://$WORK/store"

# ingest: a key twice in one record is an error naming the line and the key, not "the last wins".
fails "ingest: a key given twice names the line and the key" 1 "line 2: field x: given twice" \
	bash -c "printf '{\"x\": [1, 2], \"y\": 1}\n{\"x\": [1, 2], \"y\": 2, \"x\": [3, 4]}\n' |
		$M ingest dup --attr x=float32:2 --attr y=int64"
ok $(! $M cat dup x 2>/dev/null | grep -q "3"; echo $?) "the duplicated value was never stored"
check "ingest of the same records without the duplicate works" bash -c \
	"printf '{\"x\": [1, 2], \"y\": 1}\n' | $M ingest nodup --attr x=float32:2 --attr y=int64"

# model import: safetensors files with a bad key or a bad matorage.state.
"$PY" - "$WORK" <<'PYEOF'
import json, struct, sys
d = sys.argv[1]
t = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
def w(name, h):
    b = json.dumps(h).encode()
    open(f"{d}/{name}.safetensors", "wb").write(struct.pack("<Q", len(b)) + b + b"\0" * 8)
w("empty", {"": t})
w("ctrl", {"a\x01b": t})
w("long", {"k" * 2048: t})
w("badstate", {"w": t, "__metadata__": {"matorage.state": "{not json"}})
w("numstate", {"w": t, "__metadata__": {"matorage.state": 5}})
w("good", {"w": t})
PYEOF
fails "import: an empty tensor key is named as such" 1 "empty.safetensors: nothing committed: .*tensor key must not be empty" \
	$M model import m1 "$WORK/empty.safetensors"
fails "import: a control character in a key is named, without printing it" 1 \
	"ctrl.safetensors: nothing committed: .*tensor key 'a\.\.\.' holds a control character \(byte 0x01 at offset 1\)" \
	$M model import m2 "$WORK/ctrl.safetensors"
out=$($M model import m2 "$WORK/ctrl.safetensors" 2>&1)
ok $(! printf '%s' "$out" | grep -q $'\x01'; echo $?) "the control character itself is not printed"
fails "import: a 2 KB key says how long it is and the limit" 1 "is 2048 bytes, longer than the 1024" \
	$M model import m3 "$WORK/long.safetensors"
fails "import: a matorage.state that is not JSON is named with the reason" 1 \
	'badstate.safetensors: __metadata__ "matorage.state": .*not valid JSON' \
	$M model import m4 "$WORK/badstate.safetensors"
fails "import: a matorage.state that is not a string is refused, not ignored" 1 \
	'numstate.safetensors: __metadata__ "matorage.state" is not a string' \
	$M model import m5 "$WORK/numstate.safetensors"
ok $(! $M model ls 2>/dev/null | grep -q "^m[1-5]"; echo $?) "none of them committed a checkpoint"
check "a good file imports" $M model import m6 "$WORK/good.safetensors"
for f in empty ctrl long badstate; do
	n=$($M model import "x$f" "$WORK/$f.safetensors" 2>&1 | wc -l)
	ok $([ "$n" -eq 1 ]; echo $?) "import of $f: one line of error ($n)"
done

# get -o '': a usage error (exit 2), not a rename error.
$T make "$WORK/x.npy" float32 4x2 1
check "put g" $M put g x="$WORK/x.npy"
fails "get -o '' is a usage error" 2 "-o '' names no file" $M get g x -o ''
fails "get --lengths '' too" 2 "--lengths '' names no file" $M get g x -o "$WORK/o.npy" --lengths ''
fails "model export -o '' is a usage error" 2 "give the file to write" $M model export m6 -o ''

done_testing
