/* format-manifest.c — the manifest as JSON (jansson): encode, and decode with every field checked. */
#include <jansson.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

char *mt_key_manifest(const char *dataset, const char *version)
{
	return mt_asprintf("datasets/%s/versions/%s.json", dataset, version);
}

char *mt_key_shard(const char *dataset, const char *sha256)
{
	return mt_asprintf("datasets/%s/shards/%s.h5", dataset, sha256);
}

int mt_attrs_check(const mt_attr *a, size_t n, mt_error *err)
{
	for (size_t i = 0; i < n; i++) {
		int rc = mt_name_check(a[i].name, "attribute", err);
		if (rc)
			return rc;
		if (a[i].name[0] == '_')
			return mt_err(err, MT_EINVAL, "attribute name '%s': names starting with '_' "
				      "are reserved", a[i].name);
		if (mt_dtype_size(a[i].dtype) == 0)
			return mt_err(err, MT_EINVAL, "attribute %s: unknown dtype %d", a[i].name,
				      (int)a[i].dtype);
		if (a[i].rank < 0 || a[i].rank > MT_MAX_RANK)
			return mt_err(err, MT_EINVAL, "attribute %s: rank %d is outside 0..%d",
				      a[i].name, a[i].rank, MT_MAX_RANK);
		uint64_t bytes = mt_dtype_size(a[i].dtype);
		for (int d = 0; d < a[i].rank; d++)
			if (a[i].shape[d] == 0 || !mt_mul_ok(bytes, a[i].shape[d], &bytes) ||
			    bytes > (1ull << 40))
				return mt_err(err, MT_EINVAL, "attribute %s: dimension %d of its "
					      "shape must be 1..2^40 bytes in all", a[i].name, d);
		for (size_t j = 0; j < i; j++)
			if (strcmp(a[i].name, a[j].name) == 0)
				return mt_err(err, MT_EINVAL, "attribute %s appears twice", a[i].name);
	}
	return 0;
}

int mt_attrs_dup(const mt_attr *a, size_t n, mt_attr **out)
{
	mt_attr *c = calloc(n ? n : 1, sizeof *c);
	if (!c)
		return MT_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		c[i] = a[i];
		if (!(c[i].name = mt_strdup(a[i].name))) {
			mt_attrs_free(c, i);
			return MT_ENOMEM;
		}
	}
	*out = c;
	return 0;
}

void mt_attrs_free(mt_attr *a, size_t n)
{
	for (size_t i = 0; a && i < n; i++)
		free((void *)(uintptr_t)a[i].name);
	free(a);
}

/* ---- encode ------------------------------------------------------------- */

