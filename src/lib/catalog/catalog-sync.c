/* catalog-sync.c — the catalog's sync: a store's datasets listed and their new or changed manifests read (in parallel, without the lock) and written, version by version, in transactions. */
#define _GNU_SOURCE /* vasprintf */
#include <ctype.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog.h"


/* The catalog is built on matorage.h alone (errors go through its
 * mt_error_set), so these few helpers are its own rather than
 * libmatorage's internal ones. */
#define CAT_PRINTF(a, b) __attribute__((format(printf, a, b)))

static char *CAT_PRINTF(1, 2) cat_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* ---- store listings ---------------------------------------------------------- */

void mti_listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	*l = (struct listing){0};
}

/* Add the first len bytes of name, with what o says of its object. */
static int listing_push(struct listing *l, const char *name, size_t len, const struct listed *o)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct listed *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return MT_ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (!(l->v[l->n].name = strndup(name, len)))
		return MT_ENOMEM;
	l->v[l->n].size = o->size;
	l->v[l->n].mtime = o->mtime;
	l->n++;
	return 0;
}

int mti_listing_add(void *ud, const mt_object_info *o)
{
	struct listing *l = ud;
	const char *name = o->key + l->prefix_len;
	size_t len = strlen(name);
	if (l->removed && len > 8 && !strcmp(name + len - 8, ".removed") && !strchr(name, '/'))
		return listing_push(l->removed, name, len - 8, &(struct listed){0});
	if (len <= 5 || strcmp(name + len - 5, ".json") || strchr(name, '/'))
		return 0;
	return listing_push(l, name, len - 5, &(struct listed){.size = o->size, .mtime = o->mtime});
}

static int listed_cmp(const void *a, const void *b)
{
	return strcmp(((const struct listed *)a)->name, ((const struct listed *)b)->name);
}

void mti_listing_sort(struct listing *l)
{
	if (l->n)
		qsort(l->v, l->n, sizeof *l->v, listed_cmp);
}

static int cat_list_objects(mt_store *s, const char *dataset, const char *dir,
			    struct listing *l, mt_error *err)
{
	char *prefix = cat_printf("datasets/%s/%s/", dataset, dir);
	if (!prefix)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	l->prefix_len = strlen(prefix);
	int rc = mt_store_list(s, prefix, mti_listing_add, l, err);
	if (rc == MT_ENOMEM)
		rc = mt_error_set(err, rc, "dataset %s: listing: out of memory", dataset);
	free(prefix);
	/* Key order is not name order ("a-b.json" < "a.json" but "a" < "a-b"). */
	if (!rc && l->n)
		qsort(l->v, l->n, sizeof *l->v, listed_cmp);
	if (!rc && l->removed)
		mti_listing_sort(l->removed);
	return rc;
}

/* The one object <dir>/<name>.json of a dataset, as a listing of it or of
 * nothing: a listing by its full key, which costs the same however many
 * versions the dataset has. */
static int cat_list_one(mt_store *s, const char *dataset, const char *dir, const char *name,
			struct listing *l, mt_error *err)
{
	char *key = cat_printf("datasets/%s/%s/%s.json", dataset, dir, name);
	if (!key)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	l->prefix_len = strlen(key) - strlen(name) - 5;
	int rc = mt_store_list(s, key, mti_listing_add, l, err);
	if (rc == MT_ENOMEM)
		rc = mt_error_set(err, rc, "dataset %s: listing: out of memory", dataset);
	free(key);
	return rc;
}

/* In name order (cat_list_objects sorts), so a binary search. */
const struct listed *mti_listing_find(const struct listing *l, const char *name)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(l->v[mid].name, name);
		if (!c)
			return &l->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int cat_dataset_id(mt_catalog *c, int64_t bucket, const char *name, int create,
			  int64_t *id, mt_error *err)
{
	int rc = 0;
	if (create) {
		sqlite3_stmt *st;
		if ((rc = mti_cat_prepare(c, "INSERT OR IGNORE INTO datasets(bucket_id, name) "
					  "VALUES(?1, ?2)", &st, err)))
			return rc;
		sqlite3_bind_int64(st, 1, bucket);
		sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
		rc = mti_cat_step_done(c, st, "recording a dataset", err);
		sqlite3_finalize(st);
	}
	if (!rc)
		rc = mti_cat_lookup(c, "SELECT id FROM datasets WHERE bucket_id = ?1 AND name = ?2",
				    bucket, name, id, err);
	return rc;
}

static const char *cat_shape(const mt_attr *a, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "(");
	for (int i = 0; i < a->rank && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%llu", i ? ", " : "",
				      (unsigned long long)a->shape[i]);
	if (n < cap)
		snprintf(buf + n, cap - n, "%s)", a->rank == 1 ? "," : "");
	return buf;
}
/* The version's own row, with the listed sizes and times of its manifest
 * and metadata object; *vid gets its id. */
static int cat_put_row(mt_catalog *c, int64_t ds, const mt_version_info *v,
		       const struct listed *man, const struct listed *meta, int64_t *vid,
		       mt_error *err)
{
	sqlite3_stmt *st;
	/* An upsert keeps the row's id, so views open on it stay valid. */
	int rc = mti_cat_prepare(c, "INSERT INTO versions(dataset_id, name, parent, created, "
				 "author, description, rows, nshards, stored_bytes, raw_bytes, "
				 "level, manifest_size, manifest_mtime, meta_size, meta_mtime) "
				 "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(dataset_id, name) "
				 "DO UPDATE SET parent = excluded.parent, created = excluded.created,"
				 " author = excluded.author, description = excluded.description,"
				 " rows = excluded.rows, nshards = excluded.nshards,"
				 " stored_bytes = excluded.stored_bytes, raw_bytes = excluded.raw_bytes,"
				 " level = excluded.level, manifest_size = excluded.manifest_size,"
				 " manifest_mtime = excluded.manifest_mtime,"
				 " meta_size = excluded.meta_size, meta_mtime = excluded.meta_mtime",
				 &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, ds);
	sqlite3_bind_text(st, 2, v->version, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, v->parent, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, v->created, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, v->author, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, v->description, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, (int64_t)v->rows);
	sqlite3_bind_int64(st, 8, (int64_t)v->nshards);
	sqlite3_bind_int64(st, 9, (int64_t)v->stored_bytes);
	sqlite3_bind_int64(st, 10, (int64_t)v->raw_bytes);
	sqlite3_bind_int(st, 11, v->level);
	/* A version read from its protection record has no manifest: -1. */
	sqlite3_bind_int64(st, 12, man ? (int64_t)man->size : -1);
	sqlite3_bind_int64(st, 13, man ? man->mtime : -1);
	sqlite3_bind_int64(st, 14, meta ? (int64_t)meta->size : -1);
	sqlite3_bind_int64(st, 15, meta ? meta->mtime : -1);
	rc = mti_cat_step_done(c, st, "recording a version", err);
	sqlite3_finalize(st);
	if (!rc)
		rc = mti_cat_lookup(c, "SELECT id FROM versions WHERE dataset_id = ?1 AND name = ?2", ds,
				    v->version, vid, err);
	return rc;
}

/* What a sync found of a version's protection: its record as listed (NULL:
 * none), and k = -1 when the record is there but cannot be read. */
struct prot {
	const struct listed *rec;
	int k, m;
	double overhead;
};

static int cat_put_protection(mt_catalog *c, int64_t vid, const struct prot *p, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "UPDATE versions SET protect_k = ?2, protect_m = ?3,"
				 " protect_overhead = ?4, protect_size = ?5, protect_mtime = ?6"
				 " WHERE id = ?1", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, vid);
	sqlite3_bind_int(st, 2, p->rec ? p->k : 0);
	sqlite3_bind_int(st, 3, p->rec ? p->m : 0);
	if (p->rec && p->k > 0)
		sqlite3_bind_double(st, 4, p->overhead);
	else
		sqlite3_bind_null(st, 4);
	sqlite3_bind_int64(st, 5, p->rec ? (int64_t)p->rec->size : -1);
	sqlite3_bind_int64(st, 6, p->rec ? p->rec->mtime : -1);
	rc = mti_cat_step_done(c, st, "recording a protection", err);
	sqlite3_finalize(st);
	return rc;
}

/* A version's attributes, tags, shards, recipe, sources, attachments and
 * search entry are written anew each time it is read. */
static int cat_clear_parts(mt_catalog *c, int64_t vid, mt_error *err)
{
	static const char *const clear[] = {
		"DELETE FROM attrs WHERE version_id = ?1", "DELETE FROM tags WHERE version_id = ?1",
		"DELETE FROM search WHERE rowid = ?1",
		"DELETE FROM recipes WHERE version_id = ?1",
		"DELETE FROM sources WHERE version_id = ?1",
		"DELETE FROM attachments WHERE version_id = ?1",
	};
	int rc = 0;
	for (size_t i = 0; !rc && i < sizeof clear / sizeof clear[0]; i++)
		rc = mti_cat_exec_id(c, clear[i], vid, "replacing a version", err);
	return rc;
}

static int cat_put_attrs(mt_catalog *c, int64_t vid, const mt_reader *r, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "INSERT INTO attrs VALUES(?,?,?,?,?,?)", &st, err);
	for (size_t i = 0; !rc && i < mt_reader_nattrs(r); i++) {
		const mt_attr *a = mt_reader_attr(r, i);
		char shape[MT_MAX_RANK * 24 + 8];
		sqlite3_bind_int64(st, 1, vid);
		sqlite3_bind_int64(st, 2, (int64_t)i);
		sqlite3_bind_text(st, 3, a->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, mt_dtype_name(a->dtype), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, cat_shape(a, shape, sizeof shape), -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 6, a->ragged);
		rc = mti_cat_step_done(c, st, "recording an attribute", err);
	}
	sqlite3_finalize(st);
	return rc;
}

