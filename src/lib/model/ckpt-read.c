/* ckpt-read.c — a model's checkpoints: names and listing, opening a manifest, reading tensors, removal. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ckpt.h"
#include "codec.h"
#include "dataset.h"
#include "format.h"
#include "pool.h"

#define MANIFEST_EXT ".json"
/* A raw frame of this many bytes or more is read in parts, up to one per CPU. */
#define RAW_PART_MIN (8u << 20)
#define RAW_PARTS_MAX 8
#define TOMBSTONE_EXT ".removed"

struct tensor {
	mt_ckpt_tensor_info info;
	uint64_t xxh3; /* of the raw bytes, when has_xxh3 (written since it was recorded) */
	int has_xxh3;
};

struct mt_ckpt {
	mt_store *s;
	char *name, *version, *manifest, *state, *meta;
	const char *parent, *created;
	json_t *root;
	struct tensor *t;
	size_t n;
};

char *mti_ckpt_root(const char *name)
{
	return mti_asprintf("models/%s", name);
}

char *mti_ckpt_key_manifest(const char *name, const char *version)
{
	return mti_asprintf("models/%s/versions/%s" MANIFEST_EXT, name, version);
}

char *mti_ckpt_key_tombstone(const char *name, const char *version)
{
	return mti_asprintf("models/%s/versions/%s" TOMBSTONE_EXT, name, version);
}

char *mti_ckpt_key_tensor(const char *name, const char *sha256)
{
	return mti_asprintf("models/%s/tensors/%s", name, sha256);
}

/* ---- listing ------------------------------------------------------------ */

struct vlist {
	size_t plen;
	char **v;
	uint64_t *num;
	size_t n, cap;
	uint64_t max;
};

static int collect_version(void *ud, const mt_obj *o)
{
	struct vlist *l = ud;
	const char *name = o->key + l->plen;
	size_t len = strlen(name), elen = 0;
	int live = 0;
	if (len > strlen(MANIFEST_EXT) && !strcmp(name + len - strlen(MANIFEST_EXT), MANIFEST_EXT))
		elen = strlen(MANIFEST_EXT), live = 1;
	else if (len > strlen(TOMBSTONE_EXT) &&
		 !strcmp(name + len - strlen(TOMBSTONE_EXT), TOMBSTONE_EXT))
		elen = strlen(TOMBSTONE_EXT);
	else
		return 0;
	char *v = strndup(name, len - elen);
	uint64_t k = 0;
	if (!v)
		return MT_ENOMEM;
	/* Only automatic names are checkpoints: anything else is not ours. */
	if (!mti_version_auto_number(v, &k)) {
		free(v);
		return 0;
	}
	if (k > l->max)
		l->max = k;
	if (!live) {
		free(v);
		return 0;
	}
	uint64_t *num = l->n + 1 > l->cap ? realloc(l->num, (l->cap * 2 + 8) * sizeof *num) : l->num;
	char **vv = num && l->n + 1 > l->cap ? realloc(l->v, (l->cap * 2 + 8) * sizeof *vv) : l->v;
	if (num)
		l->num = num;
	if (!num || !vv) {
		free(v);
		return MT_ENOMEM;
	}
	l->v = vv;
	if (l->n + 1 > l->cap)
		l->cap = l->cap * 2 + 8;
	l->v[l->n] = v;
	l->num[l->n++] = k;
	return 0;
}

