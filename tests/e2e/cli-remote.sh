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
ok $([ "$(echo "$out" | head -1 | tr -s ' ')" = "NAME URL ENDPOINT REGION PROFILE OPTIONS" ]; echo $?) \
	"ls prints a header"
ok $([ "$(echo "$out" | awk 'NR > 1 { printf "%s %s ", $1, $2 }')" = "origin file://$WORK/origin team s3://ml-data/team " ]; echo $?) \
	"ls lists both, sorted, with their URLs"
ok $(echo "$out" | grep -Eq '^team +s3://ml-data/team +http://127.0.0.1:9 +eu-west-1 +ml +insecure,addressing=path$'; echo $?) \
	"ls shows the s3 remote's settings"
ok $(echo "$out" | grep -Eq "^origin +file://$WORK/origin +- +- +- +-$"; echo $?) \
	"unset settings show as -"
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
check "ls through the remote's name" bash -c "$M --store origin ls | grep -Eq '^ds( |\$)'"
check "get through the remote's name" bash -c "$M --store origin get ds x -o $WORK/g.npy && $T same $WORK/x.npy $WORK/g.npy"
check "a file:// URL is kept as given" $M remote add fileurl "file://$WORK/origin"
check "and works by name too" bash -c "$M --store fileurl ls | grep -Eq '^ds( |\$)'"
$M remote rm fileurl > /dev/null
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
ok $($M remote ls | grep -Eq "^origin +file://$WORK/else "; echo $?) "the new URL is in effect"
fails "a URL that is not s3:// or file://" 1 "is not s3://BUCKET" $M remote add web http://example
fails "a bad remote name" 1 "remote name 'a:b' may hold only" $M remote add a:b /tmp/x
fails "a bad --addressing" 2 "not auto, path or virtual" $M remote add z s3://b/c --addressing up
fails "rm of an unknown remote" 1 "no remote named nope" $M remote rm nope
ok $([ "$($M remote rm nope 2>&1 >/dev/null | wc -l)" = 1 ]; echo $?) "and says so in one line"
fails "s3:// without a bucket" 1 "is not s3://BUCKET" $M remote add nob s3:///x
fails "an endpoint without a scheme" 1 "endpoint '127.0.0.1:9' is not http" \
	$M remote add ep s3://b/c --endpoint 127.0.0.1:9
fails "add without a URL is a usage error" 2 "add takes a NAME and a URL" $M remote add lonely
fails "an unknown remote action" 2 "'list' is not add, ls or rm" $M remote list
check "rm" $M remote rm team
ok $(! $M remote ls | grep -q '^team'; echo $?) "team is gone"
# A settings file kept elsewhere (dotfiles) stays a link when rewritten.
mv "$MATORAGE_CONFIG" "$WORK/conf/real.json"
ln -s real.json "$MATORAGE_CONFIG"
check "add through a symlinked configuration" $M remote add linked "$WORK/linked"
ok $([ -L "$MATORAGE_CONFIG" ] && grep -q linked "$WORK/conf/real.json"; echo $?) \
	"the link stays a link and its target holds the remote"
ok $([ -z "$(ls "$WORK/conf" | grep -v -e '^real.json$' -e '^matorage.json$')" ]; echo $?) \
	"no temporary files are left behind"
rm "$MATORAGE_CONFIG"
echo '{"remotes": [' > "$MATORAGE_CONFIG"
fails "a broken configuration names the file and line" 1 "configuration .*matorage.json: line [0-9]+" $M remote ls

done_testing