/* The recipe and its arguments as the command line gave them: KEY=VALUE ... */
static int cat_put_recipe(mt_catalog *c, int64_t vid, const mt_version_info *v, mt_error *err)
{
	if (!v->recipe[0])
		return 0;
	size_t len = 1;
	for (size_t i = 0; i < v->nrecipe_args; i++)
		len += strlen(v->recipe_args[i]) + 1;
	char *args = malloc(len), *p = args;
	if (!args)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	*p = '\0';
	for (size_t i = 0; i < v->nrecipe_args; i++)
		p += sprintf(p, "%s%s", i ? " " : "", v->recipe_args[i]);
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "INSERT INTO recipes VALUES(?1, ?2, ?3)", &st, err);
	if (!rc) {
		sqlite3_bind_int64(st, 1, vid);
		sqlite3_bind_text(st, 2, v->recipe, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, args, -1, SQLITE_STATIC);
		rc = mti_cat_step_done(c, st, "recording a recipe", err);
		sqlite3_finalize(st);
	}
	free(args);
	return rc;
}

static int cat_put_sources(mt_catalog *c, int64_t vid, const mt_reader *r, mt_error *err)
{
	size_t n = mt_reader_nsources(r);
	if (!n)
		return 0;
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "INSERT INTO sources VALUES(?1, ?2, ?3, ?4, ?5)", &st, err);
	for (size_t i = 0; !rc && i < n; i++) {
		const mt_source *src = mt_reader_source(r, i);
		sqlite3_bind_int64(st, 1, vid);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
		sqlite3_bind_text(st, 3, src->dataset, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, src->version, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, src->store ? src->store : "", -1, SQLITE_STATIC);
		rc = mti_cat_step_done(c, st, "recording a source", err);
	}
	sqlite3_finalize(st);
	return rc;
}

static int cat_put_attachments(mt_catalog *c, int64_t vid, const mt_reader *r, mt_error *err)
{
	size_t n = mt_reader_nattachments(r);
	if (!n)
		return 0;
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "INSERT INTO attachments VALUES(?1, ?2, ?3, ?4, ?5)", &st, err);
	for (size_t i = 0; !rc && i < n; i++) {
		mt_attachment_info a;
		if (mt_reader_attachment_info(r, i, &a))
			break;
		sqlite3_bind_int64(st, 1, vid);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
		sqlite3_bind_text(st, 3, a.name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)a.bytes);
		sqlite3_bind_text(st, 5, a.sha256, -1, SQLITE_STATIC);
		rc = mti_cat_step_done(c, st, "recording an attachment", err);
	}
	sqlite3_finalize(st);
	return rc;
}

static int cat_put_tags(mt_catalog *c, int64_t vid, const mt_version_info *v, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "INSERT OR IGNORE INTO tags VALUES(?,?)", &st, err);
	for (size_t i = 0; !rc && i < v->ntags; i++) {
		sqlite3_bind_int64(st, 1, vid);
		sqlite3_bind_text(st, 2, v->tags[i], -1, SQLITE_STATIC);
		rc = mti_cat_step_done(c, st, "recording a tag", err);
	}
	sqlite3_finalize(st);
	return rc;
}

/* The running digest of a shard list, one step per shard: two 64-bit
 * FNV-style hashes of the previous digest and the shard's sha256, bytes and
 * rows (first_row follows from the rows before it).  Lists are compared by
 * the digest at one row, not row by row: appending to a chain stays O(1) in
 * the length of the chain. */
#define CHAIN_BYTES 16
static void chain_add(uint64_t h[2], const mt_shard_info *sh)
{
	unsigned char buf[64 + 16];
	memcpy(buf, sh->sha256, 64);
	for (int i = 0; i < 8; i++) {
		buf[64 + i] = (unsigned char)(sh->bytes >> (8 * i));
		buf[72 + i] = (unsigned char)(sh->rows >> (8 * i));
	}
	for (size_t i = 0; i < sizeof buf; i++) {
		h[0] = (h[0] ^ buf[i]) * 0x100000001b3ULL;
		h[1] = (h[1] ^ buf[i]) * 0x9e3779b97f4a7c15ULL;
		h[1] ^= h[1] >> 29;
	}
}

/* A digest as stored (CHAIN_BYTES, each half little-endian), and back. */
static void chain_bytes(const uint64_t h[2], unsigned char *out)
{
	for (int i = 0; i < 8; i++) {
		out[i] = (unsigned char)(h[0] >> (8 * i));
		out[8 + i] = (unsigned char)(h[1] >> (8 * i));
	}
}

static void chain_from_bytes(const unsigned char *b, uint64_t h[2])
{
	h[0] = h[1] = 0;
	for (int i = 7; i >= 0; i--) {
		h[0] = h[0] << 8 | b[i];
		h[1] = h[1] << 8 | b[8 + i];
	}
}

/* The digests of r's shard list after each shard (CHAIN_BYTES each), from
 * shard `from` on, h being the digest after the shards before it: the
 * digests before it are left unset. */
static int chain_digests(const mt_reader *r, uint64_t from, uint64_t h[2], unsigned char **out,
			 mt_error *err)
{
	uint64_t n = mt_reader_info(r)->nshards;
	if (!(*out = malloc(n ? n * CHAIN_BYTES : 1)))
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	if (from > 0 && from <= n)
		chain_bytes(h, *out + (from - 1) * CHAIN_BYTES);
	for (uint64_t i = from; i < n; i++) {
		mt_shard_info sh;
		/* Of a lazy reader, this loads (and checks) the fragment holding it. */
		int rc = mt_reader_shard_err(r, (size_t)i, &sh, err);
		if (rc) {
			free(*out);
			*out = NULL;
			return rc;
		}
		chain_add(h, &sh);
		chain_bytes(h, *out + i * CHAIN_BYTES);
	}
	return 0;
}

/* Run sql with ?1 = a, ?2 = b and take its first column as an integer
 * (*out = -1 when there is no row or it is NULL); with blob, compare the
 * column with it instead (*out = 1 when equal). */
static int cat_query_int(mt_catalog *c, const char *sql, int64_t a, int64_t b,
			 const unsigned char *blob, int64_t *out, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, sql, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	*out = -1;
	int r = sqlite3_step(st);
	if (r == SQLITE_ROW && blob)
		*out = sqlite3_column_bytes(st, 0) == CHAIN_BYTES &&
		       !memcmp(sqlite3_column_blob(st, 0), blob, CHAIN_BYTES);
	else if (r == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		*out = sqlite3_column_int64(st, 0);
	else if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = mti_cat_sqlerr(c, err, "reading shard lists");
	sqlite3_finalize(st);
	return rc;
}

/* What a version shares with its parent, as the two roots say
 * (cat_read_shards): its first n shards are those of fragments the
 * parent's root names alike at the same places, so they are the parent's
 * first n shards.  parent: the parent's manifest as listed when its root
 * was read; the catalog's rows of the parent stand in for those shards only
 * when they were read from that manifest (cat_shared_prefix). */
struct vshare {
	uint64_t n;
	uint64_t parent_nshards;
	int64_t parent_size, parent_mtime;
	/* The fragments read (from the first not shared on: sound when read)
	 * and those that could not be, each missing or damaged with why. */
	size_t from;
	struct fbad {
		size_t idx;
		int missing;
		char note[240];
	} *bad;
	size_t nbad;
};

static void vshare_free(struct vshare *sh)
{
	free(sh->bad);
	sh->bad = NULL;
	sh->nbad = 0;
}

static int count_listed(void *ud, const mt_object_info *o)
{
	(*(size_t *)ud)++;
	return 0;
}

/* Fragment i of r could not be loaded (e): noted, missing when its object
 * is not listed, else damaged, so the version is still recorded. */
static int vshare_bad(struct vshare *sh, mt_store *s, const char *dataset,
		      const mt_fragment_info *f, size_t i, const mt_error *e)
{
	struct fbad *b = realloc(sh->bad, (sh->nbad + 1) * sizeof *b);
	if (!b)
		return MT_ENOMEM;
	sh->bad = b;
	b = &sh->bad[sh->nbad++];
	b->idx = i;
	snprintf(b->note, sizeof b->note, "%.239s", e->message);
	char *key = cat_printf("datasets/%s/fragments/%s.json", dataset, f->sha256);
	size_t n = 0;
	mt_error le = {0};
	b->missing = key && !mt_store_list(s, key, count_listed, &n, &le) && n == 0;
	free(key);
	return 0;
}

/* Read what version r's shard rows need, before the catalog's lock is
 * taken.  Of a format-2 version whose parent is listed (parent), the
 * parent's root, to find the fragments the two share from the start; then
 * every fragment after those, each checked as it is loaded.  The shared
 * ones are not read: a child's fragment that differs from its parent's is
 * always read, and one that is the same object holds the same entries. */
static int cat_read_shards(mt_store *s, const char *dataset, const mt_reader *r,
			   const struct listed *parent, struct vshare *sh, mt_error *err)
{
	const mt_version_info *v = mt_reader_info(r);
	size_t nf = mt_reader_nfragments(r), k = 0;
	mt_fragment_info f;
	*sh = (struct vshare){0};
	if (nf && parent && strcmp(v->parent, v->version)) {
		mt_reader *p = NULL;
		mt_error e = {0};
		/* A parent whose root cannot be read shares nothing. */
		if (!mt_reader_open_lazy(s, dataset, v->parent, &p, &e)) {
			while (k < nf && mt_reader_fragment_same(r, k, p, k))
				k++;
			sh->parent_nshards = mt_reader_info(p)->nshards;
		}
		mt_reader_close(p);
	}
	if (k && !mt_reader_fragment(r, k - 1, &f)) {
		sh->n = f.first_shard + f.nshards;
		sh->parent_size = (int64_t)parent->size;
		sh->parent_mtime = parent->mtime;
	}
	sh->from = k;
	/* A fragment that cannot be read leaves the version listed, as damaged
	 * (cat_put_version), not dropped from the catalog. */
	for (size_t i = k; i < nf; i++) {
		mt_shard_info si;
		mt_error e = {0};
		int rc = mt_reader_fragment(r, i, &f);
		if (rc)
			return mt_error_set(err, rc, "%s@%s: no fragment %zu", dataset, v->version, i);
		if (f.nshards)
			rc = mt_reader_shard_err(r, (size_t)f.first_shard, &si, &e);
		if ((rc == MT_ECORRUPT || rc == MT_EFORMAT || rc == MT_ENOTFOUND) &&
		    vshare_bad(sh, s, dataset, &f, i, &e))
			return mt_error_set(err, MT_ENOMEM, "out of memory");
		if (rc && rc != MT_ECORRUPT && rc != MT_EFORMAT && rc != MT_ENOTFOUND) {
			*err = e;
			return rc;
		}
	}
	return 0;
}

/* The parent's shard list (*plist) and the digest h after the sh->n shards
 * the version shares with it, when the catalog's row of the parent was read
 * from the manifest whose root was compared (the same listed size and
 * time, the same shards); else *n = 0, and every shard is read. */
static int cat_shared_prefix(mt_catalog *c, int64_t ds, const mt_version_info *v,
			     const struct vshare *sh, int64_t *plist, uint64_t *n, uint64_t h[2],
			     mt_error *err)
{
	*n = 0;
	*plist = 0;
	if (!sh || !sh->n)
		return 0;
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "SELECT v.shard_list, s.chain FROM versions v JOIN shards s"
				 " ON s.list_id = v.shard_list AND s.idx = ?3 WHERE v.dataset_id = ?1"
				 " AND v.name = ?2 AND v.shard_list <> 0 AND v.nshards = ?4 AND"
				 " v.manifest_size = ?5 AND v.manifest_mtime = ?6", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, ds);
	sqlite3_bind_text(st, 2, v->parent, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)sh->n - 1);
	sqlite3_bind_int64(st, 4, (int64_t)sh->parent_nshards);
	sqlite3_bind_int64(st, 5, sh->parent_size);
	sqlite3_bind_int64(st, 6, sh->parent_mtime);
	int r = sqlite3_step(st);
	if (r == SQLITE_ROW && sqlite3_column_bytes(st, 1) == CHAIN_BYTES) {
		chain_from_bytes(sqlite3_column_blob(st, 1), h);
		*plist = sqlite3_column_int64(st, 0);
		*n = sh->n;
	} else if (r != SQLITE_ROW && r != SQLITE_DONE) {
		rc = mti_cat_sqlerr(c, err, "reading a parent's shard list");
	}
	sqlite3_finalize(st);
	return rc;
}

