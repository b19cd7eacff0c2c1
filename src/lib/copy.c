/* copy.c — copy dataset versions between stores, shards first, manifest last. */
#include "util.h"

int mt_copy(mt_store *src, mt_store *dst, const char *dataset, const char *version, int threads,
	    mt_progress_fn progress, void *ud, mt_copy_stats *stats, mt_error *err)
{
	return mt_err(err, MT_EUNSUPPORTED, "copy is being written");
}