int mt_manifest_encode(const mt_manifest *m, char **json, mt_error *err)
{
	json_t *root = json_object(), *tags = json_array(), *attrs = json_array();
	json_t *shards = json_array();
	int bad = !root || !tags || !attrs || !shards;
	for (size_t i = 0; !bad && i < m->ntags; i++)
		bad |= json_array_append_new(tags, json_string(m->tags[i]));
	for (size_t i = 0; !bad && i < m->nattrs; i++) {
		const mt_attr *a = &m->attrs[i];
		json_t *shape = json_array();
		for (int d = 0; shape && d < a->rank; d++)
			bad |= json_array_append_new(shape, json_integer((json_int_t)a->shape[d]));
		json_t *o = json_pack("{s:s, s:s, s:o*}", "name", a->name, "dtype",
				      mt_dtype_name(a->dtype), "shape", shape);
		if (o && a->ragged)
			bad |= json_object_set_new(o, "ragged", json_true());
		bad |= !o || json_array_append_new(attrs, o);
	}
	for (size_t i = 0; !bad && i < m->nshards; i++) {
		const mt_mshard *s = &m->shards[i];
		json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:[I,I]}", "sha256", s->sha256, "bytes",
				      (json_int_t)s->bytes, "rows", (json_int_t)s->rows, "first_row",
				      (json_int_t)s->first_row, "index", (json_int_t)s->index_offset,
				      (json_int_t)s->index_bytes);
		bad |= !o || json_array_append_new(shards, o);
	}
	if (!bad) {
		json_t *comp = json_pack("{s:s, s:i, s:I}", "codec", "zstd", "level", m->level,
					 "chunk_bytes", (json_int_t)m->chunk_bytes);
		bad = !comp ||
		      json_object_set_new(root, "format", json_integer(m->format)) ||
		      json_object_set_new(root, "dataset", json_string(m->dataset)) ||
		      json_object_set_new(root, "version", json_string(m->version)) ||
		      json_object_set_new(root, "parent", json_string(m->parent ? m->parent : "")) ||
		      json_object_set_new(root, "created", json_string(m->created)) ||
		      json_object_set_new(root, "author", json_string(m->author ? m->author : "")) ||
		      json_object_set_new(root, "description",
					  json_string(m->description ? m->description : "")) ||
		      json_object_set(root, "tags", tags) ||
		      json_object_set_new(root, "rows", json_integer((json_int_t)m->rows)) ||
		      json_object_set_new(root, "raw_bytes", json_integer((json_int_t)m->raw_bytes)) ||
		      json_object_set_new(root, "compression", comp) ||
		      json_object_set(root, "attributes", attrs) ||
		      json_object_set(root, "shards", shards);
	}
	*json = bad ? NULL : json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	json_decref(tags);
	json_decref(attrs);
	json_decref(shards);
	if (!*json)
		return mt_err(err, MT_EINVAL, "manifest of %s@%s: cannot encode (text must be "
			      "UTF-8)", m->dataset, m->version ? m->version : "?");
	return 0;
}

/* ---- decode ------------------------------------------------------------- */

struct dec {
	const char *what;
	mt_error *err;
};

static int bad(struct dec *d, const char *path, const char *expect)
{
	return mt_err(d->err, MT_EFORMAT, "%s: %s: expected %s", d->what, path, expect);
}

static int get_u64(struct dec *d, json_t *o, const char *key, const char *path, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return bad(d, path, "a non-negative integer");
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int get_str(struct dec *d, json_t *o, const char *key, int required, char **out)
{
	json_t *v = json_object_get(o, key);
	if (!v && !required) {
		*out = mt_strdup("");
	} else if (!json_is_string(v)) {
		return bad(d, key, "a string");
	} else {
		*out = strndup(json_string_value(v), json_string_length(v));
	}
	return *out ? 0 : mt_err(d->err, MT_ENOMEM, "out of memory");
}

static int decode_attrs(struct dec *d, json_t *arr, mt_manifest *m)
{
	if (!json_is_array(arr))
		return bad(d, "attributes", "an array");
	size_t n = json_array_size(arr);
	if (!(m->attrs = calloc(n ? n : 1, sizeof *m->attrs)))
		return mt_err(d->err, MT_ENOMEM, "out of memory");
	char path[64];
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(arr, i);
		mt_attr *a = &m->attrs[i];
		m->nattrs = i + 1;
		snprintf(path, sizeof path, "attributes[%zu]", i);
		json_t *name = json_object_get(o, "name"), *dt = json_object_get(o, "dtype");
		json_t *shape = json_object_get(o, "shape"), *rag = json_object_get(o, "ragged");
		if (!json_is_object(o) || !json_is_string(name) || !json_is_string(dt) ||
		    !json_is_array(shape) || (rag && !json_is_boolean(rag)))
			return bad(d, path, "{name, dtype, shape[, ragged]}");
		if (!(a->name = mt_strdup(json_string_value(name))))
			return mt_err(d->err, MT_ENOMEM, "out of memory");
		a->dtype = mt_dtype_parse(json_string_value(dt));
		if (a->dtype == MT_DTYPE_INVALID)
			return mt_err(d->err, MT_EFORMAT, "%s: %s.dtype: unknown dtype '%s'", d->what,
				      path, json_string_value(dt));
		if (json_array_size(shape) > MT_MAX_RANK)
			return mt_err(d->err, MT_EFORMAT, "%s: %s.shape: more than %d dimensions",
				      d->what, path, MT_MAX_RANK);
		a->rank = (int)json_array_size(shape);
		for (int k = 0; k < a->rank; k++) {
			json_t *v = json_array_get(shape, (size_t)k);
			if (!json_is_integer(v) || json_integer_value(v) < 1)
				return bad(d, path, "shape dimensions >= 1");
			a->shape[k] = (uint64_t)json_integer_value(v);
		}
		a->ragged = rag && json_is_true(rag);
	}
	int rc = mt_attrs_check(m->attrs, m->nattrs, d->err);
	return rc ? mt_err_prefix(d->err, "%s: ", d->what) : 0;
}

