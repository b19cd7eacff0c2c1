/* repair.c — bring back a version's damaged or lost objects: from another store holding the same bytes, from the parity of their group, the manifest from the protection record. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec.h"
#include "dataset.h"
#include "lock.h"
#include "opts.h"
#include "pool.h"
#include "protect.h"
#include "repair.h"

#define DEFAULT_THREADS 4
#define REPAIR_OPTS_FIRST MT_OPTS_SIZE_UPTO(mt_repair_opts, report_ud)

void mt_repair_opts_init_size(mt_repair_opts *o, size_t size)
{
	mt_repair_opts d;
	memset(&d, 0, sizeof d);
	d.use_remotes = 1;
	mti_opts_init(o, size, &d, sizeof d);
}

void mti_rp_obj_clear(rp_obj *o)
{
	free(o->key);
	free(o->problem);
	free(o->data);
	memset(o, 0, sizeof *o);
}

static void rp_objs_free(rp_ctx *c)
{
	for (size_t i = 0; i < c->nobjs; i++)
		mti_rp_obj_clear(&c->objs[i]);
	free(c->objs);
	c->objs = NULL;
	c->nobjs = c->capobjs = 0;
}

/* Keep the first error a worker hit. */
int mti_rp_fail(rp_ctx *c, int rc, const mt_error *e)
{
	pthread_mutex_lock(&c->lock);
	if (!c->failed) {
		c->failed = rc;
		mti_err_copy(&c->failure, e);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Bytes read for o; those of a group's survivors are counted once in the
 * stats (by the caller) and added to each object they rebuilt. */
void mti_rp_add_read(rp_ctx *c, rp_obj *o, uint64_t n)
{
	pthread_mutex_lock(&c->lock);
	o->read += n;
	if (!o->data)
		c->st->bytes_read += n;
	pthread_mutex_unlock(&c->lock);
}

/* Read key whole and hold it against sha256 and size: 0 and the bytes
 * when they are right, MT_ECORRUPT (why in *why when not NULL) when the
 * object is missing or other bytes, another code when the store failed. */
int mti_rp_fetch(mt_store *s, const char *key, const char *sha256, uint64_t bytes, void **data,
		 uint64_t *nread, char **why, mt_error *err)
{
	void *buf = NULL;
	size_t len = 0;
	mt_error e = {0};
	int rc = mti_store_get(s, key, 0, UINT64_MAX, &buf, &len, &e);
	if (rc == MT_ENOTFOUND) {
		if (why)
			*why = mti_strdup("missing");
		return MT_ECORRUPT;
	}
	if (rc)
		return mti_err_copy(err, &e);
	*nread += len;
	char got[MT_SHA256_HEX];
	if (len != bytes) {
		if (why)
			*why = mti_asprintf("%zu bytes, not %llu", len, (unsigned long long)bytes);
		rc = MT_ECORRUPT;
	} else if (sha256 && (rc = mti_sha256_hex(buf, len, got, err)) == 0 &&
		   strcmp(got, sha256)) {
		if (why)
			*why = mti_asprintf("sha256 is %s", got);
		rc = MT_ECORRUPT;
	}
	if (rc)
		free(buf);
	else
		*data = buf;
	return rc;
}

/* ---- the objects of a version ----------------------------------------- */

static int rp_find(const rp_ctx *c, const char *key)
{
	for (size_t i = 0; i < c->nobjs; i++)
		if (!strcmp(c->objs[i].key, key))
			return (int)i;
	return -1;
}

/* Add an object once (a shard may repeat within a version). */
static int rp_add(rp_ctx *c, char *key, const char *sha256, uint64_t bytes, int kind,
		  size_t number, mt_error *err)
{
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	if (rp_find(c, key) >= 0) {
		free(key);
		return 0;
	}
	if (c->nobjs == c->capobjs) {
		size_t cap = c->capobjs ? 2 * c->capobjs : 16;
		rp_obj *n = realloc(c->objs, cap * sizeof *n);
		if (!n) {
			free(key);
			return mti_err(err, MT_ENOMEM, "out of memory");
		}
		c->objs = n;
		c->capobjs = cap;
	}
	rp_obj *o = &c->objs[c->nobjs++];
	memset(o, 0, sizeof *o);
	o->key = key;
	snprintf(o->sha256, sizeof o->sha256, "%s", sha256);
	o->bytes = bytes;
	o->kind = kind;
	o->number = number;
	if (kind == MT_REPAIR_SHARD && c->m) {
		o->first_row = c->m->shards[number].first_row;
		o->rows = c->m->shards[number].rows;
	} else if (kind == MT_REPAIR_FRAGMENT) {
		o->first_row = c->m->frags[number].first_row;
		o->rows = c->m->frags[number].rows;
	}
	return 0;
}

/* The parity objects of n groups, numbered by group. */
static int rp_plan_parity(rp_ctx *c, const mti_pgroup *gs, size_t n, mt_error *err)
{
	int rc = 0;
	for (size_t g = 0; !rc && g < n; g++)
		for (int r = 0; !rc && r < c->p->m; r++) {
			const mti_pparity *q = &gs[g].parity[r];
			rc = rp_add(c, mti_key_parity(c->dataset, q->sha256), q->sha256, q->bytes,
				    MT_REPAIR_PARITY, g, err);
		}
	return rc;
}

/* The shards (of the fragments loaded, for format 2) and the parity of
 * their groups. */
static int rp_plan(rp_ctx *c, mt_error *err)
{
	int rc = 0;
	for (size_t i = 0; !rc && c->m && i < c->m->nshards; i++) {
		if (c->m->nfrags && !c->m->frags[mti_manifest_frag_of_shard(c->m, i)].loaded)
			continue;
		rc = rp_add(c, mti_key_shard(c->dataset, c->m->shards[i].sha256),
			    c->m->shards[i].sha256, c->m->shards[i].bytes, MT_REPAIR_SHARD, i, err);
	}
	if (!rc && c->p)
		rc = rp_plan_parity(c, c->p->groups, c->p->ngroups, err);
	return rc;
}

/* A format-2 root's fragments and the parity of their groups. */
static int rp_plan_frags(rp_ctx *c, mt_error *err)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < c->m->nfrags; i++)
		rc = rp_add(c, mti_key_fragment(c->dataset, c->m->frags[i].sha256),
			    c->m->frags[i].sha256, c->m->frags[i].bytes, MT_REPAIR_FRAGMENT, i,
			    err);
	if (!rc && c->p)
		rc = rp_plan_parity(c, c->p->fgroups, c->p->nfgroups, err);
	return rc;
}

