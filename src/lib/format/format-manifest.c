/* format-manifest.c — the manifest as JSON (jansson): encode, and decode checking every field. */
#define _GNU_SOURCE /* memmem */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "format.h"

/* Magic, version, entry count and checksum: the smallest chunk index. */
#define FM_INDEX_MIN 20
/* zstd's level range (ZSTD_minCLevel() .. ZSTD_maxCLevel()). */
#define FM_LEVEL_MIN (-131072)
#define FM_LEVEL_MAX 22
/* One row or item of an attribute: more would overflow the sizes
 * computed from it long before it could be stored. */
#define FM_ROW_BYTES_MAX (1ull << 40)
/* The manifest's last member, as written: the checksum of the text
 * without it (doc/FORMAT.md, "Manifest checksum"). */
#define FM_SUM_HEAD ",\"checksum\":\"sha256:"
#define FM_SUM_LEN (sizeof FM_SUM_HEAD - 1 + 64 + 2)

char *mti_key_manifest(const char *dataset, const char *version)
{
	return mti_asprintf("datasets/%s/versions/%s.json", dataset, version);
}

char *mti_key_staged(const char *dataset, const char *id, uint64_t k)
{
	return mti_asprintf("datasets/%s/staged/%s/%llu.json", dataset, id, (unsigned long long)k);
}

char *mti_key_shard(const char *dataset, const char *sha256)
{
	return mti_asprintf("datasets/%s/shards/%s.h5", dataset, sha256);
}

char *mti_key_meta(const char *dataset, const char *version)
{
	return mti_asprintf("datasets/%s/meta/%s.json", dataset, version);
}

char *mti_key_head(const char *dataset)
{
	return mti_asprintf("datasets/%s/head.json", dataset);
}

char *mti_key_recipe(const char *dataset, const char *sha256)
{
	return mti_asprintf("datasets/%s/recipes/%s.lua", dataset, sha256);
}

char *mti_key_attachment(const char *dataset, const char *sha256)
{
	return mti_asprintf("datasets/%s/attachments/%s", dataset, sha256);
}

/* ---- attributes ---------------------------------------------------------- */

/* One attribute on its own: name, dtype, rank, shape. */
static int fm_attr_check(const mt_attr *a, mt_error *err)
{
	int rc = mt_name_check(a->name, "attribute", err);
	if (rc)
		return rc;
	if (a->name[0] == '_')
		return mti_err(err, MT_EINVAL, "attribute name '%s': names starting with '_' are "
			      "reserved", a->name);
	if (mt_dtype_size(a->dtype) == 0)
		return mti_err(err, MT_EINVAL, "attribute %s: unknown dtype %d", a->name,
			      (int)a->dtype);
	if (a->dtype == MT_BFLOAT16)
		return mti_err(err, MT_EUNSUPPORTED, "attribute %s: bfloat16 is for model "
			      "checkpoints only; store float32 (or its bits as uint16)", a->name);
	if (a->dtype == MT_STR && (!a->ragged || a->rank != 0))
		return mti_err(err, MT_EINVAL, "attribute %s: str holds one text per row: it "
			      "is ragged, of shape [] (declare it name=str)", a->name);
	if (a->rank < 0 || a->rank > MT_MAX_RANK)
		return mti_err(err, MT_EINVAL, "attribute %s: rank %d is outside 0..%d", a->name,
			      a->rank, MT_MAX_RANK);
	uint64_t bytes = mt_dtype_size(a->dtype);
	for (int d = 0; d < a->rank; d++) {
		if (a->shape[d] == 0)
			return mti_err(err, MT_EINVAL, "attribute %s: dimension %d of its shape "
				      "is 0", a->name, d);
		if (!mti_mul_ok(bytes, a->shape[d], &bytes) || bytes > FM_ROW_BYTES_MAX)
			return mti_err(err, MT_EINVAL, "attribute %s: a %s of this shape would "
				      "exceed 2^40 bytes", a->name, a->ragged ? "item" : "row");
	}
	return 0;
}

/* Note `name` as the i-th seen; *first gets the index of an earlier
 * attribute of that name, else i.  A JSON object is the hash set. */
static int fm_seen(json_t *seen, const char *name, size_t i, size_t *first)
{
	json_t *v = json_object_get(seen, name);
	if (v) {
		*first = (size_t)json_integer_value(v);
		return 0;
	}
	*first = i;
	return json_object_set_new(seen, name, json_integer((json_int_t)i)) ? MT_ENOMEM : 0;
}

int mti_attrs_check(const mt_attr *a, size_t n, mt_error *err)
{
	json_t *seen = json_object();
	if (!seen)
		return mti_err(err, MT_ENOMEM, "checking attributes: out of memory");
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		size_t first;
		if ((rc = fm_attr_check(&a[i], err)))
			break;
		if ((rc = fm_seen(seen, a[i].name, i, &first)))
			rc = mti_err(err, rc, "checking attributes: out of memory");
		else if (first != i)
			rc = mti_err(err, MT_EINVAL, "attribute %s appears twice (#%zu and #%zu)",
				    a[i].name, first + 1, i + 1);
	}
	json_decref(seen);
	return rc;
}

int mti_attrs_dup(const mt_attr *a, size_t n, mt_attr **out)
{
	mt_attr *c = calloc(n ? n : 1, sizeof *c);
	if (!c)
		return MT_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		c[i] = a[i];
		if (!(c[i].name = mti_strdup(a[i].name))) {
			mti_attrs_free(c, i);
			return MT_ENOMEM;
		}
	}
	*out = c;
	return 0;
}

void mti_attrs_free(mt_attr *a, size_t n)
{
	for (size_t i = 0; a && i < n; i++)
		free((void *)(uintptr_t)a[i].name);
	free(a);
}

/* ---- encode -------------------------------------------------------------- */

/* Set o[key] = v (stolen); remember the first key that failed: v NULL
 * means its text was not UTF-8, a number did not fit, or memory ran out. */
static void fm_set(json_t *o, const char *key, json_t *v, const char **failed)
{
	if (json_object_set_new(o, key, v) && !*failed)
		*failed = key;
}

/* JSON integers are signed 64-bit. */
static json_t *fm_uint(uint64_t v)
{
	return v > INT64_MAX ? NULL : json_integer((json_int_t)v);
}

static json_t *fm_enc_attrs(const mt_manifest *m)
{
	json_t *attrs = json_array();
	for (size_t i = 0; attrs && i < m->nattrs; i++) {
		const mt_attr *a = &m->attrs[i];
		json_t *shape = json_array(), *o = json_object();
		const char *failed = NULL;
		for (int d = 0; shape && d < a->rank && d < MT_MAX_RANK; d++)
			if (json_array_append_new(shape, fm_uint(a->shape[d])))
				failed = "shape";
		fm_set(o, "name", json_string(a->name), &failed);
		fm_set(o, "dtype", json_string(mt_dtype_name(a->dtype)), &failed);
		fm_set(o, "shape", shape, &failed);
		if (a->ragged)
			fm_set(o, "ragged", json_true(), &failed);
		/* o is the caller's until appended: a shape that cannot be
		 * encoded (a dimension past INT64_MAX) must not leak it. */
		if (!o || failed) {
			json_decref(o);
			json_decref(attrs);
			return NULL;
		}
		if (json_array_append_new(attrs, o)) {
			json_decref(attrs);
			return NULL;
		}
	}
	return attrs;
}

