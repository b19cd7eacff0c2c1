/* codec-xxh3.c — XXH3-64 compiled for AVX2, for CPUs that have it: Debian's libxxhash is built for the x86-64 baseline (SSE2), and every chunk a reader decodes is hashed first (3.5% of a loader's cycles on large rows; AVX2 hashes 2.3x faster here). */
#include <stddef.h>
#include <stdint.h>

#include "codec.h"

#if MTI_XXH3_AVX2
/* The intrinsics, declared for any target (xxhash.h includes them only when
 * the whole build is AVX2). */
#include <immintrin.h>
/* Only this file's functions are built for AVX2; codec-hash.c calls them
 * after asking the CPU. */
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

uint64_t mti_xxh3_avx2(const void *data, size_t len)
{
	return XXH3_64bits(data, len);
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