static void rp_tick(rp_ctx *c, uint64_t n)
{
	pthread_mutex_lock(&c->lock);
	c->done += n;
	if (!c->canceled && c->o.progress && c->o.progress(c->o.progress_ud, c->done, c->total))
		c->canceled = 1;
	pthread_mutex_unlock(&c->lock);
}

/* Pieces an object is checked in: whole objects would cost fresh pages
 * (and their faults) for every byte of the version. */
#define CHECK_PIECE ((size_t)8 << 20)

/* The sha256 of key's `bytes` bytes, read in pieces into buf; MT_ECORRUPT
 * (and *why) when the object is missing, of another size, or hashes to
 * another name. */
static int check_stream(rp_ctx *c, const rp_obj *o, uint8_t *buf, uint64_t *nread, char **why,
			mt_error *err)
{
	uint64_t size = 0;
	mt_error e = {0};
	int rc = mti_store_head(c->s, o->key, &size, NULL, &e);
	if (rc == MT_ENOTFOUND) {
		*why = mti_strdup("missing");
		return MT_ECORRUPT;
	}
	if (rc)
		return mti_err_copy(err, &e);
	if (size != o->bytes) {
		*why = mti_asprintf("%llu bytes, not %llu", (unsigned long long)size,
				    (unsigned long long)o->bytes);
		return MT_ECORRUPT;
	}
	mt_sha256 *h = NULL;
	rc = mti_sha256_new(&h, err);
	for (uint64_t off = 0; !rc && off < size; off += CHECK_PIECE) {
		size_t n = size - off < CHECK_PIECE ? (size_t)(size - off) : CHECK_PIECE;
		rc = mti_store_read(c->s, o->key, off, buf, n, &e);
		if (rc == MT_ENOTFOUND || rc == MT_ERANGE) { /* gone or cut short meanwhile */
			*why = mti_strdup(rc == MT_ENOTFOUND ? "missing" : "cut short");
			rc = MT_ECORRUPT;
		} else if (rc) {
			rc = mti_err_copy(err, &e);
		} else {
			*nread += n;
			rc = mti_sha256_update(h, buf, n, err);
		}
	}
	char got[MT_SHA256_HEX];
	if (!rc && !(rc = mti_sha256_final(h, got, err)) && strcmp(got, o->sha256)) {
		*why = mti_asprintf("sha256 is %s", got);
		rc = MT_ECORRUPT;
	}
	mti_sha256_free(h);
	return rc;
}

