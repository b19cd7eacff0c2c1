/* columns.c — the browser's headers for each catalog list: titles and how each column's text reads (text, a count, a byte size). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

static const struct tui_col remote_cols[] = {
	{ "REMOTE", COL_TEXT }, { "URL", COL_TEXT }, { "STATE", COL_ONLINE },
	{ "DATASETS", COL_COUNT }, { "SYNCED", COL_TEXT }, { "ERROR", COL_TEXT },
};
static const struct tui_col bucket_cols[] = {
	{ "BUCKET", COL_TEXT }, { "DATASETS", COL_COUNT }, { "VERSIONS", COL_COUNT },
	{ "STORED", COL_BYTES },
};
static const struct tui_col dataset_cols[] = {
	{ "DATASET", COL_TEXT }, { "VERSIONS", COL_COUNT }, { "LATEST", COL_TEXT },
	{ "ROWS", COL_COUNT },   { "STORED", COL_BYTES },   { "TAGS", COL_TEXT },
	{ "DESCRIPTION", COL_TEXT },
};
static const struct tui_col version_cols[] = {
	{ "VERSION", COL_TEXT }, { "CREATED", COL_TEXT }, { "ROWS", COL_COUNT },
	{ "SHARDS", COL_COUNT }, { "STORED", COL_BYTES }, { "PARENT", COL_TEXT },
	{ "TAGS", COL_TEXT },    { "DESCRIPTION", COL_TEXT },
};
static const struct tui_col shard_cols[] = {
	{ "SHARD", COL_COUNT }, { "SHA256", COL_TEXT }, { "FIRST_ROW", COL_COUNT },
	{ "ROWS", COL_COUNT },  { "BYTES", COL_BYTES }, { "VERIFIED", COL_CHECK },
};
static const struct tui_col attr_cols[] = {
	{ "ATTRIBUTE", COL_TEXT }, { "DTYPE", COL_TEXT }, { "SHAPE", COL_TEXT },
	{ "RAGGED", COL_YES },
};
static const struct tui_col field_cols[] = {
	{ "FIELD", COL_TEXT }, { "VALUE", COL_TEXT },
};
static const struct tui_col job_cols[] = {
	{ "JOB", COL_COUNT },     { "KIND", COL_TEXT },     { "TARGET", COL_TEXT },
	{ "STARTED", COL_TEXT },  { "FINISHED", COL_TEXT }, { "RESULT", COL_TEXT },
};
static const struct tui_col result_cols[] = {
	{ "ITEM", COL_TEXT }, { "RESULT", COL_TEXT },
};
static const struct tui_col search_cols[] = {
	{ "REMOTE", COL_TEXT }, { "DATASET", COL_TEXT }, { "VERSION", COL_TEXT },
	{ "TAGS", COL_TEXT },   { "MATCH", COL_TEXT },
};

#define COLS(a) { a, sizeof a / sizeof a[0] }

/* In the order of the catalog's columns for each level (matorage-catalog.h). */
static const struct {
	const struct tui_col *cols;
	size_t n;
} levels[MT_CAT_NLEVELS] = {
	[MT_CAT_REMOTES] = COLS(remote_cols),  [MT_CAT_BUCKETS] = COLS(bucket_cols),
	[MT_CAT_DATASETS] = COLS(dataset_cols), [MT_CAT_VERSIONS] = COLS(version_cols),
	[MT_CAT_SHARDS] = COLS(shard_cols),    [MT_CAT_ATTRS] = COLS(attr_cols),
	[MT_CAT_VERSION] = COLS(field_cols),   [MT_CAT_SHARD] = COLS(field_cols),
	[MT_CAT_JOBS] = COLS(job_cols),        [MT_CAT_JOB] = COLS(result_cols),
	[MT_CAT_SEARCH] = COLS(search_cols),
};

const struct tui_col *tui_columns(int level, size_t *n)
{
	if (level < 0 || level >= MT_CAT_NLEVELS) {
		*n = 0;
		return NULL;
	}
	*n = levels[level].n;
	return levels[level].cols;
}

const char *tui_cell(int level, const char *const *cols, size_t c, char *buf, size_t cap)
{
	const char *v = cols[c];
	if (level == MT_CAT_VERSION || level == MT_CAT_SHARD) {
		/* Field rows: the field's name says how its value reads. */
		if (c == 0 || !cols[0])
			return v ? v : "";
		if (!v)
			return strcmp(cols[0], "verified") ? "-" : "never";
		if (!strcmp(cols[0], "ratio")) {
			snprintf(buf, cap, "%.2f", strtod(v, NULL));
			return buf;
		}
		return v;
	}
	int kind = levels[level].cols[c].kind;
	if (!v)
		return kind == COL_CHECK ? "-" : "";
	if (kind == COL_ONLINE)
		return strcmp(v, "0") ? "online" : "offline";
	if (kind == COL_YES)
		return strcmp(v, "0") ? "yes" : "no";
	return v;
}