static int is_sha(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int decode_shards(struct dec *d, json_t *arr, mt_manifest *m)
{
	if (!json_is_array(arr))
		return bad(d, "shards", "an array");
	size_t n = json_array_size(arr);
	if (!(m->shards = calloc(n ? n : 1, sizeof *m->shards)))
		return mt_err(d->err, MT_ENOMEM, "out of memory");
	m->nshards = n;
	uint64_t next = 0;
	char path[64];
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(arr, i), *ix;
		mt_mshard *s = &m->shards[i];
		int rc;
		snprintf(path, sizeof path, "shards[%zu]", i);
		if (!json_is_object(o))
			return bad(d, path, "an object");
		json_t *sha = json_object_get(o, "sha256");
		if (!json_is_string(sha) || !is_sha(json_string_value(sha)))
			return bad(d, path, "sha256 of 64 lowercase hex digits");
		memcpy(s->sha256, json_string_value(sha), 65);
		char sub[96];
		snprintf(sub, sizeof sub, "%s.bytes", path);
		if ((rc = get_u64(d, o, "bytes", sub, &s->bytes)))
			return rc;
		snprintf(sub, sizeof sub, "%s.rows", path);
		if ((rc = get_u64(d, o, "rows", sub, &s->rows)))
			return rc;
		snprintf(sub, sizeof sub, "%s.first_row", path);
		if ((rc = get_u64(d, o, "first_row", sub, &s->first_row)))
			return rc;
		if (s->first_row != next)
			return mt_err(d->err, MT_EFORMAT, "%s: %s.first_row is %llu, the rows before "
				      "it add up to %llu", d->what, path,
				      (unsigned long long)s->first_row, (unsigned long long)next);
		if (s->rows == 0 || !mt_add_ok(next, s->rows, &next))
			return bad(d, sub, "a row count >= 1");
		ix = json_object_get(o, "index");
		json_t *io = json_array_get(ix, 0), *il = json_array_get(ix, 1);
		snprintf(sub, sizeof sub, "%s.index", path);
		if (!json_is_array(ix) || json_array_size(ix) != 2 || !json_is_integer(io) ||
		    !json_is_integer(il) || json_integer_value(io) < 0 ||
		    json_integer_value(il) < 20)
			return bad(d, sub, "[offset, length]");
		s->index_offset = (uint64_t)json_integer_value(io);
		s->index_bytes = (uint64_t)json_integer_value(il);
		uint64_t end;
		if (!mt_add_ok(s->index_offset, s->index_bytes, &end) || end > s->bytes)
			return mt_err(d->err, MT_EFORMAT, "%s: %s lies outside the shard's %llu "
				      "bytes", d->what, sub, (unsigned long long)s->bytes);
	}
	if (next != m->rows)
		return mt_err(d->err, MT_EFORMAT, "%s: shards hold %llu rows, \"rows\" says %llu",
			      d->what, (unsigned long long)next, (unsigned long long)m->rows);
	return 0;
}

