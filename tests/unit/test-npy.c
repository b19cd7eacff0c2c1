/* test-npy.c — .npy headers; rows of each dtype, order, byte order and version; the writer. */
#define _GNU_SOURCE /* O_DIRECT, mincore */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tap-store.h"
#include "tap.h"
#include "util.h"

#define PY "/usr/bin/python3"

static char dir[256];

static char *path_in(const char *name)
{
	static char buf[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
	return buf[k];
}

static void write_file(const char *path, const void *data, size_t len)
{
	if (tap_write_file(path, data, len)) {
		perror(path);
		exit(99);
	}
}

/* A header as NumPy lays it out: magic, version, length, the dict text
 * padded with spaces to a 64-byte boundary and ended by a newline. */
static size_t make_header(uint8_t *out, int major, const char *dict)
{
	size_t prefix = major == 1 ? 10 : 12, n = strlen(dict);
	size_t total = (prefix + n + 1 + 63) / 64 * 64;
	memcpy(out, "\x93NUMPY", 6);
	out[6] = (uint8_t)major;
	out[7] = 0;
	if (major == 1) {
		out[8] = (uint8_t)((total - prefix) & 0xff);
		out[9] = (uint8_t)((total - prefix) >> 8);
	} else {
		mti_put_u32(out + 8, (uint32_t)(total - prefix));
	}
	memcpy(out + prefix, dict, n);
	memset(out + prefix + n, ' ', total - prefix - n - 1);
	out[total - 1] = '\n';
	return total;
}

static int parse(int major, const char *dict, mt_npy_info *info, mt_error *err)
{
	uint8_t buf[1024];
	size_t n = make_header(buf, major, dict);
	return mt_npy_parse_header(buf, n, info, err);
}

/* ---- header parsing --------------------------------------------------- */

/* A header dict with this descr and shape (3,). */
#define DICT_OF(descr) "{'descr': " descr ", 'fortran_order': False, 'shape': (3,)}"

static void test_parse_good(void)
{
	mt_npy_info in;
	mt_error err = {0};
	TAP_CALL(parse(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", &in,
		       &err), &err, "NumPy's own header layout parses");
	tap_ok(in.dtype == MT_FLOAT32 && in.rank == 2 && in.shape[0] == 2 && in.shape[1] == 3 &&
		       !in.fortran_order && !in.big_endian && in.header_bytes == 128 &&
		       in.data_bytes == 24,
	       "it gives float32 (2, 3), C order, little-endian, data at 128, 24 bytes");
	TAP_CALL(parse(1, "{\"shape\":(2,3,),\"fortran_order\":True,\"descr\":\">i8\"}", &in, &err),
		 &err, "keys in any order, double quotes, no spaces, trailing comma in the shape");
	tap_ok(in.dtype == MT_INT64 && in.big_endian && in.fortran_order && in.rank == 2 &&
		       in.data_bytes == 48,
	       "it gives big-endian Fortran-order int64 (2, 3)");
	TAP_CALL(parse(1, "{\n 'descr' : '|b1' ,\n\t'fortran_order' : False ,\n"
		       " 'shape' : ( 7 , ) \n}", &in, &err),
		 &err, "newlines, tabs and spaces everywhere are accepted");
	tap_ok(in.dtype == MT_BOOL && in.rank == 1 && in.shape[0] == 7, "it gives bool (7,)");
	TAP_CALL(parse(1, "{'descr': '<f8', 'fortran_order': False, 'shape': ()}", &in, &err),
		 &err, "a scalar's empty shape parses");
	tap_ok(in.rank == 0 && in.data_bytes == 8, "a scalar has rank 0 and one element");
	TAP_CALL(parse(1, "{'descr': '=f8', 'fortran_order': False, 'shape': (3L, 4L)}", &in, &err),
		 &err, "'=' byte order and Python 2 long dimensions parse");
	tap_ok(in.dtype == MT_FLOAT64 && !in.big_endian && in.shape[1] == 4,
	       "'=' means the host's order (little-endian here)");
	TAP_CALL(parse(1, "{'descr': '>u1', 'fortran_order': False, 'shape': (5,)}", &in, &err),
		 &err, "a one-byte type with '>' parses");
	tap_ok(in.dtype == MT_UINT8 && !in.big_endian, "one-byte types never need swapping");
	TAP_CALL(parse(2, "{'descr': '<f2', 'fortran_order': False, 'shape': (0, 5), }", &in,
		       &err), &err, "format 2.0 (4-byte header length) parses");
	tap_ok(in.dtype == MT_FLOAT16 && in.data_bytes == 0 && in.header_bytes == 128,
	       "float16 (0, 5) holds no data");
	TAP_CALL(parse(3, "{'descr': '|i1', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, "
		       "1, 1, 2)}", &in, &err), &err, "format 3.0 with 9 dimensions parses");
	tap_ok(in.dtype == MT_INT8 && in.rank == MT_MAX_RANK + 1 && in.data_bytes == 2,
	       "int8 of rank 9 holds 2 bytes");

	const char *descrs[] = {"|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8",
				"<f2", "<f4", "<f8"};
	int ok = 1;
	for (int t = 0; t < 12; t++) {
		char dict[128];
		snprintf(dict, sizeof dict, DICT_OF("'%s'"), descrs[t]);
		ok &= parse(1, dict, &in, &err) == 0 && in.dtype == (mt_dtype)(MT_BOOL + t);
	}
	tap_ok(ok, "each of the 12 supported descrs maps to its dtype");
}

static void expect_bad(int code, const char *word, int major, const char *dict, const char *what)
{
	mt_npy_info in;
	mt_error err = {0};
	int rc = parse(major, dict, &in, &err);
	tap_ok(rc == code && strstr(err.message, word), "%s is refused: %s", what, err.message);
}

static void test_parse_bad(void)
{
	expect_bad(MT_EFORMAT, "object", 1, DICT_OF("'|O'"), "object dtype");
	expect_bad(MT_EFORMAT, "structured", 1, DICT_OF("[('a', '<i4'), ('b', '<f8')]"),
		   "a structured dtype");
	expect_bad(MT_EFORMAT, "byte strings", 1, DICT_OF("'|S5'"), "a byte string dtype");
	expect_bad(MT_EFORMAT, "unicode", 1, DICT_OF("'<U5x'"), "a malformed unicode dtype");
	expect_bad(MT_EFORMAT, "complex", 1, DICT_OF("'<c8'"), "complex64");
	expect_bad(MT_EFORMAT, "datetime", 1, DICT_OF("'<M8[ns]'"), "datetime64");
	expect_bad(MT_EFORMAT, "'<f16'", 1, DICT_OF("'<f16'"), "long double");
	expect_bad(MT_EFORMAT, "'<i3'", 1, DICT_OF("'<i3'"), "a three-byte integer");
	expect_bad(MT_EFORMAT, "string", 1, DICT_OF("'<f\\x34'"), "an escaped descr");
	expect_bad(MT_EFORMAT, "shape", 1, "{'descr': '<f4', 'fortran_order': False}",
		   "a dict without 'shape'");
	expect_bad(MT_EFORMAT, "repeated", 1,
		   "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}",
		   "a repeated key");
	expect_bad(MT_EFORMAT, "unexpected key", 1,
		   "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}", "an extra key");
	expect_bad(MT_EFORMAT, "True or False", 1,
		   "{'descr': '<f4', 'fortran_order': 0, 'shape': ()}", "fortran_order 0");
	expect_bad(MT_EFORMAT, "non-negative", 1,
		   "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}",
		   "a negative dimension");
	expect_bad(MT_EFORMAT, "dimensions", 1,
		   "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1)}",
		   "rank 10");
	expect_bad(MT_EFORMAT, "overflows", 1,
		   "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}",
		   "a shape whose byte count overflows");
	expect_bad(MT_EFORMAT, "overflows", 1,
		   "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,)}",
		   "a dimension over 2^64");
	expect_bad(MT_EFORMAT, "stray", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}x",
		   "bytes after the dict");
	expect_bad(MT_EFORMAT, "'}'", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': () ",
		   "an unclosed dict");
	expect_bad(MT_EFORMAT, "'('", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': 3}",
		   "a shape that is not a tuple");

	mt_npy_info in;
	mt_error err = {0};
	uint8_t buf[256];
	size_t n = make_header(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}");
	tap_ok(mt_npy_parse_header(buf, n - 1, &in, &err) == MT_ERANGE,
	       "a header one byte longer than the buffer is MT_ERANGE (%s)", err.message);
	tap_ok(mt_npy_parse_header(buf, 9, &in, &err) == MT_ERANGE,
	       "a buffer that ends inside the length field is MT_ERANGE");
	buf[6] = 4;
	tap_ok(mt_npy_parse_header(buf, n, &in, &err) == MT_EFORMAT && strstr(err.message, "4.0"),
	       "format version 4.0 is refused: %s", err.message);
	buf[0] = 'x';
	tap_ok(mt_npy_parse_header(buf, n, &in, &err) == MT_EFORMAT && strstr(err.message, "magic"),
	       "a bad magic is refused: %s", err.message);
	tap_ok(mt_npy_parse_header(buf, 0, &in, &err) == MT_EFORMAT ||
		       mt_npy_parse_header(buf, 0, &in, &err) == MT_ERANGE,
	       "an empty buffer is refused");
	n = make_header(buf, 1, "{'descr': '<f4\x01', 'fortran_order': False, 'shape': ()}");
	tap_ok(mt_npy_parse_header(buf, n, &in, &err) == MT_EFORMAT,
	       "a control character inside the descr is refused");

	/* A NUL byte in the header is shown escaped: the message goes on past it. */
	n = make_header(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}");
	buf[10 + 8] = '\0'; /* the ':' after 'descr' */
	tap_ok(mt_npy_parse_header(buf, n, &in, &err) == MT_EFORMAT &&
		       strstr(err.message, "\\x00 at byte 18 where ':' after a key was expected"),
	       "a NUL where ':' belongs is named escaped, with the rest of the message: %s",
	       err.message);
	n = make_header(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}");
	buf[10 + 13] = '\0'; /* inside '<f4' */
	tap_ok(mt_npy_parse_header(buf, n, &in, &err) == MT_EFORMAT &&
		       strstr(err.message, "\\x00 at byte 23"),
	       "a NUL inside a string is named escaped: %s", err.message);
	n = make_header(buf, 1, "{'descr':'<f4','fortran_order':False,'shape':()}");
	buf[n - 2] = '\0'; /* in the padding */
	tap_ok(mt_npy_parse_header(buf, n, &in, &err) == MT_EFORMAT &&
		       strstr(err.message, "stray bytes after the dict, from \\x00"),
	       "a NUL after the dict is named escaped: %s", err.message);
}

