/* loader-token.h — the loader's resume token: a line naming the version, the order and how the epoch's rows were shared so far. */
#ifndef MT_LOADER_TOKEN_H
#define MT_LOADER_TOKEN_H

#include "loader-plan.h"

/* "mtl1 DATASET VERSION ROWS SEED EPOCH SHUFFLE WINDOW_ROWS UNIT_ROWS" and
 * one "world:batch_rows:drop_last:batches_taken" stage per share of the
 * epoch so far (doc/loader.md). */
typedef struct mt_token {
	const char *dataset, *version;
	uint64_t rows, seed, epoch;
	int shuffle;
	uint64_t window_rows, unit_rows;
	mt_plan_share *stages;
	size_t nstages;
	char *names; /* holds dataset and version after mti_token_parse */
} mt_token;

/* Parse text into t (free it with mti_token_free, also after a failure).
 * MT_EINVAL quotes the text when it is not a token or is damaged. */
MT_LOCAL int mti_token_parse(const char *text, mt_token *t, mt_error *err);
/* Write t, then `last` as one more stage when not NULL, into buf (cap
 * bytes, NUL-terminated when cap > 0); returns the full length. */
MT_LOCAL size_t mti_token_format(const mt_token *t, const mt_plan_share *last, char *buf,
				size_t cap);
MT_LOCAL void mti_token_free(mt_token *t);

#endif
