#!/bin/bash
# manifest-caps.sh — manifests and their strings have size caps (doc/FORMAT.md, "Size caps"): writers refuse to go over them, readers refuse a crafted manifest over them with a clear error naming the key, in bounded time and memory.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
S="$WORK/store"
export MATORAGE_STORE="file://$S"
$T make "$WORK/x.npy" float32 30x4 1
check "put d" $M put d x="$WORK/x.npy" --description "a small one"
check "put e (an unrelated dataset)" $M put e x="$WORK/x.npy"

# Writers: a description over 64 KiB, a tag over 256 bytes, too many tags.
big=$(head -c 70000 /dev/zero | tr '\0' 'a')
fails "put refuses a 70 KB description, naming the cap" 1 "description is 70000 bytes, over its cap of 65536" \
	$M put d2 x="$WORK/x.npy" --description "$big"
ok $(! $M ls 2>/dev/null | grep -qx d2; echo $?) "nothing was committed"
fails "describe refuses it too" 1 "description is 70000 bytes, over its cap" \
	$M describe d@v1 --description "$big"
fails "describe refuses a 300-byte tag" 1 "a tag is 300 bytes, over its cap of 256" \
	$M describe d@v1 --tag "$(head -c 300 /dev/zero | tr '\0' 't')"
check "a 60 KB description is fine" $M describe d@v1 --description "${big:0:60000}"

# craft DESC_BYTES: d@v2, a self-consistent manifest (checksum fixed up) with that description.
craft() {
	"$PY" - "$S/datasets/d/versions/v1.json" "$S/datasets/d/versions/v2.json" "$1" <<'PYEOF'
import hashlib, json, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
m = json.loads(open(src, "rb").read())
del m["checksum"]
m["version"] = "v2"
m["parent"] = "v1"
m["created"] = "2030-01-01T00:00:00.000Z"
m["description"] = "x" * n
t = json.dumps(m, separators=(",", ":")).encode()
open(dst, "wb").write(t[:-1] + b',"checksum":"sha256:' + hashlib.sha256(t).hexdigest().encode() + b'"}')
PYEOF
}
# rss_run NAME CMD...: run under /usr/bin/time, expect exit 1 naming v2.json; report seconds and max RSS.
rss_run() {
	local name=$1 rc kb s
	shift
	/usr/bin/time -f "%e %M" -o "$WORK/time" "$@" > "$WORK/out" 2>&1
	rc=$?
	read -r s kb < <(tail -1 "$WORK/time")
	ok $([ $rc -eq 1 ] && grep -q "v2.json" "$WORK/out" && [ "$kb" -lt "$RSS_MAX_KB" ]; echo $?) \
		"$name: exit $rc in $s s, max RSS $((kb / 1024)) MiB (bound $((RSS_MAX_KB / 1024)) MiB): $(grep v2.json "$WORK/out" | head -1 | cut -c1-200)"
}

# A 40 MB description: refused before the JSON parser sees it.
craft 40000000
RSS_MAX_KB=$(( (40 * 1024 + 300 * 1024) ))
for c in "verify d@v2" "cat d@v2 x --rows 0:1" "info d@v2" "stats d@v2" "protect d@v2 --parity 2+1" \
	"push d@v2 file://$WORK/dst"; do
	# shellcheck disable=SC2086
	rss_run "40 MB description: $c" timeout 120 $M $c
done
out=$($M ls -l 2>&1)
ok $(grep -q "^e  *1 v1" <<< "$out" && grep -q "v2.json.*65536" <<< "$out"; echo $?) \
	"ls -l lists the other dataset and names the refused manifest"
check "the unrelated dataset reads" $M cat e x --rows 0:1

# An object over the 512 MiB cap (sparse): refused from its size, never read.
rm "$S/datasets/d/versions/v2.json"
truncate -s 600M "$S/datasets/d/versions/v2.json"
RSS_MAX_KB=$(( 300 * 1024 ))
rss_run "a 600 MB manifest object is refused from its size" timeout 60 $M verify d@v2
grep -q "over the cap of 536870912 bytes" "$WORK/out"
ok $? "the error names the cap"
rm "$S/datasets/d/versions/v2.json"
check "d@v1 still verifies" $M verify d@v1

done_testing