/* ---- files we make ourselves ------------------------------------------ */

static void test_files_by_hand(void)
{
	uint8_t buf[8192] = {0};
	mt_error err = {0};
	mt_npy *n = NULL;
	/* int16 (3, 4) big-endian: values 0..11 stored swapped. */
	size_t h = make_header(buf, 1, "{'descr': '>i2', 'fortran_order': False, 'shape': (3, 4)}");
	for (int i = 0; i < 12; i++) {
		buf[h + 2 * i] = (uint8_t)((i * 1000) >> 8);
		buf[h + 2 * i + 1] = (uint8_t)(i * 1000);
	}
	write_file(path_in("be.npy"), buf, h + 24);
	int16_t got[12] = {0};
	int ok = mt_npy_open(path_in("be.npy"), &n, &err) == 0 &&
		 mt_npy_read_rows(n, 1, 3, got, sizeof got, &err) == 0;
	for (int i = 0; ok && i < 8; i++)
		ok = got[i] == (int16_t)((i + 4) * 1000);
	tap_ok(ok, "big-endian int16 rows 1..3 come back swapped to the host's order");
	tap_ok(mt_npy_read_rows(n, 2, 4, got, sizeof got, &err) == MT_ERANGE &&
		       strstr(err.message, "be.npy"),
	       "rows past the end are MT_ERANGE naming the file: %s", err.message);
	tap_ok(mt_npy_read_rows(n, 0, 3, got, 23, &err) == MT_ERANGE,
	       "a buffer one byte too small is MT_ERANGE: %s", err.message);
	tap_ok(mt_npy_read_rows(n, 2, 2, got, 0, &err) == 0, "an empty row range reads nothing");
	mt_npy_close(n);
	n = NULL;

	/* Bools stored as any non-zero byte read as 1. */
	h = make_header(buf, 1, "{'descr': '|b1', 'fortran_order': True, 'shape': (2, 2)}");
	memcpy(buf + h, "\x00\x07\xff\x00", 4);
	write_file(path_in("bool.npy"), buf, h + 4);
	uint8_t b[4] = {9, 9, 9, 9};
	ok = mt_npy_open(path_in("bool.npy"), &n, &err) == 0 &&
	     mt_npy_read_rows(n, 0, 2, b, sizeof b, &err) == 0;
	/* Fortran order: stored (0,0) (1,0) (0,1) (1,1) = 0, 7, 255, 0. */
	tap_ok(ok && b[0] == 0 && b[1] == 1 && b[2] == 1 && b[3] == 0,
	       "bools come back as 0/1 and a Fortran-order 2x2 is transposed");
	mt_npy_close(n);
	n = NULL;

	/* Bytes after the array are not silently dropped. */
	h = make_header(buf, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,)}");
	memset(buf + h, 0, 12 + 5);
	write_file(path_in("trail.npy"), buf, h + 12 + 5);
	tap_ok(mt_npy_open(path_in("trail.npy"), &n, &err) == MT_EFORMAT && !n &&
		       strstr(err.message, "trail.npy: 5 extra bytes after the array's 12 data bytes"),
	       "bytes after the array are refused, naming the file and their count: %s",
	       err.message);

	h = make_header(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (512,)}");
	memset(buf + h, 0, 100);
	write_file(path_in("short.npy"), buf, h + 100);
	tap_ok(mt_npy_open(path_in("short.npy"), &n, &err) == MT_EFORMAT && !n &&
		       strstr(err.message, "short.npy: truncated: holds 100 of 4096 data bytes"),
	       "a truncated file is refused at open: %s", err.message);
	write_file(path_in("cut.npy"), buf, h - 10);
	tap_ok(mt_npy_open(path_in("cut.npy"), &n, &err) == MT_EFORMAT &&
		       strstr(err.message, "cut.npy") && strstr(err.message, "truncated"),
	       "a header length beyond the file is refused: %s", err.message);
	write_file(path_in("tiny.npy"), buf, 7);
	tap_ok(mt_npy_open(path_in("tiny.npy"), &n, &err) == MT_EFORMAT &&
		       strstr(err.message, "tiny.npy"),
	       "a 7-byte file is refused: %s", err.message);
	write_file(path_in("empty.npy"), buf, 0);
	tap_ok(mt_npy_open(path_in("empty.npy"), &n, &err) == MT_EFORMAT,
	       "an empty file is refused: %s", err.message);
	memcpy(buf, "PK\x03\x04", 4);
	write_file(path_in("zip.npy"), buf, h + 4096);
	tap_ok(mt_npy_open(path_in("zip.npy"), &n, &err) == MT_EFORMAT &&
		       strstr(err.message, "zip.npy") && strstr(err.message, "magic"),
	       "a file with a bad magic is refused: %s", err.message);
	tap_ok(mt_npy_open(path_in("missing.npy"), &n, &err) == MT_ENOTFOUND &&
		       strstr(err.message, "missing.npy"),
	       "a missing file is MT_ENOTFOUND: %s", err.message);
	tap_ok(mt_npy_open(dir, &n, &err) == MT_EFORMAT, "a directory is refused: %s", err.message);
	h = make_header(buf, 1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,)}");
	write_file(path_in("obj.npy"), buf, h + 64);
	tap_ok(mt_npy_open(path_in("obj.npy"), &n, &err) == MT_EFORMAT &&
		       strstr(err.message, "obj.npy") && strstr(err.message, "object"),
	       "an object-dtype file is refused naming the file: %s", err.message);

	/* A scalar is one row of one element. */
	h = make_header(buf, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': ()}");
	mti_put_u32(buf + h, 0xdeadbeef);
	write_file(path_in("scalar.npy"), buf, h + 4);
	uint32_t v = 0;
	ok = mt_npy_open(path_in("scalar.npy"), &n, &err) == 0 &&
	     mt_npy_read_rows(n, 0, 1, &v, sizeof v, &err) == 0;
	tap_ok(ok && v == 0xdeadbeef && mt_npy_get_info(n)->rank == 0,
	       "a scalar reads as one row");
	mt_npy_close(n);
	mt_npy_close(NULL);
}

