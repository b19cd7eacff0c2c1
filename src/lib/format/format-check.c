/* format-check.c — the one definition of a sound shard (doc/FORMAT.md, "Sound shards"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "format.h"

static const uint8_t hdf5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

int mti_shard_is_hdf5(const void *head, size_t len)
{
	return len >= sizeof hdf5_signature && memcmp(head, hdf5_signature, sizeof hdf5_signature) == 0;
}

/* Every chunk of e: its bytes match its xxh3, and it is one zstd frame
 * declaring the chunk's decoded size (checked from the header, before
 * anything is allocated for it) that decodes to that size.  Decoding is
 * what a reader does: a frame whose header is right and whose blocks are
 * not, under a checksum made for those bytes, would pass everything else
 * and fail every read of its rows. */
static int check_frames(const uint8_t *data, const mt_index_entry *e, const char *what,
			mt_error *err)
{
	uint64_t full = e->chunk_units * e->unit_bytes; /* bounded by mti_index_decode */
	uint8_t *buf = NULL;
	int rc = 0;
	for (size_t c = 0; !rc && c < e->nchunks; c++) {
		const mt_chunk *k = &e->chunks[c];
		const uint8_t *z = data + k->offset;
		if (mti_xxh3(z, (size_t)k->size) != k->xxh3)
			rc = mti_err(err, MT_ECORRUPT, "%s: %s chunk %zu (units %llu..%llu) fails its "
				    "checksum", what, e->name, c, (unsigned long long)k->first,
				    (unsigned long long)(k->first + k->count - 1));
		else if (mti_zstd_frame_check(z, (size_t)k->size, full, err))
			rc = mti_err_prefix(err, "%s: %s chunk %zu: ", what, e->name, c);
		else if (!buf && !(buf = malloc(full ? (size_t)full : 1)))
			rc = mti_err(err, MT_ENOMEM, "%s: out of memory for a %llu-byte chunk of %s",
				    what, (unsigned long long)full, e->name);
		else if (mti_zstd_decompress(z, (size_t)k->size, buf, (size_t)full, err))
			rc = mti_err_prefix(err, "%s: %s chunk %zu: ", what, e->name, c);
	}
	free(buf);
	return rc;
}

/* Ragged offsets o of the entry: from 0, never decreasing, ending at the
 * values' unit count.  *prev carries the last offset from chunk to chunk. */
static int check_offsets(const uint64_t *o, uint64_t n, uint64_t first, uint64_t *prev,
			 const char *name, const char *what, mt_error *err)
{
	for (uint64_t u = 0; u < n; u++) {
		uint64_t v = mti_get_u64((const uint8_t *)(o + u));
		if (first + u == 0 && v != 0)
			return mti_err(err, MT_ECORRUPT, "%s: %s/offsets start at %llu, not 0", what,
				      name, (unsigned long long)v);
		if (v < *prev)
			return mti_err(err, MT_ECORRUPT, "%s: %s/offsets decrease at offset %llu "
				      "(%llu after %llu)", what, name,
				      (unsigned long long)(first + u), (unsigned long long)v,
				      (unsigned long long)*prev);
		*prev = v;
	}
	return 0;
}

/* Attribute `name`'s offsets, decoded chunk by chunk: they start at 0, rise
 * and end at the number of items its values hold. */
static int check_ragged(const uint8_t *data, const mt_index *ix, const char *name,
			const char *what, mt_error *err)
{
	char vn[300], on[300];
	snprintf(vn, sizeof vn, "%s/values", name);
	snprintf(on, sizeof on, "%s/offsets", name);
	const mt_index_entry *v = mti_index_find(ix, vn), *o = mti_index_find(ix, on);
	if (!v || !o || o->unit_bytes != 8)
		return mti_err(err, MT_ECORRUPT, "%s: %s: the chunk index lacks its values or offsets",
			      what, name);
	uint64_t full = o->chunk_units * o->unit_bytes, prev = 0;
	uint8_t *buf = malloc(full ? (size_t)full : 1);
	if (!buf)
		return mti_err(err, MT_ENOMEM, "%s: out of memory for %llu bytes of offsets", what,
			      (unsigned long long)full);
	int rc = 0;
	for (size_t c = 0; !rc && c < o->nchunks; c++) {
		const mt_chunk *k = &o->chunks[c];
		rc = mti_zstd_decompress(data + k->offset, (size_t)k->size, buf, (size_t)full, err);
		if (rc)
			mti_err_prefix(err, "%s: %s chunk %zu: ", what, on, c);
		else
			rc = check_offsets((const uint64_t *)buf, k->count, k->first, &prev, name,
					   what, err);
	}
	free(buf);
	if (!rc && o->units && prev != v->units)
		rc = mti_err(err, MT_ECORRUPT, "%s: %s/offsets end at %llu, its values hold %llu "
			    "items", what, name, (unsigned long long)prev,
			    (unsigned long long)v->units);
	return rc;
}

