#!/bin/bash
# s3-repair-format2.sh — protection and repair of format-2 versions (a root and content-addressed fragments) on S3 (s3rver behind the signing proxy): a fragment object deleted, truncated or edited is named by verify and rebuilt byte for byte from parity, a lost root comes back from the record, gc keeps the fragments' parity, a push carries it so that repair --from another S3 prefix mends what parity cannot, and a fragment an unprotected parent shares with its protected child is rebuilt from the child's parity.
# MT_TEST_STORE=file runs the same cases on the file store.
: "${MT_TEST_STORE:=s3}"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE
export MATORAGE_CONFIG="$WORK/conf/matorage.json" # no remotes: only --from is another store
# 4 shards a fragment: 32 rows in 16 two-row shards make 4 fragments, fragment j rows 8j..8j+7.
export MATORAGE_MANIFEST_FORMAT=2 MATORAGE_FRAGMENT_SHARDS=4
$PY -c "
import numpy as n
n.save('$WORK/x.npy', (n.arange(32 * 3, dtype='int32') * 7 - 5).reshape(32, 3))
n.save('$WORK/y.npy', n.full((2, 3), 9, dtype='int32'))"

# One client process a call (an aws call costs seconds on a loaded machine).
obj_cat() { "$PY" "$top_srcdir/tests/e2e/obj_tool.py" "$OBJ_BASE" "${S3_ENDPOINT:-}" cat "$1"; }
# frag FILE I: the sha256 of fragment I of the root in FILE.
frag() { $PY -c "import json; print(json.load(open('$1'))['fragments'][$2]['sha256'])"; }
# named_right SUMS: each "KEY SHA256" line of SUMS (obj_sums of fragments, fetched back from
# the store) has the sha256 its name says.
named_right() {
	local k h
	[ -s "$1" ] || return 1
	while read -r k h; do
		[ "$h" = "$(basename "$k" .json)" ] || { echo "# $k holds $h"; return 1; }
	done < "$1"
}

check "put d: 16 shards in format 2" $M put d x="$WORK/x.npy" --shard-rows 2
obj_cat datasets/d/versions/v1.json > "$WORK/root.json"
ok $(grep -q '"format":2' "$WORK/root.json"; echo $?) "d@v1 is a format-2 root"
check "protect d@v1 with 2+1 parity" $M protect d@v1 --parity 2+1
nfg=$(obj_cat datasets/d/protect/v1.json | $PY -c "import json, sys; r = json.load(sys.stdin); print(r['format'], len(r['fragment_groups']), sum(len(g['members']) for g in r['fragment_groups']))")
ok $([ "$nfg" = "2 2 4" ]; echo $?) "a format-2 record: 2 fragment groups cover the 4 fragments (got $nfg)"
$M get d@v1 x -o "$WORK/good.npy" > /dev/null 2>&1
obj_sums datasets/d/fragments/ > "$WORK/frag.sums"
n=$(wc -l < "$WORK/frag.sums")
ok $([ "$n" -eq 4 ]; echo $?) "4 fragment objects (got $n)"
check "every fragment object hashes to its name" named_right "$WORK/frag.sums"
f0=$(frag "$WORK/root.json" 0) f1=$(frag "$WORK/root.json" 1)
echo "# fragment 1 (rows 8..15) $f1; fragment 0 $f0"
K1=datasets/d/fragments/$f1.json

# sound NAME [get]: verify passes, the fragments fetched back are byte for byte the original
# ones; with get, get reads the original rows.
sound() {
	check "$1: verify d@v1 passes" $M verify d@v1
	obj_sums datasets/d/fragments/ > "$WORK/now.sums"
	check "$1: every fragment object's sha256 is the original's" cmp "$WORK/frag.sums" "$WORK/now.sums"
	[ -z "${2:-}" ] || check "$1: get d@v1 reads the original rows" bash -c "$M get d@v1 x -o $WORK/o.npy && cmp $WORK/good.npy $WORK/o.npy"
}

# damage_case NAME HOW: damage fragment 1's object, see verify name it, repair it from parity.
damage_case() {
	local name=$1 out rc
	obj_damage "$K1" "$2"
	fails "$name: verify fails naming version, fragment and rows" 1 \
		"d@v1: fragment $K1 \(rows 8 to 15, shards 4 to 7\)" $M verify d@v1
	out=$($M repair d@v1 2>&1)
	rc=$?
	ok $rc "$name: repair d@v1"
	ok $(echo "$out" | grep -q "rebuilt d@v1 fragment 1 (rows 8..15) $K1: .*; from parity"; echo $?) \
		"$name: repair says it rebuilt fragment 1 from parity"
	[ $rc -eq 0 ] || echo "$out" | sed 's/^/# /'
	sound "$name" ${3:-}
}
damage_case "fragment deleted" rm get
damage_case "fragment truncated" truncate
damage_case "fragment edited" flip

