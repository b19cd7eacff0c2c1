/* app-format.c — numbers as the application shows them: byte sizes, row shapes, copy summaries. */
#include <inttypes.h>
#include <stdio.h>

#include "app.h"

const char *app_human_bytes(uint64_t n, char *buf, size_t cap)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (n < 1024) {
		snprintf(buf, cap, "%" PRIu64 " B", n);
		return buf;
	}
	double v = (double)n / 1024;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof units / sizeof *units) {
		v /= 1024;
		u++;
	}
	snprintf(buf, cap, "%.1f %s", v, units[u]);
	return buf;
}

const char *app_shape_str(const mt_attr *a, char *buf, size_t cap)
{
	/* NumPy's spelling: "()", "(28,)", "(28, 28)"; a ragged row's item count is "*". */
	char dims[(MT_MAX_RANK + 1) * 24] = "";
	size_t len = 0;
	if (a->ragged)
		len += (size_t)snprintf(dims, sizeof dims, "*");
	for (int i = 0; i < a->rank && i < MT_MAX_RANK; i++)
		len += (size_t)snprintf(dims + len, sizeof dims - len, "%s%" PRIu64,
					len ? ", " : "", a->shape[i]);
	int ndims = a->rank + (a->ragged ? 1 : 0);
	snprintf(buf, cap, "(%s%s)", dims, ndims == 1 ? "," : "");
	return buf;
}

const char *app_copy_summary(const mt_copy_stats *st, char *buf, size_t cap)
{
	char sent[32], present[32];
	app_human_bytes(st->bytes, sent, sizeof sent);
	app_human_bytes(st->bytes_present, present, sizeof present);
	/* mt_copy counts parity objects among the objects it copies; a user
	 * reading "shards" means the version's data, so parity is told apart. */
	uint64_t shards = st->shards - st->parity, here = st->shards_present - st->parity_present;
	if (!st->parity && !st->parity_present)
		snprintf(buf, cap, "%" PRIu64 " shard(s) sent (%s), %" PRIu64 " already there (%s)",
			 shards, sent, here, present);
	else
		snprintf(buf, cap,
			 "%" PRIu64 " shard(s) and %" PRIu64 " parity object(s) sent (%s), %" PRIu64
			 " shard(s) and %" PRIu64 " parity object(s) already there (%s)",
			 shards, st->parity, sent, here, st->parity_present, present);
	return buf;
}
