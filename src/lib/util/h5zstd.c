/* h5zstd.c — the Zstandard HDF5 filter (id 32015, cd_values[0] = level): a zstd frame per chunk. */
#include <hdf5.h>
#include <stdint.h>
#include <zstd.h>

#include "h5zstd.h"

/* HDF5 frees the buffer it gets back with its own allocator, which since
 * 1.10 need not be plain malloc, so both ends go through H5allocate_memory
 * and H5free_memory. */
static void *h5zstd_alloc(size_t n)
{
	return H5allocate_memory(n ? n : 1, 0);
}

/* Streaming writers may leave the content size out of a frame: grow the
 * output until the frame ends, up to HDF5's 4 GiB limit on a chunk. */
static size_t h5zstd_decode_unsized(size_t nbytes, void **out, const void *in)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();
	ZSTD_inBuffer ib = {in, nbytes, 0};
	ZSTD_outBuffer ob = {NULL, 0, 0};
	size_t more = 1;
	while (d && more) {
		if (ob.pos == ob.size) {
			size_t cap = ob.size ? 2 * ob.size : 4 * nbytes + 4096;
			void *p = cap <= UINT32_MAX ? H5resize_memory(ob.dst, cap) : NULL;
			if (!p)
				break;
			ob.dst = p;
			ob.size = cap;
		}
		size_t ipos = ib.pos, opos = ob.pos;
		more = ZSTD_decompressStream(d, &ob, &ib);
		/* An error, or no progress at all: a damaged or cut frame. */
		if (ZSTD_isError(more) || (more && ib.pos == ipos && ob.pos == opos))
			break;
	}
	ZSTD_freeDCtx(d);
	if (more || ib.pos != ib.size) {
		H5free_memory(ob.dst);
		return 0;
	}
	*out = ob.dst;
	return ob.pos;
}

static size_t h5zstd_decode(size_t nbytes, void **out, const void *in)
{
	unsigned long long size = ZSTD_getFrameContentSize(in, nbytes);
	if (size == ZSTD_CONTENTSIZE_UNKNOWN)
		return h5zstd_decode_unsized(nbytes, out, in);
	if (size == ZSTD_CONTENTSIZE_ERROR || (size_t)size != size)
		return 0;
	void *dst = h5zstd_alloc((size_t)size);
	if (!dst)
		return 0;
	size_t n = ZSTD_decompress(dst, (size_t)size, in, nbytes);
	if (ZSTD_isError(n) || n != size) {
		H5free_memory(dst);
		return 0;
	}
	*out = dst;
	return n;
}

static size_t h5zstd_encode(int level, size_t nbytes, void **out, const void *in)
{
	size_t cap = ZSTD_compressBound(nbytes);
	void *dst = h5zstd_alloc(cap);
	if (!dst)
		return 0;
	/* The one-shot API always records the content size in the frame. */
	size_t n = ZSTD_compress(dst, cap, in, nbytes, level);
	if (ZSTD_isError(n)) {
		H5free_memory(dst);
		return 0;
	}
	*out = dst;
	return n;
}

/* HDF5's filter contract: *buf holds nbytes valid bytes of a *buf_size
 * allocation; on success it is replaced and the new length returned, on
 * failure 0 is returned and *buf left alone. */
static size_t h5zstd_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[],
			    size_t nbytes, size_t *buf_size, void **buf)
{
	void *out = NULL;
	size_t n;
	if (flags & H5Z_FLAG_REVERSE)
		n = h5zstd_decode(nbytes, &out, *buf);
	else /* levels below 0 (zstd's fast modes) travel as unsigned */
		n = h5zstd_encode(cd_nelmts > 0 ? (int)cd_values[0] : 0, nbytes, &out, *buf);
	/* A chunk is never empty, so 0 bytes out can only be a failure. */
	if (!n) {
		H5free_memory(out);
		return 0;
	}
	H5free_memory(*buf);
	*buf = out;
	*buf_size = n;
	return n;
}

static const H5Z_class2_t h5zstd_class = {
	.version = H5Z_CLASS_T_VERS,
	.id = (H5Z_filter_t)MT_H5ZSTD_ID,
	.encoder_present = 1,
	.decoder_present = 1,
	.name = "Zstandard (matorage)",
	.can_apply = NULL,
	.set_local = NULL,
	.filter = h5zstd_filter,
};

const H5Z_class2_t *mt_h5zstd_class(void)
{
	return &h5zstd_class;
}
