/* util.h — internal helpers shared by every module of libmatorage: error records, strings, buffers. */
#ifndef MT_UTIL_H
#define MT_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "matorage.h"

#define MT_LOCAL __attribute__((visibility("hidden")))
#define MT_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Fill err (when not NULL) with code and a formatted message; returns code
 * so callers can write `return mti_err(err, MT_EIO, "...")`.  The library's
 * short name for the public mt_error_set: one implementation for both. */
#define mti_err mt_error_set
/* Prefix an existing message with context ("shard abc: ") and return its code. */
MT_LOCAL int mti_err_prefix(mt_error *err, const char *fmt, ...) MT_PRINTF(2, 3);
/* Copy a finished error record (from a worker thread) into err. */
MT_LOCAL int mti_err_copy(mt_error *err, const mt_error *from);

/* Allocation that returns NULL on failure (the library never aborts). */
MT_LOCAL char *mti_strdup(const char *s);
MT_LOCAL char *mti_asprintf(const char *fmt, ...) MT_PRINTF(1, 2);
/* The user:password@ of a URL's authority: 1 with its offset and length
 * (the '@' included), 0 when it has none. */
MT_LOCAL int mti_url_userinfo(const char *url, size_t *off, size_t *len);
/* url with any user:password@ shown as "***@" (malloc'ed, NULL when out of
 * memory): the only form in which a message shows a URL. */
MT_LOCAL char *mti_url_redact(const char *url);

/* A growable byte buffer. */
typedef struct mt_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
} mt_buf;
MT_LOCAL int mti_buf_reserve(mt_buf *b, size_t extra);
MT_LOCAL int mti_buf_append(mt_buf *b, const void *p, size_t n);
MT_LOCAL void mti_buf_free(mt_buf *b);

/* Room for element n of a growable array v of *cap elements of `size` bytes:
 * the capacity doubles (from `first`).  Returns the array, moved or not, or
 * NULL when memory runs out (v is then left as it was, still the caller's). */
MT_LOCAL void *mti_grow(void *v, size_t n, size_t *cap, size_t size, size_t first);

/* A buffer of at least n bytes that decoders fill, for reuse: from
 * MTI_HUGE_MIN bytes on (half a MiB, so that a chunk of a little under the
 * default MiB qualifies) it is its own mapping on a 2 MiB boundary, advised
 * onto transparent huge pages, and *cap is n rounded up to whole 2 MiB
 * pages (else malloc, *cap = n).  Why: a MiB from malloc comes back fresh
 * (faulting 256 times) or, in a process whose earlier frees raised malloc's
 * mmap threshold, out of a heap already mapped 4 KiB at a time, where
 * MADV_HUGEPAGE changes nothing.  Freed with mti_huge_free(p, *cap).  Under
 * AddressSanitizer it is posix_memalign'ed, whose bounds ASan checks. */
#define MTI_HUGE_PAGE (2u << 20)
#define MTI_HUGE_MIN (512u << 10)
MT_LOCAL void *mti_huge_alloc(size_t n, size_t *cap);
MT_LOCAL void mti_huge_free(void *p, size_t cap);
/* memcpy for large copies into memory the caller chose (a batch's numpy
 * array, a read's buffer): glibc copies 2 KiB-0.5 MiB with `rep movsb`,
 * which on AMD EPYC runs 3-20 times slower when the destination lies 1-31
 * bytes past the source modulo 4 KiB (200 KB from memory: 2.5 against
 * 7.4-9.4 GB/s; 64 KB from cache: 1.5-1.8 against 26-39 GB/s), an
 * alignment the caller's allocator picks (a malloc'ed array 16 bytes past
 * a page, a source on a page boundary).  Those copies go through 16-byte
 * registers instead (8.8 and 19-21 GB/s); the others to memcpy. */
MT_LOCAL void mti_copy(void *dst, const void *src, size_t n);

/* Append a copy of s[0..len) to the string vector *v of *n entries (freed
 * with mt_strv_free).  The vector doubles when *n is a power of two, so it
 * needs no capacity field.  0 or MT_ENOMEM (the vector is then unchanged). */
MT_LOCAL int mti_strv_push(char ***v, size_t *n, const char *s, size_t len);

/* Little-endian integer encoding for binary formats. */
static inline void mti_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint64_t mti_get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}
static inline void mti_put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t mti_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Names of datasets and versions: mt_name_check (public, matorage.h). */

/* Automatic version names are "v" and 1..MT_VERSION_DIGITS digits without
 * a leading zero, so numbering never overflows or repeats a name. */
#define MT_VERSION_DIGITS 15
#define MT_VERSION_MAX 999999999999999ull
/* 1 (and the number in *n, when not NULL) for an automatic name. */
MT_LOCAL int mti_version_auto_number(const char *name, uint64_t *n);
/* A name a new version may take: mt_name_check, not the reserved word
 * "latest" (in any case), and a "v<digits>" name only in automatic form. */
MT_LOCAL int mti_version_name_check(const char *name, mt_error *err);

/* Overflow-checked a*b and a+b. */
MT_LOCAL int mti_mul_ok(uint64_t a, uint64_t b, uint64_t *out);
MT_LOCAL int mti_add_ok(uint64_t a, uint64_t b, uint64_t *out);

/* strcmp of two char * array elements, for qsort and bsearch. */
MT_LOCAL int mti_strp_cmp(const void *a, const void *b);
/* In n ascending uint64_t values, the first at base and each `stride` bytes
 * after the one before (an array, or a field of an array of structs): the
 * index of the last one <= v, or 0 when none is. */
MT_LOCAL size_t mti_bisect_u64(const void *base, size_t n, size_t stride, uint64_t v);

/* The files of a cache directory, oldest use first (dir-lru.c).  A scan
 * lists each regular file whose name `entry` accepts and adds its size to
 * total; a ".tmp." file being written counts in total but is never listed,
 * and one an hour old (left by a process that died) is removed.  Scans of
 * several directories add up; trim then removes the least recently used
 * until total <= target.  scan is -1 when dir cannot be read or memory runs
 * out (what was listed stays). */
typedef struct mti_lru_file {
	char *path;
	uint64_t size;
	struct timespec used;
} mti_lru_file;
typedef struct mti_lru {
	mti_lru_file *v;
	size_t n, cap;
	uint64_t total;
} mti_lru;
MT_LOCAL int mti_lru_scan(mti_lru *l, const char *dir, int (*entry)(const char *name));
MT_LOCAL void mti_lru_trim(mti_lru *l, uint64_t target);
MT_LOCAL void mti_lru_free(mti_lru *l);

/* mkdir -p of path's directory, private to the user; `what` names the
 * directory in errors. */
MT_LOCAL int mti_mkdir_parent(const char *path, const char *what, mt_error *err);

/* Another tool's file in the home directory (~/.aws/credentials): $var when
 * set and not empty, else ~/REL, ~ found as mt_user_path finds it ($HOME,
 * else the password database).  No home directory is MT_EINVAL naming var.
 * *out is malloc'ed. */
MT_LOCAL int mti_home_file(const char *var, const char *rel, char **out, mt_error *err);

/* 64 random bits from the kernel (the clock's nanoseconds when it has none):
 * for names and pauses that must differ between processes, not for secrets. */
MT_LOCAL uint64_t mti_random_u64(void);

/* Number of CPUs this process may run on (its affinity mask; at least 1, at most 256). */
MT_LOCAL int mti_ncpus(void);

/* Seconds on the monotonic clock (intervals only). */
MT_LOCAL double mti_mono_seconds(void);

#endif
