/* remote.c — named remotes in matorage's configuration file. */
#include "util.h"
#include <stdlib.h>
#include "store.h"

int mt_remote_find(const char *name, mt_remote *out, mt_error *err)
{
	return MT_ENOTFOUND;
}
void mt_remotes_free_one(mt_remote *r)
{
}
int mt_remotes_list(mt_remote **out, size_t *n, mt_error *err)
{
	*out = NULL;
	*n = 0;
	return 0;
}
int mt_remote_add(const mt_remote *r, int replace, mt_error *err)
{
	return mt_err(err, MT_EUNSUPPORTED, "remotes are being written");
}
int mt_remote_remove(const char *name, mt_error *err)
{
	return mt_err(err, MT_EUNSUPPORTED, "remotes are being written");
}
void mt_remotes_free(mt_remote *r, size_t n)
{
	free(r);
}
