/* fuzz-npy.c — libFuzzer target: the .npy header parser must reject any malformed bytes cleanly. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mt_npy_info in;
	mt_error err;
	int rc = mt_npy_parse_header(data, size, &in, &err);
	/* What a successful parse promises the reader that trusts it. */
	if (rc == 0) {
		uint64_t n = mt_dtype_size(in.dtype);
		if (n == 0 || in.rank < 0 || in.rank > MT_MAX_RANK + 1 || in.header_bytes > size)
			abort();
		for (int i = 0; i < in.rank; i++)
			n *= in.shape[i];
		if (n != in.data_bytes)
			abort();
	} else if (rc != MT_EFORMAT && rc != MT_ERANGE) {
		abort();
	}
	return 0;
}
