/* ckpt.c — writing a model checkpoint: content-addressed tensors, then the manifest by exclusive create, then retention. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "codec.h"
#include "dataset.h"
#include "format.h"
#include "lock.h"
#include "opts.h"
#include "pool.h"

#define CKPT_OPTS_FIRST MT_OPTS_SIZE_UPTO(mt_ckpt_opts, threads)
#define KEY_MAX 1024
/* Automatic names lost to concurrent writers before giving up. */
#define COMMIT_ATTEMPTS 64

struct mt_ckpt_writer {
	mt_store *s;
	char *name, *root;
	mt_ckpt_opts o;
	mt_dlock *lock;
	json_t *tensors; /* key -> entry, in the order added */
	json_t *state, *meta;
	char **written;  /* tensor objects this writer stored, synced at commit */
	size_t nwritten;
	int committed;
};

void mt_ckpt_opts_init_size(mt_ckpt_opts *o, size_t size)
{
	mt_ckpt_opts d;
	memset(&d, 0, sizeof d);
	d.level = 3;
	mti_opts_init(o, size, &d, sizeof d);
}

int mt_ckpt_writer_open(mt_store *s, const char *name, const mt_ckpt_opts *opts,
			mt_ckpt_writer **out, mt_error *err)
{
	*out = NULL;
	mt_ckpt_opts o;
	mt_ckpt_opts_init(&o);
	int rc = opts ? mti_opts_take(&o, sizeof o, opts, CKPT_OPTS_FIRST, "mt_ckpt_opts", err) : 0;
	if (!rc)
		rc = mt_name_check(name, "model", err);
	if (rc)
		return rc;
	if (o.keep < 0 || o.level < 0 || o.level > 22 || o.threads < 0)
		return mti_err(err, MT_EINVAL, "model %s: keep, level (1..22) and threads must "
			      "not be negative", name);
	mt_ckpt_writer *w = calloc(1, sizeof *w);
	if (!w)
		return mti_err(err, MT_ENOMEM, "out of memory");
	w->s = s;
	w->o = o;
	w->o.level = o.level ? o.level : 3;
	w->o.threads = o.threads ? o.threads : mti_ncpus();
	w->name = mti_strdup(name);
	w->root = mti_ckpt_root(name);
	w->tensors = json_object();
	w->meta = json_object();
	w->state = json_null();
	if (!w->name || !w->root || !w->tensors || !w->meta)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_dlock_open(s, w->root, MT_LOCK_WRITE, &w->lock, err);
	if (rc) {
		mt_ckpt_writer_close(w);
		return rc;
	}
	*out = w;
	return 0;
}

static int key_check(const mt_ckpt_writer *w, const char *key, mt_error *err)
{
	size_t len = key ? strlen(key) : 0;
	if (!len)
		return mti_err(err, MT_EINVAL, "model %s: a tensor key must not be empty", w->name);
	/* A key is shown only up to its first control character: the message
	 * must not carry one to the terminal. */
	size_t shown = 0;
	while (shown < len && shown < 40 && (unsigned char)key[shown] >= 0x20 && key[shown] != 0x7f)
		shown++;
	if (len > KEY_MAX)
		return mti_err(err, MT_EINVAL, "model %s: tensor key '%.*s...' is %zu bytes, longer "
			      "than the %d a key may have", w->name, (int)shown, key, len, KEY_MAX);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)key[i] < 0x20 || key[i] == 0x7f)
			return mti_err(err, MT_EINVAL, "model %s: tensor key '%.*s%s' holds a control "
				      "character (byte 0x%02x at offset %zu)", w->name, (int)shown,
				      key, shown < len ? "..." : "", (unsigned char)key[i], i);
	/* jansson refuses keys that are not UTF-8: check before anything else. */
	json_t *probe = json_string(key);
	if (!probe)
		return mti_err(err, MT_EINVAL, "model %s: tensor key is not valid UTF-8", w->name);
	json_decref(probe);
	if (json_object_get(w->tensors, key))
		return mti_err(err, MT_EEXIST, "model %s: tensor '%s' was already added to this "
			      "checkpoint", w->name, key);
	return 0;
}

