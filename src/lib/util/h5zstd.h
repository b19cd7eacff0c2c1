/* h5zstd.h — HDF5 filter 32015 (Zstandard), shared by libmatorage and the dynamic plugin. */
#ifndef MT_H5ZSTD_H
#define MT_H5ZSTD_H

/* Standalone on purpose: the plugin is built from h5zstd.c without the
 * rest of the library, so nothing here may depend on util.h. */
#include <H5Zpublic.h>

#define MT_H5ZSTD_ID 32015

/* The filter class to pass to H5Zregister or return from a plugin.  A
 * chunk is one zstd frame that records its content size, cd_values[0] is
 * the level: the layout of the standard HDF5 zstd plugin (hdf5plugin). */
__attribute__((visibility("hidden"))) const H5Z_class2_t *mt_h5zstd_class(void);

#endif