/* The list version v (n shards, digests d) extends: its parent's, when its
 * shards and that list agree up to the end of either (the prefix a format
 * append writes; not every manifest is one).  *list = 0: none, v gets a new
 * list.  *from: the first of v's shards the list does not hold yet. */
static int cat_chain_list(mt_catalog *c, int64_t ds, const mt_version_info *v,
			  const unsigned char *d, int64_t n, int64_t *list, int64_t *from,
			  mt_error *err)
{
	*list = 0;
	*from = 0;
	if (!v->parent[0] || !strcmp(v->parent, v->version))
		return 0;
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "SELECT shard_list FROM versions WHERE dataset_id = ?1 AND"
				 " name = ?2 AND shard_list <> 0", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, ds);
	sqlite3_bind_text(st, 2, v->parent, -1, SQLITE_STATIC);
	int64_t cand = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	int64_t len, same = 1;
	if (!cand || (rc = cat_query_int(c, "SELECT max(idx) + 1 FROM shards WHERE list_id = ?1",
					 cand, 0, NULL, &len, err)))
		return rc;
	if (len < 0)
		len = 0;
	int64_t m = n < len ? n : len;
	if (m > 0 && (rc = cat_query_int(c, "SELECT chain FROM shards WHERE list_id = ?1 AND"
					 " idx = ?2", cand, m - 1, d + (m - 1) * CHAIN_BYTES, &same,
					 err)))
		return rc;
	if (same == 1) {
		*list = cand;
		*from = len;
	}
	return 0;
}

/* A shard checked before (under this version or another) keeps its latest
 * results: the row of sha256's newest check, or empty columns.  SQLite takes
 * bare columns from max()'s row. */
#define CAT_LAST_CHECK                                                                     \
	"SELECT coalesce(verified, ''), coalesce(verified_at, ''), coalesce(health, ''),"  \
	" coalesce(health_note, ''), coalesce(health_at, ''), max(max(verified_at,"        \
	" health_at)) FROM shards WHERE sha256 = ?1 AND (verified_at <> '' OR"             \
	" health_at <> '')"

/* A version's shard rows are written SHARD_BATCH to an INSERT: a statement
 * of one row cost about 10 us a row in opening and closing its cursors, its
 * statement journal (a page copied per index touched) and the IN list of
 * the partial index shards_bad, 30 s of a first sync of a million shards.
 * 12 parameters a row, well under SQLite's oldest limit of 999. */
#define SHARD_BATCH 64
#define SHARD_COLS 12

/* The rows of one shard list being written, a run of consecutive rows at a
 * time (shard_put_run): a run's rows are bound into `full` SHARD_BATCH at a
 * time and its last, shorter batch into `part`, each stepped once whole.
 * look: NULL when no shard row in the catalog was ever checked (a fresh
 * catalog), so none has a last check to take. */
struct shard_put {
	mt_catalog *c;
	sqlite3_stmt *look, *full, *part, *cur;
	int64_t list, left;
	int n, want;
};

/* An INSERT of rows shard rows, into *st. */
static int shard_put_prepare(mt_catalog *c, int rows, sqlite3_stmt **st, mt_error *err)
{
	static const char head[] = "INSERT INTO shards(list_id, idx, sha256, bytes, rows, first_row,"
				   " chain, verified, verified_at, health, health_note, health_at)"
				   " VALUES";
	static const char row[] = "(?,?,?,?,?,?,?,?,?,?,?,?),";
	char *sql = malloc(sizeof head + (size_t)rows * (sizeof row - 1));
	if (!sql)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	char *e = stpcpy(sql, head);
	for (int i = 0; i < rows; i++)
		e = stpcpy(e, row);
	e[-1] = '\0';
	int rc = mti_cat_prepare(c, sql, st, err);
	free(sql);
	return rc;
}

/* Start p on list, with the last check's query unless no shard row was
 * ever checked: a catalog's rows are checked by verify and repair, not by
 * a sync, so it stays so while the version's rows are written. */
static int shard_put_open(mt_catalog *c, int64_t list, struct shard_put *p, mt_error *err)
{
	*p = (struct shard_put){.c = c, .list = list};
	int64_t any;
	int rc = cat_query_int(c, "SELECT 1 FROM shards WHERE verified_at <> '' OR health_at <> ''"
			       " LIMIT 1", 0, 0, NULL, &any, err);
	if (!rc && any == 1)
		rc = mti_cat_prepare(c, CAT_LAST_CHECK, &p->look, err);
	if (!rc)
		rc = shard_put_prepare(c, SHARD_BATCH, &p->full, err);
	return rc;
}

static void shard_put_close(struct shard_put *p)
{
	sqlite3_finalize(p->look);
	sqlite3_finalize(p->full);
	sqlite3_finalize(p->part);
	*p = (struct shard_put){0};
}

/* The next rows rows of the list come one by one (shard_put_row). */
static void shard_put_run(struct shard_put *p, int64_t rows)
{
	p->left = rows;
	p->cur = NULL;
}

/* The shard's last check (p->look), as columns ?b+7..?b+11 of p->cur: the
 * row of sha256's newest check, or empty columns. */
static int shard_put_check(struct shard_put *p, int b, const char *sha256, mt_error *err)
{
	if (!p->look) {
		for (int k = 0; k < 5; k++)
			sqlite3_bind_text(p->cur, b + 8 + k, "", 0, SQLITE_STATIC);
		return 0;
	}
	sqlite3_bind_text(p->look, 1, sha256, -1, SQLITE_STATIC);
	int r = sqlite3_step(p->look);
	/* sqlite3_bind_value binds a copy: the row may go with the reset. */
	for (int k = 0; r == SQLITE_ROW && k < 5; k++)
		sqlite3_bind_value(p->cur, b + 8 + k, sqlite3_column_value(p->look, k));
	sqlite3_reset(p->look);
	return r == SQLITE_ROW ? 0 : mti_cat_sqlerr(p->c, err, "reading a shard's last check");
}

/* Row i of the list: shard sh with its chain digest and its last check's
 * columns, written with the batch it completes.  A plain INSERT of rows,
 * not INSERT ... SELECT: SQLite gives a statement that may write many rows
 * a statement journal, and one per shard made a sync of 100k shards write
 * 1.4 GB of journal.  The values are copied (SQLITE_TRANSIENT): a row read
 * from the catalog goes at its statement's next step. */