static int shape_check(const mt_ckpt_writer *w, const char *key, mt_dtype dtype, int ndim,
		       const uint64_t *shape, size_t nbytes, mt_error *err)
{
	size_t esize = mt_dtype_size(dtype);
	if (!esize || dtype == MT_STR) /* text is for dataset attributes */
		return mti_err(err, MT_EUNSUPPORTED, "model %s: tensor '%s': unsupported dtype %d",
			      w->name, key, (int)dtype);
	if (ndim < 0 || ndim > MT_MAX_RANK || (ndim && !shape))
		return mti_err(err, MT_EINVAL, "model %s: tensor '%s': %d dimensions (0..%d allowed)",
			      w->name, key, ndim, MT_MAX_RANK);
	uint64_t n = esize;
	for (int i = 0; i < ndim; i++)
		if (!mti_mul_ok(n, shape[i], &n))
			return mti_err(err, MT_ERANGE, "model %s: tensor '%s': shape too large",
				      w->name, key);
	if (n != nbytes)
		return mti_err(err, MT_EINVAL, "model %s: tensor '%s': its shape holds %llu bytes "
			      "of %s, given %zu", w->name, key, (unsigned long long)n,
			      mt_dtype_name(dtype), nbytes);
	return 0;
}

/* Store the tensor's object unless the model holds it already.  The pin
 * comes before the look, and the wait for a gc between them: a gc that
 * began earlier may be deleting the object we would reuse. */
#define RAW_MIN_BYTES (1u << 20)
#define RAW_ABOVE_RATIO 0.9

static int raw_put(mt_ckpt_writer *w, const char *okey, const void *data, size_t nbytes,
		   size_t *zlen, mt_error *err)
{
	mti_zstd_raw f;
	/* The gather list only reads the tensor. */
	int rc = mti_zstd_raw_layout((void *)(uintptr_t)data, nbytes, 1, &f);
	if (rc)
		return mti_err(err, rc, "out of memory");
	rc = mti_store_putv(w->s, okey, f.iov, f.niov, MT_PUT_NOSYNC, err);
	*zlen = f.nhdr + nbytes;
	mti_zstd_raw_free(&f);
	return rc;
}

static int tensor_store(mt_ckpt_writer *w, const char *okey, const void *data, size_t nbytes,
			int threads, uint64_t *stored, int *wrote, mt_error *err)
{
	int rc = mti_dlock_pin_keys(w->lock, &okey, 1, err);
	if (!rc)
		rc = mti_dlock_wait_gc(w->lock, err);
	if (rc)
		return rc;
	rc = mti_store_head(w->s, okey, stored, NULL, err);
	if (rc != MT_ENOTFOUND)
		return rc;
	void *z = NULL;
	size_t zlen = 0;
	/* Trained float weights have random low mantissa bits: zstd takes
	 * 5-10% off them for most of the save's time (2 cores compress a GiB in
	 * about 2.5 s; torch.save writes it in less).  Such a tensor is stored in
	 * raw blocks of a zstd frame, written straight from the caller's
	 * memory; one that compresses (half precision, sparse, integer, masks)
	 * is compressed. */
	if (nbytes >= RAW_MIN_BYTES &&
	    mti_zstd_ratio_guess(data, nbytes, w->o.level) > RAW_ABOVE_RATIO)
		rc = raw_put(w, okey, data, nbytes, &zlen, err);
	else if (!(rc = mti_zstd_compress_mt(data, nbytes, w->o.level, threads, &z, &zlen, err)))
		rc = mti_store_put(w->s, okey, z, zlen, MT_PUT_NOSYNC, err);
	free(z);
	*wrote = !rc;
	*stored = zlen;
	return rc == MT_ENOMEM ? mti_err(err, rc, "out of memory") : rc;
}

static json_t *tensor_entry(mt_dtype dtype, int ndim, const uint64_t *shape, size_t nbytes,
			    const char *sha, uint64_t xxh3, uint64_t stored)
{
	json_t *dims = json_array();
	for (int i = 0; dims && i < ndim; i++)
		json_array_append_new(dims, json_integer((json_int_t)shape[i]));
	char x[17];
	snprintf(x, sizeof x, "%016llx", (unsigned long long)xxh3);
	return json_pack("{s:s,s:o,s:I,s:s,s:s,s:I}", "dtype", mt_dtype_name(dtype), "shape", dims,
			 "bytes", (json_int_t)nbytes, "sha256", sha, "xxh3", x, "stored",
			 (json_int_t)stored);
}

