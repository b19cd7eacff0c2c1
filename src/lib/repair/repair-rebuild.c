/* repair-rebuild.c — the sources of a repair: other stores and a loader's cache, the version's manifest and protection record, and rebuilding members of a parity group. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec.h"
#include "dataset.h"
#include "pool.h"
#include "repair.h"

/* ---- other stores ------------------------------------------------------- */

static int source_add(rp_ctx *c, mt_store *st, int owned, int flat)
{
	/* The store being repaired is no source of itself. */
	if (!strcmp(mt_store_url(st), mt_store_url(c->s))) {
		if (owned)
			mt_store_close(st);
		return 0;
	}
	rp_source *n = realloc(c->src, (c->nsrc + 1) * sizeof *n);
	char *name = mti_strdup(mt_store_url(st));
	if (!n || !name) {
		free(name);
		if (n)
			c->src = n;
		if (owned)
			mt_store_close(st);
		return MT_ENOMEM;
	}
	c->src = n;
	c->src[c->nsrc++] = (rp_source){.store = st, .name = name, .owned = owned, .flat = flat};
	return 0;
}

/* The remotes, each opened as configured; one that cannot be opened is no
 * source (a repair should not fail for an unreachable mirror). */
static int sources_remotes(rp_ctx *c, mt_error *err)
{
	mt_remote *r = NULL;
	size_t n = 0;
	mt_error e = {0};
	if (mt_remotes_list(&r, &n, &e))
		return 0;
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		mt_store_opts so;
		mt_store_opts_init(&so);
		so.create = 0;
		mt_store *st = NULL;
		if (mt_store_open_opts(r[i].name, &so, &st, &e) == 0 && source_add(c, st, 1, 0))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	mt_remotes_free(r, n);
	return rc;
}

int mti_rp_sources_open(rp_ctx *c, mt_error *err)
{
	for (size_t i = 0; i < c->o.nsources; i++)
		if (c->o.sources[i] && source_add(c, c->o.sources[i], 0, 0))
			return mti_err(err, MT_ENOMEM, "out of memory");
	int rc = c->o.use_remotes ? sources_remotes(c, err) : 0;
	if (!rc && c->o.cache_dir) {
		mt_store *st = NULL;
		mt_error e = {0};
		if (mti_store_fs_open(c->o.cache_dir, 0, &st, &e) == 0 && source_add(c, st, 1, 1))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	return rc;
}

int mti_rp_source_fetch(rp_ctx *c, size_t k, const rp_obj *o, void **data, uint64_t *nread,
			mt_error *err)
{
	const rp_source *src = &c->src[k];
	if (src->flat && o->kind != MT_REPAIR_SHARD)
		return MT_ENOTFOUND; /* a loader's cache holds shards alone */
	char *key = src->flat ? mti_asprintf("%s.h5", o->sha256) : mti_strdup(o->key);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	int rc = mti_rp_fetch(src->store, key, o->sha256, o->bytes, data, nread, NULL, err);
	free(key);
	return rc;
}

void mti_rp_sources_close(rp_ctx *c)
{
	for (size_t i = 0; i < c->nsrc; i++) {
		if (c->src[i].owned)
			mt_store_close(c->src[i].store);
		free(c->src[i].name);
	}
	free(c->src);
	c->src = NULL;
	c->nsrc = 0;
}

/* ---- which versions ----------------------------------------------------- */

typedef struct vlist {
	char **v;
	size_t n;
	const char *prefix;
	const char *suffix; /* of the keys listed: NULL, ".json" */
} vlist;

static int vlist_has(const vlist *l, const char *v)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], v))
			return 1;
	return 0;
}

/* A manifest or protection record key under l->prefix whose version is not
 * listed yet (for records: the manifest is gone). */
