/* store-s3.c — the S3 store over libcurl (being written). */
#include "store.h"

int mt_store_s3_open(const char *url, const mt_store_opts *o, mt_store **out, mt_error *err)
{
	*out = NULL;
	return mt_err(err, MT_EUNSUPPORTED, "store %s: S3 is being written", url);
}
