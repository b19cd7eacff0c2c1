/* h5zstd.c — the Zstandard HDF5 filter (id 32015, level in cd_values[0]): one zstd frame per chunk. */
#include <hdf5.h>
#include <stdlib.h>
#include <zstd.h>

#include "h5zstd.h"

/* HDF5 hands the chunk in *buf (buf_size bytes allocated, nbytes used) and
 * takes back a buffer it will free with free(); returns the new length or
 * 0 on failure. */
static size_t h5zstd_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[],
			    size_t nbytes, size_t *buf_size, void **buf)
{
	void *out = NULL;
	size_t n;
	if (flags & H5Z_FLAG_REVERSE) {
		unsigned long long size = ZSTD_getFrameContentSize(*buf, nbytes);
		if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ||
		    size > SIZE_MAX)
			return 0;
		out = malloc(size ? (size_t)size : 1);
		if (!out)
			return 0;
		n = ZSTD_decompress(out, (size_t)size, *buf, nbytes);
		if (ZSTD_isError(n) || n != size) {
			free(out);
			return 0;
		}
	} else {
		int level = cd_nelmts > 0 ? (int)cd_values[0] : 3;
		size_t cap = ZSTD_compressBound(nbytes);
		out = malloc(cap ? cap : 1);
		if (!out)
			return 0;
		n = ZSTD_compress(out, cap, *buf, nbytes, level);
		if (ZSTD_isError(n)) {
			free(out);
			return 0;
		}
	}
	free(*buf);
	*buf = out;
	*buf_size = n;
	return n;
}

static const H5Z_class2_t h5zstd = {
	H5Z_CLASS_T_VERS, (H5Z_filter_t)MT_H5ZSTD_ID, 1, 1, "Zstandard (matorage)",
	NULL, NULL, h5zstd_filter,
};

const H5Z_class2_t *mt_h5zstd_class(void)
{
	return &h5zstd;
}
