/* codec-zstd.c — Zstandard frames for chunks, and registration of HDF5 filter 32015 with HDF5. */
#include <hdf5.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "codec.h"
#include "h5zstd.h"

_Static_assert(MT_ZSTD_FILTER_ID == MT_H5ZSTD_ID, "the library and the plugin share one id");

/* Contexts cost hundreds of KiB to set up and cannot be shared, so each
 * thread keeps one of each kind.  Threads come and go with each parallel
 * job set (mti_parallel_for), so a context whose thread ends waits for the
 * next thread in a short list of spares, like the threads' scratch
 * buffers: a fresh one faults in its tables again (a loader epoch made
 * a dozen). */
static pthread_key_t zstd_ckey, zstd_dkey;
static pthread_once_t zstd_keys_once = PTHREAD_ONCE_INIT;
static int zstd_keys_ok;

#define ZSTD_SPARE 8
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static void *spare[2][ZSTD_SPARE]; /* [compress] */
static int nspare[2];

static void ctx_free(int compress, void *p)
{
	if (compress)
		ZSTD_freeCCtx(p);
	else
		ZSTD_freeDCtx(p);
}

static void ctx_release(int compress, void *p)
{
	pthread_mutex_lock(&spare_lock);
	if (nspare[compress] < ZSTD_SPARE) {
		spare[compress][nspare[compress]++] = p;
		p = NULL;
	}
	pthread_mutex_unlock(&spare_lock);
	if (p)
		ctx_free(compress, p);
}

static void zstd_cctx_free(void *p)
{
	ctx_release(1, p);
}

static void zstd_dctx_free(void *p)
{
	ctx_release(0, p);
}

/* A fork while an ending thread holds spare_lock would leave it held in
 * the child (DataLoader workers are forked from threaded processes), so
 * fork() takes it first. */
static void spare_fork_prepare(void)
{
	pthread_mutex_lock(&spare_lock);
}

static void spare_fork_after(void)
{
	pthread_mutex_unlock(&spare_lock);
}

static void zstd_keys_init(void)
{
	if (pthread_atfork(spare_fork_prepare, spare_fork_after, spare_fork_after))
		return;
	if (pthread_key_create(&zstd_ckey, zstd_cctx_free))
		return;
	if (pthread_key_create(&zstd_dkey, zstd_dctx_free)) {
		pthread_key_delete(zstd_ckey);
		return;
	}
	zstd_keys_ok = 1;
}

/* A spare context, or a new one. */
static void *ctx_take(int compress)
{
	void *c = NULL;
	pthread_mutex_lock(&spare_lock);
	if (nspare[compress])
		c = spare[compress][--nspare[compress]];
	pthread_mutex_unlock(&spare_lock);
	if (!c)
		c = compress ? (void *)ZSTD_createCCtx() : (void *)ZSTD_createDCtx();
	return c;
}

/* The calling thread's context, created on first use.  *owned is set when
 * it could not be kept (no thread keys left): the caller frees it. */
static void *zstd_ctx(int compress, int *owned)
{
	pthread_once(&zstd_keys_once, zstd_keys_init);
	pthread_key_t key = compress ? zstd_ckey : zstd_dkey;
	void *c = zstd_keys_ok ? pthread_getspecific(key) : NULL;
	*owned = 0;
	if (c)
		return c;
	c = ctx_take(compress);
	if (c && (!zstd_keys_ok || pthread_setspecific(key, c)))
		*owned = 1;
	return c;
}

/* A compression's result: dst (n bytes) handed out, or freed with the error. */
static int compressed(size_t n, void *dst, size_t len, int level, void **out, size_t *outlen,
		      mt_error *err)
{
	if (ZSTD_isError(n)) {
		free(dst);
		return mti_err(err, MT_ECODEC, "zstd: cannot compress %zu bytes at level %d: %s",
			      len, level, ZSTD_getErrorName(n));
	}
	*out = dst;
	*outlen = n;
	return 0;
}

int mti_zstd_compress(const void *src, size_t len, int level, void **out, size_t *outlen,
		     mt_error *err)
{
	int owned;
	ZSTD_CCtx *c = zstd_ctx(1, &owned);
	size_t cap = ZSTD_compressBound(len);
	void *dst = c ? malloc(cap) : NULL;
	if (!dst) {
		if (owned)
			ZSTD_freeCCtx(c);
		return mti_err(err, MT_ENOMEM, "zstd: out of memory compressing %zu bytes", len);
	}
	/* The simple API resets every parameter from the level and always
	 * records the content size, as the HDF5 zstd filter expects. */
	size_t n = ZSTD_compressCCtx(c, dst, cap, src, len, level);
	if (owned)
		ZSTD_freeCCtx(c);
	return compressed(n, dst, len, level, out, outlen, err);
}

