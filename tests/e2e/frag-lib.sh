# frag-lib.sh — a format-2 dataset for the browser's fragment tests: 48 rows in 24 two-row shards, 4 shards a fragment, so 6 fragments, fragment j rows 8j..8j+7.
# Sourced after lib.sh and store.sh: obj_* and these reach its objects in a file store or on S3.

# frag_put DATASET: DATASET@v1 so, protected with 2+1 parity (fragments in groups of two:
# 0 and 1, 2 and 3, 4 and 5), each step a case.
frag_put() {
	[ -f "$WORK/x.npy" ] || "$PY" -c "import numpy as n; n.save('$WORK/x.npy', (n.arange(48 * 3, dtype='int32') * 7 - 5).reshape(48, 3))"
	check "put $1: 24 shards in format 2" env MATORAGE_MANIFEST_FORMAT=2 MATORAGE_FRAGMENT_SHARDS=4 \
		"$MATORAGE" put "$1" x="$WORK/x.npy" --shard-rows 2
	local n
	n=$(obj_sums "datasets/$1/fragments/" | wc -l)
	ok $([ "$n" -eq 6 ]; echo $?) "6 fragments (got $n)"
	check "protect $1@v1 with 2+1 parity (fragments in groups of two)" "$MATORAGE" protect "$1@v1" --parity 2+1
}

# frag_keys DATASET J...: the keys of fragments J... of DATASET@v1, one a line.
frag_keys() {
	local ds=$1
	shift
	"$PY" "$top_srcdir/tests/e2e/obj_tool.py" "$OBJ_BASE" "${S3_ENDPOINT:-}" cat "datasets/$ds/versions/v1.json" |
		"$PY" -c "import json, sys
f = json.load(sys.stdin)['fragments']
for j in sys.argv[1:]: print('datasets/$ds/fragments/%s.json' % f[int(j)]['sha256'])" "$@"
}

# frag_rm BASE KEY...: the objects deleted under BASE (a directory, or s3://BUCKET/PREFIX), on S3
# with one awscli call.
frag_rm() {
	local base=$1 k
	shift
	if [ "${base#s3://}" = "$base" ]; then
		for k in "$@"; do rm -f "$base/$k"; done
		return
	fi
	local inc=()
	for k in "$@"; do inc+=(--include "$k"); done
	aws_cli s3 rm --quiet --recursive "$base/" --exclude '*' "${inc[@]}"
}