static json_t *fm_enc_shards(const mt_mshard *sh, size_t n)
{
	json_t *shards = json_array();
	for (size_t i = 0; shards && i < n; i++) {
		const mt_mshard *s = &sh[i];
		/* One test for all five: any of them past INT64_MAX sets the top bit. */
		uint64_t any = s->bytes | s->rows | s->first_row | s->index_offset | s->index_bytes;
		json_t *o = any > INT64_MAX ? NULL
			    : json_pack("{s:s%, s:I, s:I, s:I, s:[I,I]}", "sha256", s->sha256,
					(size_t)64, "bytes", (json_int_t)s->bytes, "rows",
					(json_int_t)s->rows, "first_row", (json_int_t)s->first_row,
					"index", (json_int_t)s->index_offset,
					(json_int_t)s->index_bytes);
		if (o && s->has_index_xxh3) {
			char hex[17];
			snprintf(hex, sizeof hex, "%016llx", (unsigned long long)s->index_xxh3);
			if (json_object_set_new(o, "index_xxh3", json_string(hex))) {
				json_decref(o);
				o = NULL;
			}
		}
		if (json_array_append_new(shards, o)) {
			json_decref(shards);
			return NULL;
		}
	}
	return shards;
}

/* A fragment's "layout": [[shards, rows], ...] (doc/FORMAT.md, "Manifest format 2"). */
static json_t *fm_enc_layout(const mt_mfrag *f)
{
	json_t *a = json_array();
	for (size_t k = 0; a && k < f->nlayout; k++)
		if (json_array_append_new(a, json_pack("[o, o]", fm_uint(f->layout[k].shards),
						       fm_uint(f->layout[k].rows)))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* Format 2: [{"first_row": F, "rows": R, "nshards": N, "sha256": S, "bytes": B,
 * "layout": [[n, rows], ...]}, ...]; layout only where the fragment has one. */
static json_t *fm_enc_frags(const mt_manifest *m)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < m->nfrags; i++) {
		const mt_mfrag *f = &m->frags[i];
		uint64_t any = f->first_row | f->rows | f->bytes | (uint64_t)f->nshards |
			       f->shard_bytes;
		json_t *o = any > INT64_MAX ? NULL
			    : json_pack("{s:I, s:I, s:I, s:I, s:s%, s:I}", "first_row",
					(json_int_t)f->first_row, "rows", (json_int_t)f->rows,
					"nshards", (json_int_t)f->nshards, "shard_bytes",
					(json_int_t)f->shard_bytes, "sha256", f->sha256,
					(size_t)64, "bytes", (json_int_t)f->bytes);
		if (o && f->nlayout && json_object_set_new(o, "layout", fm_enc_layout(f))) {
			json_decref(o);
			o = NULL;
		}
		if (json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* {"sha256": ..., "args": {KEY: VALUE, ...}} in the arguments' order. */
static json_t *fm_enc_recipe(const mt_manifest *m)
{
	json_t *args = json_object();
	for (size_t i = 0; args && i < m->nrecipe_args; i++) {
		const char *kv = m->recipe_args[i], *eq = strchr(kv, '=');
		if (!eq || eq == kv)
			goto fail;
		char *key = mti_asprintf("%.*s", (int)(eq - kv), kv);
		int bad = !key || json_object_get(args, key) ||
			  json_object_set_new(args, key, json_string(eq + 1));
		free(key);
		if (bad)
			goto fail;
	}
	return json_pack("{s:s, s:o}", "sha256", m->recipe, "args", args);
fail:
	json_decref(args);
	return NULL;
}

/* {"from": VERSION, "lost": [[FIRST, COUNT], ...]} */
static json_t *fm_enc_salvage(const mt_manifest *m)
{
	json_t *lost = json_array();
	for (size_t i = 0; lost && i < m->nsalvage_lost; i++)
		if (json_array_append_new(lost, json_pack("[o, o]", fm_uint(m->salvage_lost[i][0]),
							  fm_uint(m->salvage_lost[i][1])))) {
			json_decref(lost);
			return NULL;
		}
	return lost ? json_pack("{s:s, s:o}", "from", m->salvage_from, "lost", lost) : NULL;
}

int mti_json_seal(char **json)
{
	char hex[MT_SHA256_HEX];
	mt_error e;
	size_t len = strlen(*json);
	char *sealed = mti_sha256_hex(*json, len, hex, &e) ? NULL
		       : realloc(*json, len - 1 + FM_SUM_LEN + 1);
	if (!sealed) {
		free(*json);
		*json = NULL;
		return MT_ENOMEM;
	}
	snprintf(sealed + len - 1, FM_SUM_LEN + 1, "%s%s\"}", FM_SUM_HEAD, hex);
	*json = sealed;
	return 0;
}

/* [{"dataset": D, "version": V, "store": URL}, ...], store only when another. */
static json_t *fm_enc_sources(const mt_manifest *m)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < m->nsources; i++) {
		const mt_source *src = &m->sources[i];
		json_t *o = json_pack("{s:s, s:s}", "dataset", src->dataset, "version",
				      src->version);
		if (o && src->store && src->store[0] &&
		    json_object_set_new(o, "store", json_string(src->store))) {
			json_decref(o);
			o = NULL;
		}
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* [{"name": N, "sha256": S, "bytes": B}, ...] in name order. */
static json_t *fm_enc_attachments(const mt_manifest *m)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < m->nattachments; i++) {
		const mt_mattach *at = &m->attachments[i];
		json_t *o = json_pack("{s:s, s:s, s:I}", "name", at->name, "sha256", at->sha256,
				      "bytes", (json_int_t)at->bytes);
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

int mti_manifest_encode(const mt_manifest *m, char **json, mt_error *err)
{
	*json = NULL;
	int caps = mti_manifest_caps(m, MT_EINVAL, m->version ? m->version : "manifest", err);
	if (caps)
		return caps;
	const char *failed = NULL;
	json_t *root = json_object(), *tags = json_array(), *comp = json_object();
	for (size_t i = 0; tags && i < m->ntags; i++)
		if (json_array_append_new(tags, json_string(m->tags[i])))
			failed = "tags";
	fm_set(comp, "codec", json_string("zstd"), &failed);
	fm_set(comp, "level", json_integer(m->level), &failed);
	fm_set(comp, "chunk_bytes", fm_uint(m->chunk_bytes), &failed);
	/* The order of the format's description (JSON_PRESERVE_ORDER). */
	fm_set(root, "format", json_integer(m->format), &failed);
	fm_set(root, "dataset", json_string(m->dataset), &failed);
	fm_set(root, "version", json_string(m->version), &failed);
	fm_set(root, "parent", json_string(m->parent ? m->parent : ""), &failed);
	fm_set(root, "created", json_string(m->created), &failed);
	fm_set(root, "author", json_string(m->author ? m->author : ""), &failed);
	fm_set(root, "description", json_string(m->description ? m->description : ""), &failed);
	fm_set(root, "tags", tags, &failed);
	fm_set(root, "rows", fm_uint(m->rows), &failed);
	fm_set(root, "raw_bytes", fm_uint(m->raw_bytes), &failed);
	fm_set(root, "compression", comp, &failed);
	fm_set(root, "attributes", fm_enc_attrs(m), &failed);
	if (m->format == 2) {
		/* A part record is never a root: its reader reads it whole. */
		if (m->part_id)
			failed = "part (a staged part is format 1)";
		fm_set(root, "nshards", fm_uint(m->nshards), &failed);
		fm_set(root, "fragments", fm_enc_frags(m), &failed);
	} else {
		fm_set(root, "shards", fm_enc_shards(m->shards, m->nshards), &failed);
	}
	if (m->recipe[0])
		fm_set(root, "recipe", fm_enc_recipe(m), &failed);
	if (m->salvage_from)
		fm_set(root, "salvage", fm_enc_salvage(m), &failed);
	if (m->nsources)
		fm_set(root, "sources", fm_enc_sources(m), &failed);
	if (m->nattachments)
		fm_set(root, "attachments", fm_enc_attachments(m), &failed);
	if (m->part_id) {
		json_t *part = json_object();
		fm_set(part, "id", json_string(m->part_id), &failed);
		fm_set(part, "k", fm_uint(m->part_k), &failed);
		fm_set(part, "n", fm_uint(m->part_n), &failed);
		fm_set(root, "part", part, &failed);
	}
	if (!failed && !(*json = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER)))
		failed = "(text)";
	json_decref(root);
	if (!failed && mti_json_seal(json))
		failed = "checksum";
	if (failed)
		return mti_err(err, MT_EINVAL, "manifest of %s@%s: cannot encode %s (text must be "
			      "UTF-8, numbers below 2^63; or out of memory)",
			      m->dataset ? m->dataset : "?", m->version ? m->version : "?",
			      failed);
	return 0;
}

/* ---- decode -------------------------------------------------------------- */

struct fm_dec {
	const char *what;
	mt_error *err;
	const char *json; /* the text as read, for its checksum */
	size_t len;
	mt_mshard *fast;  /* the shard list scanned without jansson (fm_fast_split) */
	size_t nfast;
	uint64_t base;    /* a fragment's: the row its first shard starts at */
};

/* MT_EFORMAT naming the manifest, then the JSON path and what is wrong. */
static int fm_fail(struct fm_dec *d, const char *fmt, ...) MT_PRINTF(2, 3);
static int fm_fail(struct fm_dec *d, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return mti_err(d->err, MT_EFORMAT, "%s: %s", d->what, msg);
}

static int fm_nomem(struct fm_dec *d)
{
	return mti_err(d->err, MT_ENOMEM, "%s: out of memory", d->what);
}

static int fm_get_uint(json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return MT_EFORMAT;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int fm_dec_uint(struct fm_dec *d, json_t *o, const char *key, const char *path,
		       uint64_t *out)
{
	if (fm_get_uint(json_object_get(o, key), out))
		return fm_fail(d, "%s: expected a non-negative integer", path);
	return 0;
}

/* A string member; a missing optional one reads as "". */
static int fm_dec_str(struct fm_dec *d, json_t *o, const char *key, int required, char **out)
{
	json_t *v = json_object_get(o, key);
	if (!v && !required)
		*out = mti_strdup("");
	else if (!json_is_string(v))
		return fm_fail(d, "%s: expected a string", key);
	else
		*out = mti_strdup(json_string_value(v));
	return *out ? 0 : fm_nomem(d);
}

static int fm_dec_tags(struct fm_dec *d, json_t *tags, mt_manifest *m)
{
	if (tags && !json_is_array(tags))
		return fm_fail(d, "tags: expected an array of strings");
	size_t n = json_array_size(tags);
	if (!(m->tags = calloc(n ? n : 1, sizeof *m->tags)))
		return fm_nomem(d);
	m->ntags = n;
	for (size_t i = 0; i < n; i++) {
		json_t *t = json_array_get(tags, i);
		if (!json_is_string(t))
			return fm_fail(d, "tags[%zu]: expected a string", i);
		if (!(m->tags[i] = mti_strdup(json_string_value(t))))
			return fm_nomem(d);
	}
	return 0;
}

static int fm_dec_attr(struct fm_dec *d, json_t *o, size_t i, mt_attr *a)
{
	if (!json_is_object(o))
		return fm_fail(d, "attributes[%zu]: expected an object", i);
	json_t *name = json_object_get(o, "name"), *dt = json_object_get(o, "dtype");
	json_t *shape = json_object_get(o, "shape"), *rag = json_object_get(o, "ragged");
	if (!json_is_string(name))
		return fm_fail(d, "attributes[%zu].name: expected a string", i);
	if (!(a->name = mti_strdup(json_string_value(name))))
		return fm_nomem(d);
	if (!json_is_string(dt))
		return fm_fail(d, "attributes[%zu].dtype: expected a string", i);
	a->dtype = mt_dtype_parse(json_string_value(dt));
	if (a->dtype == MT_DTYPE_INVALID)
		return fm_fail(d, "attributes[%zu].dtype: unknown dtype '%.64s' (a newer "
			       "matorage may have written it)", i, json_string_value(dt));
	if (!json_is_array(shape) || json_array_size(shape) > MT_MAX_RANK)
		return fm_fail(d, "attributes[%zu].shape: expected an array of at most %d "
			       "dimensions", i, MT_MAX_RANK);
	a->rank = (int)json_array_size(shape);
	for (int k = 0; k < a->rank; k++) {
		json_t *v = json_array_get(shape, (size_t)k);
		if (fm_get_uint(v, &a->shape[k]) || a->shape[k] == 0)
			return fm_fail(d, "attributes[%zu].shape[%d]: expected an integer >= 1", i,
				       k);
	}
	if (rag && !json_is_boolean(rag))
		return fm_fail(d, "attributes[%zu].ragged: expected true or false", i);
	a->ragged = json_is_true(rag);
	mt_error e;
	if (fm_attr_check(a, &e))
		return fm_fail(d, "attributes[%zu]: %s", i, e.message);
	return 0;
}

static int fm_dec_attrs(struct fm_dec *d, json_t *arr, mt_manifest *m)
{
	size_t n = json_array_size(arr);
	if (!json_is_array(arr) || n == 0)
		return fm_fail(d, "attributes: expected a non-empty array");
	json_t *seen = json_object();
	if (!seen || !(m->attrs = calloc(n, sizeof *m->attrs))) {
		json_decref(seen);
		return fm_nomem(d);
	}
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		size_t first;
		m->nattrs = i + 1;
		if ((rc = fm_dec_attr(d, json_array_get(arr, i), i, &m->attrs[i])))
			break;
		if (fm_seen(seen, m->attrs[i].name, i, &first))
			rc = fm_nomem(d);
		else if (first != i)
			rc = fm_fail(d, "attributes[%zu].name: '%s' also names attributes[%zu]", i,
				     m->attrs[i].name, first);
	}
	json_decref(seen);
	return rc;
}

static int fm_is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int fm_is_sha(json_t *v)
{
	return json_is_string(v) && json_string_length(v) == 64 &&
	       fm_is_hex(json_string_value(v), 64);
}

/* Optional: manifests before it have no index_xxh3. */
static int fm_dec_index_xxh3(struct fm_dec *d, json_t *o, size_t i, mt_mshard *s)
{
	json_t *v = json_object_get(o, "index_xxh3");
	if (!v)
		return 0;
	if (!json_is_string(v) || json_string_length(v) != 16 ||
	    !fm_is_hex(json_string_value(v), 16))
		return fm_fail(d, "shards[%zu].index_xxh3: expected 16 lowercase hex digits", i);
	s->index_xxh3 = strtoull(json_string_value(v), NULL, 16);
	s->has_index_xxh3 = 1;
	return 0;
}

int mti_json_check_sum(const char *json, size_t len, const char *sum, const char *what,
		       mt_error *err)
{
	size_t hl = sizeof FM_SUM_HEAD - 1;
	const char *tail = len > FM_SUM_LEN ? json + len - FM_SUM_LEN : NULL;
	if (!tail || memcmp(tail, FM_SUM_HEAD, hl) != 0 || !fm_is_hex(tail + hl, 64) ||
	    memcmp(tail + hl + 64, "\"}", 2) != 0 || !sum || strncmp(sum, "sha256:", 7) != 0 ||
	    strncmp(sum + 7, tail + hl, 64) != 0)
		return mti_err(err, MT_ECORRUPT, "%s: checksum: must end the text as "
			      ",\"checksum\":\"sha256:<64 hex digits>\"}; the text was rewritten "
			      "after it was written", what);
	mt_sha256 *h = NULL;
	char hex[MT_SHA256_HEX];
	mt_error e;
	int rc = mti_sha256_new(&h, &e);
	if (!rc)
		rc = mti_sha256_update(h, json, (size_t)(tail - json), &e);
	if (!rc)
		rc = mti_sha256_update(h, "}", 1, &e);
	if (!rc)
		rc = mti_sha256_final(h, hex, &e);
	mti_sha256_free(h);
	if (rc)
		return mti_err(err, rc, "%s: checksum: %s", what, e.message);
	if (memcmp(hex, tail + hl, 64) != 0)
		return mti_err(err, MT_ECORRUPT, "%s: checksum: the text hashes to "
			      "sha256:%.16s..., its checksum says sha256:%.16s...: it was changed "
			      "after it was written", what, hex, tail + hl);
	return 0;
}

/* When the manifest has a checksum, it must be its last member, written
 * exactly as the encoder does, and match the text without it. */
static int fm_dec_checksum(struct fm_dec *d, json_t *root)
{
	json_t *v = json_object_get(root, "checksum");
	if (!v)
		return 0;
	return mti_json_check_sum(d->json, d->len, json_string_value(v), d->what, d->err);
}

static int fm_shard_check(struct fm_dec *d, size_t i, uint64_t *next, const mt_mshard *s);

/* One shard entry; *next is the running sum of rows before it.  Paths
 * are formatted only on failure: a manifest may list 100 000 shards. */
static int fm_dec_shard(struct fm_dec *d, json_t *o, size_t i, uint64_t *next, mt_mshard *s)
{
	if (!json_is_object(o))
		return fm_fail(d, "shards[%zu]: expected an object", i);
	json_t *sha = json_object_get(o, "sha256");
	if (!fm_is_sha(sha))
		return fm_fail(d, "shards[%zu].sha256: expected 64 lowercase hex digits", i);
	memcpy(s->sha256, json_string_value(sha), 65);
	static const char *const fields[] = {"bytes", "rows", "first_row"};
	uint64_t *dst[] = {&s->bytes, &s->rows, &s->first_row};
	for (size_t k = 0; k < 3; k++)
		if (fm_get_uint(json_object_get(o, fields[k]), dst[k]))
			return fm_fail(d, "shards[%zu].%s: expected a non-negative integer", i,
				       fields[k]);
	json_t *ix = json_object_get(o, "index");
	if (json_array_size(ix) != 2 || fm_get_uint(json_array_get(ix, 0), &s->index_offset) ||
	    fm_get_uint(json_array_get(ix, 1), &s->index_bytes))
		return fm_fail(d, "shards[%zu].index: expected [offset, length >= %d]", i,
			       FM_INDEX_MIN);
	int rc = fm_dec_index_xxh3(d, o, i, s);
	return rc ? rc : fm_shard_check(d, i, next, s);
}

/* What holds between a shard entry's numbers, however it was read. */
static int fm_shard_check(struct fm_dec *d, size_t i, uint64_t *next, const mt_mshard *s)
{
	if (s->rows == 0)
		return fm_fail(d, "shards[%zu].rows: expected at least 1 row", i);
	/* Every row takes at least one byte decoded, which a shard's bytes
	 * bound (MT_ZSTD_MAX_RATIO): readers size plans by rows before they
	 * see a chunk. */
	if (s->rows >= MT_SHARD_MAX_ROWS || s->rows / MT_ZSTD_MAX_RATIO > s->bytes)
		return fm_fail(d, "shards[%zu].rows: %llu rows cannot fit in %llu bytes", i,
			       (unsigned long long)s->rows, (unsigned long long)s->bytes);
	if (s->first_row != *next)
		return fm_fail(d, "shards[%zu].first_row: is %llu, but the shards before it hold "
			       "%llu rows", i, (unsigned long long)s->first_row,
			       (unsigned long long)*next);
	if (!mti_add_ok(*next, s->rows, next))
		return fm_fail(d, "shards[%zu].rows: the row count overflows", i);
	if (s->index_bytes < FM_INDEX_MIN)
		return fm_fail(d, "shards[%zu].index: expected [offset, length >= %d]", i,
			       FM_INDEX_MIN);
	uint64_t end;
	if (!mti_add_ok(s->index_offset, s->index_bytes, &end) || end > s->bytes)
		return fm_fail(d, "shards[%zu].index: bytes %llu+%llu lie outside the shard's "
			       "%llu bytes", i, (unsigned long long)s->index_offset,
			       (unsigned long long)s->index_bytes, (unsigned long long)s->bytes);
	return 0;
}

static int fm_dec_shards(struct fm_dec *d, json_t *arr, mt_manifest *m)
{
	if (!json_is_array(arr))
		return fm_fail(d, "shards: expected an array");
	if (d->fast && json_array_size(arr) == 0) {
		/* The placeholder of the list scanned before: its entries are checked here. */
		m->shards = d->fast;
		m->nshards = d->nfast;
		d->fast = NULL;
		uint64_t rows = d->base;
		for (size_t i = 0; i < m->nshards; i++) {
			int rc = fm_shard_check(d, i, &rows, &m->shards[i]);
			if (rc)
				return rc;
		}
		return rows - d->base == m->rows
			       ? 0 : fm_fail(d, "rows: is %llu, but the shards hold %llu rows",
					     (unsigned long long)m->rows,
					     (unsigned long long)(rows - d->base));
	}
	size_t n = json_array_size(arr);
	if (!(m->shards = calloc(n ? n : 1, sizeof *m->shards)))
		return fm_nomem(d);
	m->nshards = n;
	uint64_t rows = d->base;
	for (size_t i = 0; i < n; i++) {
		int rc = fm_dec_shard(d, json_array_get(arr, i), i, &rows, &m->shards[i]);
		if (rc)
			return rc;
	}
	if (rows - d->base != m->rows)
		return fm_fail(d, "rows: is %llu, but the shards hold %llu rows",
			       (unsigned long long)m->rows, (unsigned long long)(rows - d->base));
	return 0;
}

static int fm_dec_compression(struct fm_dec *d, json_t *c, mt_manifest *m)
{
	if (!json_is_object(c))
		return fm_fail(d, "compression: expected an object");
	json_t *codec = json_object_get(c, "codec"), *lvl = json_object_get(c, "level");
	if (!json_is_string(codec) || strcmp(json_string_value(codec), "zstd") != 0)
		return fm_fail(d, "compression.codec: expected \"zstd\"");
	if (!json_is_integer(lvl) || json_integer_value(lvl) < FM_LEVEL_MIN ||
	    json_integer_value(lvl) > FM_LEVEL_MAX)
		return fm_fail(d, "compression.level: expected an integer from %d to %d",
			       FM_LEVEL_MIN, FM_LEVEL_MAX);
	m->level = (int)json_integer_value(lvl);
	int rc = fm_dec_uint(d, c, "chunk_bytes", "compression.chunk_bytes", &m->chunk_bytes);
	if (!rc && m->chunk_bytes == 0)
		rc = fm_fail(d, "compression.chunk_bytes: expected at least 1");
	return rc;
}

/* Optional: old manifests have no recipe. */
static int fm_dec_recipe(struct fm_dec *d, json_t *r, mt_manifest *m)
{
	if (!r)
		return 0;
	json_t *sha = json_object_get(r, "sha256"), *args = json_object_get(r, "args");
	if (!json_is_object(r) || !fm_is_sha(sha))
		return fm_fail(d, "recipe.sha256: expected 64 lowercase hex digits");
	if (args && !json_is_object(args))
		return fm_fail(d, "recipe.args: expected an object of strings");
	memcpy(m->recipe, json_string_value(sha), 65);
	size_t n = json_object_size(args);
	if (!(m->recipe_args = calloc(n ? n : 1, sizeof *m->recipe_args)))
		return fm_nomem(d);
	const char *key;
	json_t *v;
	json_object_foreach(args, key, v) {
		if (!json_is_string(v))
			return fm_fail(d, "recipe.args.%.64s: expected a string", key);
		if (!*key || strchr(key, '='))
			return fm_fail(d, "recipe.args: '%.64s' is not a valid argument name", key);
		if (!(m->recipe_args[m->nrecipe_args] = mti_asprintf("%s=%s", key,
								      json_string_value(v))))
			return fm_nomem(d);
		m->nrecipe_args++;
	}
	return 0;
}

/* Optional (roots before it lack it): fragment i's shard rows as runs,
 * which must add up to its nshards and rows. */
static int fm_dec_layout(struct fm_dec *d, json_t *a, size_t i, mt_mfrag *f)
{
	if (!a)
		return 0;
	size_t n = json_array_size(a);
	if (!json_is_array(a) || n == 0 || n > MT_FRAGMENT_LAYOUT_RUNS)
		return fm_fail(d, "fragments[%zu].layout: expected 1 to %d runs [shards, rows]", i,
			       MT_FRAGMENT_LAYOUT_RUNS);
	uint64_t shards = 0, rows = 0;
	for (size_t k = 0; k < n; k++) {
		json_t *r = json_array_get(a, k);
		mt_mrun *u = &f->layout[k];
		uint64_t sum = 0;
		if (json_array_size(r) != 2 || fm_get_uint(json_array_get(r, 0), &u->shards) ||
		    fm_get_uint(json_array_get(r, 1), &u->rows) || !u->shards || !u->rows)
			return fm_fail(d, "fragments[%zu].layout[%zu]: expected [shards, rows], "
				       "both at least 1", i, k);
		if (!mti_mul_ok(u->shards, u->rows, &sum) || !mti_add_ok(rows, sum, &rows) ||
		    !mti_add_ok(shards, u->shards, &shards))
			return fm_fail(d, "fragments[%zu].layout[%zu]: the sum overflows", i, k);
	}
	if (shards != f->nshards || rows != f->rows)
		return fm_fail(d, "fragments[%zu].layout: holds %llu shards and %llu rows, the "
			       "fragment %zu and %llu", i, (unsigned long long)shards,
			       (unsigned long long)rows, f->nshards, (unsigned long long)f->rows);
	f->nlayout = n;
	return 0;
}

/* One fragment of a format-2 root; *rows and *shards are the sums before it. */
static int fm_dec_frag(struct fm_dec *d, json_t *o, size_t i, uint64_t *rows, uint64_t *shards,
		       mt_mfrag *f)
{
	uint64_t ns = 0;
	if (!json_is_object(o) || !fm_is_sha(json_object_get(o, "sha256")) ||
	    fm_get_uint(json_object_get(o, "first_row"), &f->first_row) ||
	    fm_get_uint(json_object_get(o, "rows"), &f->rows) ||
	    fm_get_uint(json_object_get(o, "nshards"), &ns) ||
	    fm_get_uint(json_object_get(o, "shard_bytes"), &f->shard_bytes) ||
	    fm_get_uint(json_object_get(o, "bytes"), &f->bytes))
		return fm_fail(d, "fragments[%zu]: expected {first_row, rows, nshards, "
			       "shard_bytes, sha256, bytes}", i);
	memcpy(f->sha256, json_string_value(json_object_get(o, "sha256")), 65);
	if (f->first_row != *rows)
		return fm_fail(d, "fragments[%zu].first_row: is %llu, but the fragments before it "
			       "hold %llu rows", i, (unsigned long long)f->first_row,
			       (unsigned long long)*rows);
	if (ns == 0 || ns > MT_FRAGMENT_SHARDS_MAX || f->rows < ns)
		return fm_fail(d, "fragments[%zu].nshards: expected 1 to %u shards of at least a "
			       "row each", i, MT_FRAGMENT_SHARDS_MAX);
	if (f->bytes == 0 || f->bytes > MT_FRAGMENT_MAX_BYTES)
		return fm_fail(d, "fragments[%zu].bytes: expected 1 to %llu", i,
			       (unsigned long long)MT_FRAGMENT_MAX_BYTES);
	if (!mti_add_ok(*rows, f->rows, rows))
		return fm_fail(d, "fragments[%zu].rows: the row count overflows", i);
	f->first_shard = (size_t)*shards;
	f->nshards = (size_t)ns;
	*shards += ns;
	return fm_dec_layout(d, json_object_get(o, "layout"), i, f);
}

/* Format 2: the fragments in place of the shards, which get room to be
 * loaded into. */
static int fm_dec_frags(struct fm_dec *d, json_t *root, mt_manifest *m)
{
	if (json_object_get(root, "shards"))
		return fm_fail(d, "shards: a format 2 manifest lists its shards in fragments");
	if (json_object_get(root, "part"))
		return fm_fail(d, "part: a staged part record is format 1");
	json_t *arr = json_object_get(root, "fragments");
	uint64_t total = 0, rows = 0, shards = 0;
	int rc = fm_dec_uint(d, root, "nshards", "nshards", &total);
	if (rc)
		return rc;
	if (!json_is_array(arr))
		return fm_fail(d, "fragments: expected an array");
	/* The sum of the fragments' counts must reach it: a root claims no more
	 * than its fragments could ever hold, and the room is lazily zeroed. */
	if (total > (uint64_t)json_array_size(arr) * MT_FRAGMENT_SHARDS_MAX ||
	    total > MT_MANIFEST_SHARDS_MAX)
		return fm_fail(d, "nshards: %llu is more than its fragments can hold",
			       (unsigned long long)total);
	size_t n = json_array_size(arr);
	if (!(m->frags = calloc(n ? n : 1, sizeof *m->frags)) ||
	    !(m->shards = calloc(total ? total : 1, sizeof *m->shards)))
		return fm_nomem(d);
	for (size_t i = 0; i < n; i++) {
		if ((rc = fm_dec_frag(d, json_array_get(arr, i), i, &rows, &shards, &m->frags[i])))
			return rc;
		m->nfrags = i + 1;
	}
	if (shards != total)
		return fm_fail(d, "nshards: is %llu, but the fragments hold %llu shards",
			       (unsigned long long)total, (unsigned long long)shards);
	if (rows != m->rows)
		return fm_fail(d, "rows: is %llu, but the fragments hold %llu rows",
			       (unsigned long long)m->rows, (unsigned long long)rows);
	m->nshards = (size_t)total;
	return 0;
}

static int fm_dec_name(struct fm_dec *d, const char *name, const char *kind)
{
	mt_error e;
	return mt_name_check(name, kind, &e) ? fm_fail(d, "%s", e.message) : 0;
}

static int fm_dec_root(struct fm_dec *d, json_t *root, mt_manifest *m)
{
	if (!json_is_object(root))
		return fm_fail(d, "expected a JSON object");
	/* First, so a newer format is reported as such, not as bad fields. */
	json_t *f = json_object_get(root, "format");
	if (!json_is_integer(f))
		return fm_fail(d, "format: expected an integer");
	json_int_t format = json_integer_value(f);
	if (format > MT_MANIFEST_FORMAT_MAX)
		return fm_fail(d, "format %lld is newer than this matorage understands (%d)",
			       (long long)format, MT_MANIFEST_FORMAT_MAX);
	if (format < MT_FORMAT_VERSION)
		return fm_fail(d, "format: %lld is not a format number (this matorage reads %d to "
			       "%d)", (long long)format, MT_FORMAT_VERSION, MT_MANIFEST_FORMAT_MAX);
	m->format = (int)format;
	int rc;
	if ((rc = fm_dec_checksum(d, root)) ||
	    (rc = fm_dec_str(d, root, "dataset", 1, &m->dataset)) ||
	    (rc = fm_dec_str(d, root, "version", 1, &m->version)) ||
	    (rc = fm_dec_str(d, root, "parent", 0, &m->parent)) ||
	    (rc = fm_dec_str(d, root, "created", 1, &m->created)) ||
	    (rc = fm_dec_str(d, root, "author", 0, &m->author)) ||
	    (rc = fm_dec_str(d, root, "description", 0, &m->description)) ||
	    (rc = fm_dec_name(d, m->dataset, "dataset")) ||
	    (rc = fm_dec_name(d, m->version, "version")) ||
	    (*m->parent && (rc = fm_dec_name(d, m->parent, "parent version"))) ||
	    (rc = fm_dec_tags(d, json_object_get(root, "tags"), m)) ||
	    (rc = fm_dec_uint(d, root, "rows", "rows", &m->rows)) ||
	    (rc = fm_dec_uint(d, root, "raw_bytes", "raw_bytes", &m->raw_bytes)) ||
	    (rc = fm_dec_compression(d, json_object_get(root, "compression"), m)) ||
	    (rc = fm_dec_attrs(d, json_object_get(root, "attributes"), m)) ||
	    (rc = fm_dec_recipe(d, json_object_get(root, "recipe"), m)))
		return rc;
	if (m->format == 2)
		return fm_dec_frags(d, root, m);
	return fm_dec_shards(d, json_object_get(root, "shards"), m);
}

/* Optional: only in staged part records. */
static int fm_dec_part(struct fm_dec *d, json_t *o, mt_manifest *m)
{
	if (!o)
		return 0;
	json_t *k = json_object_get(o, "k"), *n = json_object_get(o, "n");
	if (!json_is_object(o) || !json_is_integer(k) || !json_is_integer(n) ||
	    json_integer_value(k) < 1 || json_integer_value(n) < json_integer_value(k))
		return fm_fail(d, "part: expected {id, k, n} with 1 <= k <= n");
	int rc = fm_dec_str(d, o, "id", 1, &m->part_id);
	if (!rc)
		rc = fm_dec_name(d, m->part_id, "part.id");
	m->part_k = (uint64_t)json_integer_value(k);
	m->part_n = (uint64_t)json_integer_value(n);
	return rc;
}

/* Optional: only versions built by a recipe that read other versions. */
static int fm_dec_sources(struct fm_dec *d, json_t *a, mt_manifest *m)
{
	if (!a)
		return 0;
	if (!json_is_array(a))
		return fm_fail(d, "sources: expected an array");
	size_t n = json_array_size(a);
	if (!(m->sources = calloc(n ? n : 1, sizeof *m->sources)) ||
	    !(m->source_strs = calloc(3 * n + 1, sizeof *m->source_strs)))
		return fm_nomem(d);
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(a, i), *st = json_object_get(o, "store");
		char **f = &m->source_strs[3 * i];
		int rc = !json_is_object(o) ? fm_fail(d, "sources[%zu]: expected an object", i)
		       : st && !json_is_string(st)
			       ? fm_fail(d, "sources[%zu].store: expected a string", i)
			       : 0;
		if (!rc)
			rc = fm_dec_str(d, o, "dataset", 1, &f[0]);
		if (!rc)
			rc = fm_dec_str(d, o, "version", 1, &f[1]);
		if (!rc && !(f[2] = mti_strdup(st ? json_string_value(st) : "")))
			rc = fm_nomem(d);
		if (!rc)
			rc = fm_dec_name(d, f[0], "sources.dataset");
		if (rc)
			return rc;
		m->sources[i] = (mt_source){ f[0], f[1], f[2] };
		m->nsources++;
	}
	return 0;
}

/* Optional: only versions with attached files.  Names follow the name
 * rules, so no key or path built from one leaves its directory. */
static int fm_dec_attachments(struct fm_dec *d, json_t *a, mt_manifest *m)
{
	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) > MT_ATTACHMENTS_MAX)
		return fm_fail(d, "attachments: expected an array of at most %u", MT_ATTACHMENTS_MAX);
	size_t n = json_array_size(a);
	if (!(m->attachments = calloc(n ? n : 1, sizeof *m->attachments)))
		return fm_nomem(d);
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(a, i), *name = json_object_get(o, "name");
		json_t *sha = json_object_get(o, "sha256"), *b = json_object_get(o, "bytes");
		mt_error e;
		if (!json_is_object(o) || !json_is_string(name) ||
		    json_string_length(name) >= sizeof m->attachments[i].name ||
		    mt_name_check(json_string_value(name), "attachment", &e))
			return fm_fail(d, "attachments[%zu].name: expected a name (letters, digits, "
				       "'.', '_', '-')", i);
		if (!fm_is_sha(sha) || !json_is_integer(b) || json_integer_value(b) < 0)
			return fm_fail(d, "attachments[%zu]: expected a sha256 and bytes", i);
		mt_mattach *at = &m->attachments[i];
		strcpy(at->name, json_string_value(name));
		memcpy(at->sha256, json_string_value(sha), 65);
		at->bytes = (uint64_t)json_integer_value(b);
		if (i && strcmp(m->attachments[i - 1].name, at->name) >= 0)
			return fm_fail(d, "attachments[%zu]: '%s' is out of name order or twice", i,
				       at->name);
		m->nattachments++;
	}
	return 0;
}

