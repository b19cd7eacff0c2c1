#!/bin/bash
# install-deps.sh — install the Debian 12 packages that the build, tests, fuzzers, benchmarks and demo need.
# Quick and quiet when everything is already installed; apt runs only for what is missing.
set -euo pipefail

# The one list of packages; add new ones here (grouped by what needs them).
PACKAGES=(
	# build
	build-essential autoconf automake libtool pkg-config
	# libmatorage and the matorage command
	libhdf5-dev libzstd-dev libjansson-dev libxxhash-dev libssl-dev
	libcurl4-openssl-dev libsqlite3-dev liblua5.4-dev libncurses-dev libisal-dev
	# tests, interop checks and benchmarks
	hdf5-tools zstd xxhash python3 python3-numpy python3-h5py python3-hdf5plugin bc
	# the function-size check
	pmccabe
	# libFuzzer targets (configure CC=clang --enable-fuzzers)
	clang libclang-rt-14-dev
	# TUI screen tests and the man page
	tmux groff-base man-db
	# S3 tests: the signature-checking proxy (botocore), other S3 clients, the GET benchmark's server
	python3-botocore awscli s3cmd curl nginx-light
	# S3 tests against a real server: a one-node Ceph (mon, memstore OSD, RADOS Gateway)
	ceph-mon ceph-osd radosgw ceph-common
	# the Slurm test: a one-node cluster (controller, node daemon, munge) and sbatch, squeue
	slurmctld slurmd slurm-client munge
	# the loader's training example and its data
	dataset-fashion-mnist
	# the Python loader's torch test
	python3-torch
	# the parity test's independent decoder (PyECLib's ISA-L Reed-Solomon backend)
	python3-pyeclib
	# the loader benchmark's zarr baseline
	python3-zarr
)
# s3rver runs on Node.js: Debian's, unless a node (with its npm) is already installed.
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
	PACKAGES+=(nodejs npm)
fi

missing=()
for p in "${PACKAGES[@]}"; do
	# "ii " is installed and configured; anything else (absent, half-installed) needs apt.
	if [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" != "ii " ]; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#PACKAGES[@]} packages present"
else
	echo "install-deps: installing ${missing[*]}"
	SUDO=()
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo > /dev/null || {
			echo "install-deps: not root and no sudo; install as root: ${missing[*]}" >&2
			exit 1
		}
		SUDO=(sudo)
	fi
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The S3 server the tests start (tests/s3/package.json pins it, package-lock.json fixes
# the whole tree); installed again only when the lock file changed.
S3DIR=$(cd "$(dirname "$0")/../tests/s3" && pwd)
if [ "$S3DIR/node_modules/.package-lock.json" -nt "$S3DIR/package-lock.json" ] &&
	[ -f "$S3DIR/node_modules/s3rver/bin/s3rver.js" ]; then
	echo "install-deps: s3rver present"
else
	echo "install-deps: installing s3rver into tests/s3/node_modules"
	npm ci --prefix "$S3DIR" --no-audit --no-fund --loglevel=error
fi