int mti_ckpt_versions(mt_store *s, const char *name, char ***out, size_t *n, uint64_t *max,
		      mt_error *err)
{
	*out = NULL;
	*n = 0;
	char *prefix = mti_asprintf("models/%s/versions/", name);
	if (!prefix)
		return mti_err(err, MT_ENOMEM, "out of memory");
	struct vlist l = {.plen = strlen(prefix)};
	int rc = mti_store_list_all(s, prefix, collect_version, &l, err);
	free(prefix);
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "model %s: listing checkpoints: out of memory", name);
	if (rc) {
		mt_strv_free(l.v, l.n);
		free(l.num);
		return rc;
	}
	/* Listings sort by text (v10 < v9): insertion sort by number, lists are short. */
	for (size_t i = 1; i < l.n; i++)
		for (size_t j = i; j > 0 && l.num[j - 1] > l.num[j]; j--) {
			uint64_t t = l.num[j];
			l.num[j] = l.num[j - 1];
			l.num[j - 1] = t;
			char *tv = l.v[j];
			l.v[j] = l.v[j - 1];
			l.v[j - 1] = tv;
		}
	free(l.num);
	*out = l.v;
	*n = l.n;
	if (max)
		*max = l.max;
	return 0;
}

int mt_ckpt_list(mt_store *s, const char *name, char ***versions, size_t *n, mt_error *err)
{
	*versions = NULL;
	*n = 0;
	int rc = mt_name_check(name, "model", err);
	if (!rc)
		rc = mti_ckpt_versions(s, name, versions, n, NULL, err);
	if (!rc && !*n)
		rc = mti_err(err, MT_ENOTFOUND, "model %s: no checkpoints in %s", name,
			    mt_store_url(s));
	return rc;
}

struct mlist {
	mt_store *s;
	char **v;
	size_t n;
	mt_error *err;
};

static int collect_model(void *ud, const mt_obj *o)
{
	struct mlist *l = ud;
	char *m;
	int rc = mti_prefix_child(o, "models/", &m);
	if (rc || !m)
		return rc;
	size_t len = strlen(m) + 1;
	char **v = NULL;
	size_t n = 0;
	rc = mt_name_check(m, "model", NULL) ? 0 : mti_ckpt_versions(l->s, m, &v, &n, NULL, l->err);
	mt_strv_free(v, n);
	if (!rc && n)
		rc = mti_strv_push(&l->v, &l->n, m, len - 1);
	free(m);
	return rc;
}

int mt_models_list(mt_store *s, char ***names, size_t *n, mt_error *err)
{
	struct mlist l = {.s = s, .err = err};
	int rc = mti_store_list_prefixes(s, "models/", collect_model, &l, err);
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "listing models: out of memory");
	if (rc) {
		mt_strv_free(l.v, l.n);
		l.v = NULL;
		l.n = 0;
	}
	*names = l.v;
	*n = l.n;
	return rc;
}

/* ---- opening ------------------------------------------------------------ */

static int tensor_decode(const char *what, const char *key, json_t *e, mt_ckpt_tensor_info *t,
			 mt_error *err)
{
	const char *dtype = NULL, *sha = NULL;
	json_t *shape = NULL;
	json_int_t bytes = -1, stored = -1;
	if (json_unpack(e, "{s:s,s:o,s:I,s:s,s:I}", "dtype", &dtype, "shape", &shape, "bytes",
			&bytes, "sha256", &sha, "stored", &stored) ||
	    !json_is_array(shape) || bytes < 0 || stored < 0)
		return mti_err(err, MT_EFORMAT, "%s: tensor '%s': malformed entry", what, key);
	t->key = key;
	t->dtype = mt_dtype_parse(dtype);
	t->ndim = (int)json_array_size(shape);
	t->bytes = (uint64_t)bytes;
	t->stored = (uint64_t)stored;
	t->sha256 = sha;
	if (!t->dtype || t->dtype == MT_STR || t->ndim > MT_MAX_RANK || strlen(sha) != 64 ||
	    strspn(sha, "0123456789abcdef") != 64)
		return mti_err(err, MT_EFORMAT, "%s: tensor '%s': bad dtype, shape or sha256", what,
			      key);
	uint64_t n = mt_dtype_size(t->dtype);
	for (int i = 0; i < t->ndim; i++) {
		json_t *d = json_array_get(shape, (size_t)i);
		if (!json_is_integer(d) || json_integer_value(d) < 0 ||
		    !mti_mul_ok(n, (uint64_t)json_integer_value(d), &n))
			return mti_err(err, MT_EFORMAT, "%s: tensor '%s': bad shape", what, key);
		t->shape[i] = (uint64_t)json_integer_value(d);
	}
	if (n != t->bytes)
		return mti_err(err, MT_EFORMAT, "%s: tensor '%s': bytes do not match the shape", what,
			      key);
	return 0;
}