/* ---- numpy fixtures --------------------------------------------------- */

static const char fixtures_py[] =
	"import os, sys\n"
	"import numpy as np\n"
	"d = sys.argv[1]\n"
	"rng = np.random.default_rng(7)\n"
	"DT = ['bool', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32',\n"
	"      'uint64', 'float16', 'float32', 'float64']\n"
	"def sample(dt, shape):\n"
	"    dt = np.dtype(dt)\n"
	"    if dt == np.bool_:\n"
	"        return rng.integers(0, 2, size=shape).astype(np.bool_)\n"
	"    if dt.kind in 'iu':\n"
	"        i = np.iinfo(dt)\n"
	"        return rng.integers(i.min, i.max, size=shape, dtype=dt, endpoint=True)\n"
	"    return (rng.standard_normal(size=shape) * 1000).astype(dt)\n"
	"out = open(os.path.join(d, 'list.txt'), 'w')\n"
	"def emit(name, a, order, endian, version):\n"
	"    if endian == '>':\n"
	"        a = a.astype(a.dtype.newbyteorder('>'))\n"
	"    if order == 'F':\n"
	"        a = np.asfortranarray(a)\n"
	"    with open(os.path.join(d, name + '.npy'), 'wb') as f:\n"
	"        np.lib.format.write_array(f, a, version=version)\n"
	"    with open(os.path.join(d, name + '.raw'), 'wb') as f:\n"
	"        f.write(a.astype(a.dtype.newbyteorder('<')).tobytes(order='C'))\n"
	"    fo = int(a.flags.f_contiguous and not a.flags.c_contiguous)\n"
	"    be = int(a.dtype.byteorder == '>')\n"
	"    print(name, a.dtype.name, fo, be, a.ndim, *a.shape, file=out)\n"
	"for dt in DT:\n"
	"    for shape in [(), (0,), (1,), (5, 3), (4, 2, 3)]:\n"
	"        a = sample(dt, shape)\n"
	"        for order in 'CF':\n"
	"            for endian in '<>':\n"
	"                for v in [(1, 0), (2, 0), (3, 0)]:\n"
	"                    s = 'x'.join(map(str, shape)) or 's'\n"
	"                    name = f'{dt}-{s}-{order}{endian}{v[0]}'\n"
	"                    emit(name, a, order, endian, v)\n"
	"emit('wideF', sample('float64', (3, 70)), 'F', '>', (1, 0))\n"
	"emit('deepF', sample('int16', (6, 4, 5, 3)), 'F', '>', (1, 0))\n"
	"emit('bigF2', sample('float32', (700000, 4)), 'F', '<', (1, 0))\n"
	"emit('bigF1', sample('uint32', (2200000, 2)), 'F', '>', (2, 0))\n"
	"out.close()\n"
	"bad = {'object': np.array([1, 'a', None], dtype=object),\n"
	"       'structured': np.zeros(3, dtype=[('a', '<i4'), ('b', '<f8')]),\n"
	"       'bytes': np.array([b'ab', b'c']),\n"
	"       'complex': np.zeros(3, dtype=np.complex64),\n"
	"       'datetime': np.zeros(3, dtype='datetime64[ns]')}\n"
	"for k, a in bad.items():\n"
	"    np.save(os.path.join(d, 'bad-' + k + '.npy'), a, allow_pickle=True)\n";