/* The tensors of one mt_ckpt_add_many, each job's results by index. */
struct adds {
	mt_ckpt_writer *w;
	const mt_ckpt_tensor_in *t;
	char (*sha)[MT_SHA256_HEX];
	char **okey;
	uint64_t *stored, *xxh3;
	int *wrote, *rc, threads;
	mt_error *errs;
};

static int add_check(mt_ckpt_writer *w, const mt_ckpt_tensor_in *t, json_t *seen, mt_error *err)
{
	int rc = key_check(w, t->key, err);
	if (!rc && json_object_get(seen, t->key))
		rc = mti_err(err, MT_EEXIST, "model %s: tensor '%s' is given twice", w->name,
			     t->key);
	if (!rc)
		rc = shape_check(w, t->key, t->dtype, t->ndim, t->shape, t->nbytes, err);
	if (!rc && t->nbytes && !t->data)
		rc = mti_err(err, MT_EINVAL, "model %s: tensor '%s': no data", w->name, t->key);
	if (!rc && json_object_set_new(seen, t->key, json_true()))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	return rc;
}

static int add_one(void *ud, size_t i)
{
	struct adds *a = ud;
	const mt_ckpt_tensor_in *t = &a->t[i];
	const void *data = t->data ? t->data : "";
	mt_error *err = &a->errs[i];
	int rc = mti_sha256_hex(data, t->nbytes, a->sha[i], err);
	if (!rc && !(a->okey[i] = mti_ckpt_key_tensor(a->w->name, a->sha[i])))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = tensor_store(a->w, a->okey[i], data, t->nbytes, a->threads, &a->stored[i],
				  &a->wrote[i], err);
	if (rc)
		mti_err_prefix(err, "model %s: tensor '%s': ", a->w->name, t->key);
	else
		a->xxh3[i] = mti_xxh3(data, t->nbytes);
	a->rc[i] = rc;
	return rc;
}

/* The stored tensors' entries, in order; the objects written are synced
 * at commit (also those of a failed call: harmless). */
static int add_finish(struct adds *a, size_t n, int rc, mt_error *err)
{
	mt_ckpt_writer *w = a->w;
	for (size_t i = 0; i < n; i++)
		if (a->wrote[i] && mti_strv_push(&w->written, &w->nwritten, a->okey[i],
						 strlen(a->okey[i])))
			return mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; rc && i < n; i++)
		if (a->rc[i]) {
			mti_err_copy(err, &a->errs[i]);
			return a->rc[i];
		}
	for (size_t i = 0; !rc && i < n; i++) {
		const mt_ckpt_tensor_in *t = &a->t[i];
		json_t *e = tensor_entry(t->dtype, t->ndim, t->shape, t->nbytes, a->sha[i],
					 a->xxh3[i], a->stored[i]);
		if (!e || json_object_set_new(w->tensors, t->key, e))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	return rc;
}

int mt_ckpt_add_many(mt_ckpt_writer *w, const mt_ckpt_tensor_in *t, size_t n, mt_error *err)
{
	if (w->committed)
		return mti_err(err, MT_ESTATE, "model %s: the checkpoint was committed", w->name);
	json_t *seen = json_object();
	int rc = seen ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < n; i++)
		rc = add_check(w, &t[i], seen, err);
	json_decref(seen);
	if (rc || !n)
		return rc;
	int workers = n < (size_t)w->o.threads ? (int)n : w->o.threads;
	struct adds a = {.w = w, .t = t, .threads = w->o.threads / workers};
	a.sha = calloc(n, sizeof *a.sha);
	a.okey = calloc(n, sizeof *a.okey);
	a.stored = calloc(n, sizeof *a.stored);
	a.xxh3 = calloc(n, sizeof *a.xxh3);
	a.wrote = calloc(n, sizeof *a.wrote);
	a.rc = calloc(n, sizeof *a.rc);
	a.errs = calloc(n, sizeof *a.errs);
	if (!a.sha || !a.okey || !a.stored || !a.xxh3 || !a.wrote || !a.rc || !a.errs)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	else
		rc = add_finish(&a, n, mti_parallel_for(workers, n, add_one, &a), err);
	mt_strv_free(a.okey, a.okey ? n : 0);
	free(a.sha);
	free(a.stored);
	free(a.xxh3);
	free(a.wrote);
	free(a.rc);
	free(a.errs);
	return rc;
}