# The root lost: from the record.
obj_damage datasets/d/versions/v1.json rm
out=$($M verify d@v1 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q 'd@v1: damaged, repairable from protection record'; echo $?) \
	"root deleted: verify says the record brings it back"
out=$($M repair d@v1 2>&1)
ok $? "repair d@v1 with its root lost"
ok $(echo "$out" | grep -q 'rebuilt d@v1 manifest datasets/d/versions/v1.json: missing; from protection record'; echo $?) \
	"the root came from the protection record"
check "the root fetched back is byte for byte the original" bash -c \
	"$PY $top_srcdir/tests/e2e/obj_tool.py $OBJ_BASE '${S3_ENDPOINT:-}' cat datasets/d/versions/v1.json | cmp $WORK/root.json -"
sound "root deleted" get

# gc keeps the fragments' parity, which still rebuilds a fragment afterwards.
obj_sums datasets/d/parity/ > "$WORK/parity.before"
npar=$(wc -l < "$WORK/parity.before")
check "gc d --delete --grace 0" $M gc d --delete --grace 0
obj_damage "$K1" rm
obj_sums datasets/d/parity/ > "$WORK/parity.after"
check "gc kept every parity object, the fragments' included ($npar), byte for byte" cmp "$WORK/parity.before" "$WORK/parity.after"
check "after gc, repair rebuilds fragment 1 from parity" bash -c "$M repair d@v1 | grep -q 'rebuilt d@v1 fragment 1 (rows 8..15)'"
sound "after gc"

# A push to a second S3 prefix carries the record and the fragments' parity; with both
# fragments of a group gone parity cannot, --from can.
B=$OBJ_BASE/mirror
check "push d to a second prefix" $M push d "$B"
check "d@v1 verifies sound, protection included, in the mirror" bash -c "$M --store $B verify d@v1 | grep -q 'd@v1: sound'"
obj_sums mirror/datasets/d/parity/ | sed 's|^mirror/||' > "$WORK/parity.mirror"
check "the mirror holds the same $npar parity objects" cmp "$WORK/parity.before" "$WORK/parity.mirror"
obj_damage "$K1" rm
obj_damage "datasets/d/fragments/$f0.json" rm
fails "repair with 2 of a 2+1 group lost fails, naming the fragment" 1 \
	"d@v1: fragment 0 \(rows 0..7\): datasets/d/fragments/$f0.json: missing; no store holds it and its parity cannot rebuild it" \
	$M repair d@v1
out=$($M repair d@v1 --from "$B" 2>&1)
ok $? "repair d@v1 --from the mirror"
ok $(echo "$out" | grep -q "rebuilt d@v1 fragment 0 (rows 0..7) .*; from $B" && echo "$out" | grep -q "rebuilt d@v1 fragment 1 (rows 8..15) .*; from $B"; echo $?) \
	"both fragments came from the mirror"
[ "$(echo "$out" | grep -c '^rebuilt')" -eq 2 ] || echo "$out" | sed 's/^/# /'
sound "two fragments deleted, --from"

# A fragment an unprotected parent shares with its protected child: rebuilt from the child's parity.
check "put e@v1 unprotected, append e@v2, protect e@v2 only" bash -c \
	"$M put e x=$WORK/x.npy --shard-rows 2 && $M put e x=$WORK/y.npy --append && $M protect e@v2 --parity 2+1"
obj_cat datasets/e/versions/v1.json > "$WORK/e1.json"
obj_cat datasets/e/versions/v2.json > "$WORK/e2.json"
e1=$(frag "$WORK/e1.json" 1)
ok $([ "$e1" = "$(frag "$WORK/e2.json" 1)" ]; echo $?) "e@v1 and e@v2 share fragment 1"
E1=datasets/e/fragments/$e1.json
obj_damage "$E1" rm
out=$($M verify e@v1 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^e@v1: damaged, repairable from parity of v2"; echo $?) \
	"verify e@v1: the shared fragment is repairable from the child's parity"
out=$($M repair e@v1 2>&1)
rc=$?
ok $rc "repair e@v1"
ok $(echo "$out" | grep -q "^rebuilt e@v1 fragment 1 (rows 8..15) $E1: missing; from parity of v2"; echo $?) \
	"it says fragment 1 was rebuilt from parity of v2"
[ $rc -eq 0 ] || echo "$out" | sed 's/^/# /'
obj_sums datasets/e/fragments/ > "$WORK/e.sums"
check "the rebuilt shared fragment is back" grep -q "^$E1 " "$WORK/e.sums"
check "every fragment of e hashes to its name" named_right "$WORK/e.sums"
check "e@v1 and e@v2 verify" bash -c "$M verify e@v1 && $M verify e@v2"
done_testing
