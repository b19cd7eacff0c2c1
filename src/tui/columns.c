/* columns.c — the browser's headers for each catalog list: titles, their order, how each column's text reads (text, a count, a byte size, a state) and the colour role of a row. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

static const struct tui_col remote_cols[] = {
	{ "REMOTE", COL_TEXT }, { "URL", COL_TEXT }, { "STATE", COL_ONLINE },
	{ "DATASETS", COL_COUNT }, { "SYNCED", COL_TEXT }, { "ERROR", COL_TEXT },
};
/* A dataset's or bucket's health, the worst of its versions', comes right
 * after the counts: on a narrow screen it outranks sizes and dates. */
static const struct tui_col bucket_cols[] = {
	{ "BUCKET", COL_TEXT }, { "DATASETS", COL_COUNT }, { "VERSIONS", COL_COUNT },
	{ "HEALTH", COL_HEALTH }, { "STORED", COL_BYTES },
};
static const unsigned char bucket_order[] = { 0, 1, 2, 4, 3 };
static const struct tui_col dataset_cols[] = {
	{ "DATASET", COL_TEXT }, { "VERSIONS", COL_COUNT }, { "HEALTH", COL_HEALTH },
	{ "LATEST", COL_TEXT },  { "ROWS", COL_COUNT },	    { "STORED", COL_BYTES },
	{ "TAGS", COL_TEXT },	 { "DESCRIPTION", COL_TEXT },
};
static const unsigned char dataset_order[] = { 0, 1, 7, 2, 3, 4, 5, 6 };
static const struct tui_col version_cols[] = {
	{ "VERSION", COL_TEXT },   { "CREATED", COL_TEXT },    { "ROWS", COL_COUNT },
	{ "SHARDS", COL_COUNT },   { "STORED", COL_BYTES },    { "HEALTH", COL_HEALTH },
	{ "PROTECT", COL_PROTECT }, { "OVERHEAD", COL_SHARE }, { "PARENT", COL_TEXT },
	{ "TAGS", COL_TEXT },      { "DESCRIPTION", COL_TEXT },
};
/* The catalog's column under each of the headers: health (still on an 80
 * column screen) and protection come before the free text, which takes the
 * rest of the line. */
static const unsigned char version_order[] = { 0, 1, 2, 3, 4, 10, 8, 9, 5, 6, 7 };
static const struct tui_col shard_cols[] = {
	{ "SHARD", COL_COUNT }, { "SHA256", COL_TEXT },	  { "FIRST_ROW", COL_COUNT },
	{ "ROWS", COL_COUNT },  { "BYTES", COL_BYTES },	  { "HEALTH", COL_HEALTH },
	{ "VERIFIED", COL_CHECK },
};
/* The health's note (column 7) is part of its cell. */
static const unsigned char shard_order[] = { 0, 1, 2, 3, 4, 6, 5 };
/* A format-2 version's fragments: which rows each holds and its health
 * come first, to stay on a narrow screen; the object's sha256 last. */
static const struct tui_col fragment_cols[] = {
	{ "FRAG", COL_COUNT },	  { "ROWS", COL_TEXT },	  { "HEALTH", COL_HEALTH },
	{ "SHARDS", COL_COUNT },  { "BYTES", COL_BYTES }, { "SHA256", COL_TEXT },
};
static const unsigned char fragment_order[] = { 0, 1, 7, 4, 5, 6 };
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

/* A model's health (the worst of its checkpoints') and a checkpoint's
 * come where a dataset's and a version's do on a narrow screen: before
 * sizes and dates. */
