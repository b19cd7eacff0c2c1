#!/bin/bash
# s3.sh — push and pull of a version through S3 (s3rver) vs `aws s3 cp --recursive` of the same objects,
# and the GET path against nginx serving the store read-only vs parallel curl processes; where Ceph
# is installed, push, pull and a loader epoch through a one-node RADOS Gateway too (median of 3 runs each).
# Usage: bench/s3.sh [BUILD_DIR] [GIB]   (defaults: build/bench, 1)
# Needs: s3rver (scripts/install-deps.sh puts it under tests/s3), /usr/bin/aws, nginx, curl.
# As root with tc and the kernel's htb: the loader and curl from nginx again with nginx's
# replies capped (CAPS, by default "2500mbit 5gbit"; CAPS= skips it); the cap is taken off
# the loopback device when the script ends.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
M=$BUILD/src/cli/matorage
EPOCH=$BUILD/bench/loader-epoch
GIB=${2:-1}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-s3}
# Pulled copies land in memory for both contenders: the network path is measured, not the disk.
OUT=${BENCH_OUT:-/dev/shm/mt-bench-s3}
THREADS=8
COLS=1024
ROWS=$((GIB * 1024 * 1024 * 1024 / (COLS * 4)))
S3RVER=${S3RVER:-$here/../tests/s3/node_modules/s3rver/bin/s3rver.js}
for need in "$S3RVER" /usr/bin/aws /usr/sbin/nginx; do
	[ -e "$need" ] || { echo "s3.sh: $need is missing (scripts/install-deps.sh)" >&2; exit 1; }
done
rm -rf "$DIR" "$OUT"
mkdir -p "$DIR/s3data" "$DIR/nginx" "$OUT"
pids=()
capped=0
cleanup() {
	[ "$capped" = 0 ] || tc qdisc del dev lo root 2> /dev/null || true
	for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
	for p in "${pids[@]}"; do
		if declare -F rgw_reap > /dev/null; then rgw_reap "$p" || true; else wait "$p" 2> /dev/null || true; fi
	done
	rm -rf "$DIR" "$OUT"
}
trap cleanup EXIT
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
		sleep 0.1
	done
	echo "s3.sh: nothing answers on port $1" >&2
	exit 1
}

echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m)"
echo "# data: $ROWS x $COLS float32 ($GIB GiB), default shards (64 MiB) and zstd level"
$PY "$here/make-data.py" "$DIR/x.npy" "$ROWS" "$COLS"
"$M" --store "$DIR/store" put bench x="$DIR/x.npy" > /dev/null
rm "$DIR/x.npy"
stored=$(du -sb "$DIR/store" | cut -f1)
nobj=$(find "$DIR/store" -type f | wc -l)
echo "# store: $nobj objects, $stored bytes"

S3PORT=$(free_port)
node --openssl-legacy-provider "$S3RVER" --address 127.0.0.1 --port "$S3PORT" \
	--directory "$DIR/s3data" --silent > "$DIR/s3rver.log" 2>&1 &
pids+=($!)
wait_port "$S3PORT"
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$S3PORT AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_CA_BUNDLE AWS_DEFAULT_REGION
aws() { AWS_PAGER= /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }
aws s3 mb s3://bench > /dev/null

t() { local s=$(date +%s.%N); "$@" > /dev/null; echo "$(date +%s.%N) - $s" | bc; }
mb() { echo "scale=1; $stored / 1048576 / $1" | bc; }
row() { printf '| %s | %.2f | %s | %.2f | %s | %.2fx |\n' "$1" "$2" "$(mb "$2")" "$3" "$(mb "$3")" "$(echo "$3 / $2" | bc -l)"; }