/* No chunk shares a byte with the chunk index itself. */
static int check_index_apart(const mt_index *ix, const mt_mshard *s, const char *what,
			     mt_error *err)
{
	for (size_t i = 0; i < ix->n; i++)
		for (size_t c = 0; c < ix->e[i].nchunks; c++) {
			const mt_chunk *k = &ix->e[i].chunks[c];
			if (k->offset < s->index_offset + s->index_bytes &&
			    s->index_offset < k->offset + k->size)
				return mti_err(err, MT_ECORRUPT, "%s: %s chunk %zu overlaps the chunk "
					      "index", what, ix->e[i].name, c);
		}
	return 0;
}

int mti_shard_check_body(const void *data, size_t len, const mt_manifest *m, size_t i,
			 const char *what, mt_index **out, mt_error *err)
{
	const mt_mshard *s = &m->shards[i];
	uint64_t end;
	if (out)
		*out = NULL;
	if (len != s->bytes)
		return mti_err(err, MT_ECORRUPT, "%s holds %zu bytes, the manifest says %llu", what,
			      len, (unsigned long long)s->bytes);
	if (!mti_shard_is_hdf5(data, len))
		return mti_err(err, MT_ECORRUPT, "%s is not an HDF5 file (no HDF5 signature at byte 0)",
			      what);
	if (!mti_add_ok(s->index_offset, s->index_bytes, &end) || end > len)
		return mti_err(err, MT_ECORRUPT, "%s: the manifest puts the chunk index at bytes "
			      "%llu..+%llu, past the object's %zu", what,
			      (unsigned long long)s->index_offset, (unsigned long long)s->index_bytes,
			      len);
	mt_index *ix;
	int rc = mti_index_decode_shard((const uint8_t *)data + s->index_offset,
					(size_t)s->index_bytes, len, m, i, what, &ix, err);
	if (rc)
		return rc;
	rc = check_index_apart(ix, s, what, err);
	for (size_t k = 0; !rc && k < ix->n; k++)
		rc = check_frames(data, &ix->e[k], what, err);
	for (size_t a = 0; !rc && a < m->nattrs; a++)
		if (m->attrs[a].ragged)
			rc = check_ragged(data, ix, m->attrs[a].name, what, err);
	if (rc || !out)
		mti_index_free(ix);
	else
		*out = ix;
	return rc;
}

int mti_shard_check(const void *data, size_t len, const mt_manifest *m, size_t i,
		    const char *what, mt_index **out, mt_error *err)
{
	const mt_mshard *s = &m->shards[i];
	char sha[MT_SHA256_HEX];
	if (out)
		*out = NULL;
	if (len != s->bytes)
		return mti_err(err, MT_ECORRUPT, "%s holds %zu bytes, the manifest says %llu", what,
			      len, (unsigned long long)s->bytes);
	int rc = mti_sha256_hex(data, len, sha, err);
	if (rc)
		return rc;
	if (strcmp(sha, s->sha256) != 0)
		return mti_err(err, MT_ECORRUPT, "%s: sha256 is %s, the manifest says %s", what, sha,
			      s->sha256);
	return mti_shard_check_body(data, len, m, i, what, out, err);
}

/* ---- shards a version names more than once ---- */

struct sf_ref {
	const mt_mshard *s;
	size_t i;
	int entry;
};

static int sf_cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int sf_cmp(const void *pa, const void *pb)
{
	const struct sf_ref *a = pa, *b = pb;
	int c = strcmp(a->s->sha256, b->s->sha256);
	if (!c && a->entry) {
		c = sf_cmp_u64(a->s->bytes, b->s->bytes);
		if (!c)
			c = sf_cmp_u64(a->s->rows, b->s->rows);
		if (!c)
			c = sf_cmp_u64(a->s->index_offset, b->s->index_offset);
		if (!c)
			c = sf_cmp_u64(a->s->index_bytes, b->s->index_bytes);
		if (!c)
			c = sf_cmp_u64((uint64_t)a->s->has_index_xxh3, (uint64_t)b->s->has_index_xxh3);
		if (!c)
			c = sf_cmp_u64(a->s->index_xxh3, b->s->index_xxh3);
	}
	return c ? c : sf_cmp_u64(a->i, b->i);
}

int mti_shard_firsts(const mt_mshard *v, size_t n, int entry, size_t **first, mt_error *err)
{
	struct sf_ref *t = malloc((n ? n : 1) * sizeof *t);
	*first = malloc((n ? n : 1) * sizeof **first);
	if (!t || !*first) {
		free(t);
		free(*first);
		*first = NULL;
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		t[i] = (struct sf_ref){&v[i], i, entry};
	qsort(t, n, sizeof *t, sf_cmp);
	/* Sorted by content, then place: a run's first is its earliest. */
	for (size_t k = 0, head = 0; k < n; k++) {
		if (k && sf_cmp(&(struct sf_ref){t[k].s, 0, entry},
				&(struct sf_ref){t[head].s, 0, entry}))
			head = k;
		(*first)[t[k].i] = t[head].i;
	}
	free(t);
	return 0;
}
