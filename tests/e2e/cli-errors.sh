#!/bin/bash
# cli-errors.sh — bad input gets one clear line naming the file/key/row, exit status ≠ 0, and nothing committed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"

nothing_committed() { ! $M ls 2>/dev/null | grep -qx "$1"; }

$T make "$WORK/good.npy" float32 50x8 1
head -c 1000 "$WORK/good.npy" > "$WORK/trunc.npy"
fails "truncated .npy is refused, naming the file" 1 "trunc.npy.*truncat" $M put bad1 x="$WORK/trunc.npy"
ok $(nothing_committed bad1; echo $?) "truncated input commits nothing"

$PY -c "import numpy as np; np.save('$WORK/obj.npy', np.array([1, 'a', None], dtype=object), allow_pickle=True)"
fails "object-dtype .npy is refused" 1 "obj.npy.*object" $M put bad2 x="$WORK/obj.npy"
$PY -c "import numpy as np; np.save('$WORK/cplx.npy', np.zeros(4, dtype=np.complex64))"
fails "unknown dtype (complex64) is refused" 1 "cplx.npy.*(unsupported|dtype)" $M put bad3 x="$WORK/cplx.npy"
$T make "$WORK/short.npy" int64 49 1
fails "mismatched row counts name both files" 1 "good.npy.*50.*short.npy.*49|short.npy.*49.*good.npy.*50" \
	$M put bad4 a="$WORK/good.npy" b="$WORK/short.npy"
ok $(nothing_committed bad4; echo $?) "mismatched rows commit nothing"
fails "missing input file is named" 1 "nosuch.npy" $M put bad5 x="$WORK/nosuch.npy"
$PY -c "import numpy as np; np.save('$WORK/scalar.npy', np.float32(3))"
fails "a 0-d array has no rows" 1 "scalar.npy" $M put bad6 x="$WORK/scalar.npy"
fails "bad dataset name" 1 "dataset name" $M put 'no/slash' x="$WORK/good.npy"

# .npy files: bytes after the array, a NUL in the header, a zero-row array of huge rows.
cp "$WORK/good.npy" "$WORK/trail.npy"
printf 'xyz' >> "$WORK/trail.npy"
fails "bytes after the array are refused, naming the file and how many" 1 \
	"trail.npy: 3 extra bytes after the array" $M put bad7 x="$WORK/trail.npy"
ok $(nothing_committed bad7; echo $?) "trailing bytes commit nothing"
"$PY" -c "
import sys
d = bytearray(open('$WORK/good.npy', 'rb').read())
d[d.index(b':')] = 0
open('$WORK/nul.npy', 'wb').write(d)"
fails "a NUL in the header is shown escaped, the message whole" 1 \
	"nul.npy: .npy header: .x00 at byte [0-9]+ where ':' after a key was expected" \
	$M put bad8 x="$WORK/nul.npy"
"$PY" -c "
import numpy as np
np.lib.format.open_memmap('$WORK/huge0.npy', mode='w+', dtype=np.float64, shape=(0, 2**37))"
check "a (0, 2**37) float64 array stores as 0 rows, no row buffer needed" \
	$M put huge0 x="$WORK/huge0.npy"
check "and reads back as (0, 2**37)" bash -c "$M get huge0 x -o $WORK/huge0-back.npy &&
	$PY -c \"import numpy as np; assert np.load('$WORK/huge0-back.npy', mmap_mode='r').shape == (0, 2**37)\""

# Usage errors exit 2.
fails "unknown command" 2 "unknown command|usage" $M frobnicate
fails "put without arguments" 2 "usage|put" $M put
fails "get without -o" 2 "usage|-o|output" $M get ds x
fails "bad --rows" 2 "rows" $M get ds x -o "$WORK/o.npy" --rows 5:abc
fails "bad --shard-size" 2 "shard-size" $M put ds x="$WORK/good.npy" --shard-size lots
# 0 is what the library takes for "the default": from the command line it is refused.
for o in "--shard-size 0" "--chunk-size 0" "--shard-rows 0" "--threads 0" "--chunk-size 0K"; do
	# shellcheck disable=SC2086
	fails "put $o is a usage error naming the option" 2 "${o%% *}: '${o#* }'" \
		$M put ds x="$WORK/good.npy" $o
