/* format-index.c — encode and decode a shard's chunk index, the map readers use to fetch chunks without HDF5. */
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "format.h"

#define INDEX_MAGIC "MTIX"
#define INDEX_VERSION 1
#define INDEX_MAX_NAME 512

int mt_index_encode(const mt_index *ix, mt_buf *out, mt_error *err)
{
	uint8_t tmp[40];
	int rc = 0;
	rc |= mt_buf_append(out, INDEX_MAGIC, 4);
	mt_put_u32(tmp, INDEX_VERSION);
	mt_put_u32(tmp + 4, (uint32_t)ix->n);
	rc |= mt_buf_append(out, tmp, 8);
	for (size_t i = 0; i < ix->n && !rc; i++) {
		const mt_index_entry *e = &ix->e[i];
		size_t nl = strlen(e->name);
		mt_put_u32(tmp, (uint32_t)nl);
		rc |= mt_buf_append(out, tmp, 4);
		rc |= mt_buf_append(out, e->name, nl);
		mt_put_u32(tmp, (uint32_t)e->dtype);
		mt_put_u64(tmp + 4, e->unit_bytes);
		mt_put_u64(tmp + 12, e->chunk_units);
		mt_put_u64(tmp + 20, e->units);
		mt_put_u64(tmp + 28, e->nchunks);
		rc |= mt_buf_append(out, tmp, 36);
		for (size_t c = 0; c < e->nchunks && !rc; c++) {
			const mt_chunk *k = &e->chunks[c];
			mt_put_u64(tmp, k->offset);
			mt_put_u64(tmp + 8, k->size);
			mt_put_u64(tmp + 16, k->first);
			mt_put_u64(tmp + 24, k->count);
			mt_put_u64(tmp + 32, k->xxh3);
			rc |= mt_buf_append(out, tmp, 40);
		}
	}
	if (!rc) {
		mt_put_u64(tmp, mt_xxh3(out->data, out->len));
		rc |= mt_buf_append(out, tmp, 8);
	}
	return rc ? mt_err(err, MT_ENOMEM, "chunk index: out of memory") : 0;
}

/* A bounds-checked cursor over the encoded bytes. */
struct cursor {
	const uint8_t *p;
	size_t left;
};

static int take(struct cursor *c, size_t n, const uint8_t **out)
{
	if (c->left < n)
		return -1;
	*out = c->p;
	c->p += n;
	c->left -= n;
	return 0;
}

static int check_entry(const mt_index_entry *e, uint64_t shard_bytes, const char *what,
		       mt_error *err)
{
	if (mt_dtype_size(e->dtype) == 0)
		return mt_err(err, MT_ECORRUPT, "%s: chunk index: '%s' has unknown dtype %d", what,
			      e->name, (int)e->dtype);
	if (e->unit_bytes == 0 || e->chunk_units == 0)
		return mt_err(err, MT_ECORRUPT, "%s: chunk index: '%s' has a zero chunk shape", what,
			      e->name);
	uint64_t next = 0;
	for (size_t c = 0; c < e->nchunks; c++) {
		const mt_chunk *k = &e->chunks[c];
		uint64_t end;
		if (k->first != next || k->count == 0 || k->count > e->chunk_units ||
		    k->size == 0 || !mt_add_ok(k->offset, k->size, &end) ||
		    (shard_bytes && end > shard_bytes))
			return mt_err(err, MT_ECORRUPT,
				      "%s: chunk index: '%s' chunk %zu is inconsistent", what,
				      e->name, c);
		next += k->count;
	}
	if (next != e->units)
		return mt_err(err, MT_ECORRUPT,
			      "%s: chunk index: '%s' chunks hold %llu units, not %llu", what,
			      e->name, (unsigned long long)next, (unsigned long long)e->units);
	return 0;
}

