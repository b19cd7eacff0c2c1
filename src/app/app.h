/* app.h — what the command line and the browser share: allocation that exits on failure, the stores the command line chose, sizes and shapes as text. */
#ifndef MT_APP_H
#define MT_APP_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "matorage.h"
#include "matorage-catalog.h"

#define APP_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* The stores the command line chose, which the browser opens too: --store (NULL:
 * the library's default) and the options every store opened gets (--endpoint,
 * --profile, ...). */
struct app_ctx {
	const char *store_url;
	mt_store_opts store_opts;
	char store_name[256]; /* app_store_name_resolve's answer ("": not resolved) */
};

/* ---- app-alloc.c ---- */

/* Allocation for the application: print and exit on failure. */
void *app_xmalloc(size_t n);
void *app_xcalloc(size_t n, size_t size);
void *app_xreallocarray(void *p, size_t n, size_t size);
/* p (of *cap bytes) grown to hold need bytes, its size doubled from `first`. */
void *app_xgrow(void *p, size_t *cap, size_t need, size_t first);
char *app_xstrdup(const char *s);
char *app_xasprintf(const char *fmt, ...) APP_PRINTF(1, 2);
char *app_xvasprintf(const char *fmt, va_list ap) APP_PRINTF(1, 0);
/* A whole file (*len bytes); NULL with errno set when it cannot be read. */
char *app_read_file(const char *path, size_t *len);

/* ---- app-catalog.c ---- */

/* The catalog's name for the default store. */
#define APP_LOCAL "local"
/* The catalog's name for the store of --store: the remote or URL given, else APP_LOCAL. */
const char *app_store_name(const struct app_ctx *app);
/* The name of the remote of r[0..n) (mt_remotes_list) whose store `url` is (a
 * path and its file:// URL are one store), or NULL: a URL may carry more than
 * a screen should show, a remote's name never does. */
const char *app_remote_of_url(const mt_remote *r, size_t n, const char *url);
/* A --store URL that is a remote's (or $MATORAGE_STORE's) store takes that
 * remote's name, so one store is one entry in the catalog. */
void app_store_name_resolve(struct app_ctx *app);
/* Forget the catalog's entries for remotes no longer configured and for URLs
 * that a named remote already lists (the stores themselves are untouched). */
int app_catalog_prune(mt_catalog *c, mt_error *err);

/* ---- app-health.c ---- */

/* What a check (verify, repair, protect) found, gathered for the catalog:
 * per version the counts, the sources that rebuilt the damage (or would,
 * in a dry run) and what is lost; per shard its health. */
struct app_health_version {
	char *version;
	uint64_t objects, damaged, rebuilt, unrepairable, bytes_read;
	uint64_t shards_sound, shards_bad; /* of the objects, shards: sound, not */
	char sources[256];
	char lost[256];
	char message[256]; /* what stopped the check, else "" */
	int state, state_set; /* a state the caller found itself (verify: sound) */
};
struct app_health_shard {
	char sha256[72];
	int state;  /* MT_HEALTH_* */
	char *note; /* the source, or what is wrong; NULL */
	int verified, code; /* a verification's result (code 0: sound), not a state */
};
/* A fragment of a format-2 manifest, as a check found it. */
struct app_health_fragment {
	char sha256[72];
	int state;  /* MT_HEALTH_* */
	char *note; /* what was wrong, and what rebuilt it or would; NULL */
};
struct app_health {
	pthread_mutex_t lock; /* reports come from several threads */
	const char *kind;     /* "verify", "repair", "protect" (static) */
	int dry_run;
	struct app_health_version *v;
	size_t nv;
	struct app_health_shard *s;
	size_t ns, cap_s;
	struct app_health_fragment *f;
	size_t nf;
};
void app_health_init(struct app_health *h, const char *kind, int dry_run);
void app_health_free(struct app_health *h);
/* The entry of `version`, made when new. */
struct app_health_version *app_health_version(struct app_health *h, const char *version);
/* Gather one report of mt_repair (as an mt_repair_fn: ud is the app_health). */
void app_health_report(struct app_health *h, const mt_repair_report *r);
void app_health_report_fn(void *ud, const mt_repair_report *r);
/* Gather a shard's verification: code 0 (sound) or the error and its message. */
void app_health_verified(struct app_health *h, const char *sha256, int code, const char *message);
/* Version v's state after the check (MT_HEALTH_*). */
int app_health_state(const struct app_health *h, const struct app_health_version *v);
/* Write every version's check and every shard's health to the catalog
 * (bucket url); the catalog is a cache, so failures are not reported. */
