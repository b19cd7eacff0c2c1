#!/bin/bash
# cli-model.sh — model checkpoints through the command: safetensors import/export read by an independent reader, dedup measured in store bytes, bad files, keep + gc, rm, verify, push/pull.
# With MT_TEST_STORE=s3 the stores are S3 prefixes behind the signing proxy (s3-model.sh).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE

# An independent safetensors writer and reader (struct + json + numpy only), and the
# tensors every case compares against, made from a fixed seed.
cat > "$WORK/st.py" <<'EOF'
import json, struct, sys
import numpy as np

CODES = {'float32': 'F32', 'float64': 'F64', 'float16': 'F16', 'int64': 'I64', 'int32': 'I32',
         'int16': 'I16', 'int8': 'I8', 'uint8': 'U8', 'bool': 'BOOL'}
DTYPES = {v: k for k, v in CODES.items()}

def tensors(variant):
    rng = np.random.default_rng(1234)  # seed printed by the test
    t = {'encoder.layer.0.weight': rng.standard_normal((256, 512)).astype(np.float32),
         'encoder.layer.0.bias': rng.standard_normal(512).astype(np.float32),
         'embed': rng.integers(0, 1000, (100, 16)).astype(np.int64),
         'mask': rng.integers(0, 2, 33).astype(bool),
         'half': rng.standard_normal((3, 5)).astype(np.float16),
         'scalar': np.array(2.5, dtype=np.float64)}
    if variant == 'b':  # one small tensor changes
        t['encoder.layer.0.bias'] = t['encoder.layer.0.bias'] + 1
    return t

def write(path, variant, dtype_override=None):
    hdr, blobs, off = {}, [], 0
    for k, a in tensors(variant).items():
        b = a.astype(a.dtype.newbyteorder('<')).tobytes()
        hdr[k] = {'dtype': dtype_override or CODES[a.dtype.name], 'shape': list(a.shape),
                  'data_offsets': [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hdr['__metadata__'] = {'source': 'test'}
    h = json.dumps(hdr).encode()
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))

def read(path):
    data = open(path, 'rb').read()
    n, = struct.unpack('<Q', data[:8])
    hdr = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    ends = []
    for k, e in hdr.items():
        if k == '__metadata__':
            continue
        b, en = e['data_offsets']
        ends.append((b, en))
        out[k] = np.frombuffer(body[b:en], dtype=np.dtype(DTYPES[e['dtype']]).newbyteorder('<')).reshape(e['shape'])
    ends.sort()
    assert ends[0][0] == 0 and ends[-1][1] == len(body), 'data not covered exactly'
    assert all(a[1] == b[0] for a, b in zip(ends, ends[1:])), 'holes or overlaps'
    return hdr, out

