/* format-index.c — encode and decode a shard's chunk index, the map readers use to fetch chunks without HDF5. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "format.h"

#define INDEX_MAGIC "MTIX"
#define INDEX_MAX_NAME 512

/* The bytes of entry e after its name: dtype, then (version 2) rank and
 * dimensions, then the chunk grid. */
static int encode_shape(const mt_index_entry *e, int v2, mt_buf *out)
{
	uint8_t tmp[8 + 8 * MT_MAX_RANK];
	size_t n = 4;
	mti_put_u32(tmp, (uint32_t)e->dtype);
	if (v2) {
		if (e->rank < 0 || e->rank > MT_MAX_RANK)
			return MT_EINVAL;
		mti_put_u32(tmp + 4, (uint32_t)e->rank);
		n = 8;
		for (int d = 0; d < e->rank; d++, n += 8)
			mti_put_u64(tmp + n, e->shape[d]);
	}
	int rc = mti_buf_append(out, tmp, n);
	mti_put_u64(tmp, e->unit_bytes);
	mti_put_u64(tmp + 8, e->chunk_units);
	mti_put_u64(tmp + 16, e->units);
	mti_put_u64(tmp + 24, e->nchunks);
	return rc | mti_buf_append(out, tmp, 32);
}

int mti_index_encode(const mt_index *ix, mt_buf *out, mt_error *err)
{
	if (ix->version != 1 && ix->version != 2)
		return mti_err(err, MT_EINVAL, "chunk index: there is no version %u", ix->version);
	int v2 = ix->version == 2;
	uint8_t tmp[40];
	int rc = 0;
	rc |= mti_buf_append(out, INDEX_MAGIC, 4);
	mti_put_u32(tmp, ix->version);
	mti_put_u32(tmp + 4, (uint32_t)ix->n);
	mti_put_u64(tmp + 8, ix->rows);
	rc |= mti_buf_append(out, tmp, v2 ? 16 : 8);
	for (size_t i = 0; i < ix->n && !rc; i++) {
		const mt_index_entry *e = &ix->e[i];
		size_t nl = strlen(e->name);
		mti_put_u32(tmp, (uint32_t)nl);
		rc |= mti_buf_append(out, tmp, 4);
		rc |= mti_buf_append(out, e->name, nl);
		if (encode_shape(e, v2, out))
			return mti_err(err, MT_EINVAL, "chunk index: '%s' has rank %d", e->name,
				      e->rank);
		for (size_t c = 0; c < e->nchunks && !rc; c++) {
			const mt_chunk *k = &e->chunks[c];
			mti_put_u64(tmp, k->offset);
			mti_put_u64(tmp + 8, k->size);
			mti_put_u64(tmp + 16, k->first);
			mti_put_u64(tmp + 24, k->count);
			mti_put_u64(tmp + 32, k->xxh3);
			rc |= mti_buf_append(out, tmp, 40);
		}
	}
	if (!rc) {
		mti_put_u64(tmp, mti_xxh3(out->data, out->len));
		rc |= mti_buf_append(out, tmp, 8);
	}
	return rc ? mti_err(err, MT_ENOMEM, "chunk index: out of memory") : 0;
}

/* A bounds-checked cursor over the encoded bytes. */
struct cursor {
	const uint8_t *p;
	size_t left;
};

static int take(struct cursor *c, size_t n, const uint8_t **out)
{
	if (c->left < n)
		return MT_ECORRUPT; /* the encoding ends early */
	*out = c->p;
	c->p += n;
	c->left -= n;
	return 0;
}

/* Version 2 records each unit's shape: it must account for its size. */
static int check_shape(const mt_index_entry *e)
{
	uint64_t bytes = mt_dtype_size(e->dtype);
	for (int d = 0; d < e->rank; d++)
		if (e->shape[d] == 0 || !mti_mul_ok(bytes, e->shape[d], &bytes))
			return MT_ECORRUPT;
	return bytes == e->unit_bytes ? 0 : MT_ECORRUPT;
}

/* Whether a frame of `size` bytes cannot decode to `full`. */
static int too_dense(uint64_t full, uint64_t size)
{
	uint64_t q = full / MT_ZSTD_MAX_RATIO;
	return q > size || (q == size && full % MT_ZSTD_MAX_RATIO);
}

