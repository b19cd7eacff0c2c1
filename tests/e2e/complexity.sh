#!/bin/bash
# complexity.sh — no function in src/ is over McCabe 30 (pmccabe's modified count: a switch
# counts once) or 100 lines: a function that grows past them is doing several jobs.
. "$(dirname "$0")/lib.sh"
MAX_MCCABE=30
MAX_LINES=100

if ! command -v pmccabe > /dev/null; then
	ok 0 "function size # SKIP pmccabe not installed (scripts/install-deps.sh)"
	done_testing
fi
mapfile -t files < <(find "$top_srcdir/src" -name '*.c' | sort)
# pmccabe: modified McCabe, traditional McCabe, statements, first line, lines, file(line): name
report=$(pmccabe "${files[@]}")
ok $([ -n "$report" ]; echo $?) "pmccabe reads the ${#files[@]} source files"
over=$(awk -v m="$MAX_MCCABE" -v l="$MAX_LINES" -F'\t' \
	'$1 > m || $5 > l { sub(".*/src/", "src/", $6); printf " %s (McCabe %s, %s lines)", $6, $1, $5 }' \
	<<< "$report")
ok $([ -z "$over" ]; echo $?) "no function over McCabe $MAX_MCCABE or $MAX_LINES lines${over:+ — over:$over}"
done_testing
