/* ckpt-admin.c — looking after models: verify their tensors, collect unreferenced ones, copy checkpoints between stores. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "codec.h"
#include "lock.h"
#include "pool.h"

/* The checkpoints to work on: `version`, or every one (oldest first). */
static int pick_versions(mt_store *s, const char *name, const char *version, char ***v,
			 size_t *n, mt_error *err)
{
	int rc = mt_name_check(name, "model", err);
	if (rc)
		return rc;
	if (!version)
		return mt_ckpt_list(s, name, v, n, err);
	*v = NULL;
	*n = 0;
	return mti_strv_push(v, n, version, strlen(version)) ? mti_err(err, MT_ENOMEM, "out of memory")
							     : 0;
}

static int open_version(mt_store *s, const char *name, const char *version, mt_ckpt **c,
			mt_error *err)
{
	char *spec = mti_asprintf("%s@%s", name, version);
	int rc = spec ? mt_ckpt_open(s, spec, c, err) : mti_err(err, MT_ENOMEM, "out of memory");
	free(spec);
	return rc;
}

/* ---- verify ------------------------------------------------------------- */

struct vobj {
	const char *version;
	mt_ckpt_tensor_info t;
	char *key;
};

struct verify {
	mt_store *s;
	const char *name;
	struct vobj *o;
	size_t n;
	pthread_mutex_t mu;
	mt_ckpt_bad_fn fn;
	void *ud;
	mt_error first;
	uint64_t nbad;
};

static int verify_one(void *ud, size_t i)
{
	struct verify *v = ud;
	struct vobj *o = &v->o[i];
	mt_error e = {0};
	void *z = NULL, *raw = malloc(o->t.bytes ? (size_t)o->t.bytes : 1);
	size_t zlen = 0;
	char sha[MT_SHA256_HEX];
	int rc = raw ? mti_store_get(v->s, o->key, 0, UINT64_MAX, &z, &zlen, &e)
		     : mti_err(&e, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_zstd_decompress(z, zlen, raw, (size_t)o->t.bytes, &e);
	if (!rc)
		rc = mti_sha256_hex(raw, (size_t)o->t.bytes, sha, &e);
	if (!rc && strcmp(sha, o->t.sha256))
		rc = mti_err(&e, MT_ECORRUPT, "its bytes hash to %s", sha);
	free(z);
	free(raw);
	if (rc == MT_ENOMEM)
		return rc;
	if (rc) {
		pthread_mutex_lock(&v->mu);
		if (!v->nbad++)
			mti_err(&v->first, MT_ECORRUPT, "%s@%s: tensor '%s' (%s): %s", v->name,
				o->version, o->t.key, o->key, e.message);
		if (v->fn)
			v->fn(v->ud, o->version, o->t.key, o->key, e.message);
		pthread_mutex_unlock(&v->mu);
	}
	return 0;
}

static int verify_collect(struct verify *v, mt_ckpt *c, const char *version, mt_error *err)
{
	size_t nt = mt_ckpt_ntensors(c);
	struct vobj *o = realloc(v->o, (v->n + nt + 1) * sizeof *o);
	if (!o)
		return mti_err(err, MT_ENOMEM, "out of memory");
	v->o = o;
	for (size_t i = 0; i < nt; i++) {
		mt_ckpt_tensor_info t;
		mt_ckpt_tensor(c, i, &t, NULL);
		int seen = 0;
		/* One check per object, whichever checkpoints share it. */
		for (size_t j = 0; j < v->n && !seen; j++)
			seen = !strcmp(v->o[j].t.sha256, t.sha256);
		if (seen)
			continue;
		o[v->n] = (struct vobj){.version = version, .t = t,
					.key = mti_ckpt_key_tensor(v->name, t.sha256)};
		if (!o[v->n++].key)
			return mti_err(err, MT_ENOMEM, "out of memory");
	}
	return 0;
}

int mt_ckpt_verify(mt_store *s, const char *name, const char *version, int threads,
		   mt_ckpt_bad_fn fn, void *ud, uint64_t *nchecked, mt_error *err)
{
	char **v = NULL;
	size_t n = 0;
	int rc = pick_versions(s, name, version, &v, &n, err);
	struct verify st = {.s = s, .name = name, .fn = fn, .ud = ud};
	mt_ckpt **open = rc ? NULL : calloc(n + 1, sizeof *open);
	if (!rc && !open)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	pthread_mutex_init(&st.mu, NULL);
	for (size_t i = 0; !rc && i < n; i++) {
		rc = open_version(s, name, v[i], &open[i], err);
		if (!rc)
			rc = verify_collect(&st, open[i], v[i], err);
	}
	if (!rc)
		rc = mti_parallel_for(threads > 0 ? threads : mti_ncpus(), st.n, verify_one, &st);
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "model %s: verify: out of memory", name);
	if (!rc && st.nbad)
		rc = mti_err_copy(err, &st.first);
	if (nchecked)
		*nchecked = st.n;
	for (size_t i = 0; i < st.n; i++)
		free(st.o[i].key);
	free(st.o);
	for (size_t i = 0; open && i < n; i++)
		mt_ckpt_close(open[i]);
	free(open);
	mt_strv_free(v, n);
	pthread_mutex_destroy(&st.mu);
	return rc;
}