static int shard_put_row(struct shard_put *p, int64_t i, const mt_shard_info *sh,
			 const unsigned char *chain, mt_error *err)
{
	int rc = 0;
	if (!p->cur) {
		p->want = p->left < SHARD_BATCH ? (int)p->left : SHARD_BATCH;
		p->n = 0;
		if (p->want == SHARD_BATCH) {
			p->cur = p->full;
		} else {
			sqlite3_finalize(p->part);
			p->part = NULL;
			if ((rc = shard_put_prepare(p->c, p->want, &p->part, err)))
				return rc;
			p->cur = p->part;
		}
	}
	int b = p->n * SHARD_COLS;
	sqlite3_bind_int64(p->cur, b + 1, p->list);
	sqlite3_bind_int64(p->cur, b + 2, i);
	sqlite3_bind_text(p->cur, b + 3, sh->sha256, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(p->cur, b + 4, (int64_t)sh->bytes);
	sqlite3_bind_int64(p->cur, b + 5, (int64_t)sh->rows);
	sqlite3_bind_int64(p->cur, b + 6, (int64_t)sh->first_row);
	sqlite3_bind_blob(p->cur, b + 7, chain, CHAIN_BYTES, SQLITE_TRANSIENT);
	if ((rc = shard_put_check(p, b, sh->sha256, err)))
		return rc;
	p->left--;
	if (++p->n == p->want) {
		rc = mti_cat_step_done(p->c, p->cur, "recording a shard", err);
		p->cur = NULL;
	}
	return rc;
}

/* Rows [from, to) of list src as the same rows of p's list, each with its
 * shard's last check (shard_put_row): the shards a version shares with its
 * parent, from the parent's rows rather than its fragments. */
static int cat_copy_rows(struct shard_put *p, int64_t src, int64_t from, int64_t to,
			 mt_error *err)
{
	mt_catalog *c = p->c;
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "SELECT idx, sha256, bytes, rows, first_row, chain FROM shards"
				 " WHERE list_id = ?1 AND idx >= ?2 AND idx < ?3 ORDER BY idx", &st,
				 err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, src);
	sqlite3_bind_int64(st, 2, from);
	sqlite3_bind_int64(st, 3, to);
	shard_put_run(p, to - from);
	int64_t i = from;
	int r;
	while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW && sqlite3_column_int64(st, 0) == i &&
	       sqlite3_column_bytes(st, 5) == CHAIN_BYTES) {
		mt_shard_info sh = {.sha256 = (const char *)sqlite3_column_text(st, 1),
				    .bytes = (uint64_t)sqlite3_column_int64(st, 2),
				    .rows = (uint64_t)sqlite3_column_int64(st, 3),
				    .first_row = (uint64_t)sqlite3_column_int64(st, 4)};
		rc = shard_put_row(p, i++, &sh, sqlite3_column_blob(st, 5), err);
	}
	if (!rc && r != SQLITE_ROW && r != SQLITE_DONE)
		rc = mti_cat_sqlerr(c, err, "reading a parent's shards");
	else if (!rc && i != to)
		rc = mt_error_set(err, MT_EIO, "catalog %s: shard list %lld lacks row %lld",
				  c->path, (long long)src, (long long)i);
	sqlite3_finalize(st);
	return rc;
}

/* The index of shard rows by object (shards_sha) takes each new row at a
 * random place: of a first sync of a million distinct shards, 60% of the
 * time went to finding and making room for them there, and with pages
 * beyond the cache, spilling and reading them back.  A version bringing
 * more rows than the catalog holds (SHARD_REINDEX_MIN at least) writes them
 * without it, and the index is made again after them in one sort, inside
 * the same transaction: a reader sees it whole before and after, and a
 * sync that stops between rolls the drop back.  *sql: the index's own
 * CREATE statement (NULL when not dropped). */
#define SHARD_REINDEX_MIN 10000

static int shard_index_drop(mt_catalog *c, int64_t rows, char **sql, mt_error *err)
{
	*sql = NULL;
	int64_t have;
	int rc = rows < SHARD_REINDEX_MIN ? 0
		 : cat_query_int(c, "SELECT max(rowid) FROM shards", 0, 0, NULL, &have, err);
	if (rc || rows < SHARD_REINDEX_MIN || have >= rows)
		return rc;
	sqlite3_stmt *st;
	if ((rc = mti_cat_prepare(c, "SELECT sql FROM sqlite_master WHERE type = 'index' AND"
				  " name = 'shards_sha'", &st, err)))
		return rc;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) &&
	    !(*sql = strdup((const char *)sqlite3_column_text(st, 0))))
		rc = mt_error_set(err, MT_ENOMEM, "out of memory");
	sqlite3_finalize(st);
	if (!rc && *sql && (rc = mti_cat_exec(c, "DROP INDEX shards_sha", "recording shards", err))) {
		free(*sql);
		*sql = NULL;
	}
	return rc;
}

/* Record r's shard list for version vid: extend its parent's list when that
 * is a prefix of it (cat_chain_list), else a list of its own.  The shards
 * it shares with its parent (sh, cat_shared_prefix) are not read: their
 * digests and rows are the parent's. */
static int cat_put_shards(mt_catalog *c, int64_t ds, int64_t vid, const mt_reader *r,
			  const struct vshare *sh, mt_error *err)
{
	int64_t n = (int64_t)mt_reader_info(r)->nshards, list, from, plist;
	uint64_t p, h[2] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
	unsigned char *d = NULL;
	int rc = cat_shared_prefix(c, ds, mt_reader_info(r), sh, &plist, &p, h, err);
	if (!rc)
		rc = chain_digests(r, p, h, &d, err);
	if (rc)
		return rc;
	if (!(rc = cat_chain_list(c, ds, mt_reader_info(r), d, n, &list, &from, err)) && !list &&
	    !(rc = mti_cat_exec_id(c, "INSERT INTO shard_lists(dataset_id) VALUES(?1)", ds,
				   "recording a shard list", err)))
		list = sqlite3_last_insert_rowid(c->db);
	struct shard_put put = {0};
	char *reindex = NULL;
	if (!rc)
		rc = shard_index_drop(c, n - from, &reindex, err);
	if (!rc)
		rc = shard_put_open(c, list, &put, err);
	if (!rc && from < (int64_t)p)
		rc = cat_copy_rows(&put, plist, from, (int64_t)p, err);
	int64_t i = from > (int64_t)p ? from : (int64_t)p;
	shard_put_run(&put, n > i ? n - i : 0);
	for (; !rc && i < n; i++) {
		mt_shard_info si;
		if ((rc = mt_reader_shard_err(r, (size_t)i, &si, err)) != 0)
			break;
		rc = shard_put_row(&put, i, &si, d + i * CHAIN_BYTES, err);
	}
	shard_put_close(&put);
	free(d);
	if (!rc && reindex)
		rc = mti_cat_exec(c, reindex, "indexing shards", err);
	free(reindex);
	sqlite3_stmt *st;
	if (!rc) {
		if (!(rc = mti_cat_prepare(c, "UPDATE versions SET shard_list = ?2 WHERE id = ?1", &st,
					   err))) {
			sqlite3_bind_int64(st, 1, vid);
			sqlite3_bind_int64(st, 2, list);
			rc = mti_cat_step_done(c, st, "recording a shard list", err);
			sqlite3_finalize(st);
		}
	}
	return rc;
}

/* A fragment's row: the sync's finding (?9..?11), else the health last
 * recorded of its object in the dataset (p).  A sync that finds it missing
 * (or damaged) keeps a check's verdict that found it so too: that says
 * more, whether a repair can rebuild it and from what.  A version with an
 * unreadable fragment is read again at every sync (cat_put_no_shards), and
 * the browser syncs every few seconds: the verdict of its v or R was gone
 * before it could be read. */
#define FRAGMENT_KEEP								"(?9 <> 'sound' AND p.health IN ('repairable', 'unrepairable') AND"		" (p.health_note LIKE 'missing%') = (?9 = 'missing'))"
#define FRAGMENT_PUT									"INSERT OR REPLACE INTO fragments(version_id, idx, sha256, bytes, first_row, rows,"		" first_shard, nshards, health, health_note, health_at) SELECT ?1, ?2, ?3, ?4, ?5,"		" ?6, ?7, ?8, CASE WHEN " FRAGMENT_KEEP " THEN p.health ELSE coalesce(?9, p.health,"		" '') END, CASE WHEN " FRAGMENT_KEEP " THEN p.health_note ELSE coalesce(?10,"			" p.health_note, '') END, CASE WHEN " FRAGMENT_KEEP " THEN p.health_at ELSE"			" coalesce(?11, p.health_at, '') END FROM (SELECT 1) LEFT JOIN (SELECT f.health,"		" f.health_note, f.health_at FROM fragments f JOIN versions o ON o.id = f.version_id"		" WHERE f.sha256 = ?3 AND o.dataset_id = ?12 AND f.health_at <> '' ORDER BY"			" f.health_at DESC LIMIT 1) p"

/* A format-2 version's fragments as its root describes them (none for
 * format 1).  One this sync read (sh->from on) is sound, or missing or
 * damaged (sh->bad); one shared with the parent and not read keeps the
 * health last recorded of its object in the dataset (its own row's
 * included: INSERT OR REPLACE reads before it writes). */
