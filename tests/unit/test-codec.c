/* test-codec.c — sha256/xxh3 known values, zstd round trips and damage, filter 32015 in HDF5, mti_copy at every alignment that matters. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include <hdf5.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#include "codec.h"
#include "pool.h"
#include "tap.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void *random_bytes(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);
	for (size_t i = 0; p && i < n; i++)
		p[i] = (uint8_t)rng();
	return p;
}

static void test_sha256(void)
{
	mt_error err = {0};
	char hex[MT_SHA256_HEX];
	TAP_CALL(mti_sha256_hex("", 0, hex, &err), &err, "sha256 of nothing runs");
	tap_ok(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0,
	       "sha256(\"\") is the FIPS 180-2 value (got %s)", hex);
	TAP_CALL(mti_sha256_hex("abc", 3, hex, &err), &err, "sha256 of abc runs");
	tap_ok(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
	       "sha256(\"abc\") is the FIPS 180-2 value (got %s)", hex);

	/* A million 'a' fed in uneven pieces: the incremental API must not
	 * depend on how the input is split. */
	mt_sha256 *h = NULL;
	char piece[997];
	memset(piece, 'a', sizeof piece);
	int rc = mti_sha256_new(&h, &err);
	for (size_t done = 0; !rc && done < 1000000;) {
		size_t n = 1000000 - done < sizeof piece ? 1000000 - done : 1 + done % sizeof piece;
		rc = mti_sha256_update(h, piece, n, &err);
		done += n;
	}
	if (!rc)
		rc = mti_sha256_final(h, hex, &err);
	mti_sha256_free(h);
	tap_ok(rc == 0 && strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc"
				      "7112cd0") == 0,
	       "incremental sha256 of a million 'a' in uneven pieces is the FIPS value");
	mti_sha256_free(NULL);
}

static void test_xxh3(void)
{
	/* The reference value for empty input, seed 0 (xxHash's sanity table). */
	tap_ok(mti_xxh3("", 0) == 0x2D06800538D394C2ull, "xxh3 of empty input is 2D06800538D394C2");
	uint8_t *a = random_bytes(4097);
	uint8_t *b = malloc(4098);
	memcpy(b + 1, a, 4097);
	tap_ok(mti_xxh3(a, 4097) == mti_xxh3(b + 1, 4097),
	       "xxh3 depends on the bytes, not on their alignment");
	b[1 + 2048] ^= 1;
	tap_ok(mti_xxh3(a, 4097) != mti_xxh3(b + 1, 4097), "xxh3 changes when one bit flips");
	free(a);
	free(b);
	/* The AVX2 build and libxxhash's agree at every length class XXH3 has
	 * (0-16, 17-128, 129-240, then stripes, blocks and a tail). */
	uint8_t *c = random_bytes(1 << 20);
	static const size_t lens[] = {0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1023, 1024,
				      1025, 4096, 65537, 1 << 20};
	int same = 1;
	for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
		same &= mti_xxh3(c, lens[i]) == XXH3_64bits(c, lens[i]) &&
			mti_xxh3(c + 1, lens[i] - !!lens[i]) == XXH3_64bits(c + 1, lens[i] - !!lens[i]);
	tap_ok(same, "xxh3 equals libxxhash's at 18 lengths, aligned and not");
	free(c);
}

/* Compress, check the frame records its size, decompress, compare. */
static int round_trip(const void *src, size_t len, int level, size_t *zlen, mt_error *err)
{
	void *z = NULL;
	size_t n = 0;
	int rc = mti_zstd_compress(src, len, level, &z, &n, err);
	if (rc)
		return rc;
	void *back = malloc(len ? len : 1);
	if (ZSTD_getFrameContentSize(z, n) != len)
		rc = mti_err(err, MT_ECODEC, "frame does not record its content size");
	else if (!(rc = mti_zstd_decompress(z, n, back, len, err)) && memcmp(back, src, len))
		rc = mti_err(err, MT_ECORRUPT, "round trip changed the bytes");
	free(back);
	free(z);
	*zlen = n;
	return rc;
}