/* ---- gc ----------------------------------------------------------------- */

struct gc {
	mt_store *s;
	char **ref; /* sorted object keys checkpoints name */
	size_t nref;
	char **doomed;
	size_t ndoomed;
	const mt_pins *pins;
	int64_t cutoff;
	char *const *only; /* sorted: the objects to consider; NULL: every one */
	size_t nonly;
	uint64_t nobjects, nbytes;
	mt_gc_fn fn;
	void *ud;
};

/* Whether a key under tensors/ is a tensor's, named by 64 lowercase hex
 * digits: gc leaves any other name there, it is not its own. */
static int gc_tensor_name(const char *key)
{
	const char *name = strrchr(key, '/');
	name = name ? name + 1 : key;
	return strlen(name) == 64 && strspn(name, "0123456789abcdef") == 64 &&
	       strstr(key, "/tensors/") == name - strlen("/tensors/");
}

static int gc_consider(void *ud, const mt_obj *o)
{
	struct gc *g = ud;
	const char *k = o->key;
	if (!gc_tensor_name(k))
		return 0;
	if (g->only && !bsearch(&k, g->only, g->nonly, sizeof *g->only, mti_strp_cmp))
		return 0;
	if (!mti_gc_may_delete(o, g->ref, g->nref, g->cutoff, g->pins))
		return 0;
	g->nobjects++;
	g->nbytes += o->size;
	if (g->fn)
		g->fn(g->ud, k, o->size);
	return mti_strv_push(&g->doomed, &g->ndoomed, k, strlen(k));
}

/* Every tensor object a checkpoint of `name` names.  A manifest that cannot
 * be read stops the gc: what it names is unknown. */
static int gc_mark(struct gc *g, const char *name, mt_error *err)
{
	char **v = NULL;
	size_t n = 0;
	int rc = mti_ckpt_versions(g->s, name, &v, &n, NULL, err);
	for (size_t i = 0; !rc && i < n; i++) {
		mt_ckpt *c = NULL;
		rc = open_version(g->s, name, v[i], &c, err);
		for (size_t j = 0; !rc && j < mt_ckpt_ntensors(c); j++) {
			mt_ckpt_tensor_info t;
			mt_ckpt_tensor(c, j, &t, NULL);
			char *k = mti_ckpt_key_tensor(name, t.sha256);
			rc = k ? mti_strv_push(&g->ref, &g->nref, k, strlen(k)) : MT_ENOMEM;
			free(k);
		}
		mt_ckpt_close(c);
	}
	mt_strv_free(v, n);
	if (rc == MT_ENOMEM)
		return mti_err(err, rc, "model %s: gc: out of memory", name);
	if (g->nref)
		qsort(g->ref, g->nref, sizeof(char *), mti_strp_cmp);
	return rc;
}

