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
	# libFuzzer targets (configure CC=clang --enable-fuzzers)
	clang libclang-rt-14-dev
	# TUI screen tests and the man page
	tmux groff-base man-db
)

missing=()
for p in "${PACKAGES[@]}"; do
	# "ii " is installed and configured; anything else (absent, half-installed) needs apt.
	if [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" != "ii " ]; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#PACKAGES[@]} packages present"
	exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo > /dev/null || {
		echo "install-deps: not root and no sudo; install as root: ${missing[*]}" >&2
		exit 1
	}
	SUDO=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -q --no-install-recommends "${missing[@]}"