/* Check one object whole against its name. */
static int check_job(void *ud, size_t i)
{
	rp_ctx *c = ud;
	rp_obj *o = &c->objs[c->from + i];
	if (c->canceled)
		return MT_ECANCELED;
	/* A verify of the same job read it whole against its sha256 and more. */
	if (o->kind == MT_REPAIR_SHARD && mti_verify_memo_sound(c->o.memo, o->key)) {
		rp_tick(c, o->bytes);
		return 0;
	}
	uint64_t n = 0;
	mt_error e = {0};
	char *why = NULL;
	size_t piece = o->bytes < CHECK_PIECE ? (size_t)o->bytes : CHECK_PIECE;
	uint8_t *buf = malloc(piece ? piece : 1);
	int rc = buf ? check_stream(c, o, buf, &n, &why, &e)
		     : mti_err(&e, MT_ENOMEM, "out of memory");
	free(buf);
	mti_rp_add_read(c, o, n);
	rp_tick(c, o->bytes);
	if (rc == MT_ECORRUPT) {
		o->state = RP_DAMAGED;
		o->problem = why;
		return 0;
	}
	free(why);
	return rc ? mti_rp_fail(c, rc, &e) : 0;
}

/* Check the objects from c->from on (those of this pass). */
static int rp_check(rp_ctx *c, mt_error *err)
{
	for (size_t i = c->from; i < c->nobjs; i++)
		c->total += c->objs[i].bytes;
	int rc = mti_parallel_for(c->o.threads, c->nobjs - c->from, check_job, c);
	if (rc == MT_ECANCELED || c->canceled)
		return mti_err(err, MT_ECANCELED, "%s@%s: repair canceled", c->dataset,
			      c->version);
	if (rc)
		return mti_err_copy(err, &c->failure);
	return 0;
}

/* ---- writing back ------------------------------------------------------ */

/* Pinned like a writer's objects (doc/FORMAT.md, "Writers and gc"): a gc
 * must not collect an object the moment it is written back. */
int mti_rp_lock(rp_ctx *c, mt_error *err)
{
	if (c->dlock)
		return 0;
	int rc = mti_dlock_open(c->s, c->dataset, MT_LOCK_WRITE, &c->dlock, err);
	if (!rc)
		rc = mti_dlock_pin_version(c->dlock, c->version, err);
	return rc;
}

/* Write o's rebuilt bytes under its own name and read them back: a put
 * replaces the object whole (a rename on the file store, one PUT on S3),
 * so the name never holds anything but the damaged or the right bytes. */
