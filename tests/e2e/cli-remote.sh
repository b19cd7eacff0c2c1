#!/bin/bash
# cli-remote.sh — matorage remote add/ls/rm, and remotes used by name as --store and as push/pull/sync ends.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
export MATORAGE_CONFIG="$WORK/conf/matorage.json"
$T make "$WORK/x.npy" float32 50x4 1

check "remote ls with no configuration" bash -c "[ -z \"\$($M remote ls)\" ]"
check "add a directory remote" $M remote add origin "$WORK/origin"
check "add an s3 remote with its settings" $M remote add team s3://ml-data/team \
	--endpoint http://127.0.0.1:9 --region eu-west-1 --profile ml --addressing path --insecure
out=$($M remote ls)
ok $([ "$(echo "$out" | cut -f1,2 | tr '\t\n' ' ')" = "origin file://$WORK/origin team s3://ml-data/team " ]; echo $?) \
	"ls lists both, sorted, with their URLs"
ok $(echo "$out" | grep -q 'team.*endpoint=http://127.0.0.1:9 region=eu-west-1 profile=ml insecure addressing=path'; echo $?) \
	"ls shows the s3 remote's settings"
check "ls --json is JSON with every field" bash -c "$M remote ls --json | $PY -c '
import json, sys
r = {x[\"name\"]: x for x in json.load(sys.stdin)}
t = r[\"team\"]
assert t[\"endpoint\"] == \"http://127.0.0.1:9\" and t[\"profile\"] == \"ml\" and t[\"insecure\"] is True
assert t[\"addressing\"] == \"path\" and \"endpoint\" not in r[\"origin\"]'"
mode=$(stat -c %a "$MATORAGE_CONFIG")
ok $([ "$mode" = 600 ]; echo $?) "the configuration file is private ($mode)"
ok $(! grep -qi secret "$MATORAGE_CONFIG"; echo $?) "it holds no credentials"

check "put through the remote's name" $M --store origin put ds x="$WORK/x.npy"
check "the data landed in the remote's directory" test -f "$WORK/origin/datasets/ds/versions/v1.json"
check "push to a remote by name" $M --store "$WORK/local" put ds x="$WORK/x.npy"
$M remote add mirror "$WORK/mirror" > /dev/null
check "push from the local store to a remote" $M --store "$WORK/local" push ds mirror
check "pull from a remote" $M --store "$WORK/pulled" pull mirror ds@v1
$M remote add backup "$WORK/backup" > /dev/null
check "sync between two remotes" $M sync origin backup
check "and read back" bash -c "$M --store backup get ds x -o $WORK/o.npy && $T same $WORK/x.npy $WORK/o.npy"
fails "the same version name with other content is refused" 1 "ds@v1 already exists in .*mirror with different content" \
	$M sync origin mirror

fails "a taken name" 1 "remote origin already exists" $M remote add origin "$WORK/else"
check "--replace replaces it" $M remote add origin "$WORK/else" --replace
ok $($M remote ls | grep -q "^origin	file://$WORK/else"; echo $?) "the new URL is in effect"
fails "a URL that is not s3:// or file://" 1 "is not s3://BUCKET" $M remote add web http://example
fails "a bad remote name" 1 "remote name 'a:b' may hold only" $M remote add a:b /tmp/x
fails "a bad --addressing" 2 "not auto, path or virtual" $M remote add z s3://b/c --addressing up
fails "rm of an unknown remote" 1 "no remote named nope" $M remote rm nope
fails "an unknown remote action" 2 "'list' is not add, ls or rm" $M remote list
check "rm" $M remote rm team
ok $(! $M remote ls | grep -q '^team'; echo $?) "team is gone"
echo '{"remotes": [' > "$MATORAGE_CONFIG"
fails "a broken configuration names the file and line" 1 "configuration .*matorage.json: line [0-9]+" $M remote ls

done_testing