void app_health_record(struct app_health *h, mt_catalog *c, const char *url, const char *dataset);
/* Repair dataset@version exactly as `matorage repair` does (the browser's
 * R and :repair run this too): version NULL is every version of the
 * dataset, those whose manifest only a protection record still holds
 * included.  Every report goes to h, then to o->report. */
int app_repair(mt_store *s, const char *dataset, const char *version, mt_repair_opts *o,
	       struct app_health *h, mt_repair_stats *st, mt_error *err);
/* "N objects checked, D damaged, R rebuilt (repairable in a dry run), U
 * unrepairable; X read" into buf. */
const char *app_repair_summary(const mt_repair_stats *st, int dry_run, char *buf, size_t cap);

/* ---- app-model-health.c ---- */

/* What a verify or repair of a model's checkpoints found of each object,
 * for the catalog: a tensor object's health is every checkpoint's that
 * names it; parity, records and manifests are their checkpoint's. */
struct app_model_object {
	char *object;     /* its key under models/<model>/ */
	char *checkpoint; /* "" for a tensor object */
	int state;        /* MT_HEALTH_* */
	char *note;       /* what rebuilt it or would, or what is wrong; NULL */
	int guess;        /* sound because no damage was reported of it */
	size_t seq;
};
struct app_model_health {
	pthread_mutex_t lock; /* reports come from several threads */
	char *model;
	struct app_model_object *o;
	size_t n, cap;
	uint64_t damaged;     /* results that are not sound */
	uint64_t tensors_bad; /* damaged tensor objects a verify found */
};
void app_model_health_init(struct app_model_health *h, const char *model);
void app_model_health_free(struct app_model_health *h);
/* A tensor object (its key) a verify found damaged or missing. */
void app_model_health_bad(struct app_model_health *h, const char *object, const char *message);
/* One report of mt_ckpt_repair or mt_ckpt_check_protection (as an
 * mt_repair_fn: ud is the app_model_health). */
void app_model_health_report(struct app_model_health *h, const mt_repair_report *r);
void app_model_health_report_fn(void *ud, const mt_repair_report *r);
/* Every tensor object of the checkpoint `version` (NULL: of every one)
 * sound, unless a result says otherwise. */
int app_model_health_sound(struct app_model_health *h, mt_store *s, const char *version,
			   mt_error *err);
/* Write what h gathered to the catalog (bucket url). */
int app_model_health_record(struct app_model_health *h, mt_catalog *c, const char *url,
			    mt_error *err);
/* Verify h's model at `version` (NULL: every checkpoint) as `matorage
 * verify model:` does: every tensor object (bad hears of each damaged one),
 * then each checkpoint's parity (prot hears of each damaged parity object
 * or record); h gathers every object's state, damage classified by a dry
 * run of the repair (from what it could be rebuilt).  mt_ckpt_verify's
 * code, else MT_ECORRUPT for damaged protection, else 0. */
int app_model_verify(mt_store *s, const char *version, int threads, mt_ckpt_bad_fn bad,
		     mt_repair_fn prot, void *ud, struct app_model_health *h, uint64_t *nchecked,
		     mt_error *err);

/* ---- app-stats.c ---- */

/* An attribute's statistics as lines to show (malloc'ed, as the array):
 * the numbers, a histogram and the class balance with bars fitting in
 * `width` columns. */
char **app_stats_lines(const mt_stats *s, int width, size_t *n);
/* The statistics the catalog (NULL: none) holds of dataset@version attr in
 * bucket url: 0 with *out (and *computed, when not NULL: when they were
 * computed, malloc'ed), else MT_ENOTFOUND or another code. */
int app_stats_cached(mt_catalog *c, const char *url, const char *dataset, const char *version,
		     const char *attr, mt_stats **out, char **computed);
/* Keep s in the catalog for bucket url; MT_ENOTFOUND when the catalog does
 * not list the version yet. */
int app_stats_record(mt_catalog *c, const char *url, const mt_stats *s, mt_error *err);
/* ---- app-diff.c ---- */

/* What two versions A and B have in common, by shard reference (a shard
 * listed twice in a version is two references, of its rows twice): the
 * references of A matched one for one with references of B to the same
 * object (by sha256), the rest of A's (new against B) and the rest of B's
 * (removed going from B to A).  So shared rows never exceed either side's
 * and "0 new" means A holds no row B does not. */