static int xxh3_decode(const char *what, const char *key, json_t *e, struct tensor *t,
		       mt_error *err)
{
	json_t *x = json_object_get(e, "xxh3");
	if (!x)
		return 0;
	const char *hex = json_string_value(x);
	if (!hex || strlen(hex) != 16 || strspn(hex, "0123456789abcdef") != 16)
		return mti_err(err, MT_EFORMAT, "%s: tensor '%s': bad xxh3", what, key);
	t->xxh3 = strtoull(hex, NULL, 16);
	t->has_xxh3 = 1;
	return 0;
}

static int ckpt_fill(mt_ckpt *c, const char *name, const char *version, const char *what,
		     mt_error *err)
{
	json_t *tensors = NULL, *state = NULL, *meta = NULL;
	const char *m = NULL, *v = NULL;
	json_int_t format = 0;
	if (json_unpack(c->root, "{s:I,s:s,s:s,s:s,s:s,s:o,s:o,s:o}", "format", &format, "model",
			&m, "version", &v, "parent", &c->parent, "created", &c->created, "tensors",
			&tensors, "state", &state, "meta", &meta) ||
	    !json_is_object(tensors) || !json_is_object(meta))
		return mti_err(err, MT_EFORMAT, "%s: not a checkpoint manifest", what);
	if (format > MT_FORMAT_VERSION)
		return mti_err(err, MT_EFORMAT, "%s: format %lld is newer than this matorage "
			      "understands (%d)", what, (long long)format, MT_FORMAT_VERSION);
	if (strcmp(m, name) || strcmp(v, version))
		return mti_err(err, MT_ECORRUPT, "%s: names %s@%s, not %s@%s", what, m, v, name,
			      version);
	c->name = mti_strdup(name);
	c->version = mti_strdup(version);
	c->state = json_dumps(state, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	c->meta = json_dumps(meta, JSON_COMPACT | JSON_PRESERVE_ORDER);
	c->t = calloc(json_object_size(tensors) + 1, sizeof *c->t);
	if (!c->name || !c->version || !c->state || !c->meta || !c->t)
		return mti_err(err, MT_ENOMEM, "out of memory");
	const char *key;
	json_t *e;
	json_object_foreach(tensors, key, e)
	{
		int rc = tensor_decode(what, key, e, &c->t[c->n].info, err);
		if (!rc)
			rc = xxh3_decode(what, key, e, &c->t[c->n], err);
		if (rc)
			return rc;
		c->n++;
	}
	return 0;
}

int mti_ckpt_decode(const char *json, size_t len, const char *name, const char *version,
		    const char *what, mt_ckpt **out, mt_error *err)
{
	*out = NULL;
	mt_ckpt *c = calloc(1, sizeof *c);
	if (!c)
		return mti_err(err, MT_ENOMEM, "out of memory");
	json_error_t je;
	c->root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	int rc = c->root ? 0 : mti_err(err, MT_EFORMAT, "%s: not JSON: %s", what, je.text);
	json_t *sum = c->root ? json_object_get(c->root, "checksum") : NULL;
	if (!rc)
		rc = mti_json_check_sum(json, len, json_string_value(sum), what, err);
	if (!rc)
		rc = ckpt_fill(c, name, version, what, err);
	if (!rc)
		rc = mti_ckpt_meta_caps(json_object_get(c->root, "meta"), MT_ECORRUPT, what, err);
	c->manifest = rc ? NULL : strndup(json, len);
	if (!rc && !c->manifest)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (rc) {
		mt_ckpt_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* Split "NAME[@VERSION]"; the version is the newest for none or "latest". */
static int resolve(mt_store *s, const char *spec, char **name, char **version, mt_error *err)
{
	const char *at = strchr(spec, '@');
	*name = at ? strndup(spec, (size_t)(at - spec)) : mti_strdup(spec);
	*version = NULL;
	if (!*name)
		return mti_err(err, MT_ENOMEM, "out of memory");
	int rc = mt_name_check(*name, "model", err);
	if (rc)
		return rc;
	if (at && at[1] && strcasecmp(at + 1, "latest")) {
		*version = mti_strdup(at + 1);
		return *version ? mt_name_check(*version, "checkpoint", err)
				: mti_err(err, MT_ENOMEM, "out of memory");
	}
	char **v = NULL;
	size_t n = 0;
	rc = mt_ckpt_list(s, *name, &v, &n, err);
	if (!rc) {
		*version = v[n - 1];
		v[n - 1] = NULL;
	}
	mt_strv_free(v, n);
	return rc;
}

int mt_ckpt_open(mt_store *s, const char *spec, mt_ckpt **out, mt_error *err)
{
	*out = NULL;
	char *name = NULL, *version = NULL, *key = NULL;
	void *data = NULL;
	size_t len = 0;
	int rc = resolve(s, spec, &name, &version, err);
	if (!rc)
		key = mti_ckpt_key_manifest(name, version);
	if (!rc && !key)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_store_get_max(s, key, MT_MANIFEST_MAX_BYTES, &data, &len, err);
	if (rc == MT_ENOTFOUND)
		rc = mti_err(err, rc, "model %s: no checkpoint %s in %s", name, version,
			    mt_store_url(s));
	if (!rc)
		rc = mti_ckpt_decode(data, len, name, version, key, out, err);
	if (!rc)
		(*out)->s = s;
	free(data);
	free(key);
	free(name);
	free(version);
	return rc;
}

const char *mt_ckpt_model(const mt_ckpt *c)
{
	return c->name;
}

const char *mt_ckpt_version(const mt_ckpt *c)
{
	return c->version;
}

const char *mt_ckpt_parent(const mt_ckpt *c)
{
	return c->parent;
}

const char *mt_ckpt_created(const mt_ckpt *c)
{
	return c->created;
}

const char *mt_ckpt_manifest(const mt_ckpt *c)
{
	return c->manifest;
}

const char *mt_ckpt_state(const mt_ckpt *c)
{
	return c->state;
}

const char *mt_ckpt_meta(const mt_ckpt *c)
{
	return c->meta;
}

size_t mt_ckpt_ntensors(const mt_ckpt *c)
{
	return c->n;
}

int mt_ckpt_tensor(const mt_ckpt *c, size_t i, mt_ckpt_tensor_info *out, mt_error *err)
{
	if (i >= c->n)
		return mti_err(err, MT_ERANGE, "%s@%s: tensor %zu of %zu", c->name, c->version, i,
			      c->n);
	*out = c->t[i].info;
	return 0;
}

long mt_ckpt_find(const mt_ckpt *c, const char *key)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->t[i].info.key, key))
			return (long)i;
	return -1;
}