static int cat_put_fragments(mt_catalog *c, int64_t ds, int64_t vid, const mt_reader *r,
			     const struct vshare *sh, mt_error *err)
{
	size_t nf = mt_reader_nfragments(r), b = 0;
	sqlite3_stmt *st = NULL;
	int rc = mti_cat_prepare(c, FRAGMENT_PUT, &st, err);
	char now[32];
	mti_cat_now(now, sizeof now);
	for (size_t i = 0; !rc && i < nf; i++) {
		mt_fragment_info f;
		if ((rc = mt_reader_fragment(r, i, &f)) != 0) {
			rc = mt_error_set(err, rc, "catalog: no fragment %zu", i);
			break;
		}
		while (sh && b < sh->nbad && sh->bad[b].idx < i)
			b++;
		const struct fbad *bad = sh && b < sh->nbad && sh->bad[b].idx == i ? &sh->bad[b] : NULL;
		int read = sh && i >= sh->from;
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		sqlite3_bind_int64(st, 1, vid);
		sqlite3_bind_int64(st, 2, (int64_t)i);
		sqlite3_bind_text(st, 3, f.sha256, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, (int64_t)f.bytes);
		sqlite3_bind_int64(st, 5, (int64_t)f.first_row);
		sqlite3_bind_int64(st, 6, (int64_t)f.rows);
		sqlite3_bind_int64(st, 7, (int64_t)f.first_shard);
		sqlite3_bind_int64(st, 8, (int64_t)f.nshards);
		if (read) {
			sqlite3_bind_text(st, 9, bad ? (bad->missing ? "missing" : "damaged") : "sound",
					  -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 10, bad ? bad->note : "read by a sync", -1,
					  SQLITE_STATIC);
			sqlite3_bind_text(st, 11, now, -1, SQLITE_STATIC);
		}
		sqlite3_bind_int64(st, 12, ds);
		rc = mti_cat_step_done(c, st, "recording a fragment", err);
	}
	sqlite3_finalize(st);
	if (!rc && !(rc = mti_cat_prepare(c, "DELETE FROM fragments WHERE version_id = ?1 AND"
					  " idx >= ?2", &st, err))) {
		sqlite3_bind_int64(st, 1, vid);
		sqlite3_bind_int64(st, 2, (int64_t)nf);
		rc = mti_cat_step_done(c, st, "recording a fragment", err);
		sqlite3_finalize(st);
	}
	return rc;
}

/* A version with a fragment that could not be read: no shard rows (its
 * fragments say which rows are missing), and its manifest read again at
 * the next sync, as the root naming the fragment does not change when a
 * repair writes the fragment back. */
static int cat_put_no_shards(mt_catalog *c, int64_t vid, mt_error *err)
{
	return mti_cat_exec_id(c, "UPDATE versions SET shard_list = 0, manifest_mtime = -1"
			       " WHERE id = ?1", vid, "recording a damaged version", err);
}

/* Replace a version of dataset ds with what reader r read of it; one
 * transaction. */
static int cat_put_version(mt_catalog *c, int64_t ds, const mt_reader *r,
			   const struct listed *man, const struct listed *meta,
			   const struct prot *prot, const struct vshare *sh, mt_error *err)
{
	const mt_version_info *v = mt_reader_info(r);
	int top;
	int rc = mti_cat_begin(c, "put_version", &top, err);
	if (rc)
		return rc;
	int64_t vid = 0;
	if (!(rc = cat_put_row(c, ds, v, man, meta, &vid, err)) &&
	    !(rc = cat_put_protection(c, vid, prot, err)) &&
	    !(rc = cat_clear_parts(c, vid, err)) && !(rc = cat_put_attrs(c, vid, r, err)) &&
	    !(rc = cat_put_recipe(c, vid, v, err)) && !(rc = cat_put_tags(c, vid, v, err)) &&
	    !(rc = sh && sh->nbad ? cat_put_no_shards(c, vid, err)
				  : cat_put_shards(c, ds, vid, r, sh, err)) &&
	    !(rc = cat_put_fragments(c, ds, vid, r, sh, err)) &&
	    !(rc = cat_put_sources(c, vid, r, err)) &&
	    !(rc = cat_put_attachments(c, vid, r, err)))
		rc = mti_cat_exec_id(c, SEARCH_INSERT " WHERE v.id = ?1", vid, "indexing a version",
				     err);
	return mti_cat_end(c, "put_version", top, rc, err);
}

/* What the catalog has of a dataset's versions, to compare with a listing. */
struct known {
	char *name;
	int64_t man_size, man_mtime, meta_size, meta_mtime, prot_size, prot_mtime;
};

static void known_free(struct known *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(k[i].name);
	free(k);
}

static int cat_known(mt_catalog *c, int64_t ds, struct known **out, size_t *n, mt_error *err)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "SELECT name, manifest_size, manifest_mtime, meta_size, meta_mtime,"
				 " protect_size, protect_mtime FROM versions WHERE dataset_id = ?1 ORDER BY name",
				 &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, ds);
	size_t cap = 0;
	int r;
	while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			struct known *k = realloc(*out, cap * sizeof *k);
			if (!k) {
				rc = mt_error_set(err, MT_ENOMEM, "out of memory");
				break;
			}
			*out = k;
		}
		struct known *k = &(*out)[*n];
		if (!(k->name = strdup((const char *)sqlite3_column_text(st, 0)))) {
			rc = mt_error_set(err, MT_ENOMEM, "out of memory");
			break;
		}
		/* Columns 1-6, in the order of the query. */
		int64_t *stamp[] = { &k->man_size,  &k->man_mtime,  &k->meta_size,
				     &k->meta_mtime, &k->prot_size, &k->prot_mtime };
		for (int i = 0; i < 6; i++)
			*stamp[i] = sqlite3_column_int64(st, i + 1);
		(*n)++;
	}
	if (!rc && r != SQLITE_DONE)
		rc = mti_cat_sqlerr(c, err, "reading versions");
	sqlite3_finalize(st);
	if (rc) {
		known_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static int cat_unchanged(const struct known *k, size_t nk, const struct listed *man,
			 const struct listed *meta, const struct listed *prot)
{
	/* k is in name order (cat_known): a binary search, not a scan per version. */
	size_t lo = 0, hi = nk;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(k[mid].name, man->name);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == nk || strcmp(k[lo].name, man->name))
		return 0;
	const struct known *e = &k[lo];
	return e->man_size == (int64_t)man->size && e->man_mtime == man->mtime &&
	       e->meta_size == (meta ? (int64_t)meta->size : -1) &&
	       e->meta_mtime == (meta ? meta->mtime : -1) &&
	       e->prot_size == (prot ? (int64_t)prot->size : -1) &&
	       e->prot_mtime == (prot ? prot->mtime : -1);
}

/* One dataset being synced: what the store lists and the catalog knows. */
struct ds_sync {
	mt_catalog *c;
	mt_store *s;
	const char *dataset;
	int flags;
	mt_catalog_sync_stats *stats;
	struct listing man, meta, prot; /* manifests, metadata objects, protection records */
	struct listing lost;      /* versions read from their records, their manifest lost */
	struct listing removed;   /* versions removed (their tombstones) */
	struct known *known;      /* the versions the catalog had */
	size_t nknown;
	int64_t ds;               /* its row; 0 when the catalog has none */
	mt_error bad;             /* the first damaged manifest, reported at the end */
	uint64_t left, left_bytes; /* no version: the shard objects left for gc */
};

static int count_object(void *ud, const mt_object_info *o)
{
	struct ds_sync *d = ud;
	d->left++;
	d->left_bytes += o->size;
	return 0;
}

/* A dataset with no version left is still shown while shards of it remain
 * (gc collects them); count them. */
static int ds_count_leftovers(struct ds_sync *d, mt_error *err)
{
	char *prefix = cat_printf("datasets/%s/shards/", d->dataset);
	if (!prefix)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	int rc = mt_store_list(d->s, prefix, count_object, d, err);
	free(prefix);
	return rc;
}

/* List the dataset's objects (the store is read without the lock), then
 * find its row and known versions (a row is made only when it has some). */
static int ds_sync_start(struct ds_sync *d, int64_t bucket, mt_error *err)
{
	d->man.removed = &d->removed;
	int rc = cat_list_objects(d->s, d->dataset, "versions", &d->man, err);
	if (!rc)
		rc = cat_list_objects(d->s, d->dataset, "meta", &d->meta, err);
	if (!rc)
		rc = cat_list_objects(d->s, d->dataset, "protect", &d->prot, err);
	if (!rc && !d->man.n)
		rc = ds_count_leftovers(d, err);
	pthread_mutex_lock(&d->c->lock);
	if (!rc)
		rc = cat_dataset_id(d->c, bucket, d->dataset,
				    d->man.n > 0 || d->prot.n > 0 || d->left > 0, &d->ds, err);
	if (!rc && d->ds)
		rc = cat_known(d->c, d->ds, &d->known, &d->nknown, err);
	pthread_mutex_unlock(&d->c->lock);
	return rc;
}

/* How version `name` is protected: a record that cannot be read is k = -1
 * (the version is still listed; repair restores the record). */
static void ds_sync_protection(struct ds_sync *d, const char *name, struct prot *p)
{
	mt_protection info;
	mt_error e = { 0 };
	if (mt_protect_info(d->s, d->dataset, name, &info, &e)) {
		p->k = -1;
		return;
	}
	p->k = info.k;
	p->m = info.m;
	p->overhead = info.data_bytes ? (double)(info.parity_bytes + info.record_bytes) /
						 (double)info.data_bytes
				      : 0;
}

/* Manifests to read are read this many at a time, on up to SYNC_THREADS
 * threads (on S3 each is a round trip or two), and each batch is written in
 * one transaction: a first sync of 10,000 versions is neither 10,000
 * sequential GETs nor 10,000 commits. */
#define SYNC_BATCH 64
#define SYNC_THREADS 8