static void test_zstd(void)
{
	mt_error err = {0};
	size_t len = 1 << 20, zlen = 0;
	uint8_t *rnd = random_bytes(len);
	uint8_t *zero = calloc(1, len);
	TAP_CALL(round_trip(rnd, len, 3, &zlen, &err), &err,
		 "1 MiB of random bytes survive a level-3 round trip with the size in the frame");
	TAP_CALL(round_trip(zero, len, 19, &zlen, &err), &err,
		 "1 MiB of zeros survive a level-19 round trip");
	tap_ok(zlen < len / 100, "zeros really compress (%zu bytes)", zlen);
	TAP_CALL(round_trip(rnd, 0, 1, &zlen, &err), &err, "an empty buffer round-trips");
	TAP_CALL(round_trip(rnd, 777, -5, &zlen, &err), &err, "a fast (negative) level works");

	void *z = NULL;
	size_t n = 0;
	uint8_t *dst = malloc(len + 1);
	int rc = mti_zstd_compress(zero, len, 3, &z, &n, &err);
	tap_ok(rc == 0 && mti_zstd_decompress(z, n, dst, len + 1, &err) == MT_ECORRUPT,
	       "a frame is refused when the caller expects one byte more (%s)", err.message);
	tap_ok(mti_zstd_decompress(z, n, dst, len - 1, &err) == MT_ECORRUPT,
	       "a frame is refused when the caller expects one byte less (%s)", err.message);
	tap_ok(mti_zstd_decompress(z, n - 1, dst, len, &err) == MT_ECORRUPT,
	       "a frame cut short by one byte is corrupt (%s)", err.message);
	uint8_t *longer = malloc(n + 3);
	memcpy(longer, z, n);
	memcpy(longer + n, "xyz", 3);
	tap_ok(mti_zstd_decompress(longer, n + 3, dst, len, &err) == MT_ECORRUPT,
	       "stray bytes after the frame are corrupt (%s)", err.message);
	tap_ok(mti_zstd_decompress(rnd, 4096, dst, len, &err) == MT_ECORRUPT,
	       "random bytes are not a frame (%s)", err.message);
	tap_ok(mti_zstd_decompress(rnd, 0, dst, 0, &err) == MT_ECORRUPT,
	       "an empty input is not a frame");
	free(longer);
	free(z);
	free(dst);
	free(rnd);
	free(zero);
}

struct worker {
	int id;
	int failures;
};

/* Many threads compress and decompress at once, each with its own level:
 * the per-thread contexts must never be shared. */
static void *zstd_worker(void *ud)
{
	struct worker *w = ud;
	size_t len = 64 * 1024;
	uint8_t *src = malloc(len);
	for (int round = 0; round < 40; round++) {
		for (size_t i = 0; i < len; i++)
			src[i] = (uint8_t)((i * (size_t)(w->id + 1) + (size_t)round) % 251 *
					   (i % 7 != 0));
		mt_error err;
		size_t zlen;
		if (round_trip(src, len, 1 + (w->id + round) % 9, &zlen, &err))
			w->failures++;
	}
	free(src);
	return NULL;
}

static void test_zstd_threads(void)
{
	enum { NT = 8 };
	pthread_t t[NT];
	struct worker w[NT];
	int failures = 0;
	for (int i = 0; i < NT; i++) {
		w[i] = (struct worker){i, 0};
		pthread_create(&t[i], NULL, zstd_worker, &w[i]);
	}
	for (int i = 0; i < NT; i++) {
		pthread_join(t[i], NULL);
		failures += w[i].failures;
	}
	tap_ok(failures == 0, "8 threads x 40 round trips at mixed levels all succeed (%d failed)",
	       failures);
}

/* ---- per-thread scratch ------------------------------------------------ */