int mti_zstd_compress_mt(const void *src, size_t len, int level, int threads, void **out,
			 size_t *outlen, mt_error *err)
{
	/* A context of its own: worker threads belong to the context, and the
	 * per-thread contexts above are kept single-threaded for chunks. */
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t cap = ZSTD_compressBound(len);
	void *dst = c ? malloc(cap ? cap : 1) : NULL;
	if (!dst) {
		ZSTD_freeCCtx(c);
		return mti_err(err, MT_ENOMEM, "zstd: out of memory compressing %zu bytes", len);
	}
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0);
	/* Small inputs gain nothing from workers; a library built without
	 * threads refuses the parameter and compresses on this thread. */
	if (threads > 1 && len >= (1u << 20))
		ZSTD_CCtx_setParameter(c, ZSTD_c_nbWorkers, threads);
	size_t n = ZSTD_compress2(c, dst, cap, src, len);
	ZSTD_freeCCtx(c);
	return compressed(n, dst, len, level, out, outlen, err);
}

/* RFC 8878: magic, a frame header with an 8-byte content size and a 128 KiB
 * window (not single-segment, so streaming decoders with their default
 * window limit read it too), then blocks of up to 128 KiB, each a 3-byte
 * little-endian header (last-block bit, type 0 = raw, size << 3) and its
 * bytes; no checksum (callers check their own hash). */
#define RAW_BLOCK (128u << 10)

#define RAW_HEAD 14 /* magic, descriptor, window, content size */

static size_t raw_nblocks(size_t len)
{
	return len ? (len + RAW_BLOCK - 1) / RAW_BLOCK : 1;
}

size_t mti_zstd_raw_hdr_bytes(size_t len)
{
	return RAW_HEAD + 3 * raw_nblocks(len);
}

/* The frame's headers for len bytes: the frame's, then each block's. */
static void raw_headers(size_t len, unsigned char *hdr)
{
	static const unsigned char head[6] = {0x28, 0xB5, 0x2F, 0xFD, 0xC0, (17 - 10) << 3};
	memcpy(hdr, head, sizeof head);
	for (int i = 0; i < 8; i++)
		hdr[6 + i] = (unsigned char)((uint64_t)len >> (8 * i));
	size_t nblocks = raw_nblocks(len);
	unsigned char *q = hdr + RAW_HEAD;
	for (size_t b = 0; b < nblocks; b++) {
		size_t n = len - b * RAW_BLOCK < RAW_BLOCK ? len - b * RAW_BLOCK : RAW_BLOCK;
		uint32_t h = (uint32_t)(n << 3) | (b + 1 == nblocks);
		*q++ = (unsigned char)h;
		*q++ = (unsigned char)(h >> 8);
		*q++ = (unsigned char)(h >> 16);
	}
}

int mti_zstd_raw_layout(void *data, size_t len, int fill, mti_zstd_raw *out)
{
	*out = (mti_zstd_raw){.nblocks = raw_nblocks(len), .nhdr = mti_zstd_raw_hdr_bytes(len)};
	out->niov = 2 * out->nblocks + 1;
	out->iov = malloc(out->niov * sizeof *out->iov);
	out->hdr = malloc(out->nhdr);
	if (!out->iov || !out->hdr) {
		mti_zstd_raw_free(out);
		return MT_ENOMEM;
	}
	if (fill)
		raw_headers(len, out->hdr);
	struct iovec *iov = out->iov;
	iov[0] = (struct iovec){out->hdr, RAW_HEAD};
	for (size_t b = 0; b < out->nblocks; b++) {
		size_t n = len - b * RAW_BLOCK < RAW_BLOCK ? len - b * RAW_BLOCK : RAW_BLOCK;
		iov[1 + 2 * b] = (struct iovec){out->hdr + RAW_HEAD + 3 * b, 3};
		iov[2 + 2 * b] = (struct iovec){(char *)data + b * RAW_BLOCK, n};
	}
	return 0;
}

void mti_zstd_raw_free(mti_zstd_raw *f)
{
	free(f->iov);
	free(f->hdr);
	f->iov = NULL;
	f->hdr = NULL;
}

int mti_zstd_raw_hdr_ok(const unsigned char *hdr, size_t len)
{
	size_t n = mti_zstd_raw_hdr_bytes(len);
	unsigned char *want = malloc(n);
	if (!want)
		return 0;
	raw_headers(len, want);
	int ok = memcmp(want, hdr, n) == 0;
	free(want);
	return ok;
}

