/* h5zstd.h — HDF5 filter 32015 (Zstandard), shared by libmatorage and the dynamic plugin. */
#ifndef MT_H5ZSTD_H
#define MT_H5ZSTD_H

#include <H5Zpublic.h>

#define MT_H5ZSTD_ID 32015

/* The filter class to pass to H5Zregister or return from a plugin. */
__attribute__((visibility("hidden"))) const H5Z_class2_t *mt_h5zstd_class(void);

#endif