cmd = sys.argv[1]
if cmd == 'write':
    write(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
elif cmd == 'check':
    hdr, got = read(sys.argv[2])
    want = tensors(sys.argv[3])
    assert list(got) == list(want), (list(got), list(want))
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        assert np.array_equal(got[k], want[k]), k
    print(json.dumps(hdr['__metadata__']))
EOF
st() { "$PY" "$WORK/st.py" "$@"; }
echo "# tensors from numpy seed 1234"

# obj_bytes PREFIX: the bytes of every object under PREFIX.
obj_bytes() {
	if [ "$OBJ_MODE" = s3 ]; then
		aws_cli s3 ls --recursive "$OBJ_BASE/$1" | awk '{ s += $3 } END { print s + 0 }'
	else
		find "$OBJ_BASE/$1" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
	fi
}

st write "$WORK/a.safetensors" a
st write "$WORK/b.safetensors" b
check "import a safetensors file" $M model import net "$WORK/a.safetensors"
out=$($M model info net@v1)
ok $(grep -q $'^encoder.layer.0.weight\tfloat32\t(256,512)\t524288\t' <<< "$out"; echo $?) \
	"info lists each tensor's dtype, shape and bytes"
check "export it" $M model export net -o "$WORK/out.safetensors"
check "an independent reader gets the same tensors back" st check "$WORK/out.safetensors" a
check "export of a named checkpoint" $M model export net@v1 -o "$WORK/out1.safetensors"

# Dedup: a second checkpoint changing one small tensor stores only that tensor.
before=$(obj_bytes models/net/tensors)
check "import a checkpoint with one changed tensor" $M model import net "$WORK/b.safetensors"
after=$(obj_bytes models/net/tensors)
grown=$((after - before))
ok $([ "$grown" -gt 0 ] && [ "$grown" -le 2100 ]; echo $?) \
	"the store grew by the changed tensor alone: $grown bytes of $before"
out=$($M model info net)
ok $(grep -q $'^encoder.layer.0.bias\t.*\tnew$' <<< "$out" &&
	grep -q $'^encoder.layer.0.weight\t.*\tshared$' <<< "$out"; echo $?) \
	"info marks the changed tensor new, the rest shared with the previous checkpoint"
check "the second checkpoint exports as the changed tensors" bash -c \
	"$M model export net@v2 -o $WORK/out2.safetensors && $PY $WORK/st.py check $WORK/out2.safetensors b"

# Round trip: what export writes, import takes back, metadata included.
check "re-import an exported file" $M model import copy "$WORK/out.safetensors"
check "its export matches the first, bytes for bytes after the header" bash -c \
	"$M model export copy -o $WORK/rt.safetensors && $PY $WORK/st.py check $WORK/rt.safetensors a"
ok $(st check "$WORK/rt.safetensors" a | grep -q '"source": "test"'; echo $?) "metadata survives the round trip"

# Bad files: a clear error naming the file, nothing committed.
head -c 100000 "$WORK/a.safetensors" > "$WORK/trunc.safetensors"
fails "a truncated file is refused, naming it" 1 "trunc.safetensors.*(truncated|do not hold)" \
	$M model import net "$WORK/trunc.safetensors"
head -c 4 "$WORK/a.safetensors" > "$WORK/tiny.safetensors"
fails "a 4-byte file is refused" 1 "tiny.safetensors: not a safetensors file" \
	$M model import net "$WORK/tiny.safetensors"
printf '\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}' > "$WORK/junk.safetensors"
fails "a header that is not JSON is refused" 1 "junk.safetensors: not a safetensors file" \
	$M model import net "$WORK/junk.safetensors"
st write "$WORK/f8.safetensors" a F8_E4M3
fails "an unsupported dtype is refused, naming it" 1 "f8.safetensors: tensor '.*': dtype F8_E4M3 is not supported" \
	$M model import net "$WORK/f8.safetensors"
fails "a bad model name is refused" 1 "model" $M model import 'bad/name' "$WORK/a.safetensors"
ok $([ "$($M model ls net | tail -n +2 | wc -l)" = 2 ]; echo $?) "nothing was committed by the failures"
fails "a missing checkpoint" 1 "no checkpoint v9" $M model info net@v9
fails "an unknown model subcommand" 2 "not one of" $M model frob

# verify, and damage it names.
check "verify every checkpoint" $M verify model:net
sha=$($M model info net@v2 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["tensors"]["encoder.layer.0.bias"]["sha256"])')
obj_get "models/net/tensors/$sha" "$WORK/obj"
cp "$WORK/obj" "$WORK/obj.bad"
printf 'XXXX' | dd of="$WORK/obj.bad" bs=1 seek=12 conv=notrunc 2> /dev/null
obj_put "$WORK/obj.bad" "models/net/tensors/$sha"
fails "verify names a damaged tensor object" 1 "$sha" $M verify model:net@v2
fails "export refuses to write damaged data" 1 "$sha" $M model export net@v2 -o "$WORK/bad.safetensors"
ok $([ ! -e "$WORK/bad.safetensors" ]; echo $?) "and leaves no file"
obj_put "$WORK/obj" "models/net/tensors/$sha"
check "verify passes once the object is back" $M verify model:net@v2

# push / pull: only tensors the other side lacks travel.
B="$OBJ_BASE-b" C="$OBJ_BASE-c"
out=$($M push model:net@v1 "$B" 2>&1)
ok $? "push the first checkpoint to a second store"
ok $(grep -q "1 checkpoint(s) copied.* 6 tensor(s) sent" <<< "$out"; echo $?) "all 6 tensors sent: $out"
out=$($M push model:net "$B" 2>&1)
ok $(grep -q "1 checkpoint(s) copied.*1 already there; 1 tensor(s) sent" <<< "$out"; echo $?) \
	"pushing every checkpoint sends only the changed tensor: $out"
check "the copy verifies" $M --store "$B" verify model:net
check "pull into a third store" $M --store "$C" pull "$B" model:net@latest
check "the pulled checkpoint exports the same tensors" bash -c \
	"$M --store '$C' model export net -o $WORK/c.safetensors && $PY $WORK/st.py check $WORK/c.safetensors b"

# keep N, rm, gc.
check "import with --keep 2" $M model import net "$WORK/a.safetensors" --keep 2
ok $([ "$($M model ls net | tail -n +2 | cut -f1 | tr '\n' ' ')" = "v2 v3 " ]; echo $?) \
	"only the newest two checkpoints remain"
fails "a removed checkpoint cannot be opened" 1 "no checkpoint v1" $M model info net@v1
check "rm a checkpoint" $M rm model:net@v2
fails "rm needs a version" 1 "name the checkpoint" $M rm model:net
out=$($M gc --grace 0 model:net)
ok $(grep -q "^1 objects" <<< "$out"; echo $?) "gc finds the changed tensor no checkpoint names: $out"
check "gc --delete" $M gc --delete --grace 0 model:net
check "what remains verifies" $M verify model:net
ok $([ "$(obj_ls models/net/tensors | wc -l)" = 6 ]; echo $?) "six tensor objects remain"
out=$($M model ls)
ok $(grep -q $'^net\t1 checkpoint(s)\tlatest v3' <<< "$out"; echo $?) "model ls lists the models: $out"

done_testing
