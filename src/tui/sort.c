/* sort.c — the orders a catalog list can be sorted in (name, size, date, health), which catalog column each reads, and how two rows compare. */
#define _GNU_SOURCE 1
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tui.h"

/* The catalog column (matorage-catalog.h) each level sorts on, per order;
 * -1 where the level has no such thing. */
static const signed char sort_cols[MT_CAT_NLEVELS][TUI_SORT_N] = {
	[MT_CAT_REMOTES] = { -1, -1, -1, -1, -1 },
	[MT_CAT_BUCKETS] = { -1, 0, 3, -1, 4 },
	[MT_CAT_DATASETS] = { -1, 0, 4, -1, 7 },
	[MT_CAT_VERSIONS] = { -1, 0, 4, 1, 10 },
	[MT_CAT_SHARDS] = { -1, 1, 4, -1, 6 },
	[MT_CAT_ATTRS] = { -1, -1, -1, -1, -1 },
	[MT_CAT_VERSION] = { -1, -1, -1, -1, -1 },
	[MT_CAT_SHARD] = { -1, -1, -1, -1, -1 },
	[MT_CAT_JOBS] = { -1, -1, -1, -1, -1 },
	[MT_CAT_JOB] = { -1, -1, -1, -1, -1 },
	[MT_CAT_SEARCH] = { -1, -1, -1, -1, -1 },
	[MT_CAT_MODELS] = { -1, 0, 4, -1, 7 },
	[MT_CAT_CHECKPOINTS] = { -1, 0, 5, 1, 12 },
	[MT_CAT_TENSORS] = { -1, 0, 3, -1, -1 },
	[MT_CAT_SEARCH_MODELS] = { -1, -1, -1, -1, -1 },
	[MT_CAT_FRAGMENTS] = { -1, -1, -1, -1, -1 }, /* in row order: their point */
};

int tui_sort_column(int level, int sort)
{
	if (level < 0 || level >= MT_CAT_NLEVELS || sort <= TUI_SORT_NONE || sort >= TUI_SORT_N)
		return -1;
	return sort_cols[level][sort];
}

int tui_sort_next(int level, int sort)
{
	for (int s = sort + 1; s < TUI_SORT_N; s++)
		if (tui_sort_column(level, s) >= 0)
			return s;
	return TUI_SORT_NONE;
}

const char *tui_sort_name(int sort)
{
	static const char *const names[TUI_SORT_N] = { "catalog order", "name", "size", "date",
						       "health" };
	return sort >= 0 && sort < TUI_SORT_N ? names[sort] : "?";
}

/* The worst first: what is lost, then what is damaged, down to sound
 * versions and those never checked. */
static int health_rank(const char *s)
{
	static const char *const order[] = { "unrepairable", "damaged", "repairable", "unverified",
					     "rebuilt", "sound" };
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
		if (!strcmp(s, order[i]))
			return (int)i;
	return (int)(sizeof order / sizeof order[0]);
}

int tui_sort_cmp(int sort, const char *a, const char *b)
{
	a = a ? a : "";
	b = b ? b : "";
	switch (sort) {
	case TUI_SORT_NAME:
		/* v2 before v10. */
		return strverscmp(a, b);
	case TUI_SORT_SIZE: {
		/* The largest first. */
		unsigned long long x = strtoull(a, NULL, 10), y = strtoull(b, NULL, 10);
		return x < y ? 1 : x > y ? -1 : 0;
	}
	case TUI_SORT_DATE:
		/* RFC 3339 in UTC reads in time order; the newest first. */
		return -strcmp(a, b);
	case TUI_SORT_HEALTH:
		return health_rank(a) - health_rank(b);
	default:
		return 0;
	}
}