/* One version of a batch: what was listed, then what reading it gave. */
struct vread {
	const struct listed *lm, *lmeta; /* lm: the manifest, or the record of a lost one */
	int lost;                        /* read from its protection record */
	struct prot prot;
	mt_reader *r;
	struct vshare share;             /* what it shares with its parent */
	int rc;
	mt_error err;
};

struct ds_batch {
	struct ds_sync *d;
	struct vread v[SYNC_BATCH];
	size_t n;
};

/* fn(ud, i) for i in [0, n) taken in turn by the threads of mti_cat_parallel. */
struct cat_jobs {
	void (*fn)(void *ud, size_t i);
	void *ud;
	size_t n, next; /* the next to run, under lock */
	pthread_mutex_t lock;
};

static void *cat_job_worker(void *arg)
{
	struct cat_jobs *j = arg;
	for (;;) {
		pthread_mutex_lock(&j->lock);
		size_t i = j->next++;
		pthread_mutex_unlock(&j->lock);
		if (i >= j->n)
			return NULL;
		j->fn(j->ud, i);
	}
}

void mti_cat_parallel(size_t n, size_t threads, void (*fn)(void *ud, size_t i), void *ud)
{
	pthread_t t[SYNC_THREADS];
	struct cat_jobs j = {fn, ud, n, 0, PTHREAD_MUTEX_INITIALIZER};
	size_t nt = n < threads ? n : threads, started = 0;
	nt = nt < SYNC_THREADS ? nt : SYNC_THREADS;
	for (size_t i = 1; i < nt; i++)
		if (pthread_create(&t[started], NULL, cat_job_worker, &j) == 0)
			started++;
	cat_job_worker(&j); /* this thread works too, and alone when none started */
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&j.lock);
}

static void ds_read_one(void *ud, size_t i)
{
	struct ds_batch *b = ud;
	struct vread *v = &b->v[i];
	struct ds_sync *d = b->d;
	if (v->lost) {
		v->rc = mt_reader_open_lost(d->s, d->dataset, v->lm->name, &v->r, &v->err);
	} else if (!(v->rc = mt_reader_open_lazy(d->s, d->dataset, v->lm->name, &v->r, &v->err))) {
		/* A full sync trusts no row it has: every fragment is read. */
		const struct listed *parent =
			d->flags & MT_CATALOG_FULL ? NULL
						   : mti_listing_find(&d->man, mt_reader_info(v->r)->parent);
		v->rc = cat_read_shards(d->s, d->dataset, v->r, parent, &v->share, &v->err);
	}
	if (!v->rc && v->prot.rec)
		ds_sync_protection(b->d, v->lm->name, &v->prot);
}

/* Read the batch's versions in parallel (the store is read without the
 * catalog's lock). */
static void ds_batch_read(struct ds_batch *b)
{
	mti_cat_parallel(b->n, SYNC_THREADS, ds_read_one, b);
}

/* Write one read version.  One deleted since the listing is left for the
 * next sync; a damaged one is noted in d->bad and the others are still
 * written. */
static int ds_batch_put(struct ds_sync *d, struct vread *v, mt_error *err)
{
	if (!v->rc && v->lost) {
		/* Kept as lost (ds_sync_finish): repair can write its manifest back. */
		if (listing_push(&d->lost, v->lm->name, strlen(v->lm->name), v->lm))
			return mt_error_set(err, MT_ENOMEM, "out of memory");
	}
	if (!v->rc) {
		d->stats->versions_read++;
		int rc = cat_put_version(d->c, d->ds, v->r, v->lost ? NULL : v->lm, v->lmeta,
					 &v->prot, &v->share, &v->err);
		/* A shared fragment read after all (the parent's rows were not from
		 * the root compared) may be damaged: noted like a damaged manifest. */
		if ((rc != MT_EFORMAT && rc != MT_ECORRUPT) || d->c->corrupt) {
			if (rc && err)
				*err = v->err;
			return rc;
		}
		v->rc = rc;
	}
	if (v->rc == MT_EFORMAT || v->rc == MT_ECORRUPT) {
		if (!d->bad.code) {
			d->bad = v->err;
			d->bad.code = v->rc;
		}
		return 0;
	}
	if (v->rc == MT_ENOTFOUND)
		return 0;
	if (err)
		*err = v->err;
	return v->rc;
}

/* Read the batch's versions, then write them in one transaction. */
static int ds_batch_flush(struct ds_batch *b, mt_error *err)
{
	struct ds_sync *d = b->d;
	if (!b->n)
		return 0;
	ds_batch_read(b);
	int rc = 0, top;
	pthread_mutex_lock(&d->c->lock);
	rc = mti_cat_begin(d->c, "sync_batch", &top, err);
	for (size_t i = 0; !rc && i < b->n; i++)
		rc = ds_batch_put(d, &b->v[i], err);
	if (!rc || top)
		rc = mti_cat_end(d->c, "sync_batch", top, rc, err);
	pthread_mutex_unlock(&d->c->lock);
	for (size_t i = 0; i < b->n; i++) {
		mt_reader_close(b->v[i].r);
		vshare_free(&b->v[i].share);
	}
	b->n = 0;
	return rc;
}

/* Queue one listed version for reading when it is new or changed. */
static int ds_sync_version(struct ds_batch *b, const struct listed *lm, mt_error *err)
{
	struct ds_sync *d = b->d;
	const struct listed *lmeta = mti_listing_find(&d->meta, lm->name);
	const struct listed *rec = mti_listing_find(&d->prot, lm->name);
	__atomic_add_fetch(&d->stats->versions, 1, __ATOMIC_RELAXED); /* datasets run in parallel */
	if (!(d->flags & MT_CATALOG_FULL) && cat_unchanged(d->known, d->nknown, lm, lmeta, rec))
		return 0;
	b->v[b->n++] = (struct vread){.lm = lm, .lmeta = lmeta, .prot = {rec, 0, 0, 0}};
	return b->n == SYNC_BATCH ? ds_batch_flush(b, err) : 0;
}

/* A dataset with no version but shards left: no latest version, the
 * leftovers' size as its stored bytes, and a description saying so. */
static int ds_sync_leftovers(struct ds_sync *d, mt_error *err)
{
	sqlite3_stmt *st;
	char *what = cat_printf("no versions left: %llu leftover shard%s (gc collects them)",
				(unsigned long long)d->left, d->left == 1 ? "" : "s");
	int rc = what ? mti_cat_prepare(d->c, "UPDATE datasets SET nversions = 0, latest = '',"
				   " latest_id = 0, rows = 0, stored_bytes = ?2, tags = '',"
				   " description = ?3 WHERE id = ?1", &st, err)
		      : mt_error_set(err, MT_ENOMEM, "out of memory");
	if (!rc) {
		sqlite3_bind_int64(st, 1, d->ds);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)d->left_bytes);
		sqlite3_bind_text(st, 3, what, -1, SQLITE_STATIC);
		rc = mti_cat_step_done(d->c, st, "summarising a dataset", err);
		sqlite3_finalize(st);
	}
	free(what);
	return rc;
}

/* Drop dataset ds's shard lists that no version reads any more, and the rows
 * past the longest version still reading each (a removed tip of a chain):
 * the rows left are exactly the shards of the versions, so a check found by
 * content (cat_put_shards) or a health update meets no forgotten one. */
static int cat_gc_lists(mt_catalog *c, int64_t ds, mt_error *err)
{
	int rc = mti_cat_exec_id(c, "DELETE FROM shard_lists WHERE dataset_id = ?1 AND id NOT IN"
				 " (SELECT shard_list FROM versions WHERE dataset_id = ?1)", ds,
				 "dropping shard lists", err);
	if (!rc)
		rc = mti_cat_exec_id(c, "DELETE FROM shards WHERE rowid IN (SELECT s.rowid FROM"
				     " (SELECT l.id, (SELECT max(v.nshards) FROM versions v WHERE"
				     " v.shard_list = l.id) AS keep FROM shard_lists l WHERE"
				     " l.dataset_id = ?1) k JOIN shards s ON s.list_id = k.id AND"
				     " s.idx >= k.keep)", ds, "dropping shard rows", err);
	return rc;
}

/* Before version `name` of dataset ds leaves the catalog, its children keep
 * how many of their shard references it shared with them, so a child can
 * still say what it holds of a removed parent. */
static int cat_keep_shared(mt_catalog *c, int64_t ds, const char *name, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "UPDATE versions SET parent_shared = (SELECT "
				 CAT_NSHARED_LIVE " FROM versions v WHERE v.id = versions.id)"
				 " WHERE dataset_id = ?1 AND parent = ?2", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, ds);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	rc = mti_cat_step_done(c, st, "keeping what a removed version shared", err);
	sqlite3_finalize(st);
	return rc;
}

/* A version whose manifest is gone from this store but not removed (no
 * tombstone), which a dataset of the same name in another bucket holds (the
 * same version: name, creation time and rows), stays as lost: repair
 * brings it back from there (manifest_size -2).  1 when kept. */
static int cat_keep_held_elsewhere(struct ds_sync *d, const char *name, mt_error *err)
{
	sqlite3_stmt *st;
	if (mti_listing_find(&d->removed, name))
		return 0;
	int rc = mti_cat_prepare(d->c,
		"UPDATE versions SET manifest_size = -2 WHERE dataset_id = ?1 AND name = ?2 AND"
		" EXISTS (SELECT 1 FROM versions o JOIN datasets od ON od.id = o.dataset_id"
		" JOIN datasets h ON h.id = ?1 WHERE od.name = h.name AND od.bucket_id <>"
		" h.bucket_id AND o.name = ?2 AND o.created = versions.created AND"
		" o.rows = versions.rows AND o.manifest_size >= 0)", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, d->ds);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	rc = mti_cat_step_done(d->c, st, "keeping a version another store holds", err);
	sqlite3_finalize(st);
	return rc ? rc : sqlite3_changes(d->c->db) > 0;
}