int mt_ckpt_add(mt_ckpt_writer *w, const char *key, mt_dtype dtype, int ndim,
		const uint64_t *shape, const void *data, size_t nbytes, mt_error *err)
{
	mt_ckpt_tensor_in t = {key, dtype, ndim, shape, data, nbytes};
	return mt_ckpt_add_many(w, &t, 1, err);
}

int mt_ckpt_set_state(mt_ckpt_writer *w, const char *json, mt_error *err)
{
	json_error_t je;
	json_t *v = json ? json_loads(json, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je) : NULL;
	if (!v)
		return mti_err(err, MT_EINVAL, "model %s: the state is not valid JSON: %s", w->name,
			      json ? je.text : "none given");
	json_decref(w->state);
	w->state = v;
	return 0;
}

static int meta_check(const char *name, json_t *m, mt_error *err)
{
	if (!json_is_object(m))
		return mti_err(err, MT_EINVAL, "model %s: the metadata must be a JSON object", name);
	json_t *v = json_object_get(m, "step");
	if (v && (!json_is_integer(v) || json_integer_value(v) < 0))
		return mti_err(err, MT_EINVAL, "model %s: meta \"step\" must be an integer >= 0", name);
	const char *sk;
	json_t *sv;
	v = json_object_get(m, "metrics");
	if (v && !json_is_object(v))
		return mti_err(err, MT_EINVAL, "model %s: meta \"metrics\" must be an object", name);
	json_object_foreach(v, sk, sv) if (!json_is_number(sv)) return mti_err(
		err, MT_EINVAL, "model %s: metric \"%s\" is not a number", name, sk);
	static const char *const strs[] = {"author", "description"};
	for (size_t i = 0; i < 2; i++) {
		v = json_object_get(m, strs[i]);
		if (v && !json_is_string(v))
			return mti_err(err, MT_EINVAL, "model %s: meta \"%s\" must be a string", name,
				      strs[i]);
	}
	v = json_object_get(m, "tags");
	if (v && !json_is_array(v))
		return mti_err(err, MT_EINVAL, "model %s: meta \"tags\" must be an array", name);
	size_t i;
	json_array_foreach(v, i, sv) if (!json_is_string(sv)) return mti_err(
		err, MT_EINVAL, "model %s: meta \"tags\" must hold strings", name);
	char *what = mti_asprintf("model %s: meta", name);
	int rc = what ? mti_ckpt_meta_caps(m, MT_EINVAL, what, err)
		      : mti_err(err, MT_ENOMEM, "out of memory");
	free(what);
	return rc;
}

/* The caps of a manifest's author, description and tags (doc/FORMAT.md,
 * "Size caps") on a checkpoint's "meta" object; anything not a string
 * there is left to the other checks. */
int mti_ckpt_meta_caps(json_t *meta, int code, const char *what, mt_error *err)
{
	json_t *a = json_object_get(meta, "author"), *d = json_object_get(meta, "description");
	json_t *tags = json_object_get(meta, "tags");
	size_t n = json_is_array(tags) ? json_array_size(tags) : 0;
	if (json_is_string(a) && json_string_length(a) > MT_TEXT_MAX)
		return mti_err(err, code, "%s: the author is %zu bytes, over its cap of %u "
			      "(doc/FORMAT.md, \"Size caps\")", what, json_string_length(a),
			      MT_TEXT_MAX);
	const char **t = calloc(n ? n : 1, sizeof *t);
	if (!t)
		return mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		t[i] = json_string_value(json_array_get(tags, i));
	int rc = mti_meta_caps(json_is_string(d) ? json_string_value(d) : NULL, t, n, code, what,
			       err);
	free(t);
	return rc;
}

int mt_ckpt_set_meta(mt_ckpt_writer *w, const char *json, mt_error *err)
{
	json_error_t je;
	json_t *v = json ? json_loads(json, JSON_REJECT_DUPLICATES, &je) : NULL;
	if (!v)
		return mti_err(err, MT_EINVAL, "model %s: the metadata is not a valid JSON object: "
			      "%s", w->name, json ? je.text : "none given");
	int rc = meta_check(w->name, v, err);
	if (rc) {
		json_decref(v);
		return rc;
	}
	json_decref(w->meta);
	w->meta = v;
	return 0;
}

