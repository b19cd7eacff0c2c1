#!/bin/bash
# repair.sh — damaged shards are mended: by putting the same data again, by copying from a good store onto a version already there, and by `matorage repair` from other stores, parity or the protection record.
# With MT_TEST_STORE=s3 (s3-repair.sh) the stores are S3 prefixes behind the signing proxy.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
D="$OBJ_BASE"
export MATORAGE_CONFIG="$WORK/conf/matorage.json"

# shard DATASET[@V] I [STORE]: the sha256 of shard I, from the manifest.
shard() {
	$M ${3:+--store "$3"} info "$1" --json |
		$PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$2]['sha256'])"
}
# damage KEY HOW: damage a raw object in place: flip (one bit in the middle, same size),
# truncate (half of it), zero (a zero-filled range), rm.
damage() { obj_damage "$1" "$2"; }
# sound DATASET[@V] [STORE]: verify passes.
sound() { $M ${2:+--store "$2"} verify "$1" > /dev/null 2>&1; }
# named_right PREFIX: every object under PREFIX (shards/, parity/) holds the bytes its name
# is the sha256 of: nothing was ever written under a name but its right bytes.
named_right() {
	local k h sums
	sums=$(obj_sums "$1") && [ -n "$sums" ] || return 1
	while read -r k h; do
		case $k in */.tmp.*) continue ;; esac # an interrupted write's, for gc to sweep
		[ "$h" = "$(basename "$k" .h5)" ] || { echo "# $k"; return 1; }
	done <<< "$sums"
}
# snapshot PREFIX: each key under PREFIX with the sha256 of its bytes.
snapshot() { obj_sums "$1"; }
# record DATASET V: "group row key" for every member and parity object of the version's record.
record() {
	obj_get "datasets/$1/protect/$2.json" "$WORK/rec.json"
	$PY - "$WORK/rec.json" "$1" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
for g, grp in enumerate(r["groups"]):
    for j, mem in enumerate(grp["members"]):
        print(g, j, "datasets/%s/shards/%s.h5" % (sys.argv[2], mem["sha256"]))
    for q, par in enumerate(grp["parity"]):
        print(g, r["k"] + q, "datasets/%s/parity/%s" % (sys.argv[2], par["sha256"]))
PYEOF
}

$T make "$WORK/a.npy" float32 120x16 1
check "put a" $M put a x="$WORK/a.npy" --shard-rows 30 --chunk-size 640

# ---- putting the same data again mends a shard damaged in place ----
s1=$(shard a 1)
damage "datasets/a/shards/$s1.h5" flip
ok $(! sound a; echo $?) "a shard damaged in place (same size) fails verify"
check "put the same rows again" $M put a x="$WORK/a.npy" --shard-rows 30 --chunk-size 640
ok $(sound a@v1; echo $?) "the shard the new version shares was written again: a@v1 verifies"
check "and reads back identical" bash -c "$M get a@v1 x -o $WORK/o.npy && $T same $WORK/a.npy $WORK/o.npy"
[ "$OBJ_MODE" = s3 ] && s3_log_clear
check "a third put of the same rows (shards sound) reuses them" \
	$M put a x="$WORK/a.npy" --shard-rows 30 --chunk-size 640
if [ "$OBJ_MODE" = s3 ]; then
	ok $(! s3_log | grep -Eq '^(GET|PUT) .*/shards/'; echo $?) \
		"on S3 the ETag settles it: no shard was downloaded or sent again"
fi
ok $(sound a; echo $?) "and the version verifies"

# ---- push/pull onto a version the destination already has fills in what it lacks ----
B="$D/b"
check "push a@v1 to a second store" $M push a@v1 "$B"
damage "b/datasets/a/shards/$s1.h5" rm
s2=$(shard a 2)
damage "b/datasets/a/shards/$s2.h5" truncate
ok $(! sound a@v1 "$B"; echo $?) "the copy lost one shard and has another cut short"
out=$($M push a@v1 "$B" 2>&1)
ok $? "push again: $out"
ok $(echo "$out" | grep -q '^0 version(s) copied.*1 already there; 2 shard(s) sent'; echo $?) \
	"the manifest was there; the 2 missing or cut shards were sent"