/* One part of a raw frame read on several threads: iov[first, first + n)
 * from byte `at` of the object. */
struct raw_part {
	mt_store *s;
	const char *okey;
	const struct iovec *iov;
	size_t nblocks, parts;
	int rc[RAW_PARTS_MAX];
	mt_error errs[RAW_PARTS_MAX];
};

static int raw_part_read(void *ud, size_t i)
{
	struct raw_part *p = ud;
	size_t per = (p->nblocks + p->parts - 1) / p->parts, b0 = i * per;
	size_t b1 = b0 + per < p->nblocks ? b0 + per : p->nblocks;
	if (b0 >= b1)
		return 0;
	/* Every block before the last is whole: 3 header bytes and RAW_BLOCK. */
	size_t first = i ? 1 + 2 * b0 : 0, n = 1 + 2 * b1 - first;
	uint64_t at = i ? p->iov[0].iov_len + (uint64_t)b0 * (3 + p->iov[2].iov_len) : 0;
	p->rc[i] = mti_store_readv(p->s, p->okey, at, p->iov + first, n, &p->errs[i]);
	return p->rc[i];
}

/* A raw frame (how ckpt.c stores what zstd cannot shrink) is read
 * straight into buf, no copy between, a large one in parts on all cores
 * (the copies and the faults of a fresh buffer take a core each); 1 when
 * the object is not one (a writer stored the same bytes compressed), to
 * read it the general way. */