static int run_python(const char *script_name, const char *script, const char *arg)
{
	write_file(path_in(script_name), script, strlen(script));
	char cmd[1024];
	snprintf(cmd, sizeof cmd, PY " '%s' '%s'", path_in(script_name), arg);
	return system(cmd);
}

static int have_numpy(void)
{
	return access(PY, X_OK) == 0 && system(PY " -c 'import numpy' 2>/dev/null") == 0;
}

/* Read rows [a, b) and compare them with the expected C-order bytes. */
static int rows_equal(mt_npy *n, const uint8_t *want, uint64_t row_bytes, uint64_t a, uint64_t b,
		      mt_error *err)
{
	size_t len = (size_t)((b - a) * row_bytes);
	uint8_t *got = malloc(len ? len : 1);
	int ok = got && mt_npy_read_rows(n, a, b, got, len, err) == 0 &&
		 memcmp(got, want + a * row_bytes, len) == 0;
	free(got);
	return ok;
}

/* Check one fixture: its info, all rows at once, then two rows at a time. */
static int check_fixture(const char *line, char name[64], mt_error *err)
{
	char dtype[32];
	int fo, be, rank, used;
	uint64_t shape[MT_MAX_RANK + 1] = {0};
	if (sscanf(line, "%63s %31s %d %d %d%n", name, dtype, &fo, &be, &rank, &used) != 5)
		return 0;
	for (int i = 0; i < rank; i++) {
		int k;
		unsigned long long v;
		if (sscanf(line + used, "%llu%n", &v, &k) != 1)
			return 0;
		shape[i] = v;
		used += k;
	}
	char npy[128], raw[128];
	snprintf(npy, sizeof npy, "%s.npy", name);
	snprintf(raw, sizeof raw, "%s.raw", name);
	size_t rawlen;
	uint8_t *want = tap_read_file(path_in(raw), &rawlen);
	mt_npy *n = NULL;
	int ok = want && mt_npy_open(path_in(npy), &n, err) == 0;
	const mt_npy_info *in = ok ? mt_npy_get_info(n) : NULL;
	ok = ok && strcmp(mt_dtype_name(in->dtype), dtype) == 0 && in->fortran_order == fo &&
	     in->big_endian == be && in->rank == rank && in->data_bytes == rawlen;
	for (int i = 0; ok && i < rank; i++)
		ok = in->shape[i] == shape[i];
	uint64_t rows = rank ? shape[0] : 1, rb = rows ? rawlen / rows : 0;
	if (ok && strncmp(name, "big", 3) == 0) {
		/* Reads that take each way through a Fortran-order file:
		 * long runs in pieces or per column, whole-array batches,
		 * and short runs served from the array loaded once. */
		ok = rows_equal(n, want, rb, 1, rows - 1, err) &&
		     rows_equal(n, want, rb, 0, 5000, err) &&
		     rows_equal(n, want, rb, 0, rows, err) &&
		     rows_equal(n, want, rb, 100, 1100, err) &&
		     rows_equal(n, want, rb, rows - 7, rows, err);
	} else if (ok) {
		ok = rows_equal(n, want, rb, 0, rows, err);
		for (uint64_t a = 0; ok && a < rows; a += 2)
			ok = rows_equal(n, want, rb, a, a + 2 < rows ? a + 2 : rows, err);
	}
	mt_npy_close(n);
	free(want);
	return ok;
}