int mti_rp_write_back(rp_ctx *c, rp_obj *o, mt_error *err)
{
	/* Nothing is ever written under a name but the bytes it names. */
	char got[MT_SHA256_HEX];
	int rc = mti_sha256_hex(o->data, (size_t)o->bytes, got, err);
	if (!rc && strcmp(got, o->sha256))
		return mti_err(err, MT_ECORRUPT, "%s@%s: %s: the rebuilt bytes have sha256 %s",
			      c->dataset, c->version, o->key, got);
	if (rc || c->o.dry_run) {
		/* A dry run keeps a fragment's bytes: they give its shards to check. */
		if (rc || o->kind != MT_REPAIR_FRAGMENT) {
			free(o->data);
			o->data = NULL;
		}
		o->state = rc ? o->state : RP_REPAIRABLE;
		return rc;
	}
	pthread_mutex_lock(&c->wlock);
	const char *key = o->key;
	rc = mti_rp_lock(c, err);
	if (!rc)
		rc = mti_dlock_pin_keys(c->dlock, &key, 1, err);
	if (!rc)
		rc = mti_dlock_wait_gc(c->dlock, err);
	pthread_mutex_unlock(&c->wlock);
	if (!rc)
		rc = mti_store_put(c->s, o->key, o->data, (size_t)o->bytes, 0, err);
	free(o->data);
	o->data = NULL;
	void *back = NULL;
	uint64_t n = 0;
	char *why = NULL;
	if (!rc)
		rc = mti_rp_fetch(c->s, o->key, o->sha256, o->bytes, &back, &n, &why, err);
	if (rc == MT_ECORRUPT)
		rc = mti_err(err, rc, "%s@%s: %s: written back, it reads %s", c->dataset,
			    c->version, o->key, why ? why : "wrong");
	free(back);
	free(why);
	if (!rc)
		o->state = RP_REBUILT;
	return rc;
}

/* ---- source 1: another store holding the same bytes --------------------- */

static int source_job(void *ud, size_t i)
{
	rp_ctx *c = ud;
	rp_obj *o = &c->objs[c->from + i];
	if (o->state != RP_DAMAGED)
		return 0;
	for (size_t k = 0; k < c->nsrc; k++) {
		void *data = NULL;
		uint64_t n = 0;
		mt_error e = {0};
		int rc = mti_rp_source_fetch(c, k, o, &data, &n, &e);
		mti_rp_add_read(c, o, n);
		if (rc)
			continue; /* not there, damaged there too, or unreachable: the next */
		o->data = data;
		o->source = c->src[k].name;
		o->src = k + 1;
		rc = mti_rp_write_back(c, o, &e);
		return rc ? mti_rp_fail(c, rc, &e) : 0;
	}
	return 0;
}

/* ---- the version ------------------------------------------------------- */

static void rp_report(rp_ctx *c, const rp_obj *o)
{
	static const int states[] = {
		[RP_SOUND] = MT_REPAIR_SOUND, [RP_DAMAGED] = MT_REPAIR_UNREPAIRABLE,
		[RP_REPAIRABLE] = MT_REPAIR_REPAIRABLE, [RP_REBUILT] = MT_REPAIR_REBUILT,
	};
	c->st->objects++;
	c->st->damaged += o->state != RP_SOUND;
	c->st->rebuilt += o->state == RP_REBUILT;
	c->st->unrepairable += o->state == RP_DAMAGED;
	if (!c->o.report)
		return;
	mt_repair_report r = {
		.dataset = c->dataset, .version = c->version, .key = o->key, .kind = o->kind,
		.state = states[o->state], .source = o->source, .bytes_read = o->read,
		.number = o->number, .first_row = o->first_row, .rows = o->rows,
		.problem = o->problem,
	};
	c->o.report(c->o.report_ud, &r);
}

