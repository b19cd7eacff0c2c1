#!/bin/bash
# symbols.sh — libmatorage.so and libmatorage-catalog.so export exactly the API functions of their headers; libmatorage.so needs no SQLite (only the catalog does); the HDF5 plugin exports only its two entry points.
. "$(dirname "$0")/lib.sh"
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
LIB=$top_builddir/src/lib/.libs/libmatorage.so
CATLIB=$top_builddir/src/lib/.libs/libmatorage-catalog.so
PLUGIN=${MT_PLUGIN_DIR:-$top_builddir/plugins/.libs}/libh5zstd.so

# Defined dynamic symbols, one name a line, without what the linker adds to every object.
exports() {
	nm -D --defined-only "$1" |
		awk '$2 != "A" && $3 !~ /^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_)$/ \
			{ sub(/@.*/, "", $3); print $3 }' | sort -u
}

# The shared objects a library names as NEEDED, one a line.
needed() {
	objdump -p "$1" | awk '$1 == "NEEDED" { print $2 }'
}

# skip REASON: a TAP case that was not run.
skip() {
	T_N=$((T_N + 1))
	echo "ok $T_N # SKIP $*"
}

# check_exports LIB HEADER MACRO PREFIX: LIB exports every MACRO function of
# HEADER and nothing else, all named PREFIX*.
check_exports() {
	local lib=$1 header=$2 macro=$3 prefix=$4 name syms bad api extra missing
	name=$(basename "$lib")
	syms=$(exports "$lib")
	ok "$([ -n "$syms" ]; echo $?)" "nm lists the exported symbols of $name"
	bad=$(printf '%s\n' "$syms" | grep -v "^$prefix")
	ok "$([ -z "$bad" ]; echo $?)" "$name exports only $prefix symbols"
	[ -z "$bad" ] || printf '%s\n' "$bad" | sed "s/^/# not $prefix: /"

	# The header is the contract: every exported function, and nothing else.
	api=$(grep -o "$macro [^(]*(" "$top_srcdir/src/lib/$header" |
		grep -o 'mt_[a-z0-9_]*($' | tr -d '(' | sort -u)
	extra=$(comm -13 <(printf '%s\n' "$api") <(printf '%s\n' "$syms"))
	ok "$([ -z "$extra" ]; echo $?)" "every symbol $name exports is declared $macro in $header"
	[ -z "$extra" ] || printf '%s\n' "$extra" | sed 's/^/# exported but internal: /'
	missing=$(comm -23 <(printf '%s\n' "$api") <(printf '%s\n' "$syms"))
	ok "$([ -z "$missing" ]; echo $?)" "every $macro function of $header is exported by $name"
	[ -z "$missing" ] || printf '%s\n' "$missing" | sed 's/^/# not exported: /'
}

if [ -f "$LIB" ]; then
	check_exports "$LIB" matorage.h MT_API mt_
	syms=$(exports "$LIB")
	for f in mt_version mt_strerror mt_store_open mt_writer_open mt_reader_read mt_user_path; do
		ok "$(printf '%s\n' "$syms" | grep -qx "$f"; echo $?)" "libmatorage.so exports $f"
	done
	c=$(printf '%s\n' "$syms" | grep -c '^mt_catalog_')
	ok "$([ "$c" = 0 ]; echo $?)" "libmatorage.so has no catalog function (found $c)"

	# Training code links libmatorage alone: SQLite is the catalog's.
	deps=$(needed "$LIB")
	ok "$([ -n "$deps" ] && ! printf '%s\n' "$deps" | grep -qi sqlite; echo $?)" \
		"libmatorage.so does not need libsqlite3 (NEEDED: $(echo $deps))"
	refs=$(nm -D --undefined-only "$LIB" | grep -c 'sqlite3_')
	ok "$([ "$refs" = 0 ]; echo $?)" "libmatorage.so calls no sqlite3_ function ($refs)"
	ok "$(! ldd "$LIB" | grep -qi sqlite; echo $?)" "nothing libmatorage.so loads is SQLite (ldd)"
else
	skip "no shared library at $LIB (configure --disable-shared?)"
fi

if [ -f "$CATLIB" ]; then
	check_exports "$CATLIB" matorage-catalog.h MT_CATALOG_API mt_catalog_
	deps=$(needed "$CATLIB")
	ok "$(printf '%s\n' "$deps" | grep -q '^libsqlite3\.'; echo $?)" \
		"libmatorage-catalog.so needs libsqlite3"
	ok "$(printf '%s\n' "$deps" | grep -q '^libmatorage\.so'; echo $?)" \
		"libmatorage-catalog.so is built on libmatorage.so"
	internal=$(nm -D --undefined-only "$CATLIB" | awk '{ sub(/@.*/, "", $2); print $2 }' |
		grep '^mt_' | sort -u | comm -23 - <(exports "$LIB"))
	ok "$([ -z "$internal" ]; echo $?)" \
		"libmatorage-catalog.so calls only functions libmatorage.so exports"
	[ -z "$internal" ] || printf '%s\n' "$internal" | sed 's/^/# not exported: /'
else
	skip "no shared library at $CATLIB (configure --disable-shared?)"
fi

if [ -f "$PLUGIN" ]; then
	got=$(exports "$PLUGIN" | tr '\n' ' ')
	ok "$([ "$got" = "H5PLget_plugin_info H5PLget_plugin_type " ]; echo $?)" \
		"the HDF5 plugin exports only H5PLget_plugin_type and H5PLget_plugin_info (got: $got)"
else
	ok 1 "the HDF5 plugin is built at $PLUGIN"
fi

done_testing
