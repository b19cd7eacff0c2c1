/* opts.h — option structs that can grow: the size check every *_open does on the struct it is given. */
#ifndef MT_OPTS_H
#define MT_OPTS_H

#include <stddef.h>

#include "util.h"

/* The size a struct had when `last` was its last field: where `last` ends,
 * rounded up to the struct's alignment, as the compiler pads it.  A
 * library accepts callers' structs from this size (the first release
 * with a size field) up to its own sizeof. */
#define MT_OPTS_SIZE_UPTO(type, last)                                                         \
	((offsetof(type, last) + sizeof(((type *)0)->last) + _Alignof(type) - 1) /            \
	 _Alignof(type) * _Alignof(type))

/* What *_opts_init_size does: the first `size` bytes of o (the caller's
 * struct) from `defaults` (lib_size bytes, the library's struct), zeros
 * past lib_size, and o's size field set to size. */
MT_LOCAL void mti_opts_init(void *o, size_t size, const void *defaults, size_t lib_size);

/* Copy the caller's struct src over dst (the library's, lib_size bytes,
 * holding the defaults): the fields src's size covers.  A size below
 * first_size or above lib_size is MT_EINVAL naming the struct (`name`). */
MT_LOCAL int mti_opts_take(void *dst, size_t lib_size, const void *src, size_t first_size,
			  const char *name, mt_error *err);

/* What every *_open does first: dst (the library's struct) gets the defaults
 * init sets, then the caller's src over them unless src is NULL. */
#define MTI_OPTS_GET(dst, init, src, first_size, name, err)                                   \
	(init(&(dst)),                                                                        \
	 (src) ? mti_opts_take(&(dst), sizeof(dst), (src), (first_size), (name), (err)) : 0)

#endif