/* Each job writes its own pattern over both of its thread's buffers and
 * checks it is still there: two threads never share one. */
static int scratch_job(void *ud, size_t i)
{
	(void)ud;
	uint8_t *a = mti_thread_scratch(0, 4096), *b = mti_thread_scratch(1, 1 << 20);
	if (!a || !b || a == b)
		return 1;
	memset(a, (int)i, 4096);
	memset(b, (int)i + 1, 1 << 20);
	for (size_t k = 0; k < 4096; k++)
		if (a[k] != (uint8_t)i || b[k] != (uint8_t)(i + 1))
			return 1;
	return 0;
}

/* Threads "one per CPU" are one per CPU the process may run on: a Slurm task given one CPU
 * (task/affinity, task/cgroup) or a command under taskset gets one thread, not the node's. */
static void test_ncpus_affinity(void)
{
	cpu_set_t all, one;
	if (sched_getaffinity(0, sizeof all, &all) != 0) {
		tap_ok(1, "mti_ncpus # SKIP no affinity mask");
		return;
	}
	int want = CPU_COUNT(&all) > 256 ? 256 : CPU_COUNT(&all), first = 0;
	tap_ok(mti_ncpus() == want, "mti_ncpus: the %d CPUs of the affinity mask (%d)", want,
	       mti_ncpus());
	while (!CPU_ISSET(first, &all))
		first++;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	int pinned = sched_setaffinity(0, sizeof one, &one) == 0;
	tap_ok(pinned && mti_ncpus() == 1, "pinned to CPU %d: mti_ncpus is 1 (%d)", first,
	       mti_ncpus());
	sched_setaffinity(0, sizeof all, &all);
}

static void test_thread_scratch(void)
{
	void *a = mti_thread_scratch(0, 100), *a2 = mti_thread_scratch(0, 50);
	tap_ok(a && a == a2, "a thread's scratch is kept from call to call");
	void *b = mti_thread_scratch(1, 100);
	tap_ok(b && b != a, "each slot is a buffer of its own");
	uint8_t *big = mti_thread_scratch(0, 3 << 20);
	tap_ok(big != NULL, "a slot grows on demand (3 MiB)");
	if (big)
		memset(big, 7, 3 << 20); /* the whole of it is the caller's */
	tap_ok(mti_thread_scratch(MTI_SCRATCH_SLOTS, 10) == NULL && mti_thread_scratch(-1, 10) == NULL,
	       "a slot out of range is NULL");
	/* Threads that end hand their buffers on; several rounds of threads reuse them. */
	int bad = 0;
	for (int round = 0; round < 6; round++) {
		bad |= mti_parallel_for(4, 64, scratch_job, NULL);
	}
	tap_ok(!bad, "4 threads x 64 jobs x 6 rounds: every job's buffers are its thread's alone");
}

/* ---- HDF5 ------------------------------------------------------------- */

#define ROWS 1000
#define COLS 37
#define CHUNK_ROWS 64

/* An in-memory file (core driver, no backing store). */
static hid_t mem_file(void)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	H5Pset_fapl_core(fapl, 1 << 20, 0);
	hid_t f = H5Fcreate("codec-test.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	H5Pclose(fapl);
	return f;
}

