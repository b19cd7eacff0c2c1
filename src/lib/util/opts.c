/* opts.c — option structs that can grow: defaults for a caller's size, and the check of the size a caller passes. */
#include <string.h>

#include "opts.h"

void mti_opts_init(void *o, size_t size, const void *defaults, size_t lib_size)
{
	size_t n = size < lib_size ? size : lib_size;
	memcpy(o, defaults, n);
	if (size > n)
		memset((char *)o + n, 0, size - n);
	if (size >= sizeof size)
		memcpy(o, &size, sizeof size);
}

int mti_opts_take(void *dst, size_t lib_size, const void *src, size_t first_size,
		 const char *name, mt_error *err)
{
	size_t size;
	memcpy(&size, src, sizeof size);
	if (size > lib_size)
		return mti_err(err, MT_EINVAL, "%s: the caller's struct has %zu bytes, this library's "
			      "%zu: built against a newer matorage.h than the library", name, size,
			      lib_size);
	if (size < first_size)
		return mti_err(err, MT_EINVAL, "%s: size %zu is not one this library knows "
			      "(%zu to %zu): set it up with %s_init", name, size, first_size,
			      lib_size, name);
	memcpy(dst, src, size);
	memcpy(dst, &lib_size, sizeof lib_size);
	return 0;
}