/* Optional: only salvaged versions have it. */
static int fm_dec_salvage(struct fm_dec *d, json_t *sv, mt_manifest *m)
{
	if (!sv)
		return 0;
	json_t *lost = json_object_get(sv, "lost");
	int rc = json_is_object(sv) && json_is_array(lost)
			 ? fm_dec_str(d, sv, "from", 1, &m->salvage_from)
			 : fm_fail(d, "salvage: expected {\"from\": VERSION, \"lost\": [...]}");
	if (!rc)
		rc = fm_dec_name(d, m->salvage_from, "salvage.from");
	size_t n = rc ? 0 : json_array_size(lost);
	if (!rc && !(m->salvage_lost = calloc(n ? n : 1, sizeof *m->salvage_lost)))
		rc = fm_nomem(d);
	for (size_t i = 0; !rc && i < n; i++) {
		json_t *r = json_array_get(lost, i), *a = json_array_get(r, 0), *b = json_array_get(r, 1);
		if (json_array_size(r) != 2 || !json_is_integer(a) || !json_is_integer(b) ||
		    json_integer_value(a) < 0 || json_integer_value(b) < 1)
			return fm_fail(d, "salvage.lost[%zu]: expected [FIRST, COUNT]", i);
		m->salvage_lost[i][0] = (uint64_t)json_integer_value(a);
		m->salvage_lost[i][1] = (uint64_t)json_integer_value(b);
		m->nsalvage_lost++;
	}
	return rc;
}

