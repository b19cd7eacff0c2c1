#!/bin/bash
# verify-shared.sh — health kept per shard object along an append chain: V on a dataset reads each shard object once though five versions list it, and still names every version with the damaged shard; verifying only the newest version shows the damage on every older one sharing it, and repairing the newest makes them all sound, none verified again.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
"$PY" -c "import numpy as np; np.save('$WORK/x.npy', np.arange(400 * 8, dtype=np.float32).reshape(400, 8))"
for i in 2 3 4 5; do
	"$PY" -c "import numpy as np; np.save('$WORK/a$i.npy', np.full((100, 8), $i, dtype=np.float32))"
done
check "c@v1: 4 shards" $M put c x="$WORK/x.npy" --shard-rows 100
for i in 2 3 4 5; do
	check "c@v$i appends one shard, sharing the ones before" $M put c x="$WORK/a$i.npy" --append --shard-rows 100
done
check "c@v5 protected with 4+2" $M protect c@v5 --parity 4+2
# shard_file I: the file of shard I of c@v1 (every version lists it).
shard_file() {
	echo "$WORK/store/datasets/c/shards/$($M info c@v1 --json |
		$PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$1]['sha256'])").h5"
}
# row NAME REGEX [SECONDS]: a case passing when a line of the screen matches REGEX in time.
row() {
	local i rc=1
	for i in $(seq $((${3:-30} * 10))); do
		screen | grep -qE -- "$2" && { rc=0; break; }
		sleep 0.1
	done
	ok $rc "$1"
	[ $rc -eq 0 ] || screen | sed 's/^/# | /'
}
# versions STATE: how many of v1..v5 read STATE (a regex) on the screen.
versions() { screen | grep -cE "^ *v[1-5] .* ($1) "; }
# all_versions NAME STATE: a case passing when all five rows read STATE in time.
all_versions() {
	local i rc=1
	for i in $(seq 300); do
		[ "$(versions "$1")" = 5 ] && { rc=0; break; }
		sleep 0.1
	done
	ok $rc "$2"
	[ $rc -eq 0 ] || screen | sed 's/^/# | /'
}

tui_start 200 30
expect "the browser opens" "sync local:"
keys Enter Enter
row "the dataset" "^c +5 "
keys V
expect "V verifies the dataset's five versions as one job" "verify local:c (5 versions)"
keys J
wait_for "verify local:c" 10
keys Enter
expect "the summary counts 30 shard references" "5 versions: 5 sound, 0 repairable, 0 lost or damaged, 0 not verified; 30 shards sound, 0 damaged"
expect "and 8 shard objects read, each once" "; 8 shard objects read ("
keys Escape Escape
flip_byte "$(shard_file 0)"
keys V
keys J
wait_for "verify local:c" 10
keys Enter
expect "after damage to shard 0, the job reads 8 objects again" "5 versions: 0 sound, 5 repairable"
expect "still each once" "; 8 shard objects read ("
for i in 1 2 3 4 5; do
	expect "the log names c@v$i's shard 0" "c@v$i shard 0 "
done
keys Escape Escape
check "repaired from the CLI" $M repair c@v5
keys r
row "the dataset is sound again" "^c +5 +sound"

# Health through a shared shard: only v5 is verified and repaired.
flip_byte "$(shard_file 1)"
keys Enter
row "the versions" "^ *v5 "
all_versions "sound|rebuilt" "all five versions read sound (v1..v4 rebuilt since their last check)"
keys G v
expect "v on v5 verifies it alone" "verify local:c@v5"
all_versions repairable "every version sharing shard 1 reads repairable, none verified but v5"
keys Escape
row "the dataset reads repairable" "^c +5 +repairable"
keys Enter G R
expect "R on v5 repairs it" "repair local:c@v5"
all_versions "sound|rebuilt" "every version reads sound after v5's repair, none checked again"
keys Escape
row "the dataset is sound" "^c +5 +sound"
keys q
ok $(tui_exited; echo $?) "q quits"
check "matorage verify agrees: c@v1 is sound" $M verify c@v1
done_testing