static int decode_root(struct dec *d, json_t *root, mt_manifest *m)
{
	if (!json_is_object(root))
		return bad(d, "(top level)", "an object");
	json_t *f = json_object_get(root, "format");
	if (!json_is_integer(f))
		return bad(d, "format", "an integer");
	m->format = (int)json_integer_value(f);
	if (m->format != MT_FORMAT_VERSION)
		return mt_err(d->err, MT_EFORMAT, "%s: format %lld %s (this matorage reads %d)",
			      d->what, (long long)json_integer_value(f),
			      m->format > MT_FORMAT_VERSION ? "is newer than this matorage "
							      "understands" : "is unknown",
			      MT_FORMAT_VERSION);
	int rc;
	if ((rc = get_str(d, root, "dataset", 1, &m->dataset)) ||
	    (rc = get_str(d, root, "version", 1, &m->version)) ||
	    (rc = get_str(d, root, "parent", 0, &m->parent)) ||
	    (rc = get_str(d, root, "created", 1, &m->created)) ||
	    (rc = get_str(d, root, "author", 0, &m->author)) ||
	    (rc = get_str(d, root, "description", 0, &m->description)))
		return rc;
	if ((rc = mt_name_check(m->dataset, "dataset", d->err)) ||
	    (rc = mt_name_check(m->version, "version", d->err)) ||
	    (*m->parent && (rc = mt_name_check(m->parent, "parent version", d->err))))
		return mt_err_prefix(d->err, "%s: ", d->what);
	json_t *tags = json_object_get(root, "tags");
	if (tags && !json_is_array(tags))
		return bad(d, "tags", "an array of strings");
	m->ntags = json_array_size(tags);
	if (!(m->tags = calloc(m->ntags ? m->ntags : 1, sizeof *m->tags)))
		return mt_err(d->err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; i < m->ntags; i++) {
		json_t *t = json_array_get(tags, i);
		if (!json_is_string(t))
			return bad(d, "tags", "an array of strings");
		if (!(m->tags[i] = strndup(json_string_value(t), json_string_length(t))))
			return mt_err(d->err, MT_ENOMEM, "out of memory");
	}
	if ((rc = get_u64(d, root, "rows", "rows", &m->rows)) ||
	    (rc = get_u64(d, root, "raw_bytes", "raw_bytes", &m->raw_bytes)))
		return rc;
	json_t *c = json_object_get(root, "compression");
	json_t *codec = json_object_get(c, "codec"), *lvl = json_object_get(c, "level");
	if (!json_is_object(c) || !json_is_string(codec) ||
	    strcmp(json_string_value(codec), "zstd") != 0 || !json_is_integer(lvl) ||
	    json_integer_value(lvl) < -131072 || json_integer_value(lvl) > 22)
		return bad(d, "compression", "{codec: \"zstd\", level, chunk_bytes}");
	m->level = (int)json_integer_value(lvl);
	if ((rc = get_u64(d, c, "chunk_bytes", "compression.chunk_bytes", &m->chunk_bytes)) ||
	    (rc = decode_attrs(d, json_object_get(root, "attributes"), m)))
		return rc;
	if (m->nattrs == 0)
		return bad(d, "attributes", "at least one attribute");
	return decode_shards(d, json_object_get(root, "shards"), m);
}

int mt_manifest_decode(const char *json, size_t len, const char *what, mt_manifest **out,
		       mt_error *err)
{
	*out = NULL;
	json_error_t je;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return mt_err(err, MT_EFORMAT, "%s: invalid JSON at line %d column %d: %s", what,
			      je.line, je.column, je.text);
	mt_manifest *m = calloc(1, sizeof *m);
	struct dec d = {what, err};
	int rc = m ? decode_root(&d, root, m) : mt_err(err, MT_ENOMEM, "out of memory");
	json_decref(root);
	if (rc) {
		mt_manifest_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void mt_manifest_free(mt_manifest *m)
{
	if (!m)
		return;
	free(m->dataset);
	free(m->version);
	free(m->parent);
	free(m->created);
	free(m->author);
	free(m->description);
	for (size_t i = 0; m->tags && i < m->ntags; i++)
		free(m->tags[i]);
	free(m->tags);
	mt_attrs_free(m->attrs, m->nattrs);
	free(m->shards);
	free(m);
}