/* ---- the shard list without a tree ----
 * A version of 100,000 shards has 17 MB of manifest, and jansson building
 * and freeing its 700,000 values was three quarters of opening it.  The
 * list as the encoder writes it (compact, members in its order: what
 * matorage writes) is scanned straight into the shard array, and the rest
 * of the text, the list replaced by [], goes through jansson.  Any other
 * spelling (spaces, another order, escapes) makes the scan give up and
 * the whole text go through jansson, as before. */

struct fm_scan {
	const char *p, *end;
};

static int sc_lit(struct fm_scan *s, const char *lit, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
		return 0;
	s->p += n;
	return 1;
}
#define SC_LIT(s, lit) sc_lit((s), (lit), sizeof(lit) - 1)

/* A JSON non-negative integer up to INT64_MAX (what jansson accepts). */
static int sc_uint(struct fm_scan *s, uint64_t *v)
{
	const char *p = s->p;
	if (p == s->end || *p < '0' || *p > '9' || (*p == '0' && p + 1 < s->end &&
						    p[1] >= '0' && p[1] <= '9'))
		return 0;
	uint64_t x = 0;
	for (; p < s->end && *p >= '0' && *p <= '9'; p++) {
		if (x > (INT64_MAX - (uint64_t)(*p - '0')) / 10)
			return 0;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	if (p < s->end && (*p == '.' || *p == 'e' || *p == 'E'))
		return 0;
	s->p = p;
	*v = x;
	return 1;
}

/* "<n lowercase hex digits>" into out (n + 1 bytes). */
static int sc_hex(struct fm_scan *s, char *out, size_t n)
{
	if ((size_t)(s->end - s->p) < n + 2 || s->p[0] != '"' || s->p[n + 1] != '"' ||
	    !fm_is_hex(s->p + 1, n))
		return 0;
	memcpy(out, s->p + 1, n);
	out[n] = 0;
	s->p += n + 2;
	return 1;
}

static int sc_shard(struct fm_scan *s, mt_mshard *sh)
{
	if (!SC_LIT(s, "{\"sha256\":") || !sc_hex(s, sh->sha256, 64) ||
	    !SC_LIT(s, ",\"bytes\":") || !sc_uint(s, &sh->bytes) || !SC_LIT(s, ",\"rows\":") ||
	    !sc_uint(s, &sh->rows) || !SC_LIT(s, ",\"first_row\":") ||
	    !sc_uint(s, &sh->first_row) || !SC_LIT(s, ",\"index\":[") ||
	    !sc_uint(s, &sh->index_offset) || !SC_LIT(s, ",") || !sc_uint(s, &sh->index_bytes) ||
	    !SC_LIT(s, "]"))
		return 0;
	char hex[17];
	if (SC_LIT(s, ",\"index_xxh3\":")) {
		if (!sc_hex(s, hex, 16))
			return 0;
		sh->index_xxh3 = strtoull(hex, NULL, 16);
		sh->has_index_xxh3 = 1;
	}
	return SC_LIT(s, "}");
}

/* The shards of the text's one "shards":[ list into d->fast, and the
 * text with [] in its place into *rest (malloc'ed); 0 when the list is
 * not as the encoder writes it (or appears twice), to decode it all
 * through jansson. */
static int fm_fast_split(struct fm_dec *d, char **rest, size_t *restlen)
{
	static const char key[] = "\"shards\":[";
	const char *at = memmem(d->json, d->len, key, sizeof key - 1);
	if (!at || memmem(at + 1, d->len - (size_t)(at + 1 - d->json), key, sizeof key - 1))
		return 0;
	struct fm_scan s = {at + sizeof key - 1, d->json + d->len};
	size_t n = 0, cap = 0;
	mt_mshard *v = NULL;
	int ok = 0;
	for (;;) {
		if (SC_LIT(&s, "]")) {
			ok = 1;
			break;
		}
		mt_mshard *g = n && !SC_LIT(&s, ",") ? NULL : mti_grow(v, n, &cap, sizeof *v, 1024);
		if (!g)
			break;
		v = g;
		memset(&v[n], 0, sizeof *v);
		if (!sc_shard(&s, &v[n]))
			break;
		n++;
	}
	size_t head = (size_t)(at - d->json) + sizeof key - 1, tail = (size_t)(d->json + d->len - s.p);
	char *r = ok ? malloc(head + 1 + tail + 1) : NULL;
	if (!r) {
		free(v);
		return 0;
	}
	memcpy(r, d->json, head);
	r[head] = ']';
	memcpy(r + head + 1, s.p, tail);
	r[head + 1 + tail] = 0;
	*rest = r;
	*restlen = head + 1 + tail;
	d->fast = v;
	d->nfast = n;
	return 1;
}

int mti_manifest_decode(const char *json, size_t len, const char *what, mt_manifest **out,
		       mt_error *err)
{
	*out = NULL;
	struct fm_dec d = {what ? what : "manifest", err, json, len, NULL, 0, 0};
	int caps = mti_json_caps_scan(json, len, MT_MANIFEST_MAX_BYTES, d.what, err);
	if (caps)
		return caps;
	json_error_t je;
	char *rest = NULL;
	size_t restlen = 0;
	int fast = fm_fast_split(&d, &rest, &restlen);
	/* Strings with NUL bytes are refused (jansson's default). */
	json_t *root = json_loadb(fast ? rest : json, fast ? restlen : len, JSON_REJECT_DUPLICATES,
				  &je);
	free(rest);
	if (!root && fast) {
		/* Report the error as the whole text has it. */
		free(d.fast);
		d.fast = NULL;
		root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	}
	if (!root)
		return fm_fail(&d, "invalid JSON at line %d, column %d: %s", je.line, je.column,
			       je.text);
	mt_manifest *m = calloc(1, sizeof *m);
	int rc = m ? fm_dec_root(&d, root, m) : fm_nomem(&d);
	if (!rc)
		rc = fm_dec_salvage(&d, json_object_get(root, "salvage"), m);
	if (!rc)
		rc = fm_dec_sources(&d, json_object_get(root, "sources"), m);
	if (!rc)
		rc = fm_dec_part(&d, json_object_get(root, "part"), m);
	if (!rc)
		rc = fm_dec_attachments(&d, json_object_get(root, "attachments"), m);
	if (!rc)
		rc = mti_manifest_caps(m, MT_ECORRUPT, d.what, err);
	json_decref(root);
	free(d.fast); /* when the placeholder was not reached */
	if (rc) {
		mti_manifest_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void mti_manifest_free(mt_manifest *m)
{
	if (!m)
		return;
	free(m->dataset);
	free(m->part_id);
	free(m->version);
	free(m->parent);
	free(m->created);
	free(m->author);
	free(m->description);
	for (size_t i = 0; m->tags && i < m->ntags; i++)
		free(m->tags[i]);
	free(m->tags);
	mti_attrs_free(m->attrs, m->nattrs);
	free(m->shards);
	free(m->frags);
	mt_strv_free(m->recipe_args, m->nrecipe_args);
	free(m->salvage_from);
	free(m->salvage_lost);
	for (size_t i = 0; m->source_strs && i < 3 * m->nsources + 3 && m->source_strs[i]; i++)
		free(m->source_strs[i]);
	free(m->source_strs);
	free(m->sources);
	free(m->attachments);
	free(m);
}

/* ---- fragments (format 2) ------------------------------------------------ */

char *mti_key_fragment(const char *dataset, const char *sha256)
{
	return mti_asprintf("datasets/%s/fragments/%s.json", dataset, sha256);
}

/* The runs of equal rows of sh[0..n) into f's layout; none when there are
 * more than the root keeps. */
static void fm_layout_of(const mt_mshard *sh, size_t n, mt_mfrag *f)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && f->layout[k - 1].rows == sh[i].rows) {
			f->layout[k - 1].shards++;
			continue;
		}
		if (k == MT_FRAGMENT_LAYOUT_RUNS) {
			f->nlayout = 0;
			return;
		}
		f->layout[k++] = (mt_mrun){1, sh[i].rows};
	}
	f->nlayout = k;
}