push=$(t "$M" -q --store "$DIR/store" push bench s3://bench/m --threads $THREADS)
awspush=$(t aws s3 cp --recursive --quiet "$DIR/store" s3://bench/a)
pull=$(t "$M" -q --store "$OUT/m" pull s3://bench/m bench@v1 --threads $THREADS)
awspull=$(t aws s3 cp --recursive --quiet s3://bench/a "$OUT/a")
diff -r "$DIR/store/datasets" "$OUT/m/datasets" > /dev/null || { echo "s3.sh: pulled store differs" >&2; exit 1; }
rm -rf "$OUT/m" "$OUT/a"

# nginx serves the store directory as bucket "bench": path-style URLs are its files.
NGPORT=$(free_port)
mkdir -p "$DIR/www"
ln -s "$DIR/store" "$DIR/www/bench"
cat > "$DIR/nginx/nginx.conf" <<EOF
worker_processes 2;
pid $DIR/nginx/nginx.pid;
error_log $DIR/nginx/error.log;
events { worker_connections 256; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	client_body_temp_path $DIR/nginx;
	proxy_temp_path $DIR/nginx;
	fastcgi_temp_path $DIR/nginx;
	uwsgi_temp_path $DIR/nginx;
	scgi_temp_path $DIR/nginx;
	server {
		listen 127.0.0.1:$NGPORT;
		root $DIR/www;
		disable_symlinks off;
		location / { limit_except GET { deny all; } }
	}
}
EOF
/usr/sbin/nginx -c "$DIR/nginx/nginx.conf" -g 'daemon off;' &
pids+=($!)
wait_port "$NGPORT"
# Anonymous requests: nginx knows nothing of signatures.
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
(cd "$DIR/store" && find datasets -type f) | sed "s|^|http://127.0.0.1:$NGPORT/bench/|" > "$DIR/urls"
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# The pull from nginx against the same parallel curl, and against curl with each object's
# sha256 computed after it lands (the check the pull makes of every shard on the way):
# alternating, 5 each.
ngpull() {
	rm -rf "$OUT/n"
	"$M" -q --store "$OUT/n" --endpoint "http://127.0.0.1:$NGPORT" --addressing path \
		pull s3://bench bench@v1 --threads $THREADS
}
curlsha() { curl -s -f -O "$1" && openssl dgst -sha256 "${1##*/}"; }
export -f curlsha
np=() nk=() nh=()
for i in 1 2 3 4 5; do
	np+=("$(t ngpull)")
	diff -r "$DIR/store/datasets" "$OUT/n/datasets" > /dev/null || { echo "s3.sh: nginx pull differs" >&2; exit 1; }
	rm -rf "$OUT/n" "$OUT/c" && mkdir -p "$OUT/c"
	nk+=("$(t bash -c "cd '$OUT/c' && xargs -P $THREADS -n 1 curl -s -f -O < '$DIR/urls'")")
	rm -rf "$OUT/c" && mkdir -p "$OUT/c"
	nh+=("$(t bash -c "cd '$OUT/c' && xargs -P $THREADS -n 1 bash -c 'curlsha \"\$1\"' _ < '$DIR/urls'")")
	rm -rf "$OUT/c" && mkdir -p "$OUT/c"
done
echo "# pull from nginx: ${np[*]}; parallel curl: ${nk[*]}; curl + sha256: ${nh[*]}"
ngpull=$(printf '%s\n' "${np[@]}" | med)
curls=$(printf '%s\n' "${nk[@]}" | med)
curlsha=$(printf '%s\n' "${nh[@]}" | med)
# CPU seconds the whole machine spent (every process, the servers' too) while "$@" ran.
busy() {
	local a b
	a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat)
	"$@" > /dev/null
	b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat)
	echo "scale=2; ($b - $a) / $(getconf CLK_TCK)" | bc
}
# A loader epoch straight from nginx (shuffled, 256-row batches, 256 MiB budget, no local
# cache, open included; the version by name, as nginx lists nothing) against the same
# parallel curl of every object, alternating, 5 each: the loader reads and decodes, curl
# only moves the bytes.
ne=() nc=()
ngep() {
	AWS_ENDPOINT_URL=http://127.0.0.1:$NGPORT "$EPOCH" s3://bench bench@v1 x 256 1 \
		$((256 << 20)) | awk '{ print $3 + $5 }' > "$DIR/ngep"
}
ngcurl() { (cd "$OUT/c" && xargs -P $THREADS -n 1 curl -s -f -O < "$DIR/urls"); }
for i in 1 2 3 4 5; do
	cpu=$(busy ngep)
	ne+=("$(cat "$DIR/ngep")")
	echo "# loader epoch from nginx: $(cat "$DIR/ngep") s, the machine's CPU $cpu s"
	rm -rf "$OUT/c" && mkdir -p "$OUT/c"
	s=$(date +%s.%N)
	cpu=$(busy ngcurl)
	nc+=("$(echo "$(date +%s.%N) - $s" | bc)")
	echo "# parallel curl: ${nc[-1]} s, the machine's CPU $cpu s"
done
ngepoch=$(printf '%s\n' "${ne[@]}" | med)
ngcurl=$(printf '%s\n' "${nc[@]}" | med)

# The same two with nginx's replies capped (an htb class for its port on the loopback
# device, the rest of the traffic unlimited): a link slower than the 2 cores' decode, as a
# training node's link to its S3 often is.  Both contenders share the cap; what is measured is
# whether the loader keeps enough requests in flight to fill it.
caprows=()
if [ -n "${CAPS-2500mbit 5gbit}" ] && [ "$(id -u)" = 0 ] && command -v tc > /dev/null &&
	tc qdisc show dev lo | grep -q '^qdisc noqueue' &&
	tc qdisc add dev lo root handle 1: htb default 10 2> /dev/null; then
	capped=1
	tc class add dev lo parent 1: classid 1:10 htb rate 100gbit quantum 200000
	tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip sport "$NGPORT" 0xffff flowid 1:20
	for cap in ${CAPS-2500mbit 5gbit}; do
		tc class replace dev lo parent 1: classid 1:20 htb rate "$cap" ceil "$cap" burst 256kb \
			cburst 256kb quantum 200000
		ce=() cc=()
		for i in 1 2 3 4 5; do
			ngep
			ce+=("$(cat "$DIR/ngep")")
			rm -rf "$OUT/c" && mkdir -p "$OUT/c"
			cc+=("$(t ngcurl)")
		done
		echo "# capped at $cap: loader ${ce[*]}; parallel curl ${cc[*]}"
		caprows+=("$cap" "$(printf '%s\n' "${ce[@]}" | med)" "$(printf '%s\n' "${cc[@]}" | med)")
	done
	tc qdisc del dev lo root
	capped=0
else
	echo "# no capped runs: they need root, tc, the kernel's htb and no qdisc on lo (CAPS=\"${CAPS-}\")"
fi

# RADOS Gateway (tests/e2e/rgw.sh: one mon, one memstore OSD; RGW keeps more than the objects'
# bytes in it, and a full OSD blocks every write, hence the room).
rgw=()
if [ -x /usr/bin/radosgw ]; then
	WORK=$DIR S3_PIDS=() S3_PORT=$(free_port)
	s3_wait() { wait_port "${1##*:}"; }
	. "$here/../tests/e2e/rgw.sh"
	export AWS_ACCESS_KEY_ID=bench-key AWS_SECRET_ACCESS_KEY=bench-test-secret
	export AWS_ENDPOINT_URL=http://127.0.0.1:$S3_PORT
	RGW_MEMSTORE_BYTES=$((stored * 8 + 2147483648)) rgw_launch
	pids+=("${S3_PIDS[@]}" "${CEPH_PIDS[@]}")
	aws s3 mb s3://bench > /dev/null
	rp=() ra=() rl=() rb=()
	for i in 1 2 3; do
		rp+=("$(t "$M" -q --store "$DIR/store" push bench s3://bench/m --threads $THREADS)")
		ra+=("$(t aws s3 cp --recursive --quiet "$DIR/store" s3://bench/a)")
		rl+=("$(t "$M" -q --store "$OUT/m" pull s3://bench/m bench@v1 --threads $THREADS)")
		rb+=("$(t aws s3 cp --recursive --quiet s3://bench/a "$OUT/a")")
		diff -r "$DIR/store/datasets" "$OUT/m/datasets" > /dev/null || { echo "s3.sh: RGW pull differs" >&2; exit 1; }
		rm -rf "$OUT/m" "$OUT/a"
		aws s3 rm --recursive --quiet s3://bench/m
		aws s3 rm --recursive --quiet s3://bench/a
	done
	rgw=("$(printf '%s\n' "${rp[@]}" | med)" "$(printf '%s\n' "${ra[@]}" | med)"
		"$(printf '%s\n' "${rl[@]}" | med)" "$(printf '%s\n' "${rb[@]}" | med)")
	# The loader's shuffled epoch straight from RGW (no local cache), against the same epoch
	# from the local store with a warm page cache: what the network path costs a training run.
	"$M" -q --store "$DIR/store" push bench s3://bench/m --threads $THREADS > /dev/null
	ep() { "$EPOCH" "$1" bench x 256 1 $((256 << 20)) | awk '{ print $3 }'; }
	re=() le=()
	for i in 1 2 3; do
		re+=("$(ep s3://bench/m)")
		le+=("$(ep "$DIR/store")")
	done
	rgw+=("$(printf '%s\n' "${re[@]}" | med)" "$(printf '%s\n' "${le[@]}" | med)")
fi

printf '| step | matorage s | MB/s | baseline s | MB/s | ratio (baseline time / matorage time) |\n|---|---|---|---|---|---|\n'
row "push to s3rver vs aws s3 cp --recursive" "$push" "$awspush"
row "pull from s3rver vs aws s3 cp --recursive" "$pull" "$awspull"
row "pull from nginx vs $THREADS parallel curl (median of 5)" "$ngpull" "$curls"
row "pull from nginx vs $THREADS parallel curl + sha256 of each object (median of 5)" "$ngpull" "$curlsha"
row "loader epoch from nginx vs $THREADS parallel curl (median of 5)" "$ngepoch" "$ngcurl"
for ((i = 0; i < ${#caprows[@]}; i += 3)); do
	row "loader epoch vs $THREADS parallel curl, nginx capped at ${caprows[i]} (median of 5)" \
		"${caprows[i + 1]}" "${caprows[i + 2]}"
done
if [ ${#rgw[@]} -eq 6 ]; then
	row "push to RGW vs aws s3 cp --recursive (median of 3)" "${rgw[0]}" "${rgw[1]}"
	row "pull from RGW vs aws s3 cp --recursive (median of 3)" "${rgw[2]}" "${rgw[3]}"
	row "loader epoch (shuffled, 256-row batches) from RGW vs from the local store (median of 3)" "${rgw[4]}" "${rgw[5]}"
fi