static hid_t make_dataset(hid_t file, const char *name, int level)
{
	hsize_t dims[2] = {ROWS, COLS}, chunk[2] = {CHUNK_ROWS, COLS};
	hid_t space = H5Screate_simple(2, dims, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	unsigned cd = (unsigned)level;
	H5Pset_chunk(dcpl, 2, chunk);
	H5Pset_filter(dcpl, MT_ZSTD_FILTER_ID, H5Z_FLAG_MANDATORY, 1, &cd);
	hid_t d = H5Dcreate2(file, name, H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	H5Pclose(dcpl);
	H5Sclose(space);
	return d;
}

static int32_t *make_values(void)
{
	int32_t *v = malloc(sizeof(int32_t) * ROWS * COLS);
	for (size_t i = 0; i < (size_t)ROWS * COLS; i++)
		v[i] = (int32_t)(i * 2654435761u % 100000) - 50000;
	return v;
}

static int read_equals(hid_t d, const int32_t *want)
{
	int32_t *got = malloc(sizeof(int32_t) * ROWS * COLS);
	int ok = H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0 &&
		 memcmp(got, want, sizeof(int32_t) * ROWS * COLS) == 0;
	free(got);
	return ok;
}

static void test_filter_register(void)
{
	mt_error err = {0};
	TAP_CALL(mti_zstd_filter_register(&err), &err, "the zstd filter registers");
	TAP_CALL(mti_zstd_filter_register(&err), &err, "registering it again is harmless");
	unsigned flags = 0;
	tap_ok(H5Zfilter_avail(MT_ZSTD_FILTER_ID) > 0 &&
		       H5Zget_filter_info(MT_ZSTD_FILTER_ID, &flags) >= 0 &&
		       (flags & H5Z_FILTER_CONFIG_ENCODE_ENABLED) &&
		       (flags & H5Z_FILTER_CONFIG_DECODE_ENABLED),
	       "HDF5 sees filter 32015 with both encoder and decoder");
}

static void test_hdf5_round_trip(void)
{
	int32_t *want = make_values();
	hid_t f = mem_file();
	hid_t d = make_dataset(f, "x", 5);
	tap_ok(d >= 0 && H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, want) >= 0,
	       "H5Dwrite through filter 32015 succeeds");
	tap_ok(read_equals(d, want), "H5Dread through the filter returns what was written");

	/* What is stored must be a plain zstd frame of the chunk's bytes,
	 * the layout other zstd plugins read. */
	hsize_t off[2] = {CHUNK_ROWS, 0}, csize = 0;
	uint32_t mask = 1;
	H5Dget_chunk_storage_size(d, off, &csize);
	uint8_t *raw = malloc(csize ? csize : 1);
	uint8_t *plain = malloc(sizeof(int32_t) * CHUNK_ROWS * COLS);
	mt_error err = {0};
	int ok = csize > 0 && H5Dread_chunk(d, H5P_DEFAULT, off, &mask, raw) >= 0 && mask == 0 &&
		 csize < sizeof(int32_t) * CHUNK_ROWS * COLS &&
		 mti_zstd_decompress(raw, csize, plain, sizeof(int32_t) * CHUNK_ROWS * COLS,
				    &err) == 0 &&
		 memcmp(plain, want + CHUNK_ROWS * COLS, sizeof(int32_t) * CHUNK_ROWS * COLS) == 0;
	tap_ok(ok, "a stored chunk is one compressed zstd frame of its rows (%llu bytes)",
	       (unsigned long long)csize);
	free(raw);
	free(plain);

	/* Reopen the bytes as a file image, the way shards are read. */
	H5Fflush(f, H5F_SCOPE_GLOBAL);
	ssize_t n = H5Fget_file_image(f, NULL, 0);
	void *image = malloc(n > 0 ? (size_t)n : 1);
	ok = n > 0 && H5Fget_file_image(f, image, (size_t)n) == n;
	H5Dclose(d);
	H5Fclose(f);
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	H5Pset_fapl_core(fapl, 1 << 20, 0);
	H5Pset_file_image(fapl, image, (size_t)n);
	hid_t f2 = ok ? H5Fopen("image.h5", H5F_ACC_RDONLY, fapl) : -1;
	hid_t d2 = f2 >= 0 ? H5Dopen2(f2, "x", H5P_DEFAULT) : -1;
	tap_ok(d2 >= 0 && read_equals(d2, want),
	       "the file image reopened read-only decodes to the same values");
	if (d2 >= 0)
		H5Dclose(d2);
	if (f2 >= 0)
		H5Fclose(f2);
	H5Pclose(fapl);
	free(image);
	free(want);
}

/* A frame without its content size (as streaming writers make) and a
 * damaged chunk, both written raw with H5Dwrite_chunk. */
static void test_hdf5_foreign_chunks(void)
{
	int32_t *want = make_values();
	hid_t f = mem_file();
	hid_t d = make_dataset(f, "y", 3);
	size_t clen = sizeof(int32_t) * CHUNK_ROWS * COLS, cap = ZSTD_compressBound(clen);
	uint8_t *z = malloc(cap);
	int ok = d >= 0;
	for (hsize_t r = 0; ok && r < ROWS; r += CHUNK_ROWS) {
		int32_t *chunk = calloc(CHUNK_ROWS * COLS, sizeof(int32_t));
		hsize_t have = ROWS - r < CHUNK_ROWS ? ROWS - r : CHUNK_ROWS;
		memcpy(chunk, want + r * COLS, sizeof(int32_t) * have * COLS);
		ZSTD_CCtx *c = ZSTD_createCCtx();
		ZSTD_inBuffer in = {chunk, clen, 0};
		ZSTD_outBuffer out = {z, cap, 0};
		ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
		ok = ZSTD_compressStream2(c, &out, &in, ZSTD_e_end) == 0 &&
		     ZSTD_getFrameContentSize(z, out.pos) == ZSTD_CONTENTSIZE_UNKNOWN;
		ZSTD_freeCCtx(c);
		hsize_t off[2] = {r, 0};
		ok = ok && H5Dwrite_chunk(d, H5P_DEFAULT, 0, off, out.pos, z) >= 0;
		free(chunk);
	}
	tap_ok(ok, "chunks compressed without a content size are written raw");
	tap_ok(ok && read_equals(d, want), "the filter decodes frames that omit their size");

	/* The library must never print, and HDF5 would: silence it for the
	 * failure this case provokes on purpose. */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	memset(z, 0x5a, 100);
	hsize_t off[2] = {0, 0};
	H5Dwrite_chunk(d, H5P_DEFAULT, 0, off, 100, z);
	int32_t *got = malloc(sizeof(int32_t) * ROWS * COLS);
	tap_ok(H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) < 0,
	       "a chunk of garbage makes H5Dread fail instead of returning data");
	free(got);
	free(z);
	H5Dclose(d);
	H5Fclose(f);
	free(want);
}