int mti_fragment_encode(const char *dataset, const mt_mshard *sh, size_t n, mt_mfrag *f,
			char **json, mt_error *err)
{
	*json = NULL;
	if (n == 0 || n > MT_FRAGMENT_SHARDS_MAX)
		return mti_err(err, MT_EINVAL, "%s: a fragment holds 1 to %u shards, not %zu",
			      dataset, MT_FRAGMENT_SHARDS_MAX, n);
	const char *failed = NULL;
	json_t *root = json_object();
	fm_set(root, "format", json_integer(2), &failed);
	fm_set(root, "dataset", json_string(dataset), &failed);
	fm_set(root, "first_row", fm_uint(sh[0].first_row), &failed);
	fm_set(root, "shards", fm_enc_shards(sh, n), &failed);
	if (!failed && !(*json = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER)))
		failed = "(text)";
	json_decref(root);
	mt_error e;
	if (!failed && mti_sha256_hex(*json, strlen(*json), f->sha256, &e))
		failed = "(sha256)";
	if (!failed && strlen(*json) > MT_FRAGMENT_MAX_BYTES)
		failed = "(over the size cap)";
	if (failed) {
		free(*json);
		*json = NULL;
		return mti_err(err, MT_EINVAL, "%s: cannot encode a fragment of %zu shards from row "
			      "%llu: %s", dataset, n, (unsigned long long)sh[0].first_row, failed);
	}
	f->bytes = strlen(*json);
	f->shard_bytes = 0;
	for (size_t i = 0; i < n; i++)
		f->shard_bytes += sh[i].bytes;
	f->first_row = sh[0].first_row;
	f->rows = sh[n - 1].first_row + sh[n - 1].rows - sh[0].first_row;
	f->nshards = n;
	fm_layout_of(sh, n, f);
	return 0;
}