done
echo 'return 1' > "$WORK/one.lua"
fails "run --max-instructions 0 is a usage error naming the option" 2 "--max-instructions: '0'" \
	$M run "$WORK/one.lua" --max-instructions 0
# The memory and time limits have defaults, so 0 is the way to ask for none.
for o in "--max-memory 0" "--max-time 0"; do
	# shellcheck disable=SC2086
	check "run $o runs with no such limit" $M run "$WORK/one.lua" $o
done
ok $(nothing_committed ds; echo $?) "none of them committed anything"
fails "rm needs an explicit version" 2 "version|usage" $M rm ds

# Damage in the store.
check "a sound dataset to damage" $M put dmg x="$WORK/good.npy" --shard-rows 10 --chunk-size 64
fails "row range past the end" 1 "50" $M get dmg x -o "$WORK/o.npy" --rows 40:60
fails "unknown attribute" 1 "nope" $M get dmg nope -o "$WORK/o.npy"
fails "unknown version" 1 "dmg@v9" $M info dmg@v9

mapfile -t shards < <(obj_ls datasets/dmg/shards/)
# Flip one byte in the middle of the second shard's first chunk.
obj_get "${shards[1]}" "$WORK/shard.h5"
$PY - "$WORK/shard.h5" <<'PYEOF'
import sys, json, struct
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
# The chunk index is the contiguous dataset "_matorage_index"; find it by its magic.
ix = data.rfind(b"MTIX")
version, n = struct.unpack_from("<II", data, ix + 4)
p = ix + (20 if version >= 2 else 12)
nl = struct.unpack_from("<I", data, p)[0]
p += 4 + nl + 4
if version >= 2:
    p += 4 + 8 * struct.unpack_from("<I", data, p)[0]