/* The first object left damaged, for the error. */
static int rp_result(rp_ctx *c, mt_error *err)
{
	for (size_t i = 0; i < c->nobjs; i++) {
		const rp_obj *o = &c->objs[i];
		if (o->state != RP_DAMAGED)
			continue;
		if (o->kind == MT_REPAIR_SHARD || o->kind == MT_REPAIR_FRAGMENT)
			return mti_err(err, MT_ECORRUPT, "%s@%s: %s %zu (rows %llu..%llu): %s: %s; "
				      "no store holds it and its parity cannot rebuild it",
				      c->dataset, c->version,
				      o->kind == MT_REPAIR_SHARD ? "shard" : "fragment", o->number,
				      (unsigned long long)o->first_row,
				      (unsigned long long)(o->first_row + o->rows - 1), o->key,
				      o->problem ? o->problem : "damaged");
		return mti_err(err, MT_ECORRUPT, "%s@%s: %s: %s; it cannot be rebuilt", c->dataset,
			      c->version, o->key, o->problem ? o->problem : "damaged");
	}
	return 0;
}

/* One pass: the objects of a kind (fragments, or shards) and their
 * groups' parity, checked, then the damaged ones rebuilt. */
static int rp_pass(rp_ctx *c, int kind, mt_error *err)
{
	c->from = c->nobjs;
	int rc = kind == MT_REPAIR_FRAGMENT ? rp_plan_frags(c, err) : rp_plan(c, err);
	if (!rc)
		rc = rp_check(c, err);
	if (!rc)
		rc = mti_parallel_for(c->o.threads, c->nobjs - c->from, source_job, c);
	if (!rc && kind == MT_REPAIR_SHARD)
		rc = mti_rp_container(c, err);
	c->gkind = kind;
	c->groups = !c->p ? NULL : kind == MT_REPAIR_FRAGMENT ? c->p->fgroups : c->p->groups;
	c->ngroups = !c->p ? 0 : kind == MT_REPAIR_FRAGMENT ? c->p->nfgroups : c->p->ngroups;
	if (!rc)
		rc = mti_rp_parity(c, err);
	else if (c->failed)
		mti_err_copy(err, &c->failure);
	/* Shards and full fragments are shared between versions: another
	 * version's record may hold them when this one's cannot. */
	if (!rc)
		rc = mti_rp_siblings(c, kind, err);
	return rc;
}

/* A fragment's bytes for mti_manifest_load_frags: those a dry run
 * rebuilt, else the store's. */
static int rp_frag_get(void *ud, const char *key, uint64_t max, void **data, size_t *len,
		       mt_error *err)
{
	rp_ctx *c = ud;
	int i = rp_find(c, key);
	const rp_obj *o = i < 0 ? NULL : &c->objs[i];
	if (!o || !o->data)
		return mti_store_get_fn(c->s, key, max, data, len, err);
	if (!(*data = malloc(o->bytes ? (size_t)o->bytes : 1)))
		return mti_err(err, MT_ENOMEM, "out of memory");
	memcpy(*data, o->data, (size_t)o->bytes);
	*len = (size_t)o->bytes;
	return 0;
}

/* A format-2 root's fragments that are sound now (or rebuilt) give their
 * shard entries; one left damaged leaves its shards unknown and
 * unchecked.  The record's shard members are then held against them. */
static int rp_load_frags(rp_ctx *c, mt_error *err)
{
	for (size_t i = 0; i < c->nobjs; i++) {
		const rp_obj *o = &c->objs[i];
		mt_error e = {0};
		if (o->kind != MT_REPAIR_FRAGMENT || o->state == RP_DAMAGED)
			continue;
		int rc = mti_manifest_load_frags(c->m, o->number, o->number + 1, rp_frag_get, c,
						 &e);
		if (rc == MT_ENOMEM)
			return mti_err_copy(err, &e);
	}
	mt_error e = {0};
	if (c->p && mti_prec_check_shards(c->p, c->m, c->robj.key ? c->robj.key : "record", &e))
		return mti_rp_record_damaged(c, &e, err);
	return 0;
}

