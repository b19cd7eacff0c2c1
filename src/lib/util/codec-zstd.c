/* codec-zstd.c — Zstandard frames for chunks, and registration of HDF5 filter 32015 with HDF5. */
#include <hdf5.h>
#include <pthread.h>
#include <stdlib.h>
#include <zstd.h>

#include "codec.h"
#include "h5zstd.h"

_Static_assert(MT_ZSTD_FILTER_ID == MT_H5ZSTD_ID, "the library and the plugin share one id");

/* Contexts cost hundreds of KiB to set up and cannot be shared, so each
 * thread keeps one of each kind, freed when the thread exits. */
static pthread_key_t zstd_ckey, zstd_dkey;
static pthread_once_t zstd_keys_once = PTHREAD_ONCE_INIT;
static int zstd_keys_ok;

static void zstd_cctx_free(void *p)
{
	ZSTD_freeCCtx(p);
}

static void zstd_dctx_free(void *p)
{
	ZSTD_freeDCtx(p);
}

static void zstd_keys_init(void)
{
	if (pthread_key_create(&zstd_ckey, zstd_cctx_free))
		return;
	if (pthread_key_create(&zstd_dkey, zstd_dctx_free)) {
		pthread_key_delete(zstd_ckey);
		return;
	}
	zstd_keys_ok = 1;
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
	c = compress ? (void *)ZSTD_createCCtx() : (void *)ZSTD_createDCtx();
	if (c && (!zstd_keys_ok || pthread_setspecific(key, c)))
		*owned = 1;
	return c;
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
	if (ZSTD_isError(n)) {
		free(dst);
		return mti_err(err, MT_ECODEC, "zstd: cannot compress %zu bytes at level %d: %s",
			      len, level, ZSTD_getErrorName(n));
	}
	*out = dst;
	*outlen = n;
	return 0;
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
	if (ZSTD_isError(n)) {
		free(dst);
		return mti_err(err, MT_ECODEC, "zstd: cannot compress %zu bytes at level %d: %s",
			      len, level, ZSTD_getErrorName(n));
	}
	*out = dst;
	*outlen = n;
	return 0;
}

int mti_zstd_decompress(const void *src, size_t len, void *dst, size_t dstlen, mt_error *err)
{
	/* One whole frame and nothing after it: anything else is damage. */
	size_t flen = ZSTD_findFrameCompressedSize(src, len);
	if (ZSTD_isError(flen))
		return mti_err(err, MT_ECORRUPT, "zstd: %zu bytes are not one whole zstd frame: %s",
			      len, ZSTD_getErrorName(flen));
	if (flen != len)
		return mti_err(err, MT_ECORRUPT, "zstd: %zu stray bytes after the %zu-byte frame",
			      len - flen, flen);
	unsigned long long want = ZSTD_getFrameContentSize(src, len);
	if (want != ZSTD_CONTENTSIZE_UNKNOWN && want != dstlen)
		return mti_err(err, MT_ECORRUPT, "zstd: frame holds %llu bytes, expected %zu", want,
			      dstlen);
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