static int gc_model(struct gc *g, const char *name, int dry_run, uint64_t grace, mt_error *err)
{
	mt_dlock *lock = NULL;
	mt_pins pins = {0};
	char *root = mti_ckpt_root(name), *tdir = mti_asprintf("models/%s/tensors/", name);
	char *dir = mti_asprintf("models/%s/", name);
	int rc = root && tdir && dir ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc && !dry_run)
		rc = mti_dlock_open(g->s, root, MT_LOCK_GC, &lock, err);
	if (!rc)
		rc = mti_dlock_pins(g->s, root, lock, &pins, err);
	g->pins = &pins;
	g->cutoff = pins.now - (int64_t)(grace > INT32_MAX ? INT32_MAX : grace);
	if (!rc)
		rc = gc_mark(g, name, err);
	if (!rc)
		rc = mti_store_list_all(g->s, tdir, gc_consider, g, err);
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "model %s: gc: out of memory", name);
	if (!rc && !dry_run && g->ndoomed)
		rc = mti_store_del(g->s, (const char *const *)g->doomed, g->ndoomed, err);
	uint64_t sn = 0, sb = 0;
	/* A live writer's own unfinished uploads may be among the abandoned; a
	 * reclaim after retention looks at its own objects only. */
	if (!rc && !pins.writers && !g->only)
		rc = g->s->ops->sweep(g->s, dir, g->cutoff + 1, dry_run, &sn, &sb, err);
	g->nobjects += sn;
	g->nbytes += sb;
	if (!rc && !dry_run && pins.ndead)
		rc = mti_store_del(g->s, (const char *const *)pins.dead, pins.ndead, err);
	mti_dlock_close(lock);
	mti_pins_free(&pins);
	mt_strv_free(g->ref, g->nref);
	mt_strv_free(g->doomed, g->ndoomed);
	g->ref = g->doomed = NULL;
	g->nref = g->ndoomed = 0;
	free(root);
	free(tdir);
	free(dir);
	return rc;
}

struct dirs {
	char **v;
	size_t n;
};

static int collect_dir(void *ud, const mt_obj *o)
{
	struct dirs *d = ud;
	char *m;
	int rc = mti_prefix_child(o, "models/", &m);
	if (!rc && m && !mt_name_check(m, "model", NULL))
		rc = mti_strv_push(&d->v, &d->n, m, strlen(m));
	free(m);
	return rc;
}

int mt_ckpt_gc(mt_store *s, const char *name, int dry_run, uint64_t grace_seconds, mt_gc_fn fn,
	       void *ud, uint64_t *nobjects, uint64_t *nbytes, mt_error *err)
{
	struct gc g = {.s = s, .fn = fn, .ud = ud};
	struct dirs d = {0};
	int rc = 0;
	if (name) {
		rc = mt_name_check(name, "model", err);
		if (!rc)
			rc = mti_strv_push(&d.v, &d.n, name, strlen(name));
	} else {
		/* Every model directory: also those whose checkpoints are all gone. */
		rc = mti_store_list_prefixes(s, "models/", collect_dir, &d, err);
	}
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "out of memory");
	for (size_t i = 0; !rc && i < d.n; i++)
		rc = gc_model(&g, d.v[i], dry_run, grace_seconds, err);
	mt_strv_free(d.v, d.n);
	if (nobjects)
		*nobjects = g.nobjects;
	if (nbytes)
		*nbytes = g.nbytes;
	return rc;
}

int mti_ckpt_tensor_keys(mt_store *s, const char *name, const char *version, char ***keys,
			 size_t *n, mt_error *err)
{
	mt_ckpt *c = NULL;
	int rc = open_version(s, name, version, &c, err);
	for (size_t j = 0; !rc && j < mt_ckpt_ntensors(c); j++) {
		mt_ckpt_tensor_info t;
		mt_ckpt_tensor(c, j, &t, NULL);
		char *k = mti_ckpt_key_tensor(name, t.sha256);
		if (!k || mti_strv_push(keys, n, k, strlen(k)))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
		free(k);
	}
	mt_ckpt_close(c);
	return rc;
}

int mti_ckpt_reclaim(mt_store *s, const char *name, char **keys, size_t n, mt_error *err)
{
	if (!n)
		return 0;
	qsort(keys, n, sizeof *keys, mti_strp_cmp);
	struct gc g = {.s = s, .only = keys, .nonly = n};
	return gc_model(&g, name, 0, 0, err);
}

/* ---- copy --------------------------------------------------------------- */

struct copy {
	mt_store *src, *dst;
	const char *name;
	mt_dlock *lock;
	mt_progress_fn progress;
	void *ud;
	mt_copy_stats st;
	uint64_t done;
};

/* Send one tensor object unless dst has it: pinned first, then the wait
 * for a gc, then the look, as a writer does. */