/* mti_copy gives memcpy's bytes for sizes around its thresholds and for
 * destinations 0-40 bytes past the source modulo 4 KiB (the ones it copies
 * itself, 1-31, and their neighbours), and writes nothing past n. */
static void test_copy(void)
{
	const size_t sizes[] = {0, 1, 63, 2047, 2048, 2049, 4096, 65536 + 13, 200704};
	const size_t region = 208896; /* 51 pages: room for 200704 bytes and 40 more */
	uint8_t *area = aligned_alloc(4096, 2 * region), *want = malloc(region);
	uint8_t *src = area, *dst = area + region;
	int bad = 0, runs = 0;
	for (size_t i = 0; area && i < region; i++)
		src[i] = (uint8_t)rng();
	for (size_t si = 0; area && want && si < sizeof sizes / sizeof *sizes; si++)
		for (size_t off = 0; off <= 40; off++) {
			size_t n = sizes[si];
			memset(dst, 0xa5, region);
			memset(want, 0xa5, region);
			memcpy(want + off, src, n);
			mti_copy(dst + off, src, n);
			bad += memcmp(dst, want, region) != 0;
			runs++;
		}
	tap_ok(area && want && bad == 0, "mti_copy equals memcpy: %d of %d sizes x offsets differ",
	       bad, runs);
	free(area);
	free(want);
}

int main(void)
{
	test_copy();
	test_sha256();
	test_xxh3();
	test_zstd();
	test_zstd_threads();
	test_ncpus_affinity();
	test_thread_scratch();
	test_filter_register();
	test_hdf5_round_trip();
	test_hdf5_foreign_chunks();
	return tap_done();
}