struct group {
	char name[64];  /* a dtype, or one of the special Fortran fixtures */
	int files, failed;
	char first[64]; /* the first fixture that failed, and why */
	mt_error err;
};

static void group_report(struct group *g)
{
	if (g->files)
		tap_ok(!g->failed, "numpy's %s files (%d) read back as C-order little-endian%s%s",
		       g->name, g->files, g->failed ? "; first failure: " : "", g->first);
	if (g->failed)
		tap_diag("  %s", g->err.message);
	memset(g, 0, sizeof *g);
}

static void test_numpy_fixtures(void)
{
	if (run_python("fixtures.py", fixtures_py, dir) != 0) {
		tap_ok(0, "numpy writes the fixtures");
		return;
	}
	FILE *list = fopen(path_in("list.txt"), "r");
	char line[256], name[64];
	int files = 0;
	struct group g = {0};
	mt_error err = {0};
	/* One case per dtype ("int16-5x3-F>2" is in group int16) keeps the
	 * output short. */
	while (list && fgets(line, sizeof line, list)) {
		int len = (int)strcspn(line, "- \n");
		if (strncmp(line, g.name, (size_t)len) != 0 || g.name[len] != '\0') {
			group_report(&g);
			snprintf(g.name, sizeof g.name, "%.*s", len, line);
		}
		g.files++;
		files++;
		if (!check_fixture(line, name, &err) && !g.failed++) {
			snprintf(g.first, sizeof g.first, "%s", name);
			g.err = err;
		}
	}
	group_report(&g);
	if (list)
		fclose(list);
	tap_ok(files == 12 * 5 * 2 * 2 * 3 + 4, "all %d numpy fixtures were checked", files);

	const char *kinds[][2] = {{"object", "object"},     {"structured", "structured"},
				  {"bytes", "byte strings"}, {"complex", "complex"},
				  {"datetime", "datetime"}};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		char file[64];
		mt_npy *n = NULL;
		snprintf(file, sizeof file, "bad-%s.npy", kinds[i][0]);
		tap_ok(mt_npy_open(path_in(file), &n, &err) == MT_EFORMAT &&
			       strstr(err.message, file) && strstr(err.message, kinds[i][1]),
		       "numpy's %s array is refused: %s", kinds[i][0], err.message);
		mt_npy_close(n);
	}
}

/* ---- writer ----------------------------------------------------------- */

static int dir_entries(void)
{
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	if (d)
		closedir(d);
	return n;
}

/* Write one array in three uneven pieces and record it for numpy. */
static int write_case(FILE *list, const char *name, mt_dtype t, int rank, const uint64_t *shape,
		      mt_error *err)
{
	uint64_t bytes = mt_dtype_size(t);
	for (int i = 0; i < rank; i++)
		bytes *= shape[i];
	uint8_t *data = malloc(bytes ? bytes : 1);
	for (uint64_t i = 0; i < bytes; i++)
		data[i] = (uint8_t)(i * 37 + 11);
	if (t == MT_BOOL)
		for (uint64_t i = 0; i < bytes; i++)
			data[i] &= 1;
	if (t == MT_FLOAT16 || t == MT_FLOAT32 || t == MT_FLOAT64) /* no NaN payloads */
		for (uint64_t i = mt_dtype_size(t) - 1; i < bytes; i += mt_dtype_size(t))
			data[i] &= 0x3f;
	char npy[64], raw[64];
	snprintf(npy, sizeof npy, "%s.npy", name);
	snprintf(raw, sizeof raw, "%s.raw", name);
	write_file(path_in(raw), data, bytes);
	mt_npy_writer *w = NULL;
	size_t p1 = (size_t)(bytes / 3), p2 = (size_t)(bytes / 2);
	int rc = mt_npy_create(path_in(npy), t, rank, shape, &w, err);
	if (!rc)
		rc = mt_npy_write(w, data, p1, err);
	if (!rc)
		rc = mt_npy_write(w, data + p1, p2 - p1, err);
	if (!rc)
		rc = mt_npy_write(w, data + p2, bytes - p2, err);
	if (!rc)
		rc = mt_npy_finish(w, err);
	mt_npy_writer_close(w);
	/* Our own reader must agree before numpy is asked. */
	mt_npy *n = NULL;
	if (!rc && !(rc = mt_npy_open(path_in(npy), &n, err))) {
		const mt_npy_info *in = mt_npy_get_info(n);
		uint64_t rows = rank ? shape[0] : 1;
		if (in->header_bytes % 64 || in->dtype != t || in->rank != rank ||
		    !rows_equal(n, data, rows ? bytes / rows : 0, 0, rows, err))
			rc = mti_err(err, MT_ECORRUPT, "%s does not read back", npy);
	}
	mt_npy_close(n);
	fprintf(list, "%s %s", name, mt_dtype_name(t));
	for (int i = 0; i < rank; i++)
		fprintf(list, " %llu", (unsigned long long)shape[i]);
	fprintf(list, "\n");
	free(data);
	return rc;
}

static const char check_py[] =
	"import sys\n"
	"import numpy as np\n"
	"d = sys.argv[1]\n"
	"for line in open(d + '/written.txt'):\n"
	"    name, dt, *shape = line.split()\n"
	"    a = np.load(f'{d}/{name}.npy', allow_pickle=False)\n"
	"    raw = open(f'{d}/{name}.raw', 'rb').read()\n"
	"    shape = tuple(int(s) for s in shape)\n"
	"    if a.dtype != np.dtype(dt).newbyteorder('<') or a.shape != shape:\n"
	"        sys.exit(f'{name}: numpy sees {a.dtype}{a.shape}, wanted {dt}{shape}')\n"
	"    if not a.flags.c_contiguous or a.tobytes() != raw:\n"
	"        sys.exit(f'{name}: values differ')\n";