/* Check every object of the version and rebuild the damaged ones: a
 * format-2 root's fragments first, as the shards are known from them. */
static int rp_objects(rp_ctx *c, mt_error *err)
{
	c->total = c->done = 0;
	int rc = c->m->nfrags ? rp_pass(c, MT_REPAIR_FRAGMENT, err) : 0;
	if (!rc && c->m->nfrags)
		rc = rp_load_frags(c, err);
	if (!rc)
		rc = rp_pass(c, MT_REPAIR_SHARD, err);
	return rc;
}

/* Whether every fragment of m is loaded (format 1: always). */
static int rp_whole(const mt_manifest *m)
{
	for (size_t i = 0; i < m->nfrags; i++)
		if (!m->frags[i].loaded)
			return 0;
	return 1;
}

/* What is left of a version beyond repair, written as its child; err
 * keeps what was lost (the salvage's reads clear the records they are
 * given).  A salvage keeps rows of known shards: every fragment is needed. */
static int rp_salvage(rp_ctx *c, mt_error *err)
{
	mt_error se = {0};
	int rc = 0;
	if (!rp_whole(c->m))
		mti_err_prefix(err, "no salvage (a fragment is lost: its shards are unknown): ");
	else if ((rc = mti_rp_salvage(c, &se)))
		mti_err_copy(err, &se);
	return rc;
}

static int rp_version(rp_ctx *c, const char *version, mt_error *err)
{
	c->version = version;
	int rc = mti_rp_manifest_find(c, err);
	int removed = rc == 1; /* a tombstone: nothing to repair */
	if (removed)
		rc = 0;
	else if (!rc && c->m)
		rc = rp_objects(c, err);
	if (!rc && !removed)
		rc = mti_rp_record_write(c, err);
	if (!rc && !removed)
		rc = mti_rp_manifest_write(c, err);
	for (size_t i = 0; !rc && i < c->nobjs; i++)
		rp_report(c, &c->objs[i]);
	if (!rc && c->robj.key)
		rp_report(c, &c->robj);
	if (!rc && !removed)
		rp_report(c, &c->mobj);
	int left = rc ? rc : rp_result(c, err);
	if (!left && c->mobj.state == RP_DAMAGED)
		left = mti_err(err, MT_ECORRUPT, "%s@%s: %s: %s; no store and no protection "
			      "record holds it", c->dataset, version, c->mobj.key,
			      c->mobj.problem ? c->mobj.problem : "damaged");
	if (left == MT_ECORRUPT && c->o.salvage && !c->o.dry_run && c->m)
		rc = rp_salvage(c, err);
	/* A record left damaged was reported unrepairable: the version's
	 * protection is lost, though its rows are all there. */
	if (!rc && !left && c->robj.key && c->robj.state == RP_DAMAGED)
		left = mti_err(err, MT_ECORRUPT, "%s@%s: %s: %s; no store holds a sound copy "
			      "(matorage protect writes a new one)", c->dataset, version,
			      c->robj.key, c->robj.problem ? c->robj.problem : "damaged");
	rp_objs_free(c);
	mti_rp_obj_clear(&c->mobj);
	mti_rp_obj_clear(&c->robj);
	free(c->rjson);
	c->rjson = NULL;
	c->mmissing = 0;
	mti_manifest_free(c->m);
	c->m = NULL;
	free(c->mjson);
	c->mjson = NULL;
	mti_prec_free(c->p);
	c->p = NULL;
	mti_dlock_close(c->dlock);
	c->dlock = NULL;
	mt_strv_free(c->held, c->nheld);
	c->held = NULL;
	c->nheld = 0;
	return rc ? rc : left;
}

/* What mt_repair and mt_repair_check_protection share: the options, the
 * names (version, when given, must be a version's own name) and the locks. */