ok $(sound a@v1 "$B"; echo $?) "the copy verifies again"
damage "b/datasets/a/shards/$s2.h5" rm
out=$($M --store "$B" pull "$D" a@v1 2>&1)
ok $(echo "$out" | grep -q '1 shard(s) sent'; echo $?) "pull into a store with the manifest sends the lost shard: $out"
ok $(sound a@v1 "$B"; echo $?) "and it verifies"

# ---- repair from another store: --from, then a configured remote ----
damage "datasets/a/shards/$s2.h5" zero
out=$($M verify a@v1 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^a@v1: damaged, unrepairable: lost shard 2 (rows 60..89)"; echo $?) \
	"verify: a damaged shard nothing else holds is unrepairable, named with its rows"
out=$($M repair a@v1 --no-remotes 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^UNREPAIRABLE a@v1 shard 2 (rows 60..89) datasets/a/shards/$s2.h5"; echo $?) \
	"repair without a source exits 1, naming dataset, version, shard and rows"
echo "$out" | sed 's/^/# /'
out=$($M repair a@v1 --from "$B" --dry-run 2>&1)
ok $(echo "$out" | grep -Eq "^repairable a@v1 shard 2 \(rows 60..89\) .*from (file://)?$B"; echo $?) "--dry-run says which store would fix it"
ok $(! sound a@v1; echo $?) "and changes nothing"
out=$($M repair a@v1 --from "$B" 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -Eq "^rebuilt a@v1 shard 2 \(rows 60..89\) datasets/a/shards/$s2.h5: .*; from (file://)?$B, .* read"; echo $?) \
	"repair --from a store holding the version rebuilds the shard, naming the store and bytes read"
echo "$out" | sed 's/^/# /'
ok $(sound a@v1; echo $?) "a@v1 verifies after the repair"
check "add the second store as a remote" $M remote add mirror "$B"
damage "datasets/a/shards/$s1.h5" rm
out=$($M verify a@v1 2>&1)
ok $(echo "$out" | grep -Eq "^a@v1: damaged, repairable from (file://)?$B"; echo $?) "verify: repairable, from the remote's store"
out=$($M repair a 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -Eq "^rebuilt a@v1 shard 1 .*from (file://)?$B"; echo $?) "repair uses the configured remotes"
echo "$out" | sed "s/^/# /"
ok $(sound a@v1 && named_right datasets/a/shards/; echo $?) "sound, every shard named by its bytes"
check "remove the remote" $M remote rm mirror

# ---- parity ----
$T make "$WORK/p.npy" int32 300x8 7
check "put p with 3+2 parity" $M put p x="$WORK/p.npy" --shard-rows 25 --chunk-size 320 --parity 3+2
mapfile -t rec < <(record p v1)
# group 0: members 0 1 2, parity rows 3 4
key() { local g=$1 r=$2 l; for l in "${rec[@]}"; do set -- $l; [ "$1" = "$g" ] && [ "$2" = "$r" ] && { echo "$3"; return; }; done; }
damage "$(key 0 0)" rm
damage "$(key 0 3)" flip
damage "$(key 1 1)" truncate
damage "$(key 2 4)" rm
snapshot datasets/p/ > "$WORK/before"
out=$($M verify p 2>&1)
ok $(echo "$out" | grep -q "^p@v1: damaged, repairable from parity"; echo $?) "verify: damaged, repairable from parity"
out=$($M repair p --dry-run 2>&1)
ok $? "repair --dry-run exits 0 when everything is repairable"
snapshot datasets/p/ > "$WORK/after"
ok $(cmp -s "$WORK/before" "$WORK/after"; echo $?) "--dry-run wrote nothing"
out=$($M repair p 2>&1)
ok $? "repair rebuilds members and parity objects of three groups"
echo "$out" | sed 's/^/# /'
ok $([ "$(echo "$out" | grep -c '^rebuilt p@v1 .*from parity, .* read$')" -eq 4 ]; echo $?) "one line per object, each from parity"
ok $(sound p && named_right datasets/p/shards/ && named_right datasets/p/parity/; echo $?) \
	"p verifies; every shard and parity object holds the bytes its name says"
check "the rows read back identical" bash -c "$M get p x -o $WORK/o.npy && $T same $WORK/p.npy $WORK/o.npy"

# ---- the manifest, from the protection record ----
obj_get datasets/p/versions/v1.json "$WORK/pv1.json"
damage datasets/p/versions/v1.json rm
fails "a lost manifest: the version is gone for readers" 1 "no such version" $M get p@v1 x -o "$WORK/o.npy"
out=$($M verify p@v1 2>&1)
ok $(echo "$out" | grep -q "^p@v1: damaged, repairable from protection record"; echo $?) "verify: repairable from the protection record"
out=$($M repair p 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^rebuilt p@v1 manifest datasets/p/versions/v1.json: missing; from protection record"; echo $?) \
	"repair DATASET finds the version by its record and writes the manifest back"
obj_get datasets/p/versions/v1.json "$WORK/pv1b.json"
ok $(cmp -s "$WORK/pv1.json" "$WORK/pv1b.json"; echo $?) "byte for byte"
echo '{"format":1}' > "$WORK/junk.json"
obj_put "$WORK/junk.json" datasets/p/versions/v1.json
check "a damaged manifest comes back too" $M repair p@v1
obj_get datasets/p/versions/v1.json "$WORK/pv1b.json"
ok $(cmp -s "$WORK/pv1.json" "$WORK/pv1b.json"; echo $?) "byte for byte"

# ---- the record, from another store's copy ----
C="$D/c"
check "push p@v1 to a third store, protected there with the same 3+2" $M push p@v1 "$C" --parity 3+2
obj_get datasets/p/protect/v1.json "$WORK/prec.json"
damage datasets/p/protect/v1.json flip
out=$($M repair p@v1 --no-remotes 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q '^UNREPAIRABLE p@v1 record datasets/p/protect/v1.json: '; echo $?) \
	"a damaged record nothing else holds is reported unrepairable, exit 1 (the data is sound): $(echo "$out" | tail -1)"
out=$($M verify p@v1 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^BAD protection record: datasets/p/protect/v1.json: " &&
	echo "$out" | grep -q "^p@v1: damaged, unrepairable: lost protection record"; echo $?) \
	"verify: sound shards with a damaged record exit 1, naming it: $(echo "$out" | tr '\n' '|')"
check "add the third store as a remote" $M remote add third "$C"
out=$($M verify p@v1 2>&1)
ok $(echo "$out" | grep -Eq "^p@v1: damaged, repairable from (file://)?$C"; echo $?) \
	"verify: repairable from the remote with a copy: $(echo "$out" | tail -1)"
check "remove that remote" $M remote rm third
out=$($M repair p@v1 --from "$C" 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -Eq "^rebuilt p@v1 record datasets/p/protect/v1.json: .*; from (file://)?$C, .* read"; echo $?) \
	"repair --from a store with a sound copy of the record writes it back"
echo "$out" | sed 's/^/# /'
obj_get datasets/p/protect/v1.json "$WORK/prec2.json"
check "the record back is the other store's copy and names the same parity objects" "$PY" - "$WORK/prec.json" "$WORK/prec2.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["manifest"] == b["manifest"] and a["k"] == b["k"] and a["m"] == b["m"]
assert [[p["sha256"] for p in g["parity"]] for g in a["groups"]] == \
       [[p["sha256"] for p in g["parity"]] for g in b["groups"]]
PY
out=$($M protect p@v1 --parity 3+2 2>&1)
ok $(echo "$out" | grep -q "already protected with 3+2"; echo $?) "and the version counts as protected again: $out"
damage datasets/p/protect/v1.json flip
damage "$(key 0 3)" rm
out=$($M repair p@v1 --from "$C" 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^rebuilt p@v1 record" &&
	echo "$out" | grep -q '^rebuilt p@v1 parity of group 0 .*: missing; from'; echo $?) \
	"a lost parity object the record's copy names is rebuilt before the record is written"
echo "$out" | sed 's/^/# /'
ok $(sound p@v1 && named_right datasets/p/parity/; echo $?) "p@v1 verifies with it"
damage datasets/p/protect/v1.json truncate
out=$($M protect p@v1 --parity 3+2 2>&1)
ok $? "protect replaces a record that fails its checks: $out"
obj_get datasets/p/protect/v1.json "$WORK/prec3.json"
ok $(sound p@v1 && "$PY" -c "import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); sys.exit(a['groups'] != b['groups'])" \
	"$WORK/prec.json" "$WORK/prec3.json"; echo $?) "p@v1 verifies and the new record names the same groups"
mapfile -t rec < <(record p v1)

# ---- beyond parity: exit 1 naming every lost shard, then --salvage ----
damage "$(key 1 0)" rm
damage "$(key 1 1)" rm
damage "$(key 1 3)" rm
out=$($M repair p 2>&1)
ok $([ $? -eq 1 ] && [ "$(echo "$out" | grep -c '^UNREPAIRABLE p@v1 shard [34] (rows')" -eq 2 ] &&
	echo "$out" | grep -q '^UNREPAIRABLE p@v1 parity of group 1'; echo $?) \
	"3 lost rows of a 3+2 group: exit 1, a line per lost object"
echo "$out" | sed 's/^/# /'
out=$($M repair p --salvage 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q '^salvaged p@v1 as p@v2: 250 rows kept, 50 lost: rows 75..124$'; echo $?) \
	"--salvage writes p@v2 with the rest and lists the lost rows"
check "p@v2 holds rows 0..74 and 125..299 of p@v1" bash -c "$M get p@v2 x -o $WORK/s.npy && $PY -c '
import numpy as np
a = np.load(\"$WORK/p.npy\"); b = np.load(\"$WORK/s.npy\")
assert (b == np.concatenate([a[:75], a[125:]])).all()'"
ok $($M info p@v2 --json | $PY -c 'import json,sys; m=json.load(sys.stdin); sys.exit(not (m["parent"] == "v1" and m["salvage"] == {"from": "v1", "lost": [[75, 50]]}))'; echo $?) \
	"its manifest names its parent and the lost rows"
ok $(sound p@v2; echo $?) "p@v2 verifies"

# ---- kill -9 during repair, then run it again ----
$T make "$WORK/k.npy" float32 4000x64 3
check "put k with 4+2 parity" $M put k x="$WORK/k.npy" --shard-rows 200 --parity 4+2
mapfile -t rec < <(record k v1)
for g in 0 1 2 3 4; do damage "$(key $g 1)" rm; damage "$(key $g 4)" zero; done
snapshot datasets/k/ > "$WORK/before"
killed=0
for delay in 0.05 0.1 0.2 0.4; do
	$M repair k > /dev/null 2>&1 &
	pid=$!
	sleep $delay
	kill -9 $pid 2> /dev/null && killed=$((killed + 1))
	wait $pid 2> /dev/null
	# Each object is as it was before, or holds the bytes its name says.
	snapshot datasets/k/ | while read -r k h; do
		case $k in */.tmp.*) continue ;; */shards/* | */parity/*) ;; *) continue ;; esac
		[ "$h" = "$(basename "$k" .h5)" ] || grep -qx "$k $h" "$WORK/before" || { echo "# $k"; exit 1; }
	done || break
done
ok $? "after kill -9 at $killed point(s) during repair, each object is as it was or holds its name's bytes"
check "k@v1 still reads where its shards are sound" $M get k x -o "$WORK/o.npy" --rows 0:200
out=$($M repair k 2>&1)
ok $? "a re-run finishes the repair"
ok $(sound k && named_right datasets/k/shards/; echo $?) "and k verifies"

# ---- a version another store holds, lost here ----
$T make "$WORK/g.npy" float32 60x4 9
check "g@v1" $M put g x="$WORK/g.npy"
check "g@v2" $M put g x="$WORK/g.npy" --append
check "g@v3" $M put g x="$WORK/g.npy" --append
check "a mirror of g" $M push g "$D/gm"
check "g@v4, in the mirror only" $M --store "$D/gm" put g x="$WORK/g.npy" --append
check "g@v1 removed here (a tombstone)" $M rm g@v1
damage "datasets/g/versions/v2.json" rm
out=$($M repair g --from "$D/gm" 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^rebuilt g@v2 manifest datasets/g/versions/v2.json: missing; from"; echo $?) \
	"repair of the dataset brings back v2, whose manifest only the mirror holds"
echo "$out" | sed 's/^/# /'
check "g@v2 reads again" $M get g@v2 x -o "$WORK/g2.npy"
fails "a version removed here stays removed" 1 "" $M info g@v1
fails "a version the mirror made later is not repair's to copy" 1 "" $M info g@v4

done_testing
