#!/bin/bash
# parts.sh — the Fashion-MNIST recipe (lua/examples/fashion_mnist.lua) as one run against two
# parts run at once (`matorage run --part 1/2` and `--part 2/2` concurrently, then
# `matorage commit --staged` of both datasets), into the same kind of file store.
# Usage: bench/parts.sh [BUILD_DIR] [RUNS]   (defaults: build/bench, 5)
# Both end with the same two committed versions (checked: the same rows, by sha256 of
# `matorage get` of every attribute).  Runs alternate; each is reported as the median and
# min–max of RUNS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
RUNS=${2:-5}
M=$BUILD/src/cli/matorage
R=$here/../lua/examples/fashion_mnist.lua
FM=/usr/share/datasets/fashion-mnist
DIR=${BENCH_DIR:-/tmp/mt-bench-parts}
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
export MATORAGE_CATALOG=$DIR/catalog.db HOME=$DIR

echo "# command: bench/parts.sh $*"
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$FM"/*.gz > /dev/null

now() { date +%s.%N; }
one() {
	"$M" --store "$DIR/one" run "$R" --allow "$FM" > /dev/null
}
two() {
	"$M" --store "$DIR/two" run "$R" --allow "$FM" --part 1/2 > /dev/null &
	local p=$!
	"$M" --store "$DIR/two" run "$R" --allow "$FM" --part 2/2 > /dev/null
	wait "$p"
	"$M" --store "$DIR/two" commit fashion-mnist-train --staged > /dev/null
	"$M" --store "$DIR/two" commit fashion-mnist-test --staged > /dev/null
}
rows_sha() {
	for d in fashion-mnist-train fashion-mnist-test; do
		for a in image label; do
			"$M" --store "$1" get "$d" "$a" -o "$DIR/out.npy" > /dev/null
			sha256sum < "$DIR/out.npy"
		done
	done | sha256sum | cut -c1-16
}
: > "$DIR/times"
for i in $(seq "$RUNS"); do
	rm -rf "$DIR/one" "$DIR/two" "$DIR/catalog.db"
	sync
	s=$(now); one; e=$(now); echo "one $(echo "$e - $s" | bc)" >> "$DIR/times"
	sync
	s=$(now); two; e=$(now); echo "two $(echo "$e - $s" | bc)" >> "$DIR/times"
	[ "$(rows_sha "$DIR/one")" = "$(rows_sha "$DIR/two")" ] || { echo "parts.sh: the two runs differ" >&2; exit 1; }
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg); both ways gave the same rows in every run"
stats() { sort -n | awk '{ a[NR] = $1 } END { printf "%.2f (%.2f-%.2f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf '| Fashion-MNIST recipe | s, median (min-max) of %d |\n|---|---|\n' "$RUNS"
printf '| one run | %s |\n' "$(awk '$1 == "one" {print $2}' "$DIR/times" | stats)"
printf '| two parts at once, then commit --staged of both datasets | %s |\n' "$(awk '$1 == "two" {print $2}' "$DIR/times" | stats)"
printf 'ratio of medians (parts / one run): %.2fx\n' "$(echo "$(awk '$1 == "two" {print $2}' "$DIR/times" | med) / $(awk '$1 == "one" {print $2}' "$DIR/times" | med)" | bc -l)"