static int read_raw(mt_ckpt *c, const char *okey, const mt_ckpt_tensor_info *t, void *buf,
		    mt_error *err)
{
	size_t len = (size_t)t->bytes;
	if (t->stored != mti_zstd_raw_hdr_bytes(len) + len)
		return 1;
	mti_zstd_raw f;
	if (mti_zstd_raw_layout(buf, len, 0, &f))
		return mti_err(err, MT_ENOMEM, "out of memory");
	int cpus = mti_ncpus();
	struct raw_part p = {.s = c->s, .okey = okey, .iov = f.iov, .nblocks = f.nblocks};
	p.parts = len < RAW_PART_MIN ? 1 : cpus < RAW_PARTS_MAX ? (size_t)cpus : RAW_PARTS_MAX;
	int rc = mti_parallel_for((int)p.parts, p.parts, raw_part_read, &p);
	for (size_t i = 0; rc && i < p.parts; i++)
		if (p.rc[i] && p.rc[i] != MT_ERANGE) {
			rc = mti_err_copy(err, &p.errs[i]);
			break;
		}
	if (rc == MT_ERANGE || (!rc && !mti_zstd_raw_hdr_ok(f.hdr, len)))
		rc = 1;
	mti_zstd_raw_free(&f);
	return rc;
}

static int read_any(mt_ckpt *c, const char *okey, const mt_ckpt_tensor_info *t, void *buf,
		    mt_error *err)
{
	int rc = read_raw(c, okey, t, buf, err);
	if (rc != 1)
		return rc;
	void *z = NULL;
	size_t zlen = 0;
	rc = mti_store_get(c->s, okey, 0, UINT64_MAX, &z, &zlen, err);
	if (!rc)
		rc = mti_zstd_decompress(z, zlen, buf, (size_t)t->bytes, err);
	free(z);
	return rc;
}

/* The bytes read are checked against the manifest's xxh3 when it has one
 * (a pass at memory speed: the sha256 would cost more than the read),
 * else against the sha256; `verify` checks every object's sha256. */
static int tensor_check(const struct tensor *t, const void *buf, mt_error *err)
{
	size_t len = (size_t)t->info.bytes;
	if (t->has_xxh3) {
		uint64_t x = mti_xxh3(buf, len);
		return x == t->xxh3 ? 0
				    : mti_err(err, MT_ECORRUPT, "its bytes' xxh3 is %016llx, not "
					      "%016llx", (unsigned long long)x,
					      (unsigned long long)t->xxh3);
	}
	char sha[MT_SHA256_HEX];
	int rc = mti_sha256_hex(buf, len, sha, err);
	if (!rc && strcmp(sha, t->info.sha256))
		rc = mti_err(err, MT_ECORRUPT, "its bytes hash to %s", sha);
	return rc;
}

/* The tensor rebuilt into buf from the parity of another protected
 * checkpoint of the model naming the same object (a tensor object is every
 * checkpoint's that names it): 0, else -1. */
static int heal_from_others(mt_ckpt *c, const mt_ckpt_tensor_info *t, void *buf)
{
	char **v = NULL;
	size_t n = 0;
	mt_error e = {0};
	int rc = -1;
	if (mt_ckpt_list(c->s, c->name, &v, &n, &e))
		return -1;
	for (size_t i = 0; rc && i < n; i++) {
		mti_prec *p = NULL;
		if (strcmp(v[i], c->version) && !mti_ckpt_prec_load(c->s, c->name, v[i], &p, &e))
			rc = mti_ckpt_rebuild(c->s, p, t->sha256, buf, NULL, &e) ? -1 : 0;
		mti_prec_free(p);
	}
	mt_strv_free(v, n);
	return rc;
}