/* The sealed manifest text of w as `version`, child of `parent`. */
static char *manifest_text(mt_ckpt_writer *w, const char *version, const char *parent,
			   const char *created)
{
	json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:s,s:{s:s,s:i},s:O,s:O,s:O}", "format",
			      MT_FORMAT_VERSION, "model", w->name, "version", version, "parent",
			      parent, "created", created, "compression", "codec", "zstd", "level",
			      w->o.level, "meta", w->meta, "tensors", w->tensors, "state", w->state);
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (text && mti_json_seal(&text))
		text = NULL;
	return text;
}

/* One try at the next free name: MT_EEXIST when another writer took it. */
static int commit_once(mt_ckpt_writer *w, char **version_out, mt_error *err)
{
	char **v = NULL;
	size_t n = 0;
	uint64_t max = 0;
	int rc = mti_ckpt_versions(w->s, w->name, &v, &n, &max, err);
	if (rc)
		return rc;
	char *version = mti_asprintf("v%llu", (unsigned long long)max + 1);
	char *created = mti_now_rfc3339();
	char *text = version && created ? manifest_text(w, version, n ? v[n - 1] : "", created)
					: NULL;
	char *key = version ? mti_ckpt_key_manifest(w->name, version) : NULL;
	rc = text && key ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	/* The last check of the lock: a lapse means a gc may have ignored
	 * our pins, so the tensors named may be gone. */
	if (!rc)
		rc = mti_dlock_check(w->lock, err);
	if (!rc)
		rc = mti_store_put(w->s, key, text, strlen(text), MT_PUT_EXCLUSIVE, err);
	if (!rc) {
		*version_out = version;
		version = NULL;
	}
	mt_strv_free(v, n);
	free(version);
	free(created);
	free(text);
	free(key);
	return rc;
}

/* Retention: tombstone every checkpoint older than the newest `keep`, then
 * delete the tensor objects only they named (those another writer pins stay
 * for a later gc). */
static int apply_keep(mt_ckpt_writer *w, mt_error *err)
{
	char **v = NULL, **keys = NULL;
	size_t n = 0, nkeys = 0;
	int rc = mti_ckpt_versions(w->s, w->name, &v, &n, NULL, err);
	for (size_t i = 0; !rc && n > (size_t)w->o.keep && i < n - (size_t)w->o.keep; i++) {
		rc = mti_ckpt_tensor_keys(w->s, w->name, v[i], &keys, &nkeys, err);
		if (rc == MT_ENOTFOUND)
			rc = 0; /* removed by another writer's retention meanwhile */
		if (!rc)
			rc = mt_ckpt_delete(w->s, w->name, v[i], err);
	}
	mt_strv_free(v, n);
	if (!rc)
		rc = mti_ckpt_reclaim(w->s, w->name, keys, nkeys, err);
	mt_strv_free(keys, nkeys);
	return rc;
}

int mt_ckpt_commit(mt_ckpt_writer *w, char **version_out, mt_error *err)
{
	if (version_out)
		*version_out = NULL;
	if (w->committed)
		return mti_err(err, MT_ESTATE, "model %s: the checkpoint was already committed",
			      w->name);
	int rc = w->nwritten ? w->s->ops->sync(w->s, (const char *const *)w->written, w->nwritten,
					       err)
			     : 0;
	char *version = NULL;
	for (int i = 0; !rc && !version && i < COMMIT_ATTEMPTS; i++) {
		mt_error e = {0};
		rc = commit_once(w, &version, &e);
		if (rc == MT_EEXIST)
			rc = 0; /* another writer took the name: take the next */
		else if (rc)
			mti_err_copy(err, &e);
	}
	if (!rc && !version)
		rc = mti_err(err, MT_EEXIST, "model %s: %d names were taken by other writers "
			    "in turn", w->name, COMMIT_ATTEMPTS);
	if (rc)
		return mti_err_prefix(err, "model %s: commit: ", w->name);
	w->committed = 1;
	if (w->o.keep)
		rc = apply_keep(w, err);
	if (version_out)
		*version_out = version;
	else
		free(version);
	return rc;
}

void mt_ckpt_writer_close(mt_ckpt_writer *w)
{
	if (!w)
		return;
	mti_dlock_close(w->lock);
	json_decref(w->tensors);
	json_decref(w->state);
	json_decref(w->meta);
	mt_strv_free(w->written, w->nwritten);
	free(w->name);
	free(w->root);
	free(w);
}
