/* copy.c — copy dataset versions between stores, shards first, manifest last. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "dataset.h"
#include "lock.h"
#include "pool.h"
#include "protect.h"

/* Shards are streamed through in pieces this big: memory stays at
 * threads x PIECE whatever the shard size, and S3 gets multipart uploads. */
#define PIECE_BYTES (8u << 20)
#define DEFAULT_THREADS 8

typedef struct copy_shard {
	char *key;
	const char *sha256;
	uint64_t bytes;
	int missing; /* dst lacks it (or holds an object of another size) */
	int parity;  /* a parity object, not a shard */
} copy_shard;

typedef struct copy_ctx {
	mt_store *src, *dst;
	mt_progress_fn progress;
	void *ud;
	mt_copy_stats *st;
	pthread_mutex_t lock;
	uint64_t done, total; /* bytes sent / to send, over the whole copy */
	int canceled;
	mt_error failure;
	int failed;
	copy_shard *shards;
	size_t nshards;
	mt_dlock *dlock; /* on the dataset in dst: pins what the copy reuses or sends */
	int last;        /* the version being copied is the last of its dataset's */
} copy_ctx;

/* Keep the first error any worker hit; return its code. */
static int copy_fail(copy_ctx *c, int rc, const mt_error *e)
{
	pthread_mutex_lock(&c->lock);
	if (!c->failed) {
		c->failed = 1;
		mti_err_copy(&c->failure, e);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int head_job(void *ud, size_t i)
{
	copy_ctx *c = ud;
	copy_shard *sh = &c->shards[i];
	mt_error e = {0};
	uint64_t size = 0;
	int rc = c->dst->ops->head(c->dst, sh->key, &size, NULL, &e);
	if (rc == MT_ENOTFOUND) {
		sh->missing = 1;
		return 0;
	}
	if (rc)
		return copy_fail(c, rc, &e);
	/* Same name, same size: the same bytes, since the name is their hash.
	 * Another size is a damaged or partial object; replace it. */
	sh->missing = size != sh->bytes;
	return 0;
}

/* Report progress; nonzero when the caller asked to stop. */
static int copy_tick(copy_ctx *c, uint64_t n)
{
	pthread_mutex_lock(&c->lock);
	c->done += n;
	if (!c->canceled && c->progress && c->progress(c->ud, c->done, c->total))
		c->canceled = 1;
	int stop = c->canceled;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

static int send_job(void *ud, size_t i)
{
	copy_ctx *c = ud;
	copy_shard *sh = &c->shards[i];
	if (!sh->missing)
		return 0;
	mt_error e = {0};
	mt_upload *u = NULL;
	mt_sha256 *h = NULL;
	size_t cap = sh->bytes < PIECE_BYTES ? (size_t)sh->bytes : PIECE_BYTES;
	void *buf = malloc(cap ? cap : 1);
	int rc = buf ? mti_sha256_new(&h, &e) : mti_err(&e, MT_ENOMEM, "copy: out of memory");
	if (!rc)
		rc = c->dst->ops->upload_open(c->dst, sh->key, MT_PUT_NOSYNC, &u, &e);
	for (uint64_t off = 0; !rc && off < sh->bytes;) {
		size_t n = sh->bytes - off < cap ? (size_t)(sh->bytes - off) : cap;
		rc = c->src->ops->read(c->src, sh->key, off, buf, n, &e);
		if (!rc)
			rc = mti_sha256_update(h, buf, n, &e);
		if (!rc)
			rc = c->dst->ops->upload_write(u, buf, n, &e);
		off += n;
		if (!rc && copy_tick(c, n))
			rc = mti_err(&e, MT_ECANCELED, "copy canceled");
	}
	char got[MT_SHA256_HEX];
	if (!rc && !(rc = mti_sha256_final(h, got, &e)) && strcmp(got, sh->sha256) != 0)
		rc = mti_err(&e, MT_ECORRUPT,
			    "%s in %s: sha256 is %s, not the %s its name promises (the source is "
			    "damaged; run verify there)",
			    sh->key, mt_store_url(c->src), got, sh->sha256);
	if (!rc) {
		/* Commit frees the upload whatever it returns. */
		rc = c->dst->ops->upload_commit(u, &e);
		u = NULL;
	}
	if (u)
		c->dst->ops->upload_abort(u);
	mti_sha256_free(h);
	free(buf);
	if (rc)
		return copy_fail(c, rc, &e);
	pthread_mutex_lock(&c->lock);
	c->st->shards++;
	c->st->parity += (uint64_t)sh->parity;
	c->st->bytes += sh->bytes;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static void shards_free(copy_ctx *c)
{
	for (size_t i = 0; i < c->nshards; i++)
		free(c->shards[i].key);
	free(c->shards);
	c->shards = NULL;
	c->nshards = 0;
}

/* The manifest at key in dst: 1 when it is byte-for-byte `json`, 0 when
 * absent, MT_EEXIST (with the error filled) when it differs. */
static int dst_manifest_same(copy_ctx *c, const char *key, const char *what, const char *json,
			     size_t len, mt_error *err)
{
	int rc = mti_store_holds(c->dst, key, json, len, err);
	if (rc != MT_EEXIST)
		return rc;
	return mti_err(err, MT_EEXIST,
		      "%s already exists in %s with different content (remove it there or copy "
		      "under another version name)",
		      what, mt_store_url(c->dst));
}

/* A small object that goes with a version.  Its recipe is content-addressed,
 * so one dst holds already is kept.  Its edited description and tags are
 * absent until edited and go over dst's, which may predate an edit. */
static int copy_aside(copy_ctx *c, char *key, int content_addressed, mt_error *err)
{
	if (!key)
		return mti_err(err, MT_ENOMEM, "copy: out of memory");
	void *data = NULL;
	size_t len = 0;
	mt_error e = {0};
	int rc = 0;
	if (!content_addressed || c->dst->ops->head(c->dst, key, NULL, NULL, &e) != 0) {
		rc = c->src->ops->get(c->src, key, 0, UINT64_MAX, &data, &len, &e);
		if (rc == MT_ENOTFOUND && !content_addressed)
			rc = 0;
		else if (rc)
			mti_err_copy(err, &e);
		else
			rc = c->dst->ops->put(c->dst, key, data, len, 0, err);
	}
	free(data);
	free(key);
	return rc;
}

static int copy_meta(copy_ctx *c, const char *dataset, const char *version, mt_error *err)
{
	return copy_aside(c, mti_key_meta(dataset, version), 0, err);
}

/* An attached file, unless dst holds it: checked against its size and
 * sha256 before it is sent, so a damaged one is not spread. */
static int copy_attachment(copy_ctx *c, const mt_manifest *m, const mt_mattach *a, mt_error *err)
{
	char *key = mti_key_attachment(m->dataset, a->sha256);
	if (!key)
		return mti_err(err, MT_ENOMEM, "copy: out of memory");
	void *data = NULL;
	size_t len = 0;
	uint64_t have = 0;
	char sha[MT_SHA256_HEX];
	mt_error e = {0};
	int rc = 0;
	if (c->dst->ops->head(c->dst, key, &have, NULL, &e) != 0 || have != a->bytes) {
		rc = mti_store_get_max(c->src, key, a->bytes, &data, &len, err);
		if (!rc && len != a->bytes)
			rc = mti_err(err, MT_ECORRUPT, "%s: attachment %s is %zu bytes, the manifest "
				    "says %llu", key, a->name, len, (unsigned long long)a->bytes);
		if (!rc)
			rc = mti_sha256_hex(data, len, sha, err);
		if (!rc && strcmp(sha, a->sha256))
			rc = mti_err(err, MT_ECORRUPT, "%s: attachment %s has sha256 %s, the "
				    "manifest says %s", key, a->name, sha, a->sha256);
		if (!rc)
			rc = c->dst->ops->put(c->dst, key, data, len, 0, err);
	}
	free(data);
	free(key);
	return rc;
}

/* The recipe, the attachments, and a format-2 version's fragments
 * (content-addressed, each checked against the root when the source's
 * manifest was loaded). */
static int copy_recipe(copy_ctx *c, const mt_manifest *m, mt_error *err)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < m->nfrags; i++)
		rc = copy_aside(c, mti_key_fragment(m->dataset, m->frags[i].sha256), 1, err);
	if (!rc && m->recipe[0])
		rc = copy_aside(c, mti_key_recipe(m->dataset, m->recipe), 1, err);
	for (size_t i = 0; !rc && i < m->nattachments; i++)
		rc = copy_attachment(c, m, &m->attachments[i], err);
	return rc;
}

/* Pin every object the version names in dst before looking for them
 * there: a gc in dst must not delete a shard the copy found and skipped.
 * One that may have missed the pin is waited for (doc/FORMAT.md). */
static int copy_pin(copy_ctx *c, const char *dataset, const mt_manifest *m, mt_error *err)
{
	int rc = c->dlock ? 0 : mti_dlock_open(c->dst, dataset, MT_LOCK_WRITE, &c->dlock, err);
	size_t nf = m->nfrags + m->nattachments;
	const char **keys = rc ? NULL : malloc((c->nshards + nf + 1) * sizeof *keys);
	char **frags = rc ? NULL : calloc(nf + 1, sizeof *frags);
	char *recipe = m->recipe[0] ? mti_key_recipe(dataset, m->recipe) : NULL;
	if (!rc && (!keys || !frags || (m->recipe[0] && !recipe)))
		rc = mti_err(err, MT_ENOMEM, "copy: out of memory");
	size_t n = 0;
	for (size_t i = 0; !rc && i < c->nshards; i++)
		keys[n++] = c->shards[i].key;
	for (size_t i = 0; !rc && i < nf; i++)
		if (!(keys[n++] = frags[i] = i < m->nfrags
				     ? mti_key_fragment(dataset, m->frags[i].sha256)
				     : mti_key_attachment(dataset, m->attachments[i - m->nfrags].sha256)))
			rc = mti_err(err, MT_ENOMEM, "copy: out of memory");
	if (!rc && recipe)
		keys[n++] = recipe;
	if (!rc)
		rc = mti_dlock_pin_keys(c->dlock, keys, n, err);
	if (!rc)
		rc = mti_dlock_wait_gc(c->dlock, err);
	mt_strv_free(frags, frags ? nf : 0);
	free(keys);
	free(recipe);
	return rc;
}

/* The distinct shards of m (a shard may repeat within a version; it is
 * looked for and sent once, in the order of its first entry) into
 * c->shards. */
static int copy_plan(copy_ctx *c, const char *dataset, const mt_manifest *m, mt_error *err)
{
	size_t *first = NULL;
	int rc = mti_shard_firsts(m->shards, m->nshards, 0, &first, err);
	if (!rc && m->nshards && !(c->shards = calloc(m->nshards, sizeof *c->shards)))
		rc = mti_err(err, MT_ENOMEM, "copy: out of memory");
	for (size_t i = 0; !rc && i < m->nshards; i++) {
		if (first[i] != i)
			continue;
		copy_shard *sh = &c->shards[c->nshards];
		if (!(sh->key = mti_key_shard(dataset, m->shards[i].sha256)))
			rc = mti_err(err, MT_ENOMEM, "copy: out of memory");
		sh->sha256 = m->shards[i].sha256;
		sh->bytes = m->shards[i].bytes;
		c->nshards += !rc;
	}
	free(first);
	return rc;
}

/* A version's protection record in src, to carry along when dst has none. */
typedef struct copy_rec {
	char *key;
	void *json;
	size_t len;
	mti_prec *p; /* NULL: nothing to carry */
} copy_rec;

static void copy_rec_free(copy_rec *r)
{
	free(r->key);
	free(r->json);
	mti_prec_free(r->p);
}

/* The source's record of the version whose manifest text is `manifest`,
 * when it has one and dst does not. */
static int copy_rec_source(copy_ctx *c, const char *dataset, const char *version,
			   const void *manifest, size_t mlen, copy_rec *r, mt_error *err)
{
	mt_error e = {0};
	if (!(r->key = mti_key_protect(dataset, version)))
		return mti_err(err, MT_ENOMEM, "copy: out of memory");
	int rc = c->src->ops->get(c->src, r->key, 0, UINT64_MAX, &r->json, &r->len, &e);
	if (rc == MT_ENOTFOUND)
		return 0;
	if (rc)
		return mti_err_copy(err, &e);
	if ((rc = mti_prec_decode(r->json, r->len, r->key, &r->p, err)))
		return mti_err_prefix(err, "in %s: ", mt_store_url(c->src));
	if (r->p->manifest_len != mlen || memcmp(r->p->manifest, manifest, mlen) != 0)
		return mti_err(err, MT_ECORRUPT, "%s in %s protects another manifest than "
			      "%s@%s's", r->key, mt_store_url(c->src), dataset, version);
	rc = c->dst->ops->head(c->dst, r->key, NULL, NULL, &e);
	if (rc == 0 || rc == MT_ENOTFOUND) {
		if (rc == 0) {
			mti_prec_free(r->p);
			r->p = NULL;
		}
		return 0;
	}
	return mti_err_copy(err, &e);
}

/* The record's parity objects join the objects to send: content-addressed
 * like shards, they are checked and skipped the same way. */
static int copy_plan_parity(copy_ctx *c, const char *dataset, const mti_prec *p, mt_error *err)
{
	size_t n = mti_prec_nparity(p); /* a format-2 record's fragment groups' too */
	copy_shard *sh = realloc(c->shards, (c->nshards + n + 1) * sizeof *sh);
	if (!sh)
		return mti_err(err, MT_ENOMEM, "copy: out of memory");
	c->shards = sh;
	for (size_t i = 0; i < n; i++) {
		const mti_pparity *pp = mti_prec_parity(p, i);
		copy_shard *to = &c->shards[c->nshards];
		memset(to, 0, sizeof *to);
		if (!(to->key = mti_key_parity(dataset, pp->sha256)))
			return mti_err(err, MT_ENOMEM, "copy: out of memory");
		to->sha256 = pp->sha256;
		to->bytes = pp->bytes;
		to->parity = 1;
		c->nshards++;
	}
	return 0;
}

/* After the manifest: a version is protected in dst once its record is. */
static int copy_rec_commit(copy_ctx *c, const copy_rec *r, mt_error *err)
{
	int rc = mti_dlock_pin_keys(c->dlock, (const char *const *)&r->key, 1, err);
	if (!rc)
		rc = mti_dlock_wait_gc(c->dlock, err);
	if (!rc)
		rc = mti_dlock_check(c->dlock, err);
	if (!rc)
		rc = c->dst->ops->put(c->dst, r->key, r->json, r->len, MT_PUT_EXCLUSIVE, err);
	/* Another copy or protect got there first. */
	return rc == MT_EEXIST ? 0 : rc;
}

/* Send the shards dst lacks, and make them durable there. */
static int copy_send(copy_ctx *c, int threads, mt_error *err)
{
	int rc = mti_parallel_for(threads, c->nshards, head_job, c);
	if (!rc) {
		for (size_t i = 0; i < c->nshards; i++) {
			if (c->shards[i].missing) {
				c->total += c->shards[i].bytes;
			} else {
				c->st->shards_present++;
				c->st->parity_present += (uint64_t)c->shards[i].parity;
				c->st->bytes_present += c->shards[i].bytes;
			}
		}
		rc = mti_parallel_for(threads, c->nshards, send_job, c);
	}
	if (rc && c->failed)
		mti_err_copy(err, &c->failure);
	if (rc)
		return rc;
	const char **keys = malloc((c->nshards + 1) * sizeof *keys);
	size_t n = 0;
	for (size_t i = 0; keys && i < c->nshards; i++)
		if (c->shards[i].missing)
			keys[n++] = c->shards[i].key;
	rc = keys ? c->dst->ops->sync(c->dst, keys, n, err)
		  : mti_err(err, MT_ENOMEM, "copy: out of memory");
	free(keys);
	return rc;
}

/* The commit point: only now does dst show the version. */
static int copy_commit(copy_ctx *c, const mt_manifest *m, const char *key, const char *what,
		       const char *json, size_t len, mt_error *err)
{
	int rc = mti_dlock_check(c->dlock, err);
	/* The order marker first, as a writer's (doc/FORMAT.md, "Order markers"). */
	int marked = !rc && !(rc = mti_dataset_mark(c->dst, m->dataset, m->version, m->created, err));
	if (!rc)
		rc = c->dst->ops->put(c->dst, key, json, len, MT_PUT_EXCLUSIVE, err);
	if (rc == MT_EEXIST) {
		/* Someone else copied it meanwhile: fine if it is the same. */
		int same = dst_manifest_same(c, key, what, json, len, err);
		rc = same == 1 ? 0 : same ? same : MT_EEXIST;
	}
	/* Another manifest took the name: its marker is the one that stays. */
	if (rc && marked)
		mti_dataset_unmark(c->dst, m->dataset, m->version, m->created);
	if (!rc)
		c->st->versions++;
	/* Versions go over oldest first: the last one copied is the head (the
	 * ones before it would each be overwritten at once). */
	if (!rc && c->last)
		mti_dataset_put_head(c->dst, m->dataset, json, len);
	return rc;
}

/* The source's manifest (decoded: it is checked before anything is sent
 * on its word), and whether dst has it: 1 the same, 0 not, or an error
 * (another one there, or the name removed there). */
static int copy_source(copy_ctx *c, const char *dataset, const char *version, const char *key,
		       const char *what, void **json, size_t *len, mt_manifest **m, mt_error *err)
{
	int rc = mti_store_get_max(c->src, key, MT_MANIFEST_MAX_BYTES, json, len, err);
	if (rc == MT_ENOTFOUND)
		return mti_err(err, MT_ENOTFOUND, "%s: no such version in %s", what,
			      mt_store_url(c->src));
	if (!rc)
		rc = mti_manifest_decode(*json, *len, key, m, err);
	if (!rc)
		rc = mti_manifest_load_frags(*m, 0, (*m)->nfrags, mti_store_get_fn, c->src, err);
	int same = rc ? rc : dst_manifest_same(c, key, what, *json, *len, err);
	/* A name removed in dst stays removed there. */
	if (same == 0 && (rc = mti_dataset_removed(c->dst, dataset, version, err)))
		return rc;
	return same;
}

static int copy_version(copy_ctx *c, int threads, const char *dataset, const char *version,
			mt_error *err)
{
	char *key = mti_key_manifest(dataset, version);
	char *what = mti_asprintf("%s@%s", dataset, version);
	void *json = NULL;
	size_t len = 0;
	mt_manifest *m = NULL;
	int rc = key && what ? 0 : mti_err(err, MT_ENOMEM, "copy: out of memory");
	int same = rc ? rc : copy_source(c, dataset, version, key, what, &json, &len, &m, err);
	rc = same < 0 ? same : 0;
	if (same == 1)
		c->st->versions_present++;
	copy_rec rec = {0};
	if (!rc && same >= 0)
		rc = copy_rec_source(c, dataset, version, json, len, &rec, err);
	/* A manifest already in dst does not mean its shards are: one may have
	 * been lost or cut short there since.  Each is looked for (a HEAD) and
	 * the missing ones are sent, so a copy from a good store mends dst. */
	if (!rc)
		rc = copy_plan(c, dataset, m, err);
	if (!rc && rec.p)
		rc = copy_plan_parity(c, dataset, rec.p, err);
	if (!rc) {
		rc = copy_pin(c, dataset, m, err);
		if (!rc)
			rc = copy_send(c, threads, err);
		if (!rc)
			rc = copy_recipe(c, m, err);
	}
	if (!rc && same == 0)
		rc = copy_commit(c, m, key, what, json, len, err);
	if (!rc && rec.p)
		rc = copy_rec_commit(c, &rec, err);
	copy_rec_free(&rec);
	if (!rc)
		rc = copy_meta(c, dataset, version, err);
	if (rc && rc != MT_EEXIST && rc != MT_ENOTFOUND && what)
		mti_err_prefix(err, "copying %s to %s: ", what, mt_store_url(c->dst));
	shards_free(c);
	mti_manifest_free(m);
	free(json);
	free(key);
	free(what);
	return rc;
}

int mt_copy(mt_store *src, mt_store *dst, const char *dataset, const char *version, int threads,
	    mt_progress_fn progress, void *ud, mt_copy_stats *stats, mt_error *err)
{
	mt_copy_stats local;
	copy_ctx c = {.src = src, .dst = dst, .progress = progress, .ud = ud,
		      .st = stats ? stats : &local};
	memset(c.st, 0, sizeof *c.st);
	if (!src || !dst)
		return mti_err(err, MT_EINVAL, "copy: no source or destination store");
	if (version && !dataset)
		return mti_err(err, MT_EINVAL, "copy: a version needs a dataset");
	if (threads <= 0)
		threads = DEFAULT_THREADS;
	pthread_mutex_init(&c.lock, NULL);
	char **names = NULL;
	size_t nnames = 0;
	int rc = 0;
	if (dataset) {
		names = calloc(1, sizeof *names);
		if (!names || !(names[0] = mti_strdup(dataset)))
			rc = mti_err(err, MT_ENOMEM, "copy: out of memory");
		nnames = names ? 1 : 0;
	} else {
		rc = mt_store_datasets(src, &names, &nnames, err);
	}
	for (size_t d = 0; !rc && d < nnames; d++) {
		char **vers = NULL;
		size_t nvers = 0;
		int latest = version && (!*version || strcmp(version, "latest") == 0);
		if (version && !latest) {
			vers = calloc(1, sizeof *vers);
			if (!vers || !(vers[0] = mti_strdup(version)))
				rc = mti_err(err, MT_ENOMEM, "copy: out of memory");
			nvers = vers ? 1 : 0;
		} else {
			rc = mt_store_versions(src, names[d], &vers, &nvers, err);
		}
		/* "latest" is the newest version only. */
		size_t first = latest && nvers ? nvers - 1 : 0;
		/* Oldest first: a parent lands before the versions appended to it. */
		for (size_t v = first; !rc && v < nvers; v++) {
			c.last = v + 1 == nvers;
			rc = copy_version(&c, threads, names[d], vers[v], err);
		}
		mti_dlock_close(c.dlock);
		c.dlock = NULL;
		mt_strv_free(vers, nvers);
	}
	mt_strv_free(names, nnames);
	pthread_mutex_destroy(&c.lock);
	return rc;
}