static void test_writer(int numpy)
{
	mt_error err = {0};
	FILE *list = fopen(path_in("written.txt"), "w");
	uint64_t s53[] = {5, 3}, s0[] = {0}, s7[] = {7}, s234[] = {2, 3, 4};
	int ok = write_case(list, "w-f32", MT_FLOAT32, 2, s53, &err) == 0;
	for (mt_dtype t = MT_BOOL; ok && t <= MT_FLOAT64; t++) {
		char name[32];
		snprintf(name, sizeof name, "w-%s", mt_dtype_name(t));
		ok = write_case(list, name, t, 3, s234, &err) == 0;
	}
	ok = ok && write_case(list, "w-empty", MT_INT64, 1, s0, &err) == 0 &&
	     write_case(list, "w-vec", MT_UINT16, 1, s7, &err) == 0 &&
	     write_case(list, "w-scalar", MT_FLOAT64, 0, NULL, &err) == 0;
	fclose(list);
	tap_ok(ok, "the writer makes every dtype, scalars and empty arrays, in 3 pieces, and our "
		   "reader reads them back%s%s", ok ? "" : ": ", ok ? "" : err.message);
	if (numpy)
		tap_ok(run_python("check.py", check_py, dir) == 0,
		       "np.load reads every written file with the same dtype, shape and values");

	/* Failures leave nothing behind: start from an empty directory. */
	char keep[sizeof dir];
	memcpy(keep, dir, sizeof dir);
	strcat(dir, "/w");
	mkdir(dir, 0700);
	mt_npy_writer *w = NULL;
	uint8_t data[60] = {0};
	int rc = mt_npy_create(path_in("a.npy"), MT_FLOAT32, 2, s53, &w, &err);
	if (!rc)
		rc = mt_npy_write(w, data, 56, &err);
	tap_ok(rc == 0 && mt_npy_write(w, data, 8, &err) == MT_ESTATE &&
		       strstr(err.message, "a.npy"),
	       "writing past what the shape holds is MT_ESTATE: %s", err.message);
	tap_ok(mt_npy_finish(w, &err) == MT_ESTATE && strstr(err.message, "56 of the 60"),
	       "finish with 4 bytes missing fails: %s", err.message);
	tap_ok(access(path_in("a.npy"), F_OK) != 0 && dir_entries() == 0,
	       "a failed finish leaves neither the file nor a temporary");
	tap_ok(mt_npy_write(w, data, 4, &err) == MT_ESTATE, "nothing can be written after it");
	mt_npy_writer_close(w);

	rc = mt_npy_create(path_in("b.npy"), MT_UINT8, 1, s7, &w, &err);
	tap_ok(rc == 0 && dir_entries() == 1 && access(path_in("b.npy"), F_OK) != 0,
	       "an unfinished file exists only under a temporary name");
	mt_npy_writer_close(w);
	tap_ok(dir_entries() == 0, "close without finish removes the temporary");

	write_file(path_in("c.npy"), "old", 3);
	rc = mt_npy_create(path_in("c.npy"), MT_UINT8, 1, s7, &w, &err);
	if (!rc)
		rc = mt_npy_write(w, "1234567", 7, &err);
	if (!rc)
		rc = mt_npy_finish(w, &err);
	tap_ok(mt_npy_finish(w, &err) == MT_ESTATE, "a second finish is MT_ESTATE");
	mt_npy_writer_close(w);
	size_t len = 0;
	uint8_t *back = tap_read_file(path_in("c.npy"), &len);
	tap_ok(rc == 0 && back && len == 128 + 7 && memcmp(back + 128, "1234567", 7) == 0 &&
		       dir_entries() == 1,
	       "finish replaces an existing file and leaves no temporary");
	free(back);

	tap_ok(mt_npy_create(path_in("no/such/dir.npy"), MT_UINT8, 1, s7, &w, &err) != 0 &&
		       strstr(err.message, "no/such/dir.npy"),
	       "creating in a missing directory fails naming the path: %s", err.message);
	tap_ok(mt_npy_create(path_in("d.npy"), MT_DTYPE_INVALID, 1, s7, &w, &err) == MT_EINVAL,
	       "an invalid dtype is MT_EINVAL");
	uint64_t huge[] = {UINT64_MAX / 2, 3};
	tap_ok(mt_npy_create(path_in("d.npy"), MT_UINT8, 2, huge, &w, &err) == MT_EINVAL,
	       "a shape whose size overflows is MT_EINVAL: %s", err.message);
	memcpy(dir, keep, sizeof dir);
}

/* A file larger than the writer's write-back step (32 MiB), written in uneven
 * pieces, so that step runs several times: every byte lands where it belongs. */
static void test_writer_large(void)
{
	uint64_t shape[] = {(80u << 20) / 8};
	size_t bytes = 80u << 20, piece = (5u << 20) + 7;
	uint64_t *v = malloc(bytes);
	mt_npy_writer *w = NULL;
	mt_error err = {0};
	for (size_t i = 0; v && i < shape[0]; i++)
		v[i] = i * 0x9e3779b97f4a7c15ull;
	int rc = v ? mt_npy_create(path_in("large.npy"), MT_UINT64, 1, shape, &w, &err) : MT_ENOMEM;
	for (size_t at = 0; !rc && at < bytes; at += piece)
		rc = mt_npy_write(w, (const uint8_t *)v + at, bytes - at < piece ? bytes - at : piece,
				  &err);
	if (!rc)
		rc = mt_npy_finish(w, &err);
	mt_npy_writer_close(w);
	size_t len = 0;
	uint8_t *back = rc ? NULL : tap_read_file(path_in("large.npy"), &len);
	tap_ok(back && len == 128 + bytes && memcmp(back + 128, v, bytes) == 0,
	       "an 80 MiB file written in pieces of 5 MiB and 7 bytes reads back whole%s%s",
	       rc ? ": " : "", rc ? err.message : "");
	free(back);
	free(v);
	unlink(path_in("large.npy"));
}

