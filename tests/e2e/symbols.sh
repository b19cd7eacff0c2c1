#!/bin/bash
# symbols.sh — libmatorage.so exports exactly the MT_API functions of matorage.h; the HDF5 plugin only its two entry points.
. "$(dirname "$0")/lib.sh"
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
LIB=$top_builddir/src/lib/.libs/libmatorage.so
PLUGIN=${MT_PLUGIN_DIR:-$top_builddir/plugins/.libs}/libh5zstd.so

# Defined dynamic symbols, one name a line, without what the linker adds to every object.
exports() {
	nm -D --defined-only "$1" |
		awk '$2 != "A" && $3 !~ /^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_)$/ \
			{ sub(/@.*/, "", $3); print $3 }' | sort -u
}

# skip REASON: a TAP case that was not run.
skip() {
	T_N=$((T_N + 1))
	echo "ok $T_N # SKIP $*"
}

if [ -f "$LIB" ]; then
	syms=$(exports "$LIB")
	ok "$([ -n "$syms" ]; echo $?)" "nm lists the library's exported symbols"
	bad=$(printf '%s\n' "$syms" | grep -v '^mt_')
	ok "$([ -z "$bad" ]; echo $?)" "libmatorage.so exports only mt_ symbols"
	[ -z "$bad" ] || printf '%s\n' "$bad" | sed 's/^/# not mt_: /'

	# The header is the contract: every MT_API function, and nothing else.
	api=$(grep -o 'MT_API[^(]*(' "$top_srcdir/src/lib/matorage.h" |
		grep -o 'mt_[a-z0-9_]*($' | tr -d '(' | sort -u)
	extra=$(comm -13 <(printf '%s\n' "$api") <(printf '%s\n' "$syms"))
	ok "$([ -z "$extra" ]; echo $?)" "every exported symbol is declared MT_API in matorage.h"
	[ -z "$extra" ] || printf '%s\n' "$extra" | sed 's/^/# exported but internal: /'
	missing=$(comm -23 <(printf '%s\n' "$api") <(printf '%s\n' "$syms"))
	ok "$([ -z "$missing" ]; echo $?)" "every MT_API function of matorage.h is exported"
	[ -z "$missing" ] || printf '%s\n' "$missing" | sed 's/^/# not exported: /'

	for f in mt_version mt_strerror mt_store_open mt_writer_open mt_reader_read; do
		ok "$(printf '%s\n' "$syms" | grep -qx "$f"; echo $?)" "libmatorage.so exports $f"
	done
else
	skip "no shared library at $LIB (configure --disable-shared?)"
fi

if [ -f "$PLUGIN" ]; then
	got=$(exports "$PLUGIN" | tr '\n' ' ')
	ok "$([ "$got" = "H5PLget_plugin_info H5PLget_plugin_type " ]; echo $?)" \
		"the HDF5 plugin exports only H5PLget_plugin_type and H5PLget_plugin_info (got: $got)"
else
	ok 1 "the HDF5 plugin is built at $PLUGIN"
fi

done_testing
