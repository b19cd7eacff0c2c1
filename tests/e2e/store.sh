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