/* Drop the versions the store no longer lists, then refresh the dataset's
 * summary, or drop the dataset when no version is left; one transaction. */
static int ds_sync_finish(struct ds_sync *d, mt_error *err)
{
	mt_catalog *c = d->c;
	int top = 0, kept = 0;
	int rc = mti_cat_begin(c, "sync_dataset", &top, err);
	if (rc)
		return rc;
	for (size_t i = 0; !rc && i < d->nknown; i++) {
		if (mti_listing_find(&d->man, d->known[i].name) ||
		    mti_listing_find(&d->lost, d->known[i].name))
			continue;
		sqlite3_stmt *st;
		if ((rc = cat_keep_held_elsewhere(d, d->known[i].name, err)) > 0) {
			kept++;
			rc = 0;
			continue;
		}
		if (!rc)
			rc = cat_keep_shared(c, d->ds, d->known[i].name, err);
		if (!rc && !(rc = mti_cat_prepare(c, "DELETE FROM versions WHERE dataset_id = ?1 AND name = ?2",
					   &st, err))) {
			sqlite3_bind_int64(st, 1, d->ds);
			sqlite3_bind_text(st, 2, d->known[i].name, -1, SQLITE_STATIC);
			rc = mti_cat_step_done(c, st, "dropping a version", err);
			sqlite3_finalize(st);
		}
		d->stats->versions_removed++;
	}
	int some = d->man.n || d->lost.n || kept;
	if (!rc && some)
		rc = cat_gc_lists(c, d->ds, err);
	if (!rc && some)
		rc = mti_cat_exec_id(c, SUMMARY_UPDATE " WHERE id = ?1", d->ds,
				     "summarising a dataset", err);
	else if (!rc && d->left)
		rc = ds_sync_leftovers(d, err);
	else if (!rc)
		rc = mti_cat_exec_id(c, "DELETE FROM datasets WHERE id = ?1", d->ds,
				     "dropping a dataset", err);
	return mti_cat_end(c, "sync_dataset", top, rc, err);
}

/* Names in natural order ("v9" before "v10"): versions are written in the
 * order they were made, so a parent is in the catalog before its child and
 * the child extends the parent's shard list (cat_put_shards). */
static int natural_cmp(const void *a, const void *b)
{
	const char *x = (*(const struct listed *const *)a)->name;
	const char *y = (*(const struct listed *const *)b)->name;
	while (*x && *y) {
		if (isdigit((unsigned char)*x) && isdigit((unsigned char)*y)) {
			while (*x == '0')
				x++;
			while (*y == '0')
				y++;
			size_t nx = strspn(x, "0123456789"), ny = strspn(y, "0123456789");
			int c = nx != ny ? (nx < ny ? -1 : 1) : strncmp(x, y, nx);
			if (c)
				return c;
			x += nx;
			y += ny;
		} else if (*x != *y) {
			return (unsigned char)*x < (unsigned char)*y ? -1 : 1;
		} else {
			x++;
			y++;
		}
	}
	return *x ? 1 : *y ? -1 : strcmp((*(const struct listed *const *)a)->name,
					 (*(const struct listed *const *)b)->name);
}

/* Queue every version whose manifest is gone but whose protection record
 * is there: read from the record (mt_reader_open_lost), it stays in the
 * catalog as lost until repair writes the manifest back or the record goes.
 * One removed (a tombstone) is not found, and dropped as before. */
static int ds_sync_lost(struct ds_batch *b, mt_error *err)
{
	struct ds_sync *d = b->d;
	int rc = 0;
	for (size_t i = 0; !rc && i < d->prot.n; i++) {
		const struct listed *rec = &d->prot.v[i];
		if (mti_listing_find(&d->man, rec->name))
			continue;
		__atomic_add_fetch(&d->stats->versions, 1, __ATOMIC_RELAXED);
		b->v[b->n++] = (struct vread){.lm = rec, .lost = 1, .prot = {rec, 0, 0, 0}};
		if (b->n == SYNC_BATCH)
			rc = ds_batch_flush(b, err);
	}
	return rc;
}

/* Queue every listed version, in natural order (natural_cmp). */
static int ds_sync_versions(struct ds_batch *b, mt_error *err)
{
	const struct listing *l = &b->d->man;
	const struct listed **order = malloc((l->n ? l->n : 1) * sizeof *order);
	if (!order)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; i < l->n; i++)
		order[i] = &l->v[i];
	qsort(order, l->n, sizeof *order, natural_cmp);
	int rc = 0;
	for (size_t i = 0; !rc && i < l->n; i++)
		rc = ds_sync_version(b, order[i], err);
	free(order);
	return rc ? rc : ds_sync_lost(b, err);
}

/* Read what changed of one dataset and write it.  The store is read without
 * the lock; versions are read and written in batches (ds_batch_flush). */
static int cat_sync_dataset(mt_catalog *c, int64_t bucket, mt_store *s, const char *dataset,
			    int flags, mt_catalog_sync_stats *stats, mt_error *err)
{
	struct ds_sync d = {.c = c, .s = s, .dataset = dataset, .flags = flags, .stats = stats};
	struct ds_batch *b = calloc(1, sizeof *b);
	if (!b)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	b->d = &d;
	int rc = ds_sync_start(&d, bucket, err);
	if (!rc)
		rc = ds_sync_versions(b, err);
	if (!rc)
		rc = ds_batch_flush(b, err);
	for (size_t i = 0; i < b->n; i++) {
		mt_reader_close(b->v[i].r);
		vshare_free(&b->v[i].share);
	}
	free(b);
	if (!rc && d.ds) {
		pthread_mutex_lock(&c->lock);
		rc = ds_sync_finish(&d, err);
		pthread_mutex_unlock(&c->lock);
	}
	known_free(d.known, d.nknown);
	mti_listing_free(&d.man);
	mti_listing_free(&d.meta);
	mti_listing_free(&d.prot);
	mti_listing_free(&d.lost);
	mti_listing_free(&d.removed);
	if (!rc && d.bad.code && err)
		*err = d.bad;
	return rc ? rc : d.bad.code;
}

/* Drop the datasets of bucket that the store no longer lists. */
static int cat_drop_missing(mt_catalog *c, int64_t bucket, char **names, size_t n,
			    mt_catalog_sync_stats *stats, mt_error *err)
{
	int rc = mti_cat_exec(c, "CREATE TEMP TABLE IF NOT EXISTS listed(name TEXT PRIMARY KEY);"
			      "DELETE FROM temp.listed", "syncing", err);
	sqlite3_stmt *st;
	if (!rc && !(rc = mti_cat_prepare(c, "INSERT OR IGNORE INTO temp.listed VALUES(?1)", &st,
					  err))) {
		for (size_t i = 0; !rc && i < n; i++) {
			sqlite3_bind_text(st, 1, names[i], -1, SQLITE_STATIC);
			rc = mti_cat_step_done(c, st, "syncing", err);
		}
		sqlite3_finalize(st);
	}
	if (!rc && !(rc = mti_cat_prepare(c, "DELETE FROM datasets WHERE bucket_id = ?1 AND name NOT "
					  "IN (SELECT name FROM temp.listed) RETURNING nversions", &st,
					  err))) {
		sqlite3_bind_int64(st, 1, bucket);
		int r;
		while ((r = sqlite3_step(st)) == SQLITE_ROW)
			stats->versions_removed += (uint64_t)sqlite3_column_int64(st, 0);
		if (r != SQLITE_DONE)
			rc = mti_cat_sqlerr(c, err, "dropping datasets");
		sqlite3_finalize(st);
	}
	return rc;
}

/* Datasets are synced this many at a time (each reads its listings and
 * manifests from the store without the lock), inside one write transaction
 * committed every SYNC_COMMIT_MS: a first sync of 10,000 datasets is neither
 * 10,000 sequential listings nor 20,000 commits, and other processes' writes
 * still get in between. */
#define SYNC_DATASET_THREADS 4
#define SYNC_COMMIT_MS 250

struct cat_sync_run {
	mt_catalog *c;
	mt_store *s;
	int64_t bucket;
	int flags;
	char **names;
	size_t n;
	mt_catalog_sync_stats *st;
	pthread_mutex_t lock; /* next, done, stop, the first error; c->lock nests inside */
	pthread_cond_t moved;
	size_t next, done;
	int stop;             /* canceled, or a dataset failed */
	size_t failed;        /* the first failed dataset (index), n when none */
	int rc;
	mt_error err;
	int in_tx;            /* the run's transaction is open (under c->lock) */
	double tx_since;
};

static double cat_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Commit the run's transaction when it is old enough (or finish is set) and
 * open the next one; under c->lock. */
static int cat_sync_tx(struct cat_sync_run *r, int finish, mt_error *err)
{
	int rc = 0;
	if (r->in_tx && sqlite3_get_autocommit(r->c->db))
		r->in_tx = 0; /* rolled back by SQLite itself (a full disk) */
	if (r->in_tx && (finish || cat_now_ms() - r->tx_since >= SYNC_COMMIT_MS)) {
		r->in_tx = 0;
		rc = mti_cat_exec_retry(r->c, "COMMIT", "committing a sync", err);
		if (rc)
			sqlite3_exec(r->c->db, "ROLLBACK", NULL, NULL, NULL);
	}
	if (!rc && !finish && !r->in_tx && sqlite3_get_autocommit(r->c->db)) {
		rc = mti_cat_exec_retry(r->c, "BEGIN IMMEDIATE", "starting a sync", err);
		r->in_tx = !rc;
		r->tx_since = cat_now_ms();
	}
	return rc;
}