/* Pages of path in the page cache, or -1. */
static long cached_pages(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	long n = -1;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0) {
		if (fd >= 0)
			close(fd);
		return n;
	}
	long page = sysconf(_SC_PAGESIZE);
	size_t pages = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page;
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	unsigned char *vec = malloc(pages);
	if (m != MAP_FAILED && vec && mincore(m, (size_t)st.st_size, vec) == 0)
		for (size_t i = n = 0; i < pages; i++)
			n += vec[i] & 1;
	free(vec);
	if (m != MAP_FAILED)
		munmap(m, (size_t)st.st_size);
	close(fd);
	return n;
}

/* Whether files in the test directory can be written with direct I/O. */
static int dir_has_direct_io(void)
{
	int fd = open(path_in("probe"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int fl = fd < 0 ? -1 : fcntl(fd, F_GETFL);
	int ok = fl >= 0 && fcntl(fd, F_SETFL, fl | O_DIRECT) == 0;
	if (fd >= 0)
		close(fd);
	unlink(path_in("probe"));
	return ok;
}

/* Faults for the direct writer, on the writev calls of a descriptor in direct
 * I/O from the second on (the first has sent data direct): EINVAL (a file
 * system wanting larger blocks), a write that comes back short of a block, or
 * ENOSPC.  This definition takes the library's calls; the rest go to libc. */
enum { FAULT_NONE, FAULT_EINVAL, FAULT_SHORT, FAULT_ENOSPC };
static int writev_fault, writev_direct_calls;

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	static ssize_t (*real)(int, const struct iovec *, int);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "writev");
	int fl = fcntl(fd, F_GETFL);
	if (!writev_fault || fl < 0 || !(fl & O_DIRECT) || ++writev_direct_calls < 2)
		return real(fd, iov, cnt);
	if (writev_fault != FAULT_SHORT) {
		errno = writev_fault == FAULT_EINVAL ? EINVAL : ENOSPC;
		return -1;
	}
	/* 5000 bytes of the first piece, through the page cache. */
	fcntl(fd, F_SETFL, fl & ~O_DIRECT);
	ssize_t put = write(fd, iov[0].iov_base, iov[0].iov_len < 5000 ? iov[0].iov_len : 5000);
	fcntl(fd, F_SETFL, fl);
	return put;
}

#define DIRECT_BYTES ((72u << 20) + 5)

/* Write v (DIRECT_BYTES) to name: pieces lined up with their file offset
 * (v's address is) and pieces copied one byte off, of 1 byte to 16 MiB.
 * 0 or the error code; *offsets_ok whether mt_npy_writer_offset followed. */
static int write_direct(const char *name, const uint8_t *v, int *offsets_ok, mt_error *err)
{
	size_t pieces[] = {16u << 20, 1, 4095, (5u << 20) + 3, 12u << 20, 7, (8u << 20) + 4096,
			   (2u << 20) + 1};
	uint64_t shape[] = {DIRECT_BYTES};
	uint8_t *odd = malloc((16u << 20) + 1);
	mt_npy_writer *w = NULL;
	int rc = odd ? mt_npy_create(path_in(name), MT_UINT8, 1, shape, &w, err) : MT_ENOMEM;
	*offsets_ok = !rc && mt_npy_writer_offset(w) == 128;
	for (size_t k = 0, at = 0; !rc && at < DIRECT_BYTES; k++) {
		size_t n = k < sizeof pieces / sizeof pieces[0] ? pieces[k] : DIRECT_BYTES - at;
		n = n < DIRECT_BYTES - at ? n : DIRECT_BYTES - at;
		const uint8_t *src = v + at;
		if (k % 2) { /* a copy one byte off: never lined up */
			memcpy(odd + 1, src, n);
			src = odd + 1;
		}
		rc = mt_npy_write(w, src, n, err);
		at += n;
		*offsets_ok = *offsets_ok && (rc || mt_npy_writer_offset(w) == 128 + at);
	}
	if (!rc)
		rc = mt_npy_finish(w, err);
	mt_npy_writer_close(w);
	free(odd);
	return rc;
}

/* Whether name holds v whole after a 128-byte header. */
static int holds_direct(const char *name, const uint8_t *v)
{
	size_t len = 0;
	uint8_t *back = tap_read_file(path_in(name), &len);
	int ok = back && len == 128 + DIRECT_BYTES && memcmp(back + 128, v, DIRECT_BYTES) == 0;
	free(back);
	return ok;
}

/* A file of 64 MiB or more goes to the disk past the page cache: pieces
 * whose address lines up with their file offset are written from where they
 * lie, the others (and the header) through the writer's stage, in any mix
 * and any size.  Every byte lands, and the file is hardly in the cache.
 * Where direct writes are refused or come back short midway, the rest goes
 * through the page cache; a full disk fails naming the file. */
