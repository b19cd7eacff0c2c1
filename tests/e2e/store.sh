# store.sh — run a dataset test against the file store or, with MT_TEST_STORE=s3, against s3rver or Ceph RGW (S3_TARGET) behind the signing proxy.
# Sourced after lib.sh.  use_store sets MATORAGE_STORE; obj_* read and damage raw objects in either.

# use_store: pick the store the test runs against; skips the whole test when s3 is asked for and unavailable.
use_store() {
	OBJ_MODE=${MT_TEST_STORE:-file}
	if [ "$OBJ_MODE" = s3 ]; then
		s3_require
		OBJ_BASE="s3://mt-test/$(basename "$0" .sh)"
	else
		OBJ_BASE="$WORK/store"
	fi
	export MATORAGE_STORE=$OBJ_BASE
}

# obj_ls PREFIX: the keys under PREFIX (relative to the store), one a line, sorted.
obj_ls() {
	if [ "$OBJ_MODE" = s3 ]; then
		aws_cli s3 ls --recursive "$OBJ_BASE/$1" | awk '{ $1 = $2 = $3 = ""; sub(/^ +/, ""); print }' |
			sed "s|^${OBJ_BASE#s3://mt-test/}/||" | sort
	else
		(cd "$OBJ_BASE" && find "$1" -type f 2>/dev/null | sort)
	fi
}

# obj_sums PREFIX: "KEY SHA256" for every object under PREFIX (keys relative to the store), sorted;
# obj_damage KEY HOW: damage a raw object in place (obj_tool.py: flip, truncate, zero or rm).
# One process each, where an aws call per object would cost a second on S3.
obj_sums() { "$PY" "$top_srcdir/tests/e2e/obj_tool.py" "$OBJ_BASE" "${S3_ENDPOINT:-}" sums "$1"; }
obj_damage() { "$PY" "$top_srcdir/tests/e2e/obj_tool.py" "$OBJ_BASE" "${S3_ENDPOINT:-}" damage "$1" "$2"; }

# obj_get KEY FILE / obj_put FILE KEY / obj_rm KEY: raw object access, bypassing matorage.
obj_get() {
	if [ "$OBJ_MODE" = s3 ]; then aws_cli s3 cp --quiet "$OBJ_BASE/$1" "$2"; else cp "$OBJ_BASE/$1" "$2"; fi
}
obj_put() {
	if [ "$OBJ_MODE" = s3 ]; then aws_cli s3 cp --quiet "$1" "$OBJ_BASE/$2"; else cp "$1" "$OBJ_BASE/$2"; fi
}
obj_rm() {
	if [ "$OBJ_MODE" = s3 ]; then aws_cli s3 rm --quiet "$OBJ_BASE/$1"; else rm -f "$OBJ_BASE/$1"; fi
}