static void *cat_sync_worker(void *arg)
{
	struct cat_sync_run *r = arg;
	pthread_mutex_lock(&r->lock);
	while (!r->stop && r->next < r->n) {
		size_t i = r->next++;
		pthread_mutex_unlock(&r->lock);
		mt_error e = {0};
		int rc = cat_sync_dataset(r->c, r->bucket, r->s, r->names[i], r->flags, r->st, &e);
		pthread_mutex_lock(&r->c->lock);
		r->st->datasets++;
		if (!rc)
			rc = cat_sync_tx(r, 0, &e);
		pthread_mutex_unlock(&r->c->lock);
		pthread_mutex_lock(&r->lock);
		/* The error reported is the first dataset's in listing order, as a
		 * sync one dataset at a time would report. */
		if (rc && i < r->failed) {
			r->failed = i;
			r->rc = rc;
			r->err = e;
			r->stop = 1;
		}
		r->done++;
		pthread_cond_signal(&r->moved);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* Sync r's datasets on worker threads; progress is called from this thread. */
static int cat_sync_datasets(struct cat_sync_run *r, const char *remote, mt_progress_fn progress,
			     void *ud, mt_error *err)
{
	pthread_t t[SYNC_DATASET_THREADS];
	size_t nt = 0, want = r->n < SYNC_DATASET_THREADS ? r->n : SYNC_DATASET_THREADS;
	pthread_mutex_lock(&r->c->lock);
	int rc = cat_sync_tx(r, 0, err);
	pthread_mutex_unlock(&r->c->lock);
	while (!rc && nt < want && !pthread_create(&t[nt], NULL, cat_sync_worker, r))
		nt++;
	if (!rc && want && !nt)
		rc = mt_error_set(err, MT_ENOMEM, "sync: cannot start a thread");
	pthread_mutex_lock(&r->lock);
	if (rc)
		r->stop = 1;
	while (nt && r->done < r->n && !(r->stop && r->done == r->next)) {
		if (progress && !r->stop && progress(ud, r->done, r->n)) {
			r->stop = 1;
			rc = mt_error_set(err, MT_ECANCELED, "sync of %s canceled", remote);
		}
		if (r->done < r->n && !(r->stop && r->done == r->next))
			pthread_cond_wait(&r->moved, &r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	if (!rc && r->rc) {
		rc = r->rc;
		if (err)
			*err = r->err;
	}
	return rc;
}

int mt_catalog_sync(mt_catalog *c, const char *remote, mt_store *s, const char *dataset,
		    int flags, mt_progress_fn progress, void *ud, mt_catalog_sync_stats *st,
		    mt_error *err)
{
	mt_catalog_sync_stats local;
	if (!st)
		st = &local;
	memset(st, 0, sizeof *st);
	struct cat_sync_run r = {.c = c, .s = s, .flags = flags, .st = st};
	pthread_mutex_lock(&c->lock);
	int rc = mti_cat_bucket(c, remote, mt_store_url(s), REMOTE_KEEP, NULL, &r.bucket, err);
	pthread_mutex_unlock(&c->lock);
	if (rc)
		return rc;
	int models_only = (flags & MT_CATALOG_MODELS) && !dataset;
	if (models_only) {
		/* No dataset listed, none dropped. */
	} else if (dataset) {
		rc = mt_name_check(dataset, "dataset", err);
		if (!rc && !(r.names = calloc(1, sizeof *r.names)))
			rc = mt_error_set(err, MT_ENOMEM, "out of memory");
		if (!rc && !(r.names[r.n++] = strdup(dataset)))
			rc = mt_error_set(err, MT_ENOMEM, "out of memory");
	} else {
		/* Also those whose versions are all gone while their shards remain. */
		rc = mt_store_dataset_dirs(s, &r.names, &r.n, err);
	}
	r.failed = r.n;
	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.moved, NULL);
	if (!rc)
		rc = cat_sync_datasets(&r, remote, progress, ud, err);
	pthread_cond_destroy(&r.moved);
	pthread_mutex_destroy(&r.lock);
	/* Models beside the datasets, in the same transaction. */
	if (!rc && !dataset)
		rc = mti_catalog_sync_models(c, r.bucket, s, flags, progress, ud, r.n, st, err);
	pthread_mutex_lock(&c->lock);
	if (!rc && !dataset && !models_only)
		rc = cat_drop_missing(c, r.bucket, r.names, r.n, st, err);
	/* A remote is at one place: buckets listed under it from where it used to
	 * point would be browsed, and acted on, as if they were still its. */
	if (!rc && !dataset && !models_only)
		rc = mti_cat_exec_id(c, "DELETE FROM buckets WHERE id <> ?1 AND remote_id ="
				     " (SELECT remote_id FROM buckets WHERE id = ?1)", r.bucket,
				     "dropping the remote's old buckets", err);
	/* What was synced before a failure or a cancel stays: each dataset's
	 * writes are whole (savepoints), and committing them is as right as
	 * committing each on its own was. */
	mt_error e1 = {0};
	int rc1 = cat_sync_tx(&r, 1, rc ? &e1 : err);
	if (!rc)
		rc = rc1;
	if (!rc && progress)
		progress(ud, r.n, r.n);
	/* An interrupted sync says nothing about the remote's health. */
	if (rc != MT_ECANCELED && rc != MT_ENOMEM) {
		mt_error e2;
		int state = !rc ? REMOTE_SYNCED
			    : rc == MT_ENET || rc == MT_EAUTH ? REMOTE_OFFLINE : REMOTE_TROUBLED;
		mti_cat_bucket(c, remote, mt_store_url(s), state, err ? err->message : "sync failed",
			       &r.bucket, &e2);
	}
	pthread_mutex_unlock(&c->lock);
	mt_strv_free(r.names, r.n);
	return rc;
}

/* Write what was read of one version and refresh its dataset's summary and
 * shard lists; one transaction under the lock. */
static int cat_note_put(struct ds_sync *d, int64_t bucket, const mt_reader *r,
			const struct prot *prot, const struct vshare *sh, mt_error *err)
{
	mt_catalog *c = d->c;
	int top = 0;
	pthread_mutex_lock(&c->lock);
	int rc = mti_cat_begin(c, "sync_version", &top, err);
	if (!rc) {
		if (!(rc = cat_dataset_id(c, bucket, d->dataset, 1, &d->ds, err)) &&
		    !(rc = cat_put_version(c, d->ds, r, &d->man.v[0], d->meta.n ? &d->meta.v[0] : NULL,
					   prot, sh, err)) &&
		    !(rc = cat_gc_lists(c, d->ds, err)))
			rc = mti_cat_exec_id(c, SUMMARY_UPDATE " WHERE id = ?1", d->ds,
					     "summarising a dataset", err);
		rc = mti_cat_end(c, "sync_version", top, rc, err);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int mt_catalog_sync_version(mt_catalog *c, const char *remote, mt_store *s, const char *dataset,
			    const char *version, mt_catalog_sync_stats *st, mt_error *err)
{
	mt_catalog_sync_stats local;
	if (!st)
		st = &local;
	memset(st, 0, sizeof *st);
	struct ds_sync d = {.c = c, .s = s, .dataset = dataset, .stats = st};
	int64_t bucket;
	int rc = mt_name_check(dataset, "dataset", err);
	if (!rc)
		rc = mt_name_check(version, "version", err);
	if (!rc) {
		pthread_mutex_lock(&c->lock);
		rc = mti_cat_bucket(c, remote, mt_store_url(s), REMOTE_KEEP, NULL, &bucket, err);
		pthread_mutex_unlock(&c->lock);
	}
	if (!rc)
		rc = cat_list_one(s, dataset, "versions", version, &d.man, err);
	if (!rc && d.man.n != 1) {
		/* Not there (any more): the dataset's sync says what is. */
		mti_listing_free(&d.man);
		return mt_catalog_sync(c, remote, s, dataset, 0, NULL, NULL, st, err);
	}
	if (!rc)
		rc = cat_list_one(s, dataset, "meta", version, &d.meta, err);
	if (!rc)
		rc = cat_list_one(s, dataset, "protect", version, &d.prot, err);
	struct prot prot = {d.prot.n ? &d.prot.v[0] : NULL, 0, 0, 0};
	mt_reader *r = NULL;
	struct listing parent = {0};
	struct vshare sh = {0};
	if (!rc)
		rc = mt_reader_open_lazy(s, dataset, version, &r, err);
	/* An append shares its parent's fragments but the last: those are not read. */
	if (!rc && mt_reader_nfragments(r) && mt_reader_info(r)->parent[0])
		rc = cat_list_one(s, dataset, "versions", mt_reader_info(r)->parent, &parent, err);
	if (!rc)
		rc = cat_read_shards(s, dataset, r, parent.n == 1 ? &parent.v[0] : NULL, &sh, err);
	if (!rc && prot.rec)
		ds_sync_protection(&d, version, &prot);
	if (!rc) {
		st->datasets = st->versions = st->versions_read = 1;
		rc = cat_note_put(&d, bucket, r, &prot, &sh, err);
	}
	mt_reader_close(r);
	vshare_free(&sh);
	mti_listing_free(&parent);
	mti_listing_free(&d.man);
	mti_listing_free(&d.meta);
	mti_listing_free(&d.prot);
	return rc;
}