int mt_index_decode(const void *data, size_t len, uint64_t shard_bytes, const char *what,
		    mt_index **out, mt_error *err)
{
	const uint8_t *p;
	*out = NULL;
	if (len < 20 || memcmp(data, INDEX_MAGIC, 4) != 0)
		return mt_err(err, MT_ECORRUPT, "%s: chunk index: bad magic", what);
	const uint8_t *bytes = data;
	if (mt_get_u64(bytes + len - 8) != mt_xxh3(bytes, len - 8))
		return mt_err(err, MT_ECORRUPT, "%s: chunk index: checksum mismatch", what);
	struct cursor c = {bytes + 4, len - 12};
	take(&c, 8, &p);
	if (mt_get_u32(p) != INDEX_VERSION)
		return mt_err(err, MT_EFORMAT, "%s: chunk index version %u is not supported", what,
			      mt_get_u32(p));
	uint32_t n = mt_get_u32(p + 4);
	/* Every entry takes at least 40 bytes, which bounds n before allocating. */
	if (n > c.left / 40 + 1)
		return mt_err(err, MT_ECORRUPT, "%s: chunk index: %u entries cannot fit", what, n);
	mt_index *ix = calloc(1, sizeof *ix);
	if (!ix || !(ix->e = calloc(n ? n : 1, sizeof *ix->e))) {
		free(ix);
		return mt_err(err, MT_ENOMEM, "%s: chunk index: out of memory", what);
	}
	int rc = 0;
	for (uint32_t i = 0; i < n && !rc; i++) {
		mt_index_entry *e = &ix->e[i];
		ix->n = i + 1;
		if (take(&c, 4, &p) || mt_get_u32(p) > INDEX_MAX_NAME) {
			rc = mt_err(err, MT_ECORRUPT, "%s: chunk index: entry %u is cut short", what, i);
			break;
		}
		uint32_t nl = mt_get_u32(p);
		if (take(&c, nl, &p) || !(e->name = strndup((const char *)p, nl))) {
			rc = mt_err(err, MT_ECORRUPT, "%s: chunk index: entry %u is cut short", what, i);
			break;
		}
		if (take(&c, 36, &p)) {
			rc = mt_err(err, MT_ECORRUPT, "%s: chunk index: entry %u is cut short", what, i);
			break;
		}
		e->dtype = (mt_dtype)mt_get_u32(p);
		e->unit_bytes = mt_get_u64(p + 4);
		e->chunk_units = mt_get_u64(p + 12);
		e->units = mt_get_u64(p + 20);
		uint64_t nchunks = mt_get_u64(p + 28);
		if (nchunks > c.left / 40) {
			rc = mt_err(err, MT_ECORRUPT, "%s: chunk index: '%s' is cut short", what,
				    e->name);
			break;
		}
		e->chunks = calloc(nchunks ? nchunks : 1, sizeof *e->chunks);
		if (!e->chunks) {
			rc = mt_err(err, MT_ENOMEM, "%s: chunk index: out of memory", what);
			break;
		}
		e->nchunks = nchunks;
		for (size_t k = 0; k < nchunks; k++) {
			take(&c, 40, &p);
			e->chunks[k] = (mt_chunk){mt_get_u64(p), mt_get_u64(p + 8), mt_get_u64(p + 16),
						  mt_get_u64(p + 24), mt_get_u64(p + 32)};
		}
		rc = check_entry(e, shard_bytes, what, err);
	}
	if (!rc && c.left != 0)
		rc = mt_err(err, MT_ECORRUPT, "%s: chunk index: %zu trailing bytes", what, c.left);
	if (rc) {
		mt_index_free(ix);
		return rc;
	}
	*out = ix;
	return 0;
}

const mt_index_entry *mt_index_find(const mt_index *ix, const char *name)
{
	for (size_t i = 0; i < ix->n; i++)
		if (strcmp(ix->e[i].name, name) == 0)
			return &ix->e[i];
	return NULL;
}

void mt_index_free(mt_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->n; i++) {
		free(ix->e[i].name);
		free(ix->e[i].chunks);
	}
	free(ix->e);
	free(ix);
}
