#!/bin/bash
# python-abi.sh — the ctypes declarations of the python/matorage package (its _abi.py) match matorage.h (python/check_abi.py compiles them against it), and a binding that drifts is caught.
. "$(dirname "$0")/lib.sh"
CHECK=("$PY" "$top_srcdir/python/check_abi.py" --cc "${MT_CC:-cc}" --header-dir "$top_srcdir/src/lib")
BINDING=$top_srcdir/python/matorage/_abi.py

check "the binding's structs and functions match matorage.h" "${CHECK[@]}"

# drifted NAME SED PATTERN: a copy of the binding changed by SED fails, naming what differs.
drifted() {
	sed "$2" "$BINDING" > "$WORK/drift.py"
	if cmp -s "$WORK/drift.py" "$BINDING"; then
		ok 1 "$1 (the edit did not apply)"
		return
	fi
	fails "$1" 1 "$3" "${CHECK[@]}" --binding "$WORK/drift.py"
}
drifted "mt_loader_opts without its size field" 's/("size", ctypes.c_size_t), //' \
	'mt_loader_opts is size [0-9]+, matorage.h says size'
drifted "a field of another sign" 's/("rank", ctypes.c_uint)/("rank", ctypes.c_int)/' \
	'mt_loader_opts.rank is .* u '
drifted "a field matorage.h does not have" 's/("ncols", ctypes.c_size_t)/("columns", ctypes.c_size_t)/' \
	'columns'
drifted "an argument of another width" \
	's/"mt_loader_set_epoch": (ctypes.c_int, \[vp, u64/"mt_loader_set_epoch": (ctypes.c_int, [vp, ctypes.c_uint/' \
	'mt_loader_set_epoch argument 2: the binding declares c_uint, matorage.h says uint64_t'
drifted "a result of another type" 's/"mt_loader_batches": (u64/"mt_loader_batches": (ctypes.c_int/' \
	'mt_loader_batches result'
drifted "a missing argument" 's/"mt_loader_state": (sz, \[vp, cp, sz\])/"mt_loader_state": (sz, [vp, cp])/' \
	'mt_loader_state: the binding passes 2 arguments, matorage.h takes 3'
drifted "writer options out of order" \
	's/("shard_bytes", ctypes.c_uint64), ("shard_rows", ctypes.c_uint64)/("shard_rows", ctypes.c_uint64), ("shard_bytes", ctypes.c_uint64)/' \
	'mt_writer_opts.shard_rows is'
done_testing