static int rp_begin(rp_ctx *c, const mt_repair_opts *o, const char *version, mt_error *err)
{
	memset(c->st, 0, sizeof *c->st);
	mt_repair_opts_init(&c->o);
	int rc = o ? mti_opts_take(&c->o, sizeof c->o, o, REPAIR_OPTS_FIRST, "mt_repair_opts",
				   err)
		   : 0;
	if (!rc)
		rc = mt_name_check(c->dataset, "dataset", err);
	if (!rc && version)
		rc = mti_version_name_check(version, err);
	if (rc)
		return rc;
	if (c->o.threads <= 0)
		c->o.threads = DEFAULT_THREADS;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->wlock, NULL);
	return 0;
}

static void rp_end(rp_ctx *c)
{
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->wlock);
}

int mt_repair(mt_store *s, const char *dataset, const char *version, const mt_repair_opts *o,
	      mt_repair_stats *stats, mt_error *err)
{
	mt_repair_stats local;
	rp_ctx c = {.s = s, .dataset = dataset, .st = stats ? stats : &local};
	int latest = !version || !*version || !strcasecmp(version, "latest");
	int rc = rp_begin(&c, o, latest ? NULL : version, err);
	if (rc)
		return rc;
	char **vers = NULL;
	size_t nvers = 0;
	rc = mti_rp_sources_open(&c, err);
	if (!rc)
		rc = mti_rp_versions(&c, version, &vers, &nvers, err);
	/* Every version is repaired; the first one left damaged is the error. */
	int worst = 0;
	for (size_t v = 0; !rc && v < nvers; v++) {
		mt_error e = {0};
		int vrc = rp_version(&c, vers[v], &e);
		if (vrc && vrc != MT_ECORRUPT)
			rc = mti_err_copy(err, &e);
		else if (vrc && !worst) {
			mti_err_copy(err, &e);
			worst = vrc;
		}
	}
	mt_strv_free(vers, nvers);
	mti_rp_sources_close(&c);
	rp_end(&c);
	return rc ? rc : worst;
}

int mt_repair_check_protection(mt_store *s, const char *dataset, const char *version,
			       const mt_repair_opts *o, mt_repair_stats *stats, mt_error *err)
{
	mt_repair_stats local;
	rp_ctx c = {.s = s, .dataset = dataset, .version = version,
		    .st = stats ? stats : &local};
	if (!version)
		return mti_err(err, MT_EINVAL, "%s: which version's protection to check?", dataset);
	int rc = rp_begin(&c, o, version, err);
	if (rc)
		return rc;
	rc = mti_rp_record_load(&c, err);
	/* No manifest: parity objects alone, of every group. */
	if (!rc && c.p)
		rc = rp_plan_parity(&c, c.p->groups, c.p->ngroups, err);
	if (!rc && c.p)
		rc = rp_plan_parity(&c, c.p->fgroups, c.p->nfgroups, err);
	if (!rc)
		rc = rp_check(&c, err);
	for (size_t i = 0; !rc && i < c.nobjs; i++)
		rp_report(&c, &c.objs[i]);
	if (!rc && c.robj.key)
		rp_report(&c, &c.robj);
	for (size_t i = 0; !rc && i < c.nobjs; i++)
		if (c.objs[i].state == RP_DAMAGED)
			rc = mti_err(err, MT_ECORRUPT, "%s@%s: parity object %s of group %zu: %s",
				     dataset, version, c.objs[i].key, c.objs[i].number,
				     c.objs[i].problem ? c.objs[i].problem : "damaged");
	if (!rc && c.robj.key)
		rc = mti_err(err, MT_ECORRUPT, "%s@%s: %s: %s", dataset, version, c.robj.key,
			     c.robj.problem);
	rp_objs_free(&c);
	mti_rp_obj_clear(&c.robj);
	mti_prec_free(c.p);
	rp_end(&c);
	return rc;
}