/* The chunk grid of e: chunk c holds units [c * chunk_units, ...), every
 * chunk but the last full (readers find a unit's chunk by division), each
 * inside the shard, and none declaring more than its compressed bytes can
 * hold (MT_ZSTD_MAX_RATIO) or more than MT_CHUNK_MAX_BYTES. */
static int check_chunks(const mt_index_entry *e, uint64_t full, uint64_t shard_bytes)
{
	uint64_t next = 0, end;
	for (size_t c = 0; c < e->nchunks; c++) {
		const mt_chunk *k = &e->chunks[c];
		int last = c + 1 == e->nchunks;
		if (k->first != next || k->count == 0 || k->count > e->chunk_units ||
		    (!last && k->count != e->chunk_units) || k->size == 0 ||
		    too_dense(full, k->size) ||
		    !mti_add_ok(k->offset, k->size, &end) || (shard_bytes && end > shard_bytes) ||
		    !mti_add_ok(next, k->count, &next))
			return (int)c;
	}
	return -1;
}

static int check_entry(const mt_index_entry *e, uint64_t shard_bytes, const char *what,
		       mt_error *err)
{
	if (mt_dtype_size(e->dtype) == 0)
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: '%s' has unknown dtype %d", what,
			      e->name, (int)e->dtype);
	if (e->unit_bytes == 0 || e->chunk_units == 0)
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: '%s' has a zero chunk shape", what,
			      e->name);
	uint64_t full, bytes;
	if (!mti_mul_ok(e->chunk_units, e->unit_bytes, &full) || full > MT_CHUNK_MAX_BYTES)
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: '%s' chunks of %llu units of %llu "
			      "bytes exceed %llu bytes", what, e->name,
			      (unsigned long long)e->chunk_units, (unsigned long long)e->unit_bytes,
			      (unsigned long long)MT_CHUNK_MAX_BYTES);
	if (!mti_mul_ok(e->units, e->unit_bytes, &bytes))
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: '%s' has %llu units of %llu bytes, "
			      "more than can be addressed", what, e->name,
			      (unsigned long long)e->units, (unsigned long long)e->unit_bytes);
	if (e->rank >= 0 && check_shape(e))
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: '%s' has a shape that is not its "
			      "%llu bytes a unit", what, e->name,
			      (unsigned long long)e->unit_bytes);
	int bad = check_chunks(e, full, shard_bytes);
	if (bad >= 0)
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: '%s' chunk %d is inconsistent", what,
			      e->name, bad);
	uint64_t held = e->nchunks ? e->chunks[e->nchunks - 1].first +
				     e->chunks[e->nchunks - 1].count : 0;
	if (held != e->units)
		return mti_err(err, MT_ECORRUPT,
			      "%s: chunk index: '%s' chunks hold %llu units, not %llu", what,
			      e->name, (unsigned long long)held, (unsigned long long)e->units);
	return 0;
}