static const struct tui_col model_cols[] = {
	{ "MODEL", COL_TEXT },	 { "CHECKPOINTS", COL_COUNT }, { "HEALTH", COL_HEALTH },
	{ "LATEST", COL_TEXT },	 { "STEP", COL_COUNT },	       { "STORED", COL_BYTES },
	{ "TAGS", COL_TEXT },	 { "DESCRIPTION", COL_TEXT },
};
static const unsigned char model_order[] = { 0, 1, 7, 2, 3, 4, 5, 6 };
static const struct tui_col ckpt_cols[] = {
	{ "CHECKPOINT", COL_TEXT }, { "HEALTH", COL_HEALTH }, { "CREATED", COL_TEXT },
	{ "STEP", COL_COUNT },	    { "TENSORS", COL_COUNT }, { "BYTES", COL_BYTES },
	{ "STORED", COL_BYTES },    { "NEW", COL_BYTES },     { "PARENT", COL_TEXT },
	{ "METRICS", COL_TEXT },    { "TAGS", COL_TEXT },     { "DESCRIPTION", COL_TEXT },
};
/* The author (column 11) is in the checkpoint's manifest, not on screen. */
static const unsigned char ckpt_order[] = { 0, 12, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
static const struct tui_col tensor_cols[] = {
	{ "TENSOR", COL_TEXT }, { "DTYPE", COL_TEXT },	{ "SHAPE", COL_TEXT },
	{ "BYTES", COL_BYTES }, { "STORED", COL_BYTES }, { "PARENT", COL_SHARED },
	{ "SHA256", COL_TEXT },
};
/* The sha256 (long) goes last, after whether the parent holds the same bytes. */
static const unsigned char tensor_order[] = { 0, 1, 2, 3, 4, 6, 5 };
static const struct tui_col search_model_cols[] = {
	{ "REMOTE", COL_TEXT }, { "MODEL", COL_TEXT }, { "CHECKPOINT", COL_TEXT },
	{ "TAGS", COL_TEXT },   { "MATCH", COL_TEXT },
};

#define COLS(a) { a, sizeof a / sizeof a[0], NULL, sizeof a / sizeof a[0] }
#define COLS_ORDER(a, o, ncat) { a, sizeof a / sizeof a[0], o, ncat }

/* Each level's headers; in the order of the catalog's columns
 * (matorage-catalog.h) unless `order` says which is under each. */
static const struct {
	const struct tui_col *cols;
	size_t n;
	const unsigned char *order;
	size_t ncat; /* the catalog's columns */
} levels[MT_CAT_NLEVELS] = {
	[MT_CAT_REMOTES] = COLS(remote_cols),
	[MT_CAT_BUCKETS] = COLS_ORDER(bucket_cols, bucket_order, 5),
	[MT_CAT_DATASETS] = COLS_ORDER(dataset_cols, dataset_order, 8),
	[MT_CAT_VERSIONS] = COLS_ORDER(version_cols, version_order, 13),
	[MT_CAT_SHARDS] = COLS_ORDER(shard_cols, shard_order, 8), [MT_CAT_ATTRS] = COLS(attr_cols),
	[MT_CAT_VERSION] = COLS(field_cols),   [MT_CAT_SHARD] = COLS(field_cols),
	[MT_CAT_JOBS] = COLS(job_cols),        [MT_CAT_JOB] = COLS(result_cols),
	[MT_CAT_SEARCH] = COLS(search_cols),
	[MT_CAT_MODELS] = COLS_ORDER(model_cols, model_order, 8),
	[MT_CAT_CHECKPOINTS] = COLS_ORDER(ckpt_cols, ckpt_order, 13),
	[MT_CAT_TENSORS] = COLS_ORDER(tensor_cols, tensor_order, 7),
	[MT_CAT_SEARCH_MODELS] = COLS(search_model_cols),
	[MT_CAT_FRAGMENTS] = COLS_ORDER(fragment_cols, fragment_order, 9),
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

size_t tui_catalog_ncols(int level)
{
	return level < 0 || level >= MT_CAT_NLEVELS ? 0 : levels[level].ncat;
}

/* A check's state as the browser says it: what cannot be rebuilt is lost. */
static const char *health_word(const char *state)
{
	return !strcmp(state, "unrepairable") ? "lost" : state;
}

/* A field's value with no value in the catalog. */
static const char *field_none(const char *field)
{
	static const struct {
		const char *field, *text;
	} none[] = {
		{ "verified", "never" }, { "health", "never checked" }, { "checked", "never" },
		{ "repaired", "never" }, { "protection", "none" },
	};
	for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
		if (!strcmp(field, none[i].field))
			return none[i].text;
	return "-";
}

/* Field rows: the field's name says how its value reads. */
static const char *field_cell(const char *const *cols, size_t c, char *buf, size_t cap)
{
	const char *v = cols[c];
	if (c == 0 || !cols[0])
		return v ? v : "";
	if (!v)
		return field_none(cols[0]);
	if (!strcmp(cols[0], "ratio")) {
		snprintf(buf, cap, "%.2f", strtod(v, NULL));
		return buf;
	}
	if (!strcmp(cols[0], "health") && !strncmp(v, "unrepairable", 12)) {
		snprintf(buf, cap, "lost%s", v + 12);
		return buf;
	}
	return v;
}

/* A shard's health with what rebuilt it or would: "repairable (parity)". */
static const char *shard_health(const char *const *cols, char *buf, size_t cap)
{
	const char *state = cols[6], *note = cols[7];
	if (!state)
		return "-";
	if (note && (!strcmp(state, "repairable") || !strcmp(state, "rebuilt"))) {
		snprintf(buf, cap, "%s (%s)", state, note);
		return buf;
	}
	return health_word(state);
}

/* A fragment's health cell is at most this wide: FRAG, a ROWS of up to 8
 * columns ("992..999") and HEALTH then fit a 40-column screen. */
#define FRAG_HEALTH_MAX 24

const char *tui_note_source(const char *note, int rebuilt_only, int *store)
{
	/* The note ends with what rebuilt the object, or would (app-health.c). */
	const char *w = note ? strstr(note, "rebuilt from ") : NULL;
	const char *src = w ? w + 13 : NULL;
	if (!src && note && !rebuilt_only && (w = strstr(note, "repairable from ")))
		src = w + 16;
	*store = src && (strstr(src, "://") || src[0] == '/');
	return src;
}

/* What rebuilt a fragment, as its health cell says it: "from parity";
 * another store by its remote's name, "from mirror" (a URL does not fit, and
 * may hold more than a screen should show), else "remote". */
static const char *fragment_source(const char *from, int store, const struct tui_remotes *rm,
				   char *buf, size_t cap)
{
	if (!store) {
		snprintf(buf, cap, "from %s", from);
		return buf;
	}
	const char *name = rm ? app_remote_of_url(rm->v, rm->n, from) : NULL;
	snprintf(buf, cap, "from %s", name ? name : "");
	return name && strlen(buf) + 10 <= FRAG_HEALTH_MAX ? buf : "remote";
}

/* A fragment's health as the browser says it, short, to keep the column
 * on a narrow screen (a column that does not fit whole is left out): a bad
 * one is "missing" or "damaged", with whether a repair can rebuild it
 * ("missing (repairable)": from what is in the version's health); a
 * rebuilt one says from what ("rebuilt (from parity)", "rebuilt (from
 * mirror)", "rebuilt (remote)"); the fragment's own view (Enter) gives the
 * whole note. */
static const char *fragment_health(const char *const *cols, const struct tui_remotes *rm,
				   char *buf, size_t cap)
{
	const char *state = cols[7], *note = cols[8];
	if (!state)
		return "never checked";
	int bad = strcmp(state, "sound") && strcmp(state, "rebuilt");
	int missing = !strcmp(state, "missing") || (note && !strncmp(note, "missing", 7));
	const char *word = !bad ? state : missing ? "missing" : "damaged";
	int store;
	const char *from = tui_note_source(note, 1, &store);
	char src[FRAG_HEALTH_MAX + 8];
	const char *what = from ? fragment_source(from, store, rm, src, sizeof src) : NULL;
	if (!strcmp(state, "unrepairable"))
		snprintf(buf, cap, "%s (lost)", word);
	else if (!strcmp(state, "repairable"))
		snprintf(buf, cap, "%s (repairable)", word);
	else if (!strcmp(state, "rebuilt") && what && strlen(what) + 10 <= FRAG_HEALTH_MAX)
		snprintf(buf, cap, "rebuilt (%s)", what);
	else
		return word;
	return buf;
}

/* A fragment's rows: "200..299". */
static const char *fragment_rows(const char *const *cols, char *buf, size_t cap)
{
	unsigned long long first = strtoull(cols[1] ? cols[1] : "0", NULL, 10);
	unsigned long long rows = strtoull(cols[2] ? cols[2] : "0", NULL, 10);
	snprintf(buf, cap, "%llu..%llu", first, first + rows - (rows > 0));
	return buf;
}

static const char *none_text(int kind);

/* A cell of the fragments list: its health and rows as above, the rest
 * (counts, a size, the sha256) as they are. */
static const char *fragment_cell(const char *const *cols, int kind, size_t src,
				 const struct tui_remotes *rm, char *buf, size_t cap)
{
	if (kind == COL_HEALTH)
		return fragment_health(cols, rm, buf, cap);
	if (src == 1)
		return fragment_rows(cols, buf, cap);
	return cols[src] ? cols[src] : none_text(kind);
}

/* A cell of kind `kind` with no value in the catalog. */
static const char *none_text(int kind)
{
	switch (kind) {
	case COL_CHECK:
	case COL_SHARE:
	case COL_SHARED:
		return "-";
	case COL_PROTECT:
		return "none";
	case COL_HEALTH:
		return "never checked";
	default:
		return "";
	}
}

/* A version's parent with how much of it the version shares: "v1 (all
 * shared)"; a removed one says so, with what the version still holds of it. */
static const char *parent_cell(const char *const *cols, const char *v, char *buf, size_t cap)
{
	const char *nshared = cols[11], *nshards = cols[3];
	if (cols[12] && !strcmp(cols[12], "1")) {
		if (nshared && nshards)
			snprintf(buf, cap, "%s (removed, %s/%s shared)", v, nshared, nshards);
		else
			snprintf(buf, cap, "%s (removed)", v);
	} else if (nshared && nshards && !strcmp(nshared, nshards)) {
		snprintf(buf, cap, "%s (all shared)", v);
	} else if (nshared && nshards) {
		snprintf(buf, cap, "%s (%s/%s shared)", v, nshared, nshards);
	} else {
		return v;
	}
	return buf;
}

const char *tui_cell(int level, const char *const *cols, size_t c, const struct tui_remotes *rm,
		     char *buf, size_t cap)
{
	if (level == MT_CAT_VERSION || level == MT_CAT_SHARD)
		return field_cell(cols, c, buf, cap);
	int kind = levels[level].cols[c].kind;
	size_t src = levels[level].order ? levels[level].order[c] : c;
	const char *v = cols[src];
	if (level == MT_CAT_SHARDS && kind == COL_HEALTH)
		return shard_health(cols, buf, cap);
	if (level == MT_CAT_FRAGMENTS)
		return fragment_cell(cols, kind, src, rm, buf, cap);
	if (level == MT_CAT_VERSIONS && src == 5 && v && v[0])
		return parent_cell(cols, v, buf, cap);
	/* Every version removed, its shards not yet collected. */
	if (level == MT_CAT_DATASETS && src == 2 && cols[1] && !strcmp(cols[1], "0"))
		return "(removed)";
	/* No version to judge: nothing was left unchecked either. */
	if (!v && kind == COL_HEALTH &&
	    (level == MT_CAT_DATASETS || level == MT_CAT_BUCKETS || level == MT_CAT_MODELS))
		return "-";
	if (!v)
		return none_text(kind);
	if (kind == COL_ONLINE)
		return strcmp(v, "0") ? "online" : "offline";
	if (kind == COL_YES)
		return strcmp(v, "0") ? "yes" : "no";
	if (kind == COL_SHARED)
		return strcmp(v, "0") ? "shared" : "new";
	if (kind == COL_HEALTH)
		return health_word(v);
	if (kind == COL_SHARE) {
		snprintf(buf, cap, "%.1f%%", 100 * strtod(v, NULL));
		return buf;
	}
	return v;
}

/* The colour role of a state's name: sound is good, repairable a warning,
 * damage nothing can rebuild (or not yet known to be rebuildable) trouble. */
static int health_role(const char *state)
{
	if (!state || !strcmp(state, "unverified"))
		return R_NORMAL;
	if (!strcmp(state, "sound") || !strcmp(state, "rebuilt"))
		return R_GOOD;
	return !strcmp(state, "repairable") ? R_WARN : R_OFFLINE;
}

int tui_row_role(int level, const char *const *cols)
{
	/* Trouble stands out: offline remotes, damaged shards and versions. */
	if (level == MT_CAT_REMOTES && cols[2] && !strcmp(cols[2], "0"))
		return R_OFFLINE;
	if (level == MT_CAT_DATASETS && cols[1] && !strcmp(cols[1], "0"))
		return R_DIM;
	/* A dataset or bucket stands out only for damage: sound is the rule. */
	if ((level == MT_CAT_DATASETS || level == MT_CAT_BUCKETS) &&
	    health_role(cols[level == MT_CAT_DATASETS ? 7 : 4]) != R_GOOD)
		return health_role(cols[level == MT_CAT_DATASETS ? 7 : 4]);
	if (level == MT_CAT_MODELS && health_role(cols[7]) != R_GOOD)
		return health_role(cols[7]);
	if (level == MT_CAT_VERSIONS)
		return health_role(cols[10]);
	if (level == MT_CAT_CHECKPOINTS)
		return health_role(cols[12]);
	if (level == MT_CAT_SHARDS && cols[6])
		return health_role(cols[6]);
	if (level == MT_CAT_FRAGMENTS && cols[7])
		return health_role(!strcmp(cols[7], "missing") ? "damaged" : cols[7]);
	if (level == MT_CAT_SHARDS && cols[5])
		return strcmp(cols[5], "ok") ? R_OFFLINE : R_GOOD;
	return R_NORMAL;
}