static int vlist_record(void *ud, const mt_obj *o)
{
	vlist *l = ud;
	const char *name = o->key + strlen(l->prefix), *suffix = l->suffix ? l->suffix : ".json";
	size_t len = strlen(name), slen = strlen(suffix);
	if (len <= slen || strcmp(name + len - slen, suffix) || strchr(name, '/'))
		return 0;
	char *v = mti_asprintf("%.*s", (int)(len - slen), name);
	if (!v)
		return MT_ENOMEM;
	char **n = vlist_has(l, v) ? NULL : realloc(l->v, (l->n + 1) * sizeof *n);
	if (!n) {
		int had = vlist_has(l, v);
		free(v);
		return had ? 0 : MT_ENOMEM;
	}
	l->v = n;
	l->v[l->n++] = v;
	return 0;
}

/* Every version whose manifest key is listed, in listing order. */
static int versions_by_key(rp_ctx *c, vlist *l, mt_error *err)
{
	char *prefix = mti_asprintf("datasets/%s/versions/", c->dataset);
	if (!prefix)
		return mti_err(err, MT_ENOMEM, "out of memory");
	l->prefix = prefix;
	int rc = mti_store_list_all(c->s, prefix, vlist_record, l, err);
	if (rc == MT_ENOMEM)
		mti_err(err, rc, "out of memory");
	l->prefix = NULL;
	free(prefix);
	return rc;
}

/* Versions another store holds that this one has lost: made before a
 * version this store still has (in that store's order), and neither here
 * nor removed here (a tombstone).  Newer ones were never here: pull copies
 * those, repair does not.  A source that cannot list the dataset adds none. */
static int versions_elsewhere(rp_ctx *c, vlist *l, mt_error *err)
{
	vlist gone = {.suffix = ".removed"};
	char *prefix = mti_asprintf("datasets/%s/versions/", c->dataset);
	int rc = (gone.prefix = prefix) ? 0 : MT_ENOMEM;
	if (!rc && l->n && c->nsrc)
		rc = mti_store_list_all(c->s, prefix, vlist_record, &gone, err);
	for (size_t k = 0; !rc && l->n && k < c->nsrc; k++) {
		char **sv = NULL;
		size_t sn = 0, last = 0, any = 0;
		mt_error e = {0};
		if (c->src[k].flat || mt_store_versions(c->src[k].store, c->dataset, &sv, &sn, &e))
			continue;
		for (size_t i = 0; i < sn; i++)
			if (vlist_has(l, sv[i]))
				last = i, any = 1;
		for (size_t i = 0; !rc && any && i < last; i++) {
			char **grown = NULL;
			if (vlist_has(l, sv[i]) || vlist_has(&gone, sv[i]))
				continue;
			if (!(grown = realloc(l->v, (l->n + 1) * sizeof *grown)))
				rc = MT_ENOMEM;
			else
				l->v = grown, l->v[l->n++] = sv[i], sv[i] = NULL;
		}
		mt_strv_free(sv, sn);
	}
	if (rc == MT_ENOMEM)
		mti_err(err, rc, "out of memory");
	mt_strv_free(gone.v, gone.n);
	free(prefix);
	return rc;
}