static int chunk_cmp(const void *a, const void *b)
{
	const mt_chunk *x = *(const mt_chunk *const *)a, *y = *(const mt_chunk *const *)b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* No two chunks of the index share a byte of the shard. */
static int check_overlap(const mt_index *ix, const char *what, mt_error *err)
{
	size_t n = 0, k = 0;
	for (size_t i = 0; i < ix->n; i++)
		n += ix->e[i].nchunks;
	if (n < 2)
		return 0;
	const mt_chunk **v = malloc(n * sizeof *v);
	if (!v)
		return mti_err(err, MT_ENOMEM, "%s: chunk index: out of memory", what);
	for (size_t i = 0; i < ix->n; i++)
		for (size_t c = 0; c < ix->e[i].nchunks; c++)
			v[k++] = &ix->e[i].chunks[c];
	qsort(v, n, sizeof *v, chunk_cmp);
	int rc = 0;
	for (size_t i = 1; i < n && !rc; i++)
		if (v[i - 1]->offset + v[i - 1]->size > v[i]->offset)
			rc = mti_err(err, MT_ECORRUPT, "%s: chunk index: chunks at bytes %llu and %llu "
				    "overlap", what, (unsigned long long)v[i - 1]->offset,
				    (unsigned long long)v[i]->offset);
	free(v);
	return rc;
}

/* Entry i: name, dtype, (version 2) shape, chunk grid and chunks. */
static int decode_entry(struct cursor *c, uint32_t version, uint32_t i, uint64_t shard_bytes,
			const char *what, mt_index_entry *e, mt_error *err)
{
	const uint8_t *p;
	if (take(c, 4, &p) || mti_get_u32(p) > INDEX_MAX_NAME)
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: entry %u is cut short", what, i);
	uint32_t nl = mti_get_u32(p);
	if (take(c, nl, &p))
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: entry %u is cut short", what, i);
	if (!(e->name = strndup((const char *)p, nl)))
		return mti_err(err, MT_ENOMEM, "%s: chunk index: out of memory", what);
	if (take(c, 4, &p))
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: entry %u is cut short", what, i);
	e->dtype = (mt_dtype)mti_get_u32(p);
	e->rank = -1;
	if (version >= 2) {
		if (take(c, 4, &p) || mti_get_u32(p) > MT_MAX_RANK)
			return mti_err(err, MT_ECORRUPT, "%s: chunk index: '%s' has no valid rank",
				      what, e->name);
		e->rank = (int)mti_get_u32(p);
		if (take(c, 8 * (size_t)e->rank, &p))
			return mti_err(err, MT_ECORRUPT, "%s: chunk index: '%s' is cut short", what,
				      e->name);
		for (int d = 0; d < e->rank; d++)
			e->shape[d] = mti_get_u64(p + 8 * d);
	}
	if (take(c, 32, &p))
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: entry %u is cut short", what, i);
	e->unit_bytes = mti_get_u64(p);
	e->chunk_units = mti_get_u64(p + 8);
	e->units = mti_get_u64(p + 16);
	uint64_t nchunks = mti_get_u64(p + 24);
	if (nchunks > c->left / 40)
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: '%s' is cut short", what,
			      e->name);
	e->chunks = calloc(nchunks ? nchunks : 1, sizeof *e->chunks);
	if (!e->chunks)
		return mti_err(err, MT_ENOMEM, "%s: chunk index: out of memory", what);
	e->nchunks = nchunks;
	for (size_t k = 0; k < nchunks; k++) {
		take(c, 40, &p);
		e->chunks[k] = (mt_chunk){mti_get_u64(p), mti_get_u64(p + 8), mti_get_u64(p + 16),
					  mti_get_u64(p + 24), mti_get_u64(p + 32)};
	}
	return check_entry(e, shard_bytes, what, err);
}

/* By name, then by place: the first of equal names stays the one found. */
static int byname_cmp(const void *a, const void *b)
{
	const mt_index_entry *x = *(const mt_index_entry *const *)a;
	const mt_index_entry *y = *(const mt_index_entry *const *)b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x > y) - (x < y);
}

static int index_sort(mt_index *ix)
{
	if (!(ix->byname = malloc((ix->n ? ix->n : 1) * sizeof *ix->byname)))
		return MT_ENOMEM;
	for (size_t i = 0; i < ix->n; i++)
		ix->byname[i] = &ix->e[i];
	qsort(ix->byname, ix->n, sizeof *ix->byname, byname_cmp);
	return 0;
}

