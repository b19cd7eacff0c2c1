/* fuzz-index.c — libFuzzer target: the chunk-index decoder must reject any malformed bytes cleanly. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode(const uint8_t *data, size_t size)
{
	mt_index *ix = NULL;
	mt_error err;
	if (mti_index_decode(data, size, 1u << 30, "fuzz", &ix, &err) == 0) {
		/* A decoded index must be safe to walk. */
		for (size_t i = 0; i < ix->n; i++)
			(void)mti_index_find(ix, ix->e[i].name);
		mti_index_free(ix);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode(data, size);
	/* Random bytes almost never carry a valid trailing checksum; seal
	 * them so the structure checks behind it get exercised too. */
	if (size >= 8) {
		uint8_t *copy = malloc(size);
		if (!copy)
			return 0;
		memcpy(copy, data, size);
		mti_put_u64(copy + size - 8, mti_xxh3(copy, size - 8));
		decode(copy, size);
		free(copy);
	}
	return 0;
}
