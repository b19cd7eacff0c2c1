/* h5zstd-plugin.c — HDF5 dynamic filter plugin exposing filter 32015 (load with HDF5_PLUGIN_PATH). */
#include <H5PLextern.h>

#include "h5zstd.h"

__attribute__((visibility("default"))) H5PL_type_t H5PLget_plugin_type(void)
{
	return H5PL_TYPE_FILTER;
}

__attribute__((visibility("default"))) const void *H5PLget_plugin_info(void)
{
	return mt_h5zstd_class();
}