int mti_index_decode(const void *data, size_t len, uint64_t shard_bytes, const char *what,
		    mt_index **out, mt_error *err)
{
	const uint8_t *p;
	*out = NULL;
	if (len < 20 || memcmp(data, INDEX_MAGIC, 4) != 0)
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: bad magic", what);
	const uint8_t *bytes = data;
	uint64_t sum = mti_get_u64(bytes + len - 8);
	if (sum != mti_xxh3(bytes, len - 8))
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: checksum mismatch", what);
	struct cursor c = {bytes + 4, len - 12};
	take(&c, 8, &p);
	uint32_t version = mti_get_u32(p), n = mti_get_u32(p + 4);
	if (version != 1 && version != 2)
		return mti_err(err, MT_EFORMAT, "%s: chunk index version %u is not supported", what,
			      version);
	uint64_t rows = 0;
	if (version >= 2) {
		if (take(&c, 8, &p))
			return mti_err(err, MT_ECORRUPT, "%s: chunk index: cut short", what);
		rows = mti_get_u64(p);
	}
	/* Every entry takes at least 40 bytes, which bounds n before allocating. */
	if (n > c.left / 40 + 1)
		return mti_err(err, MT_ECORRUPT, "%s: chunk index: %u entries cannot fit", what, n);
	mt_index *ix = calloc(1, sizeof *ix);
	if (!ix || !(ix->e = calloc(n ? n : 1, sizeof *ix->e))) {
		free(ix);
		return mti_err(err, MT_ENOMEM, "%s: chunk index: out of memory", what);
	}
	*ix = (mt_index){0, ix->e, version, rows, sum, NULL};
	int rc = 0;
	for (uint32_t i = 0; i < n && !rc; i++) {
		ix->n = i + 1;
		rc = decode_entry(&c, version, i, shard_bytes, what, &ix->e[i], err);
	}
	if (!rc && c.left != 0)
		rc = mti_err(err, MT_ECORRUPT, "%s: chunk index: %zu trailing bytes", what, c.left);
	if (!rc)
		rc = check_overlap(ix, what, err);
	if (!rc && index_sort(ix))
		rc = mti_err(err, MT_ENOMEM, "%s: chunk index: out of memory", what);
	if (rc) {
		mti_index_free(ix);
		return rc;
	}
	*out = ix;
	return 0;
}