double mti_zstd_ratio_guess(const void *src, size_t len, int level)
{
	enum { SAMPLES = 8, SAMPLE = 16 << 10 };
	size_t take = len < SAMPLES * SAMPLE ? len : SAMPLE, n = len < SAMPLES * SAMPLE ? 1 : SAMPLES;
	int owned;
	ZSTD_CCtx *c = zstd_ctx(1, &owned);
	unsigned char *dst = malloc(ZSTD_compressBound(take));
	size_t in = 0, outb = 0;
	for (size_t i = 0; c && dst && i < n; i++) {
		size_t at = n == 1 ? 0 : (len - take) / (n - 1) * i;
		size_t z = ZSTD_compressCCtx(c, dst, ZSTD_compressBound(take), (const char *)src + at,
					     take, level);
		if (ZSTD_isError(z))
			break;
		in += take;
		outb += z;
	}
	free(dst);
	if (c && owned)
		ZSTD_freeCCtx(c);
	/* Unknown (no memory): say it compresses, the safe default. */
	return in ? (double)outb / (double)in : 0;
}

/* strict: a frame that does not declare its content size is refused too. */
static int frame_check(const void *src, size_t len, uint64_t want, int strict, mt_error *err)
{
	/* One whole frame and nothing after it: anything else is damage. */
	size_t flen = ZSTD_findFrameCompressedSize(src, len);
	if (ZSTD_isError(flen))
		return mti_err(err, MT_ECORRUPT, "zstd: %zu bytes are not one whole zstd frame: %s",
			      len, ZSTD_getErrorName(flen));
	if (flen != len)
		return mti_err(err, MT_ECORRUPT, "zstd: %zu stray bytes after the %zu-byte frame",
			      len - flen, flen);
	unsigned long long has = ZSTD_getFrameContentSize(src, len);
	if (has == ZSTD_CONTENTSIZE_ERROR || (strict && has == ZSTD_CONTENTSIZE_UNKNOWN))
		return mti_err(err, MT_ECORRUPT, "zstd: the frame does not declare its size");
	if (has != ZSTD_CONTENTSIZE_UNKNOWN && has != want)
		return mti_err(err, MT_ECORRUPT, "zstd: frame holds %llu bytes, expected %llu", has,
			      (unsigned long long)want);
	return 0;
}

int mti_zstd_frame_check(const void *src, size_t len, uint64_t want, mt_error *err)
{
	return frame_check(src, len, want, 1, err);
}

int mti_zstd_decompress(const void *src, size_t len, void *dst, size_t dstlen, mt_error *err)
{
	int rc = frame_check(src, len, dstlen, 0, err);
	if (rc)
		return rc;
	int owned;
	ZSTD_DCtx *d = zstd_ctx(0, &owned);
	if (!d)
		return mti_err(err, MT_ENOMEM, "zstd: out of memory for a decompression context");
	size_t n = ZSTD_decompressDCtx(d, dst, dstlen, src, len);
	if (owned)
		ZSTD_freeDCtx(d);
	if (ZSTD_isError(n))
		return mti_err(err, MT_ECORRUPT, "zstd: cannot decompress %zu bytes: %s", len,
			      ZSTD_getErrorName(n));
	if (n != dstlen)
		return mti_err(err, MT_ECORRUPT, "zstd: frame holds %zu bytes, expected %zu", n,
			      dstlen);
	return 0;
}

static pthread_once_t zstd_filter_once = PTHREAD_ONCE_INIT;
static int zstd_filter_rc;

static void zstd_filter_init(void)
{
	/* The library never prints: silence HDF5's error report for this
	 * call only, leaving the host's setting as it was. */
	H5E_auto2_t fn = NULL;
	void *ud = NULL;
	int saved = H5Eget_auto2(H5E_DEFAULT, &fn, &ud) >= 0;
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	/* Registering our class replaces any plugin HDF5 may already have
	 * loaded for the id, so shards never depend on HDF5_PLUGIN_PATH. */
	zstd_filter_rc = H5Zregister(mt_h5zstd_class()) < 0 ? MT_EHDF5 : 0;
	H5Eclear2(H5E_DEFAULT);
	if (saved)
		H5Eset_auto2(H5E_DEFAULT, fn, ud);
}

int mti_zstd_filter_register(mt_error *err)
{
	pthread_once(&zstd_filter_once, zstd_filter_init);
	if (zstd_filter_rc)
		return mti_err(err, zstd_filter_rc, "HDF5: cannot register the zstd filter %d",
			      MT_ZSTD_FILTER_ID);
	return 0;
}