static void test_writer_direct(void)
{
	uint8_t *mem = NULL;
	mt_error err = {0};
	if (posix_memalign((void **)&mem, 4096, DIRECT_BYTES + 4096)) {
		tap_ok(0, "memory for the direct I/O tests");
		return;
	}
	/* v[i] goes at file offset 128 + i: v's address lines up with it. */
	uint8_t *v = mem + 128;
	for (size_t i = 0; i < DIRECT_BYTES; i++)
		v[i] = (uint8_t)(i * 2654435761u >> 13);
	int offsets_ok = 0, direct = dir_has_direct_io();
	int rc = write_direct("direct.npy", v, &offsets_ok, &err);
	long cached = rc ? -1 : cached_pages(path_in("direct.npy"));
	tap_ok(rc == 0 && holds_direct("direct.npy", v) && offsets_ok,
	       "a 72 MiB file from pieces lined up and not, of 1 byte to 16 MiB, reads back "
	       "whole%s%s", rc ? ": " : "", rc ? err.message : "");
	if (direct)
		tap_ok(cached >= 0 && cached <= 4, "it was written past the page cache: %ld of "
		       "its %zu pages cached", cached, (128 + (size_t)DIRECT_BYTES + 4095) / 4096);
	else
		tap_diag("no direct I/O where the test writes: the page cache and fault checks "
			 "are skipped");
	unlink(path_in("direct.npy"));

	static const char *const what[] = {"", "refused (EINVAL)", "short of a block"};
	for (int f = FAULT_EINVAL; direct && f <= FAULT_SHORT; f++) {
		writev_fault = f;
		writev_direct_calls = 0;
		rc = write_direct("direct.npy", v, &offsets_ok, &err);
		tap_ok(rc == 0 && writev_direct_calls >= 2 && holds_direct("direct.npy", v),
		       "a direct write %s midway: the rest goes buffered and the file is whole%s%s",
		       what[f], rc ? ": " : "", rc ? err.message : "");
		unlink(path_in("direct.npy"));
	}
	if (direct) {
		char keep[sizeof dir];
		memcpy(keep, dir, sizeof dir);
		strcat(dir, "/full");
		mkdir(dir, 0700);
		writev_fault = FAULT_ENOSPC;
		writev_direct_calls = 0;
		rc = write_direct("direct.npy", v, &offsets_ok, &err);
		tap_ok(rc == MT_EIO && strstr(err.message, "direct.npy") &&
			       strstr(err.message, strerror(ENOSPC)) && dir_entries() == 0,
		       "a full disk fails naming the file and leaves nothing: %s", err.message);
		memcpy(dir, keep, sizeof dir);
	}
	writev_fault = FAULT_NONE;
	free(mem);
}

/* Write the 7-byte uint8 array "1234567" to path; 0 or the error code. */
static int write_seven(const char *path, mt_error *err)
{
	uint64_t s7[] = {7};
	mt_npy_writer *w = NULL;
	int rc = mt_npy_create(path, MT_UINT8, 1, s7, &w, err);
	if (!rc)
		rc = mt_npy_write(w, "1234567", 7, err);
	if (!rc)
		rc = mt_npy_finish(w, err);
	mt_npy_writer_close(w);
	return rc;
}

static int holds_seven(const char *path)
{
	size_t len = 0;
	uint8_t *back = tap_read_file(path, &len);
	int ok = back && len == 128 + 7 && memcmp(back + 128, "1234567", 7) == 0;
	free(back);
	return ok;
}

/* What the output path is decides how it is written: replaced whole, written
 * through a link, or written as it is (a device), never replaced. */
static void test_writer_targets(void)
{
	mt_error err = {0};
	struct stat st;
	write_file(path_in("t-real.npy"), "old", 3);
	symlink("t-real.npy", path_in("t-link.npy"));
	int rc = write_seven(path_in("t-link.npy"), &err);
	tap_ok(rc == 0 && holds_seven(path_in("t-real.npy")) &&
		       lstat(path_in("t-link.npy"), &st) == 0 && S_ISLNK(st.st_mode),
	       "a symbolic link is written through and stays a link%s%s", rc ? ": " : "",
	       rc ? err.message : "");
	symlink(path_in("t-new.npy"), path_in("t-dangling.npy"));
	rc = write_seven(path_in("t-dangling.npy"), &err);
	tap_ok(rc == 0 && holds_seven(path_in("t-new.npy")) &&
		       lstat(path_in("t-dangling.npy"), &st) == 0 && S_ISLNK(st.st_mode),
	       "a dangling link's target is created%s%s", rc ? ": " : "", rc ? err.message : "");
	symlink("t-loop2", path_in("t-loop1"));
	symlink("t-loop1", path_in("t-loop2"));
	rc = write_seven(path_in("t-loop1"), &err);
	tap_ok(rc != 0 && strstr(err.message, "t-loop1"), "a link loop is refused: %s",
	       err.message);
	rc = write_seven(dir, &err);
	tap_ok(rc != 0 && strstr(err.message, "directory"), "a directory is refused: %s",
	       err.message);
	if (stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode) && access("/dev/null", W_OK) == 0) {
		rc = write_seven("/dev/null", &err);
		tap_ok(rc == 0 && stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode),
		       "/dev/null is written as it is and stays a device%s%s", rc ? ": " : "",
		       rc ? err.message : "");
	}

	int fds[2];
	uint64_t s7[] = {7};
	mt_npy_writer *w = NULL;
	rc = pipe(fds) ? MT_EIO : mt_npy_create_fd(fds[1], "the pipe", MT_UINT8, 1, s7, &w, &err);
	if (!rc)
		rc = mt_npy_write(w, "1234567", 7, &err);
	if (!rc)
		rc = mt_npy_finish(w, &err);
	mt_npy_writer_close(w);
	uint8_t buf[256];
	ssize_t got = rc ? -1 : read(fds[0], buf, sizeof buf);
	tap_ok(got == 128 + 7 && memcmp(buf + 128, "1234567", 7) == 0 &&
		       fcntl(fds[1], F_GETFD) != -1,
	       "a caller's descriptor gets the stream and stays open%s%s", rc ? ": " : "",
	       rc ? err.message : "");
	close(fds[0]);
	close(fds[1]);
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

int main(void)
{
	if (tap_scratch_dir("npy", dir, sizeof dir))
		return 99;
	test_parse_good();
	test_parse_bad();
	test_files_by_hand();
	int numpy = have_numpy();
	if (numpy)
		test_numpy_fixtures();
	else
		tap_diag("no numpy at " PY ": numpy fixtures skipped");
	test_writer(numpy);
	test_writer_large();
	test_writer_direct();
	test_writer_targets();
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return tap_done();
}