/* A damaged or missing tensor rebuilt into buf from its checkpoint's
 * parity, else from another checkpoint's that names it (the store is left
 * as it is: repair writes it back); else the read's own error (rc). */
static int read_heal(mt_ckpt *c, const mt_ckpt_tensor_info *t, void *buf, int rc, mt_error *err)
{
	mti_prec *p = NULL;
	mt_error e = {0};
	int own = !mti_ckpt_prec_load(c->s, c->name, c->version, &p, &e);
	if (own && mti_ckpt_rebuild(c->s, p, t->sha256, buf, NULL, &e) == 0)
		rc = 0;
	else if (heal_from_others(c, t, buf) == 0)
		rc = 0;
	else if (own && err) {
		mt_error was = *err;
		mti_err(err, rc, "%s; its parity could not rebuild it either: %s", was.message,
			e.message);
	}
	mti_prec_free(p);
	return rc;
}

int mt_ckpt_read(mt_ckpt *c, const char *key, void *buf, size_t cap, mt_error *err)
{
	long i = mt_ckpt_find(c, key);
	if (i < 0)
		return mti_err(err, MT_ENOTFOUND, "%s@%s: no tensor '%s'", c->name, c->version, key);
	const mt_ckpt_tensor_info *t = &c->t[i].info;
	if (cap < t->bytes)
		return mti_err(err, MT_ERANGE, "%s@%s: tensor '%s' holds %llu bytes, the buffer %zu",
			      c->name, c->version, key, (unsigned long long)t->bytes, cap);
	char *okey = mti_ckpt_key_tensor(c->name, t->sha256);
	if (!okey)
		return mti_err(err, MT_ENOMEM, "out of memory");
	int rc = read_any(c, okey, t, buf, err);
	if (!rc)
		rc = tensor_check(&c->t[i], buf, err);
	if (rc == MT_ECORRUPT || rc == MT_ENOTFOUND)
		rc = read_heal(c, t, buf, rc, err);
	if (rc)
		mti_err_prefix(err, "%s@%s: tensor '%s' (%s): ", c->name, c->version, key, okey);
	free(okey);
	return rc;
}

void mt_ckpt_close(mt_ckpt *c)
{
	if (!c)
		return;
	json_decref(c->root);
	free(c->t);
	free(c->name);
	free(c->version);
	free(c->manifest);
	free(c->state);
	free(c->meta);
	free(c);
}

/* ---- removal ------------------------------------------------------------ */

int mt_ckpt_delete(mt_store *s, const char *name, const char *version, mt_error *err)
{
	int rc = mt_name_check(name, "model", err);
	if (!rc)
		rc = mt_name_check(version, "checkpoint", err);
	if (rc)
		return rc;
	char *key = mti_ckpt_key_manifest(name, version);
	char *tomb = mti_ckpt_key_tombstone(name, version), *now = mti_now_rfc3339();
	char *body = now ? mti_asprintf("{\"format\":1,\"model\":\"%s\",\"version\":\"%s\","
				       "\"removed\":\"%s\"}", name, version, now)
			 : NULL;
	rc = key && tomb && body ? mti_store_head(s, key, NULL, NULL, err)
				 : mti_err(err, MT_ENOMEM, "out of memory");
	if (rc == MT_ENOTFOUND)
		rc = mti_err(err, rc, "model %s: no checkpoint %s in %s", name, version,
			    mt_store_url(s));
	/* The tombstone first: at every moment one of the two holds the name,
	 * so it is never handed out again. */
	if (!rc)
		rc = mti_store_put(s, tomb, body, strlen(body), 0, err);
	if (!rc)
		rc = mti_store_del(s, (const char *const *)&key, 1, err);
	free(key);
	free(tomb);
	free(now);
	free(body);
	return rc;
}