/* A loader planned from the root's layout: the fragment's shards must hold
 * exactly those rows, or its units would cross their boundaries. */
static int fm_layout_check(struct fm_dec *d, const mt_mfrag *f, const mt_mshard *sh)
{
	size_t i = 0;
	for (size_t k = 0; k < f->nlayout; k++)
		for (uint64_t j = 0; j < f->layout[k].shards; j++, i++)
			if (sh[i].rows != f->layout[k].rows)
				return fm_fail(d, "shards[%zu].rows: is %llu, the manifest's layout "
					       "says %llu", i, (unsigned long long)sh[i].rows,
					       (unsigned long long)f->layout[k].rows);
	return 0;
}

/* The fragment's own members, checked against what the root says of it. */
static int fm_dec_fragment_head(struct fm_dec *d, json_t *root, const mt_manifest *m,
				const mt_mfrag *f)
{
	json_t *fmt = json_object_get(root, "format"), *ds = json_object_get(root, "dataset");
	uint64_t first = 0;
	if (!json_is_object(root))
		return fm_fail(d, "expected a JSON object");
	if (!json_is_integer(fmt) || json_integer_value(fmt) != 2)
		return fm_fail(d, "format: expected 2");
	if (!json_is_string(ds) || strcmp(json_string_value(ds), m->dataset))
		return fm_fail(d, "dataset: expected \"%s\"", m->dataset);
	if (fm_get_uint(json_object_get(root, "first_row"), &first) || first != f->first_row)
		return fm_fail(d, "first_row: expected %llu", (unsigned long long)f->first_row);
	return 0;
}

