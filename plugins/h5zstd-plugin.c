/* h5zstd-plugin.c — HDF5 dynamic plugin exposing filter 32015 (load it with HDF5_PLUGIN_PATH). */
#include <H5PLextern.h>

#include "h5zstd.h"

/* H5PLextern.h declares both entry points with default visibility, so
 * they stay exported although the plugin is built -fvisibility=hidden. */
H5PL_type_t H5PLget_plugin_type(void)
{
	return H5PL_TYPE_FILTER;
}

const void *H5PLget_plugin_info(void)
{
	return mt_h5zstd_class();
}