const mt_index_entry *mti_index_find(const mt_index *ix, const char *name)
{
	if (ix->byname) {
		size_t lo = 0, hi = ix->n; /* the first entry whose name is not below */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (strcmp(ix->byname[mid]->name, name) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo < ix->n && !strcmp(ix->byname[lo]->name, name) ? ix->byname[lo] : NULL;
	}
	for (size_t i = 0; i < ix->n; i++)
		if (strcmp(ix->e[i].name, name) == 0)
			return &ix->e[i];
	return NULL;
}

void mti_index_clear(mt_index *ix)
{
	for (size_t i = 0; i < ix->n; i++) {
		free(ix->e[i].name);
		free(ix->e[i].chunks);
	}
	free(ix->e);
	free(ix->byname);
	ix->e = NULL;
	ix->byname = NULL;
	ix->n = 0;
}

void mti_index_free(mt_index *ix)
{
	if (!ix)
		return;
	mti_index_clear(ix);
	free(ix);
}

/* ---- binding a shard to its manifest ------------------------------------ */

/* "float32[4,4]"; a scalar is "float32"; a version 1 entry, which records
 * no shape, "float32, 64 bytes a unit". */
static void type_text(char *buf, size_t cap, mt_dtype t, int rank, const uint64_t *shape,
		      uint64_t unit_bytes)
{
	int n = snprintf(buf, cap, "%s", mt_dtype_name(t));
	if (rank < 0) {
		snprintf(buf + n, cap - (size_t)n, ", %llu bytes a unit",
			 (unsigned long long)unit_bytes);
		return;
	}
	for (int d = 0; d < rank && (size_t)n < cap; d++)
		n += snprintf(buf + n, cap - (size_t)n, "%c%llu", d ? ',' : '[',
			      (unsigned long long)shape[d]);
	if (rank > 0 && (size_t)n < cap)
		snprintf(buf + n, cap - (size_t)n, "]");
}

/* What the manifest says one HDF5 dataset of the shard holds. */
struct expect {
	const char *attr;  /* the attribute, for messages */
	const char *sub;   /* "", "/values" or "/offsets" */
	mt_dtype dtype;
	int rank;
	const uint64_t *shape;
	uint64_t units;    /* UINT64_MAX: not known from the manifest (ragged items) */
	const char *unit;  /* "rows", "offsets" */
};

static int check_expect(const mt_index *ix, const struct expect *x, const char *what,
			mt_error *err)
{
	char name[300], want[200], got[200];
	snprintf(name, sizeof name, "%s%s", x->attr, x->sub);
	const mt_index_entry *e = mti_index_find(ix, name);
	if (!e)
		return mti_err(err, MT_ECORRUPT, "%s: the manifest names attribute %s, the shard's "
			      "chunk index has no '%s'", what, x->attr, name);
	uint64_t bytes = mt_dtype_size(x->dtype);
	for (int d = 0; d < x->rank; d++)
		bytes *= x->shape[d];
	int same = e->dtype == x->dtype && e->unit_bytes == bytes &&
		   (e->rank < 0 || e->rank == x->rank);
	for (int d = 0; same && e->rank >= 0 && d < e->rank; d++)
		same = e->shape[d] == x->shape[d];
	if (!same) {
		type_text(want, sizeof want, x->dtype, x->rank, x->shape, bytes);
		type_text(got, sizeof got, e->dtype, e->rank, e->shape, e->unit_bytes);
		return mti_err(err, MT_ECORRUPT, "%s: %s: the manifest says %s, the shard's chunk "
			      "index says %s", what, name, want, got);
	}
	if (x->units != UINT64_MAX && e->units != x->units)
		return mti_err(err, MT_ECORRUPT, "%s: %s: the manifest makes it %llu %s, the "
			      "shard's chunk index %llu", what, name, (unsigned long long)x->units,
			      x->unit, (unsigned long long)e->units);
	return 0;
}

/* Every attribute of the manifest is in the index as the manifest says,
 * and the index holds nothing else. */
static int check_layout(const mt_index *ix, const mt_manifest *m, const mt_mshard *s,
			const char *what, mt_error *err)
{
	if (ix->version >= 2 && ix->rows != s->rows)
		return mti_err(err, MT_ECORRUPT, "%s: the manifest says %llu rows, the shard's "
			      "chunk index says %llu", what, (unsigned long long)s->rows,
			      (unsigned long long)ix->rows);
	size_t parts = 0;
	int rc = 0;
	for (size_t i = 0; !rc && i < m->nattrs; i++) {
		const mt_attr *a = &m->attrs[i];
		static const uint64_t scalar[1] = {0};
		struct expect x = {a->name, "", a->dtype, a->rank, a->shape, s->rows, "rows"};
		struct expect o = {a->name, "/offsets", MT_INT64, 0, scalar, s->rows + 1,
				   "offsets"};
		if (a->ragged) {
			x.sub = "/values";
			x.units = UINT64_MAX;
		}
		rc = check_expect(ix, &x, what, err);
		if (!rc && a->ragged)
			rc = check_expect(ix, &o, what, err);
		parts += a->ragged ? 2 : 1;
	}
	if (!rc && ix->n != parts)
		rc = mti_err(err, MT_ECORRUPT, "%s: the shard's chunk index holds %zu datasets, "
			    "the manifest's attributes make %zu", what, ix->n, parts);
	return rc;
}

int mti_index_decode_shard(const void *data, size_t len, uint64_t shard_bytes,
			  const mt_manifest *m, size_t i, const char *what, mt_index **out,
			  mt_error *err)
{
	const mt_mshard *s = &m->shards[i];
	*out = NULL;
	if (s->rows >= MT_SHARD_MAX_ROWS)
		return mti_err(err, MT_ECORRUPT, "%s: the manifest gives the shard %llu rows, more "
			      "than %llu", what, (unsigned long long)s->rows,
			      (unsigned long long)MT_SHARD_MAX_ROWS);
	/* Checked first: another shard's index would fail the checks below
	 * with a message that hides what happened. */
	if (s->has_index_xxh3 && (len < 8 || mti_get_u64((const uint8_t *)data + len - 8) !=
						     s->index_xxh3))
		return mti_err(err, MT_ECORRUPT, "%s: the shard's chunk index is not the one the "
			      "manifest names (xxh3 %016llx, the manifest says %016llx): the "
			      "object holds another shard or is damaged", what,
			      (unsigned long long)(len < 8 ? 0 : mti_get_u64((const uint8_t *)data +
									      len - 8)),
			      (unsigned long long)s->index_xxh3);
	mt_index *ix;
	int rc = mti_index_decode(data, len, shard_bytes, what, &ix, err);
	if (!rc && (rc = check_layout(ix, m, s, what, err)))
		mti_index_free(ix);
	if (!rc)
		*out = ix;
	return rc;
}