/* Check json, len against fragment f (size and sha256 first: the root
 * binds them), then decode its entries into m->shards. */
static int fm_dec_fragment(struct fm_dec *d, mt_manifest *m, mt_mfrag *f)
{
	char hex[MT_SHA256_HEX];
	mt_error e;
	if (d->len != f->bytes)
		return mti_err(d->err, MT_ECORRUPT, "%s: %zu bytes, the manifest names one of %llu "
			      "(truncated, edited or swapped)", d->what, d->len,
			      (unsigned long long)f->bytes);
	if (mti_sha256_hex(d->json, d->len, hex, &e))
		return mti_err(d->err, e.code, "%s: %s", d->what, e.message);
	if (memcmp(hex, f->sha256, 64))
		return mti_err(d->err, MT_ECORRUPT, "%s: its bytes hash to sha256:%.16s..., the "
			      "manifest names sha256:%.16s... (edited or swapped)", d->what, hex,
			      f->sha256);
	int rc = mti_json_caps_scan(d->json, d->len, MT_FRAGMENT_MAX_BYTES, d->what, d->err);
	if (rc)
		return rc;
	char *rest = NULL;
	size_t restlen = 0;
	int fast = fm_fast_split(d, &rest, &restlen);
	json_error_t je;
	json_t *root = json_loadb(fast ? rest : d->json, fast ? restlen : d->len,
				  JSON_REJECT_DUPLICATES, &je);
	free(rest);
	if (!root)
		return fm_fail(d, "invalid JSON at line %d, column %d: %s", je.line, je.column,
			       je.text);
	mt_manifest t = {.rows = f->rows};
	rc = fm_dec_fragment_head(d, root, m, f);
	if (!rc)
		rc = fm_dec_shards(d, json_object_get(root, "shards"), &t);
	if (!rc && t.nshards != f->nshards)
		rc = fm_fail(d, "holds %zu shards, the manifest says %zu", t.nshards, f->nshards);
	uint64_t bytes = 0;
	for (size_t i = 0; !rc && i < t.nshards; i++)
		if (!mti_add_ok(bytes, t.shards[i].bytes, &bytes))
			rc = fm_fail(d, "shards[%zu].bytes: the sum overflows", i);
	if (!rc && bytes != f->shard_bytes)
		rc = fm_fail(d, "its shards hold %llu bytes, the manifest says %llu",
			     (unsigned long long)bytes, (unsigned long long)f->shard_bytes);
	if (!rc)
		rc = fm_layout_check(d, f, t.shards);
	if (!rc)
		memcpy(m->shards + f->first_shard, t.shards, f->nshards * sizeof *t.shards);
	free(t.shards);
	json_decref(root);
	return rc;
}