enum { APP_DIFF_SHARED, APP_DIFF_ADDED, APP_DIFF_REMOVED, APP_DIFF_N };
struct app_diff_shard {
	char sha256[72];
	uint64_t bytes, rows, first_row;
	int change; /* APP_DIFF_* */
	int repeat; /* new or removed, but its object is no new one: the other
		     * side holds it too, or its side listed it before */
};
struct app_diff {
	uint64_t shards[APP_DIFF_N], bytes[APP_DIFF_N], rows[APP_DIFF_N];
	uint64_t repeats[APP_DIFF_N]; /* of shards[], the repeat references */
	int same_order;               /* A and B list the same shards in order */
	struct app_diff_shard *s; /* A's shards in order, then the removed ones in B's */
	size_t ns;
};
/* Compare version a with b (both open); app_diff_free frees what d holds. */
void app_diff_readers(const mt_reader *a, const mt_reader *b, struct app_diff *d);
/* app_diff_readers' totals (d->s left empty) of a and b opened lazily
 * (mt_reader_open_lazy): a fragment both roots name alike holds the same
 * references on both sides, so it counts as shared from its root's totals
 * unread; only the others are loaded, and the shared ones searched only
 * for objects whose repeat they decide.  The same totals as
 * app_diff_readers when every reference of one object gives its bytes and
 * rows alike.  0, or the error of a fragment that could not be read. */
int app_diff_totals(mt_reader *a, mt_reader *b, struct app_diff *d, mt_error *err);
void app_diff_free(struct app_diff *d);
/* "shared", "new", "removed". */
const char *app_diff_change_name(int change);
/* A shard's change as a listing spells it: a new repeat reference "repeat". */
const char *app_diff_shard_change(const struct app_diff_shard *s);
/* When nothing is new or removed, a sentence saying so and whether the order
 * of the rows is the same; NULL otherwise. */
const char *app_diff_verdict(const struct app_diff *d);
/* One change's totals as a line: "new  1 shard  1.2 MiB  100 rows". */
const char *app_diff_line(const struct app_diff *d, int change, char *buf, size_t cap);

/* ---- app-records.c ---- */

/* Records as text, checked against a dataset's attributes and packed into rows
 * (what `matorage ingest` reads).  Every parser fills the caller's rows, one
 * buffer per attribute of app_records_row_bytes bytes, or returns -1 with why
 * (cap bytes) naming the field: "field x[1]: expected 3 values (shape (2, 3)),
 * found 2"; the caller adds the line. */

/* NAME=DTYPE[:SHAPE], SHAPE "3" or "28x28", or for a ragged attribute "*" or
 * "*x3" (items of shape (3,)): *out with out->name = *name (malloc'ed, the
 * caller's); -1 with why when malformed. */
int app_attr_spec(const char *spec, mt_attr *out, char **name, char *why, size_t cap);
/* A parser for these attributes (borrowed: they must outlive it). */
struct app_records;
struct app_records *app_records_new(const mt_attr *attrs, size_t n);
void app_records_free(struct app_records *r);
/* Bytes of attribute i's row (fixed) or of one item (ragged). */
size_t app_records_row_bytes(const struct app_records *r, size_t i);
/* A ragged attribute's row is not written to the caller's buffer (row[i] is
 * not read): after a parse that succeeded it is here, *items items back to
 * back, owned by r until the next parse. */
const void *app_records_ragged(const struct app_records *r, size_t i, uint64_t *items);
/* One JSON object {"x": [[1, 2], [3, 4]], "y": 3}: every attribute a key, no other key;
 * nested arrays of the attribute's shape; numbers (true/false for bool).  A ragged
 * attribute's value is an array of any number of items (even none), each of the
 * item's shape: {"tokens": [5, 17, 3]}. */
int app_records_json(struct app_records *r, const char *line, size_t len, void *const *row,
		     char *why, size_t cap);
/* CSV: the header names each column: NAME for a scalar attribute, NAME.I for element I
 * (C order) of a shaped one, every element exactly once, in any order; then each line
 * one record.  Fields may be double-quoted ("" is a quote).  A ragged attribute is one
 * column NAME whose field holds its items' values separated by blanks ("5 17 3"; an
 * empty field: no items). */
int app_records_csv_header(struct app_records *r, const char *line, size_t len, char *why,
			   size_t cap);
int app_records_csv(struct app_records *r, const char *line, size_t len, void *const *row,
		    char *why, size_t cap);

/* ---- app-format.c ---- */

/* "1.5 MiB" into buf. */
const char *app_human_bytes(uint64_t n, char *buf, size_t cap);
/* A row's shape as "(28, 28)"; ragged rows as "(*, 28)". */
const char *app_shape_str(const mt_attr *a, char *buf, size_t cap);
/* What a copy sent and found, parity objects told apart from shards. */
const char *app_copy_summary(const mt_copy_stats *st, char *buf, size_t cap);

#endif