p += 8 * 4
off, size = struct.unpack_from("<QQ", data, p)
data[off + size // 2] ^= 0x55
open(path, "wb").write(bytes(data))
PYEOF
obj_put "$WORK/shard.h5" "${shards[1]}"
sha=$(basename "${shards[1]}" .h5)
out=$($M verify dmg 2>&1)
rc=$?
ok $([ $rc -eq 1 ] && echo "$out" | grep -q "$sha" && [ "$(echo "$out" | grep -c "$sha")" -eq 1 ]; echo $?) \
	"verify exits 1 with one line for the damaged shard"
echo "$out" | sed 's/^/# /'
# Which rows does the damaged shard hold? Find its first_row in the manifest.
first=$($M info dmg --json | $PY -c "import json,sys; m=json.load(sys.stdin); print([s['first_row'] for s in m['shards'] if s['sha256']=='$sha'][0])")
fails "get refuses the damaged rows, naming shard and rows" 1 "$sha.*(rows|checksum)" \
	$M get dmg x -o "$WORK/o.npy" --rows "$first:$((first + 1))"
ok $([ ! -e "$WORK/o.npy" ] || ! $T same "$WORK/good.npy" "$WORK/o.npy" "$first:$((first + 1))" 2>/dev/null; echo $?) \
	"no output file with the damaged rows"
sound=$($M info dmg --json | $PY -c "import json,sys; m=json.load(sys.stdin); s=[s for s in m['shards'] if s['sha256']!='$sha'][0]; print('%d:%d' % (s['first_row'], s['first_row'] + s['rows']))")
check "rows $sound of a sound shard still come back" bash -c "$M get dmg x -o $WORK/o2.npy --rows $sound && $T same $WORK/good.npy $WORK/o2.npy $sound"

obj_rm "${shards[2]}"
sha2=$(basename "${shards[2]}" .h5)
fails "missing shard object is named" 1 "$sha2" $M get dmg x -o "$WORK/o.npy"
out=$($M verify dmg 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "$sha2.*missing\|missing.*$sha2"; echo $?) "verify reports the missing shard"

echo '{"format": 1, "dataset": "dmg", ' > "$WORK/bad.json"
obj_put "$WORK/bad.json" datasets/dmg/versions/v1.json
fails "corrupt manifest is named" 1 "datasets/dmg/versions/v1.json" $M info dmg@v1
fails "corrupt manifest blocks get" 1 "versions/v1.json" $M get dmg@v1 x -o "$WORK/o.npy"
fails "gc refuses while a manifest is unreadable" 1 "v1.json" $M gc dmg --delete --grace 0

# Readers create nothing: a mistyped --store is an error naming it, and no directory appears.
NS="$WORK/no/such/store"
for c in "ls" "ls -l" "ls ds" "info ds" "cat ds x" "verify ds" "gc" "rm ds@v1" "get ds x -o $WORK/o.npy"; do
	# shellcheck disable=SC2086
	fails "$c on a missing store names it" 1 "no store at $NS" $M --store "$NS" $c
done
fails "push from a missing store" 1 "no store at $NS" $M --store "$NS" push ds "$WORK/dst"
fails "pull from a missing store" 1 "no store at $NS" $M --store "$WORK/dst" pull "$NS" ds
fails "sync from a missing store" 1 "no store at $NS" $M sync "$NS" "$WORK/dst"
ok $([ ! -e "$WORK/no" ] && [ ! -e "$WORK/dst" ]; echo $?) "none of them created a directory"
# A fresh account: ls and search of the default store and catalog print nothing and make nothing.
fresh=(env -u MATORAGE_STORE -u MATORAGE_CATALOG HOME="$WORK/home" XDG_DATA_HOME="$WORK/home/data")
check "ls with a fresh home" "${fresh[@]}" $M ls
check "search with a fresh home" "${fresh[@]}" $M search anything
ok $([ ! -e "$WORK/home" ]; echo $?) "neither made the data directory, the store or the catalog"
# Without HOME, ~ is the password database's home for the AWS files too, as for the
# store and the catalog (not the working directory).
pwhome=$(getent passwd "$(id -u)" | cut -d: -f6)
if [ -n "$pwhome" ]; then
	fails "HOME unset: a missing AWS profile names the files under the account's home" 1 \
		"$pwhome/.aws/credentials nor $pwhome/.aws/config" \
		env -u HOME -u AWS_SHARED_CREDENTIALS_FILE -u AWS_CONFIG_FILE $M \
		--store s3://matorage-test --endpoint http://127.0.0.1:9 \
		--profile matorage-test-no-such-profile ls
else
	ok 0 "# SKIP user $(id -u) has no home in the password database"
fi
# Writers make the store they write to.
check "put makes a missing store" $M --store "$WORK/made/here" put ds x="$WORK/good.npy"
check "a copy makes its missing destination" $M --store "$WORK/made/here" push ds "$WORK/made/there"

# The browser needs a terminal: without one it refuses at once instead of waiting for keys.
start=$SECONDS
fails "tui with standard input not a terminal" 2 "must be a terminal" timeout 10 $M tui < /dev/null
ok $([ $((SECONDS - start)) -lt 10 ]; echo $?) "and says so at once"
# On a terminal (a pseudo-terminal here): standard output elsewhere is refused too; and a
# terminal that closes under the browser (end of input, read errors) ends it, where it used
# to spin on the errors forever.
cat > "$WORK/pty.py" << 'PYEOF'
import os, subprocess, sys, time
m, s = os.openpty()
env = dict(os.environ, TERM="xterm")
if sys.argv[1] == "pipe-out":
    p = subprocess.run(sys.argv[2:], stdin=s, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=10)
    print("exit %d: %s" % (p.returncode, p.stderr.decode().strip()))
    sys.exit(0 if p.returncode == 2 else 1)
p = subprocess.Popen(sys.argv[2:], stdin=s, stdout=s, stderr=subprocess.PIPE, env=env)
os.close(s)
os.set_blocking(m, False)
end = time.time() + 1.5
while time.time() < end:  # let it draw, then close the terminal under it
    try:
        os.read(m, 65536)
    except BlockingIOError:
        time.sleep(0.05)
    except OSError:
        break
os.close(m)
try:
    rc = p.wait(timeout=10)
except subprocess.TimeoutExpired:
    p.kill()
    sys.exit("still running 10 s after its terminal closed")
print("exit %d: %s" % (rc, p.stderr.read().decode().strip()))
sys.exit(0 if rc == 1 else 1)
PYEOF
out=$(timeout 30 "$PY" "$WORK/pty.py" pipe-out $M tui --read-only 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "must be a terminal"; echo $?) \
	"tui with standard output not a terminal ($out)"
out=$(timeout 30 "$PY" "$WORK/pty.py" close $M tui 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "terminal closed"; echo $?) \
	"tui leaves when its terminal closes ($out)"

done_testing