int mti_rp_versions(rp_ctx *c, const char *version, char ***out, size_t *n, mt_error *err)
{
	vlist l = {0};
	int latest = version && (!*version || !strcasecmp(version, "latest"));
	int rc = 0;
	if (version && !latest) {
		l.v = calloc(1, sizeof *l.v);
		if (!l.v || !(l.v[0] = mti_strdup(version)))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
		l.n = l.v ? 1 : 0;
	} else {
		rc = mt_store_versions(c->s, c->dataset, &l.v, &l.n, err);
		if (rc == MT_ENOTFOUND && !latest)
			rc = 0;
		/* The versions are ordered by their manifests; when one is the
		 * damaged object, every version there is has its name as a key. */
		if ((rc == MT_ECORRUPT || rc == MT_EFORMAT) && !latest)
			rc = versions_by_key(c, &l, err);
	}
	if (!rc && latest) {
		for (size_t i = 0; i + 1 < l.n; i++)
			free(l.v[i]);
		l.v[0] = l.v[l.n - 1];
		l.n = 1;
	}
	char *prefix = version ? NULL : mti_asprintf("datasets/%s/protect/", c->dataset);
	if (!rc && !version && !(l.prefix = prefix))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc && !version)
		rc = mti_store_list_all(c->s, prefix, vlist_record, &l, err);
	if (rc == MT_ENOMEM)
		mti_err(err, rc, "out of memory");
	free(prefix);
	if (!rc && !version)
		rc = versions_elsewhere(c, &l, err);
	if (!rc && !l.n)
		rc = mti_err(err, MT_ENOTFOUND, "dataset %s: no versions and no protection records",
			    c->dataset);
	if (rc) {
		mt_strv_free(l.v, l.n);
		return rc;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

/* ---- the manifest and the record --------------------------------------- */

/* Manifest text that may stand for c->version: it decodes (its checksum
 * holds), names the version and, when there is a record, is its copy. */
static int manifest_ok(rp_ctx *c, const void *json, size_t len, mt_manifest **m)
{
	mt_error e = {0};
	if (c->p && (len != c->p->manifest_len || memcmp(json, c->p->manifest, len)))
		return MT_ECORRUPT;
	if (mti_manifest_decode(json, len, c->mobj.key, m, &e))
		return MT_ECORRUPT;
	/* A format-2 root is judged alone: its fragments are objects of the
	 * version, checked and rebuilt as shards are (rp_objects). */
	if (strcmp((*m)->dataset, c->dataset) || strcmp((*m)->version, c->version)) {
		mti_manifest_free(*m);
		*m = NULL;
		return MT_ECORRUPT;
	}
	return 0;
}

static int manifest_take(rp_ctx *c, void *json, size_t len, mt_manifest *m)
{
	char *text = malloc(len + 1);
	if (!text) {
		mti_manifest_free(m);
		free(json);
		return MT_ENOMEM;
	}
	memcpy(text, json, len);
	text[len] = '\0';
	free(json);
	c->m = m;
	c->mjson = text;
	c->mlen = len;
	return 0;
}

/* Source k's object `key` whole (NULL when it is a cache directory, which
 * holds shards only, or has no such object); nread counts what came. */
static void *source_get(rp_ctx *c, size_t k, const char *key, size_t *len, uint64_t *nread)
{
	void *data = NULL;
	mt_error e = {0};
	*len = 0;
	if (c->src[k].flat || mti_store_get(c->src[k].store, key, 0, UINT64_MAX, &data, len, &e))
		return NULL;
	*nread += *len;
	return data;
}

/* A good copy of the manifest from another store, else the record. */
static int manifest_elsewhere(rp_ctx *c, uint64_t *nread)
{
	for (size_t k = 0; k < c->nsrc; k++) {
		size_t len;
		mt_manifest *m = NULL;
		void *json = source_get(c, k, c->mobj.key, &len, nread);
		if (json && manifest_ok(c, json, len, &m) == 0) {
			c->mobj.source = c->src[k].name;
			return manifest_take(c, json, len, m);
		}
		free(json);
	}
	mt_manifest *m = NULL;
	void *copy = c->p ? malloc(c->p->manifest_len ? c->p->manifest_len : 1) : NULL;
	if (!c->p)
		return 0;
	if (!copy)
		return MT_ENOMEM;
	memcpy(copy, c->p->manifest, c->p->manifest_len);
	if (manifest_ok(c, copy, c->p->manifest_len, &m)) {
		free(copy);
		return 0;
	}
	c->mobj.source = "protection record";
	return manifest_take(c, copy, c->p->manifest_len, m);
}

/* The record, when there is one.  A damaged one is no record (its parity
 * cannot be trusted): it is noted in c->robj, and a sound copy may still
 * come from another store once the manifest is known. */
int mti_rp_record_load(rp_ctx *c, mt_error *err)
{
	mt_error e = {0};
	int rc = mti_prec_load(c->s, c->dataset, c->version, &c->p, &e);
	if (rc == MT_ENOTFOUND || !rc)
		return 0;
	if (rc != MT_ECORRUPT && rc != MT_EFORMAT)
		return mti_err_copy(err, &e);
	return mti_rp_record_damaged(c, &e, err);
}

int mti_rp_record_damaged(rp_ctx *c, const mt_error *ep, mt_error *err)
{
	mt_error e = *ep;
	mti_prec_free(c->p);
	c->p = NULL;
	mti_rp_obj_clear(&c->robj);
	c->robj.kind = MT_REPAIR_RECORD;
	c->robj.state = RP_DAMAGED;
	c->robj.key = mti_key_protect(c->dataset, c->version);
	/* The report names the key already. */
	size_t kl = c->robj.key ? strlen(c->robj.key) : 0;
	const char *why = e.message;
	if (kl && !strncmp(why, c->robj.key, kl) && !strncmp(why + kl, ": ", 2))
		why += kl + 2;
	c->robj.problem = mti_strdup(why);
	return c->robj.key && c->robj.problem ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
}

/* A sound copy of the damaged record from another store: it decodes (its
 * checksum, matrix, and members against its copy of the manifest), names
 * the version, and holds this version's manifest byte for byte when the
 * manifest is here.  Parity is a function of the members and the matrix
 * alone, so such a record describes this store's parity objects as well;
 * any it names that are not here are rebuilt from the members. */
static void record_elsewhere(rp_ctx *c, uint64_t *nread)
{
	for (size_t k = 0; k < c->nsrc; k++) {
		size_t len;
		mti_prec *p = NULL;
		mt_error e = {0};
		void *json = source_get(c, k, c->robj.key, &len, nread);
		int ok = json && mti_prec_decode(json, len, c->robj.key, &p, &e) == 0 &&
			 !strcmp(p->dataset, c->dataset) && !strcmp(p->version, c->version) &&
			 (!c->mjson || (p->manifest_len == c->mlen &&
					!memcmp(p->manifest, c->mjson, c->mlen)));
		if (ok) {
			c->p = p;
			c->rjson = json;
			c->rlen = len;
			c->robj.source = c->src[k].name;
			return;
		}
		mti_prec_free(p);
		free(json);
	}
}

/* Look for the damaged record's copy elsewhere, counting what was read. */
static void record_find(rp_ctx *c)
{
	if (c->robj.state != RP_DAMAGED)
		return;
	uint64_t n = 0;
	record_elsewhere(c, &n);
	c->robj.read += n;
	c->st->bytes_read += n;
}

/* Before a version's record or manifest is written back: 1 for a dry run
 * (the object marked repairable), else the dataset's lock, still held. */
static int write_start(rp_ctx *c, rp_obj *o, mt_error *err)
{
	if (c->o.dry_run) {
		o->state = RP_REPAIRABLE;
		return 1;
	}
	int rc = mti_rp_lock(c, err);
	return rc ? rc : mti_dlock_check(c->dlock, err);
}

int mti_rp_record_write(rp_ctx *c, mt_error *err)
{
	rp_obj *o = &c->robj;
	if (o->state != RP_DAMAGED || !c->rjson)
		return 0;
	/* A record must never name parity that is not there. */
	for (size_t i = 0; i < c->nobjs; i++)
		if (c->objs[i].kind == MT_REPAIR_PARITY && c->objs[i].state == RP_DAMAGED)
			return 0;
	int rc = write_start(c, o, err);
	if (rc == 1)
		return 0;
	if (!rc)
		rc = mti_store_put(c->s, o->key, c->rjson, c->rlen, 0, err);
	int same = rc ? rc : mti_store_holds(c->s, o->key, c->rjson, c->rlen, err);
	if (same == 1)
		o->state = RP_REBUILT;
	return same == 1 ? 0 : same ? same : mti_err(err, MT_EIO, "%s: not what was written",
						   o->key);
}

int mti_rp_manifest_find(rp_ctx *c, mt_error *err)
{
	mt_error e = {0};
	int rc = mti_dataset_removed(c->s, c->dataset, c->version, &e);
	if (rc == MT_EEXIST)
		return 1;
	if (rc)
		return mti_err_copy(err, &e);
	c->mobj.kind = MT_REPAIR_MANIFEST;
	if (!(c->mobj.key = mti_key_manifest(c->dataset, c->version)))
		return mti_err(err, MT_ENOMEM, "out of memory");
	if ((rc = mti_rp_record_load(c, err)))
		return rc;
	void *json = NULL;
	size_t len = 0;
	mt_manifest *m = NULL;
	rc = mti_store_get_max(c->s, c->mobj.key, MT_MANIFEST_MAX_BYTES, &json, &len, &e);
	if (rc && rc != MT_ENOTFOUND)
		return mti_err_copy(err, &e);
	c->mobj.read = len;
	c->st->bytes_read += len;
	if (!rc && manifest_ok(c, json, len, &m) == 0) {
		if (manifest_take(c, json, len, m))
			return mti_err(err, MT_ENOMEM, "out of memory");
		record_find(c);
		return 0;
	}
	free(json);
	record_find(c); /* before the manifest's copies, which must match it */
	c->mobj.state = RP_DAMAGED;
	c->mobj.problem = rc ? mti_strdup("missing")
			     : mti_strdup(c->p ? "not the copy its protection record holds"
					       : "fails its checksum");
	c->mmissing = rc == MT_ENOTFOUND; /* written back with an exclusive create */
	uint64_t n = 0;
	rc = manifest_elsewhere(c, &n);
	c->mobj.read += n;
	c->st->bytes_read += n;
	return rc ? mti_err(err, rc, "out of memory") : 0;
}

/* Written last, once the objects it names are back: the commit point of
 * the version, as for a writer.  A lost manifest is created exclusively
 * (a writer or another repair may have put it back meanwhile). */
int mti_rp_manifest_write(rp_ctx *c, mt_error *err)
{
	rp_obj *o = &c->mobj;
	int missing = c->mmissing;
	if (o->state != RP_DAMAGED || !c->mjson)
		return 0;
	int rc = write_start(c, o, err);
	if (rc == 1)
		return 0;
	/* A manifest put back gets its order marker first, as at its commit. */
	if (!rc && missing && c->m)
		rc = mti_dataset_mark(c->s, c->dataset, c->version, c->m->created, err);
	if (!rc)
		rc = mti_store_put(c->s, o->key, c->mjson, c->mlen, missing ? MT_PUT_EXCLUSIVE : 0,
				   err);
	int same = rc && rc != MT_EEXIST ? rc : mti_store_holds(c->s, o->key, c->mjson, c->mlen, err);
	if (same == 1)
		o->state = RP_REBUILT;
	else if (same == MT_EEXIST)
		return mti_err(err, MT_EEXIST, "%s@%s: %s was written meanwhile with other "
			      "content; left as it is", c->dataset, c->version, o->key);
	return same == 1 ? 0 : same ? same : mti_err(err, MT_EIO, "%s: gone after its write",
						   o->key);
}

/* ---- parity ------------------------------------------------------------- */

/* The objects of group g, by row: members 0..nmembers-1, then parity
 * k..k+m-1 (index into c->objs, -1 for rows past the members). */
static int group_rows(rp_ctx *c, const mti_pgroup *g, int *row)
{
	int k = c->p->k;
	for (int i = 0; i < k + c->p->m; i++)
		row[i] = -1;
	for (size_t j = 0; j < g->nmembers; j++)
		for (size_t i = 0; i < c->nobjs; i++)
			if (c->objs[i].kind == c->gkind &&
			    !strcmp(c->objs[i].sha256, g->members[j].sha256))
				row[j] = (int)i;
	/* A member with no object (its fragment lost, its entry unknown)
	 * leaves the group unusable: it is no zero row. */
	for (size_t j = 0; j < g->nmembers; j++)
		if (row[j] < 0)
			return -1;
	for (int r = 0; r < c->p->m; r++)
		for (size_t i = 0; i < c->nobjs; i++)
			if (c->objs[i].kind == MT_REPAIR_PARITY &&
			    !strcmp(c->objs[i].sha256, g->parity[r].sha256))
				row[k + r] = (int)i;
	return 0;
}

typedef struct gbuf {
	uint8_t *rows[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M];
	unsigned char have[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M];
	size_t want[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M];
	size_t nwant;
	uint64_t read; /* bytes of the survivors read */
} gbuf;

static void gbuf_free(gbuf *b, int n)
{
	for (int i = 0; i < n; i++)
		free(b->rows[i]);
	uint64_t read = b->read; /* what was read stays read */
	memset(b, 0, sizeof *b);
	b->read = read;
}

/* A dry run writes nothing back, yet the repair it stands for finds here
 * what it wrote before it codes a group: a member another store holds, or
 * one a group rebuilt (a fragment keeps its bytes), is a survivor read from
 * there.  Without this a dry run calls lost what the repair rebuilds. */
static int stand_in(const rp_ctx *c, const rp_obj *o)
{
	return c->o.dry_run && o->state == RP_REPAIRABLE && (o->data || o->src);
}

/* A stand-in's bytes into row: 0, or 1 when its store no longer gives
 * them (it is no survivor after all: look again). */
static int stand_in_read(rp_ctx *c, rp_obj *o, uint8_t *row, uint64_t *nread)
{
	if (o->data) {
		memcpy(row, o->data, (size_t)o->bytes);
		return 0;
	}
	void *data = NULL;
	mt_error e = {0};
	if (mti_rp_source_fetch(c, o->src - 1, o, &data, nread, &e)) {
		o->src = 0;
		return 1;
	}
	memcpy(row, data, (size_t)o->bytes);
	free(data);
	return 0;
}

/* Read the group's sound rows whole, padded to the stripe; damaged rows get
 * output buffers.  With `trust`, only the first k sound rows are read and
 * not hashed again: the check that found them sound has just hashed them,
 * and what they decode to is checked against its name before it is
 * written.  Without it every sound row is read and checked; a row that
 * fails is damaged after all (1: look again). */
static int group_read(rp_ctx *c, const mti_pgroup *g, const int *row, gbuf *b, int trust,
		      mt_error *err)
{
	int n = c->p->k + c->p->m;
	size_t had = 0;
	for (int i = 0; i < n; i++) {
		rp_obj *o = row[i] < 0 ? NULL : &c->objs[row[i]];
		int use = !o || o->state == RP_DAMAGED ||
			  ((o->state == RP_SOUND || o->state == RP_REBUILT || stand_in(c, o)) &&
			   !(trust && had >= (size_t)c->p->k));
		if (!use)
			continue; /* not needed: neither read nor given a buffer */
		b->rows[i] = calloc(1, g->stripe ? g->stripe : 1);
		if (!b->rows[i])
			return mti_err(err, MT_ENOMEM, "out of memory");
		if (!o) { /* a zero member past the group's end */
			b->have[i] = 1;
			had++;
			continue;
		}
		if (o->state == RP_DAMAGED) {
			b->want[b->nwant++] = (size_t)i;
			continue;
		}
		if (o->state == RP_REPAIRABLE) {
			uint64_t nr = 0;
			if (stand_in_read(c, o, b->rows[i], &nr))
				return 1;
			b->read += nr;
			b->have[i] = 1;
			had++;
			continue;
		}
		if (trust) { /* straight into its row: its size was checked with its hash */
			mt_error e = {0};
			int rc = mti_store_read(c->s, o->key, 0, b->rows[i], (size_t)o->bytes, &e);
			if (rc && rc != MT_ENOTFOUND && rc != MT_ERANGE)
				return mti_err_copy(err, &e);
			if (rc) { /* gone or cut short since the check */
				o->state = RP_DAMAGED;
				free(o->problem);
				o->problem = mti_strdup(rc == MT_ENOTFOUND ? "missing" : "cut short");
				return 1;
			}
			b->read += o->bytes;
			b->have[i] = 1;
			had++;
			continue;
		}
		void *data = NULL;
		uint64_t nr = 0;
		char *why = NULL;
		int rc = mti_rp_fetch(c->s, o->key, o->sha256, o->bytes, &data, &nr, &why, err);
		b->read += nr;
		if (rc == MT_ECORRUPT) {
			o->state = RP_DAMAGED;
			free(o->problem);
			o->problem = why;
			return 1;
		}
		free(why);
		if (rc)
			return rc;
		memcpy(b->rows[i], data, (size_t)o->bytes);
		free(data);
		b->have[i] = 1;
		had++;
	}
	return 0;
}

/* Hand each rebuilt row to its object and write it back.  A row that does
 * not decode to its name's bytes: with `trust`, 1 (read the group again,
 * checking every row); without, the object stays damaged. */
static int group_write(rp_ctx *c, const int *row, gbuf *b, int trust, mt_error *err)
{
	for (size_t w = 0; w < b->nwant; w++) {
		rp_obj *o = &c->objs[row[b->want[w]]];
		/* A shard listed twice (in this group, or in another group coded
		 * on another thread) is written back once: by whoever claims it. */
		pthread_mutex_lock(&c->lock);
		int mine = o->state == RP_DAMAGED && !o->data;
		if (mine) {
			o->data = b->rows[b->want[w]];
			b->rows[b->want[w]] = NULL;
		}
		pthread_mutex_unlock(&c->lock);
		if (!mine)
			continue;
		o->source = "parity";
		/* What rebuilding it took: the rest of its group, read whole. */
		mti_rp_add_read(c, o, b->read);
		int rc = mti_rp_write_back(c, o, err);
		if (rc == MT_ECORRUPT && trust && o->data) {
			free(o->data);
			o->data = NULL;
			o->source = NULL;
			return 1;
		}
		if (rc == MT_ECORRUPT) {
			/* The group's other rows decoded into other bytes: not rebuildable. */
			free(o->data);
			o->data = NULL;
			o->source = NULL;
			o->state = RP_DAMAGED;
			continue;
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int group_job(void *ud, size_t gi)
{
	rp_ctx *c = ud;
	const mti_pgroup *g = &c->groups[gi];
	int row[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M];
	int n = c->p->k + c->p->m;
	if (group_rows(c, g, row))
		return 0;
	mt_error e = {0};
	gbuf b;
	memset(&b, 0, sizeof b);
	int rc = 0;
	/* First trusting the check that just ran; when that decodes to wrong
	 * bytes (a row changed since), again checking every row. */
	for (int trust = 1; trust >= 0; trust--) {
		/* A survivor that fails its check joins the damaged: read again. */
		while ((rc = group_read(c, g, row, &b, trust, &e)) == 1)
			gbuf_free(&b, n);
		size_t had = 0;
		for (int i = 0; i < n; i++)
			had += b.have[i];
		if (!rc && b.nwant && had >= (size_t)c->p->k)
			rc = mti_parity_decode(c->p->k, c->p->m, c->p->matrix, g->nmembers, b.have,
					       b.rows, g->stripe, b.want, b.nwant, &e);
		if (!rc && b.nwant && had >= (size_t)c->p->k)
			rc = group_write(c, row, &b, trust, &e);
		gbuf_free(&b, n);
		if (rc != 1)
			break;
		memset(&e, 0, sizeof e);
		rc = 0;
	}
	pthread_mutex_lock(&c->lock);
	c->st->bytes_read += b.read;
	pthread_mutex_unlock(&c->lock);
	return rc ? mti_rp_fail(c, rc, &e) : 0;
}

int mti_rp_parity(rp_ctx *c, mt_error *err)
{
	if (!c->p || !c->groups)
		return 0;
	int rc = mti_parallel_for(c->o.threads, c->ngroups, group_job, c);
	if (rc)
		return mti_err_copy(err, &c->failure);
	return 0;
}