int mti_fragment_decode(mt_manifest *m, size_t fi, const char *json, size_t len,
			const char *what, mt_error *err)
{
	mt_mfrag *f = &m->frags[fi];
	char *w = mti_asprintf("%s@%s: fragment %s (rows %llu to %llu, shards %zu to %zu)",
			       m->dataset, m->version, what, (unsigned long long)f->first_row,
			       (unsigned long long)(f->first_row + f->rows - 1), f->first_shard,
			       f->first_shard + f->nshards - 1);
	if (!w)
		return mti_err(err, MT_ENOMEM, "out of memory");
	struct fm_dec d = {w, err, json, len, NULL, 0, f->first_row};
	int rc = fm_dec_fragment(&d, m, f);
	free(d.fast);
	free(w);
	if (!rc)
		f->loaded = 1;
	return rc;
}

/* ---- curated metadata ---------------------------------------------------- */

int mti_meta_encode(const mt_manifest *m, const char *updated, const char *description,
		   const char *const *tags, size_t ntags, char **json, mt_error *err)
{
	*json = NULL;
	int caps = mti_meta_caps(description, tags, ntags, MT_EINVAL, m->version, err);
	if (caps)
		return caps;
	const char *failed = NULL;
	json_t *root = json_object(), *jt = json_array();
	/* Tags are a set: a tag given twice is kept once, where it came first. */
	for (size_t i = 0; jt && i < ntags; i++) {
		size_t k = 0;
		while (k < i && strcmp(tags[k], tags[i]))
			k++;
		if (k == i && json_array_append_new(jt, json_string(tags[i])))
			failed = "tags";
	}
	fm_set(root, "format", json_integer(MT_FORMAT_VERSION), &failed);
	fm_set(root, "dataset", json_string(m->dataset), &failed);
	fm_set(root, "version", json_string(m->version), &failed);
	fm_set(root, "updated", json_string(updated), &failed);
	fm_set(root, "description", json_string(description), &failed);
	fm_set(root, "tags", jt, &failed);
	if (!failed && !(*json = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER)))
		failed = "(text)";
	json_decref(root);
	if (failed)
		return mti_err(err, MT_EINVAL, "metadata of %s@%s: cannot encode %s (text must be "
			      "UTF-8; or out of memory)", m->dataset, m->version, failed);
	return 0;
}

int mti_meta_apply(mt_manifest *m, const char *json, size_t len, const char *what,
		  mt_error *err)
{
	struct fm_dec d = {what, err, json, len, NULL, 0, 0};
	int caps = mti_json_caps_scan(json, len, MT_META_MAX_BYTES, what, err);
	if (caps)
		return caps;
	json_error_t je;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return fm_fail(&d, "invalid JSON at line %d, column %d: %s", je.line, je.column,
			       je.text);
	mt_manifest tmp = {0};
	int rc = 0;
	json_t *f = json_object_get(root, "format");
	if (!json_is_integer(f) || json_integer_value(f) != MT_FORMAT_VERSION)
		rc = fm_fail(&d, "format: expected %d", MT_FORMAT_VERSION);
	else if (!json_is_string(json_object_get(root, "dataset")) ||
		 !json_is_string(json_object_get(root, "version")) ||
		 strcmp(json_string_value(json_object_get(root, "dataset")), m->dataset) ||
		 strcmp(json_string_value(json_object_get(root, "version")), m->version))
		/* A copied or renamed object must not relabel another version. */
		rc = fm_fail(&d, "does not name %s@%s", m->dataset, m->version);
	if (!rc && !(rc = fm_dec_str(&d, root, "description", 1, &tmp.description)))
		rc = fm_dec_tags(&d, json_object_get(root, "tags"), &tmp);
	if (!rc)
		rc = mti_meta_caps(tmp.description, (const char *const *)tmp.tags, tmp.ntags,
				   MT_ECORRUPT, what, err);
	json_decref(root);
	if (!rc) {
		free(m->description);
		m->description = tmp.description;
		tmp.description = NULL;
		for (size_t i = 0; i < m->ntags; i++)
			free(m->tags[i]);
		free(m->tags);
		m->tags = tmp.tags;
		m->ntags = tmp.ntags;
		tmp.tags = NULL;
		tmp.ntags = 0;
	}
	free(tmp.description);
	for (size_t i = 0; tmp.tags && i < tmp.ntags; i++)
		free(tmp.tags[i]);
	free(tmp.tags);
	return rc;
}