static int copy_tensor(struct copy *c, const char *key, char ***sent, size_t *nsent,
		       mt_error *err)
{
	int rc = mti_dlock_pin_keys(c->lock, &key, 1, err);
	if (!rc)
		rc = mti_dlock_wait_gc(c->lock, err);
	uint64_t size = 0;
	if (!rc)
		rc = mti_store_head(c->dst, key, &size, NULL, err);
	if (!rc) {
		c->st.shards_present++;
		c->st.bytes_present += size;
		return 0;
	}
	if (rc != MT_ENOTFOUND)
		return rc;
	void *data = NULL;
	size_t len = 0;
	rc = mti_store_get(c->src, key, 0, UINT64_MAX, &data, &len, err);
	if (!rc)
		rc = mti_store_put(c->dst, key, data, len, MT_PUT_NOSYNC, err);
	free(data);
	if (!rc)
		rc = mti_strv_push(sent, nsent, key, strlen(key));
	if (!rc) {
		c->st.shards++;
		c->st.bytes += len;
		c->done += len;
		if (c->progress && c->progress(c->ud, c->done, 0))
			rc = mti_err(err, MT_ECANCELED, "model %s: copy canceled", c->name);
	}
	return rc;
}

/* Whether dst may take the manifest: 1 it holds it already, 0 it may. */
static int copy_check_dst(struct copy *c, const char *version, const char *mkey,
			  const void *data, size_t len, mt_error *err)
{
	int rc = mti_store_holds(c->dst, mkey, data, len, err);
	if (rc == MT_EEXIST)
		return mti_err(err, rc, "model %s: checkpoint %s in %s holds other content",
			      c->name, version, mt_store_url(c->dst));
	if (rc)
		return rc;
	char *tomb = mti_ckpt_key_tombstone(c->name, version);
	rc = tomb ? mti_store_head(c->dst, tomb, NULL, NULL, err) : MT_ENOMEM;
	free(tomb);
	if (!rc)
		return mti_err(err, MT_EEXIST, "model %s: checkpoint %s was removed from %s; its "
			      "name is not used again", c->name, version, mt_store_url(c->dst));
	return rc == MT_ENOTFOUND ? 0 : rc;
}

static int copy_version(struct copy *c, const char *version, mt_error *err)
{
	char *mkey = mti_ckpt_key_manifest(c->name, version);
	void *data = NULL;
	size_t len = 0;
	mt_ckpt *ck = NULL;
	char **sent = NULL;
	size_t nsent = 0;
	int rc = mkey ? mti_store_get(c->src, mkey, 0, UINT64_MAX, &data, &len, err) : MT_ENOMEM;
	if (!rc)
		rc = mti_ckpt_decode(data, len, c->name, version, mkey, &ck, err);
	int present = rc ? 0 : copy_check_dst(c, version, mkey, data, len, err);
	if (present < 0)
		rc = present;
	for (size_t i = 0; !rc && i < mt_ckpt_ntensors(ck); i++) {
		mt_ckpt_tensor_info t;
		mt_ckpt_tensor(ck, i, &t, NULL);
		char *k = mti_ckpt_key_tensor(c->name, t.sha256);
		rc = k ? copy_tensor(c, k, &sent, &nsent, err) : MT_ENOMEM;
		free(k);
	}
	if (!rc && nsent)
		rc = c->dst->ops->sync(c->dst, (const char *const *)sent, nsent, err);
	if (!rc && !present)
		rc = mti_dlock_check(c->lock, err);
	if (!rc && !present)
		rc = mti_store_put(c->dst, mkey, data, len, MT_PUT_EXCLUSIVE, err);
	if (!rc && present)
		c->st.versions_present++;
	else if (!rc)
		c->st.versions++;
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "out of memory");
	mt_ckpt_close(ck);
	mt_strv_free(sent, nsent);
	free(data);
	free(mkey);
	return rc;
}

int mt_ckpt_copy(mt_store *src, mt_store *dst, const char *name, const char *version,
		 mt_progress_fn progress, void *ud, mt_copy_stats *stats, mt_error *err)
{
	struct copy c = {.src = src, .dst = dst, .name = name, .progress = progress, .ud = ud};
	char **v = NULL;
	size_t n = 0;
	char *root = NULL;
	int rc = pick_versions(src, name, version, &v, &n, err);
	if (!rc)
		root = mti_ckpt_root(name);
	if (!rc && !root)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_dlock_open(dst, root, MT_LOCK_WRITE, &c.lock, err);
	for (size_t i = 0; !rc && i < n; i++)
		rc = copy_version(&c, v[i], err);
	if (rc && rc != MT_ECANCELED)
		mti_err_prefix(err, "copying model %s: ", name);
	mti_dlock_close(c.lock);
	mt_strv_free(v, n);
	free(root);
	if (stats)
		*stats = c.st;
	return rc;
}
