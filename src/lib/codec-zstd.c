/* codec-zstd.c — Zstandard frames for chunks, and registration of HDF5 filter 32015 with the library's HDF5. */
#include <hdf5.h>
#include <pthread.h>
#include <stdlib.h>
#include <zstd.h>

#include "codec.h"
#include "h5zstd.h"

/* One compression context per thread: contexts are costly to create and
 * not shareable between threads. */
static pthread_key_t cctx_key;
static pthread_once_t cctx_once = PTHREAD_ONCE_INIT;

static void cctx_free(void *p)
{
	ZSTD_freeCCtx(p);
}

static void cctx_init(void)
{
	pthread_key_create(&cctx_key, cctx_free);
}

static ZSTD_CCtx *thread_cctx(void)
{
	pthread_once(&cctx_once, cctx_init);
	ZSTD_CCtx *c = pthread_getspecific(cctx_key);
	if (!c && (c = ZSTD_createCCtx()) && pthread_setspecific(cctx_key, c)) {
		ZSTD_freeCCtx(c);
		c = NULL;
	}
	return c;
}

int mt_zstd_compress(const void *src, size_t len, int level, void **out, size_t *outlen,
		     mt_error *err)
{
	ZSTD_CCtx *c = thread_cctx();
	size_t cap = ZSTD_compressBound(len);
	void *dst = malloc(cap ? cap : 1);
	if (!c || !dst) {
		free(dst);
		return mt_err(err, MT_ENOMEM, "zstd: out of memory compressing %zu bytes", len);
	}
	size_t n = ZSTD_compressCCtx(c, dst, cap, src, len, level);
	if (ZSTD_isError(n)) {
		free(dst);
		return mt_err(err, MT_ECODEC, "zstd: %s", ZSTD_getErrorName(n));
	}
	*out = dst;
	*outlen = n;
	return 0;
}

int mt_zstd_decompress(const void *src, size_t len, void *dst, size_t dstlen, mt_error *err)
{
	unsigned long long want = ZSTD_getFrameContentSize(src, len);
	if (want == ZSTD_CONTENTSIZE_ERROR)
		return mt_err(err, MT_ECORRUPT, "zstd: not a zstd frame");
	if (want != ZSTD_CONTENTSIZE_UNKNOWN && want != dstlen)
		return mt_err(err, MT_ECORRUPT, "zstd: frame holds %llu bytes, expected %zu", want,
			      dstlen);
	size_t n = ZSTD_decompress(dst, dstlen, src, len);
	if (ZSTD_isError(n))
		return mt_err(err, MT_ECORRUPT, "zstd: %s", ZSTD_getErrorName(n));
	if (n != dstlen)
		return mt_err(err, MT_ECORRUPT, "zstd: frame holds %zu bytes, expected %zu", n,
			      dstlen);
	return 0;
}

static pthread_once_t filter_once = PTHREAD_ONCE_INIT;
static int filter_rc;

static void filter_register(void)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	filter_rc = H5Zfilter_avail(MT_ZSTD_FILTER_ID) > 0 || H5Zregister(mt_h5zstd_class()) >= 0
			    ? 0
			    : MT_EHDF5;
}

int mt_zstd_filter_register(mt_error *err)
{
	pthread_once(&filter_once, filter_register);
	if (filter_rc)
		return mt_err(err, filter_rc, "HDF5: cannot register the zstd filter %d",
			      MT_ZSTD_FILTER_ID);
	return 0;
}
