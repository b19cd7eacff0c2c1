/* fuzz-shard.c — libFuzzer target: over a whole shard (HDF5 bytes, chunk index, zstd frames), the soundness check and the reader agree, and neither reads outside its buffers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "dataset.h"
#include "format.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The input (tests/e2e/craft-shard.c --fuzz-input writes it from a stored
 * version):
 *   u32 index_offset, u32 index_bytes (little-endian): where the manifest
 *       puts the shard's chunk index;
 *   u8 tweak: bits 0-2 change the manifest after it is derived (below),
 *       bit 3 seals the index's trailing xxh3, bit 4 also sets every
 *       chunk's xxh3 to its bytes' (so mutations reach the frames), bit 5
 *       leaves the index's xxh3 out of the manifest;
 *   the shard object itself.
 * The manifest is the one the shard's own index implies (attributes,
 * dtypes, shapes, rows), with the shard's real size and sha256, so that a
 * mutated shard reaches the index and the frames rather than stopping at
 * a hash.
 *
 * Then mti_shard_check (what verify, protect, compact and copy apply) and
 * the reads cat and get make (mt_reader_ragged_lengths, mt_reader_read)
 * of every attribute: all rows, the first, the last and a few in the
 * middle.  On a sound shard every read must succeed and return exactly
 * the rows its chunks decode to; anything else aborts.  On any shard, a
 * read may fail but never touch memory outside its buffers (ASan) or ask
 * for more than libFuzzer's -malloc_limit_mb.
 */
#define HEAD 9
#define T_MANIFEST 7u
#define T_SEAL 8u
#define T_CHUNKS 16u
#define T_NO_XXH3 32u

/* Reads whose rows would take more than this are left out: a sound shard
 * of a few KB may still decode to a few hundred MB (MT_ZSTD_MAX_RATIO).
 * Shards whose index declares chunks over CHUNK_MAX are left out too: the
 * check and the reader would decode each in full, a second per input
 * (fuzz-index covers the index's own caps). */
#define READ_MAX (64u << 20)
#define CHUNK_MAX (16u << 20)
#define ROWS_MAX 65536u /* rows per ragged read (lengths are held per row) */

#define DATASET "fz"
#define VERSION "v1"

/* ---- a store in memory: the manifest and the shard --------------------- */

struct mem {
	mt_store base;
	const char *key[2];
	const void *data[2];
	size_t len[2];
};

static int mem_find(mt_store *st, const char *key, mt_error *err)
{
	struct mem *s = (struct mem *)st;
	for (int i = 0; i < 2; i++)
		if (s->key[i] && strcmp(s->key[i], key) == 0)
			return i;
	mti_err(err, MT_ENOTFOUND, "mem: %s: no such object", key);
	return -1;
}

/* As a file store does: a range past the end is MT_ERANGE. */
static int mem_get(mt_store *st, const char *key, uint64_t offset, uint64_t len, void **data,
		   size_t *got, mt_error *err)
{
	struct mem *s = (struct mem *)st;
	int i = mem_find(st, key, err);
	if (i < 0)
		return MT_ENOTFOUND;
	uint64_t left = offset <= s->len[i] ? s->len[i] - offset : 0;
	if (len == UINT64_MAX)
		len = left;
	if (offset > s->len[i] || len > left)
		return mti_err(err, MT_ERANGE, "mem: %s: %llu bytes at %llu, past its end", key,
			      (unsigned long long)len, (unsigned long long)offset);
	void *b = malloc(len ? (size_t)len : 1);
	if (!b)
		return mti_err(err, MT_ENOMEM, "mem: out of memory");
	memcpy(b, (const uint8_t *)s->data[i] + offset, (size_t)len);
	*data = b;
	*got = (size_t)len;
	return 0;
}

static int mem_read(mt_store *st, const char *key, uint64_t offset, void *buf, size_t len,
		    mt_error *err)
{
	struct mem *s = (struct mem *)st;
	int i = mem_find(st, key, err);
	if (i < 0)
		return MT_ENOTFOUND;
	if (offset > s->len[i] || len > s->len[i] - offset)
		return mti_err(err, MT_ERANGE, "mem: %s: %zu bytes at %llu, past its end", key, len,
			      (unsigned long long)offset);
	memcpy(buf, (const uint8_t *)s->data[i] + offset, len);
	return 0;
}

static int mem_head(mt_store *st, const char *key, uint64_t *size, int64_t *mtime, mt_error *err)
{
	int i = mem_find(st, key, err);
	if (i < 0)
		return MT_ENOTFOUND;
	if (size)
		*size = ((struct mem *)st)->len[i];
	if (mtime)
		*mtime = 0;
	return 0;
}

static int mem_list(mt_store *st, const char *prefix, const char *token, size_t max,
		    mt_list_page *page, mt_error *err)
{
	*page = (mt_list_page){0};
	return 0;
}

static void mem_close(mt_store *st) {}

/* A reader writes nothing: the other operations are left out.  Near, as a
 * file store is: a far one reads its runs on threads of their own, in an
 * order that would make two runs from one seed take different paths. */
static const mt_store_ops mem_near = {
	.scheme = "mem", .far = 0, .get = mem_get, .read = mem_read, .head = mem_head,
	.list = mem_list, .list_prefixes = mem_list, .close = mem_close,
};

/* ---- the manifest the shard's index implies ----------------------------- */

/* An attribute from index entry e (its values when ragged). */
static int attr_of(const mt_index_entry *e, const char *name, int ragged, mt_attr *a)
{
	*a = (mt_attr){.name = mti_strdup(name), .dtype = e->dtype, .ragged = ragged};
	if (!a->name)
		return -1;
	if (e->rank >= 0) {
		a->rank = e->rank;
		memcpy(a->shape, e->shape, sizeof a->shape);
	} else if (mt_dtype_size(e->dtype) && e->unit_bytes != mt_dtype_size(e->dtype)) {
		a->rank = 1; /* version 1: only the unit's size is known */
		a->shape[0] = e->unit_bytes / mt_dtype_size(e->dtype);
	}
	return 0;
}

/* Attributes: "x" is a fixed one, "t/values" beside "t/offsets" a ragged
 * one; rows from a version 2 index, else from the first attribute. */
static int attrs_of(const mt_index *ix, mt_manifest *m)
{
	if (!(m->attrs = calloc(ix->n ? ix->n : 1, sizeof *m->attrs)))
		return -1;
	m->rows = ix->version >= 2 ? ix->rows : UINT64_MAX;
	for (size_t i = 0; i < ix->n; i++) {
		const mt_index_entry *e = &ix->e[i];
		char name[600];
		size_t nl = strlen(e->name);
		int ragged = nl > 7 && strcmp(e->name + nl - 7, "/values") == 0;
		if (nl >= 8 && strcmp(e->name + nl - 8, "/offsets") == 0)
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(ragged ? nl - 7 : nl), e->name);
		if (attr_of(e, name, ragged, &m->attrs[m->nattrs]))
			return -1;
		m->nattrs++;
		if (m->rows != UINT64_MAX)
			continue;
		strcat(name, "/offsets");
		const mt_index_entry *o = ragged ? mti_index_find(ix, name) : e;
		m->rows = o && o->units ? o->units - (unsigned)ragged : 0;
	}
	if (m->rows == UINT64_MAX)
		m->rows = 0;
	return 0;
}

/* Bits 0-2 of the tweak: a manifest that disagrees with the shard. */
static void manifest_tweak(mt_manifest *m, unsigned t)
{
	mt_attr *a = m->nattrs ? &m->attrs[0] : NULL;
	switch (t & T_MANIFEST) {
	case 1: m->rows++; m->shards[0].rows++; break;
	case 2: if (a) a->dtype = a->dtype == MT_INT64 ? MT_FLOAT64 : MT_INT64; break;
	case 3: if (a) a->ragged = !a->ragged; break;
	case 4: if (a && a->rank < MT_MAX_RANK) a->shape[a->rank++] = 2; break;
	case 5: m->shards[0].index_xxh3 ^= 1; break;
	default: break;
	}
}

/* The manifest as JSON, then decoded again: the reader gets the text, the
 * check the same manifest the reader decodes from it. */
static int manifest_make(const mt_index *ix, const uint8_t *shard, size_t len, uint64_t ioff,
			 uint64_t ibytes, unsigned tweak, char **json, mt_manifest **out)
{
	mt_mshard s = {.bytes = len, .index_offset = ioff, .index_bytes = ibytes,
		       .has_index_xxh3 = !(tweak & T_NO_XXH3), .index_xxh3 = ix->xxh3};
	mt_manifest m = {.format = MT_FORMAT_VERSION, .dataset = DATASET, .version = VERSION,
			 .parent = "", .created = "2026-01-01T00:00:00Z", .author = "",
			 .description = "", .level = 3, .chunk_bytes = 1u << 20, .shards = &s,
			 .nshards = 1};
	mt_error err;
	int rc = attrs_of(ix, &m) || mti_sha256_hex(shard, len, s.sha256, &err);
	s.rows = m.rows;
	if (!rc) {
		manifest_tweak(&m, tweak);
		rc = mti_manifest_encode(&m, json, &err) ||
		     mti_manifest_decode(*json, strlen(*json), "fuzz", out, &err);
	}
	mti_attrs_free(m.attrs, m.nattrs);
	return rc;
}

/* ---- sealing: fix up the hashes a mutation broke ------------------------ */

/* The index at sh[ioff..+ibytes] with its trailing xxh3 and (T_CHUNKS)
 * each chunk's xxh3 set to what the bytes hash to.  Then decoded: 0 and
 * *ix, or -1 when it does not decode. */
static int index_seal(uint8_t *sh, size_t len, uint64_t ioff, uint64_t ibytes, unsigned tweak,
		      mt_index **ix)
{
	mt_error err;
	uint8_t *ib = sh + ioff;
	if (tweak & (T_SEAL | T_CHUNKS) && ibytes >= 8)
		mti_put_u64(ib + ibytes - 8, mti_xxh3(ib, (size_t)ibytes - 8));
	if (mti_index_decode(ib, (size_t)ibytes, len, "fuzz", ix, &err))
		return -1;
	for (size_t i = 0; i < (*ix)->n; i++)
		if ((*ix)->e[i].chunk_units * (*ix)->e[i].unit_bytes > CHUNK_MAX)
			return -1; /* products bounded by mti_index_decode */
	if (!(tweak & T_CHUNKS))
		return 0;
	for (size_t i = 0; i < (*ix)->n; i++)
		for (size_t c = 0; c < (*ix)->e[i].nchunks; c++) {
			mt_chunk *k = &(*ix)->e[i].chunks[c];
			k->xxh3 = mti_xxh3(sh + k->offset, (size_t)k->size);
		}
	mt_buf enc = {0};
	int rc = mti_index_encode(*ix, &enc, &err);
	/* Only when the index keeps its bytes: a shorter or longer one would
	 * not be where the manifest says. */
	if (!rc && enc.len == ibytes) {
		memcpy(ib, enc.data, enc.len);
		(*ix)->xxh3 = mti_get_u64(ib + ibytes - 8);
	}
	mti_buf_free(&enc);
	return 0;
}

/* ---- what the rows must be ----------------------------------------------- */

/* Units [u0, u1) of e decoded from the sound shard sh into out. */
static void expect_units(const uint8_t *sh, const mt_index_entry *e, uint64_t u0, uint64_t u1,
			 uint8_t *out)
{
	size_t full = (size_t)(e->chunk_units * e->unit_bytes);
	uint8_t *tmp = NULL;
	for (size_t c = 0; c < e->nchunks; c++) {
		const mt_chunk *k = &e->chunks[c];
		uint64_t a = k->first > u0 ? k->first : u0;
		uint64_t b = k->first + k->count < u1 ? k->first + k->count : u1;
		if (a >= b)
			continue;
		mt_error err;
		if (!tmp && !(tmp = malloc(full ? full : 1)))
			abort();
		if (mti_zstd_decompress(sh + k->offset, (size_t)k->size, tmp, full, &err)) {
			fprintf(stderr, "fuzz-shard: sound, yet chunk %zu of %s does not decode: %s\n",
				c, e->name, err.message);
			abort();
		}
		memcpy(out + (a - u0) * e->unit_bytes, tmp + (a - k->first) * e->unit_bytes,
		       (size_t)((b - a) * e->unit_bytes));
	}
	free(tmp);
}

static const mt_index_entry *entry_of(const mt_index *ix, const char *name, const char *sub)
{
	char n[600];
	snprintf(n, sizeof n, "%s%s", name, sub);
	return mti_index_find(ix, n);
}

/* ---- the reads ------------------------------------------------------------ */

struct shard_run {
	const uint8_t *sh;  /* the shard as stored */
	const mt_index *ix; /* its index when sound, else NULL */
	mt_reader *r;
};

static void disagree(const struct shard_run *u, const char *attr, uint64_t a, uint64_t b,
		     const char *what)
{
	fprintf(stderr, "fuzz-shard: the check says sound, yet reading %s rows %llu..%llu %s\n",
		attr, (unsigned long long)a, (unsigned long long)b, what);
	abort();
}

/* A read that failed: on a sound shard, only for want of memory. */
static void read_failed(const struct shard_run *u, const mt_attr *at, uint64_t a, uint64_t b,
			int rc, const mt_error *err)
{
	if (u->ix && rc != MT_ENOMEM)
		disagree(u, at->name, a, b, err->message);
}

/* Ragged rows [a, b): their lengths, then their items, against the
 * offsets and values decoded here. */
static void read_ragged(const struct shard_run *u, size_t attr, uint64_t a, uint64_t b)
{
	const mt_attr *at = mt_reader_attr(u->r, attr);
	uint64_t *lens = calloc((size_t)(b - a) + 1, sizeof *lens), total = 0;
	mt_error err;
	if (!lens)
		abort();
	int rc = mt_reader_ragged_lengths(u->r, attr, a, b, lens, &total, &err);
	uint64_t item = mt_attr_items(at) * mt_dtype_size(at->dtype), bytes;
	if (rc) {
		read_failed(u, at, a, b, rc, &err);
	} else if (mti_mul_ok(total, item, &bytes) && bytes <= READ_MAX) {
		uint8_t *buf = malloc(bytes ? (size_t)bytes : 1), *want = NULL;
		if (!buf)
			abort();
		rc = mt_reader_read(u->r, attr, a, b, buf, (size_t)bytes, &err);
		if (rc)
			read_failed(u, at, a, b, rc, &err);
		if (!rc && u->ix) {
			uint64_t off[2];
			expect_units(u->sh, entry_of(u->ix, at->name, "/offsets"), a, a + 1,
				     (uint8_t *)&off[0]);
			expect_units(u->sh, entry_of(u->ix, at->name, "/offsets"), b, b + 1,
				     (uint8_t *)&off[1]);
			off[0] = mti_get_u64((uint8_t *)&off[0]);
			off[1] = mti_get_u64((uint8_t *)&off[1]);
			if (off[1] - off[0] != total)
				disagree(u, at->name, a, b, "gives other lengths than the offsets");
			if (!(want = malloc(bytes ? (size_t)bytes : 1)))
				abort();
			expect_units(u->sh, entry_of(u->ix, at->name, "/values"), off[0], off[1],
				     want);
			if (memcmp(buf, want, (size_t)bytes))
				disagree(u, at->name, a, b, "gives other items than the shard holds");
		}
		free(want);
		free(buf);
	}
	free(lens);
}

/* Fixed rows [a, b), against the chunks decoded here. */
static void read_fixed(const struct shard_run *u, size_t attr, uint64_t a, uint64_t b)
{
	const mt_attr *at = mt_reader_attr(u->r, attr);
	uint64_t row = mt_attr_items(at) * mt_dtype_size(at->dtype), bytes;
	if (!mti_mul_ok(b - a, row, &bytes) || bytes > READ_MAX)
		return;
	uint8_t *buf = malloc(bytes ? (size_t)bytes : 1), *want = NULL;
	mt_error err;
	if (!buf)
		abort();
	int rc = mt_reader_read(u->r, attr, a, b, buf, (size_t)bytes, &err);
	if (rc)
		read_failed(u, at, a, b, rc, &err);
	if (!rc && u->ix) {
		if (!(want = malloc(bytes ? (size_t)bytes : 1)))
			abort();
		expect_units(u->sh, entry_of(u->ix, at->name, ""), a, b, want);
		if (memcmp(buf, want, (size_t)bytes))
			disagree(u, at->name, a, b, "gives other bytes than the shard holds");
	}
	free(want);
	free(buf);
}

static void read_range(const struct shard_run *u, size_t attr, uint64_t a, uint64_t b)
{
	if (mt_reader_attr(u->r, attr)->ragged) {
		if (b - a <= ROWS_MAX)
			read_ragged(u, attr, a, b);
	} else {
		read_fixed(u, attr, a, b);
	}
}

/* Every attribute: all rows, the first, the last, a few in the middle. */
static void read_all(struct shard_run *u, mt_store *st)
{
	mt_error err;
	if (mti_reader_open_as(st, DATASET, VERSION, 0, &u->r, &err)) {
		fprintf(stderr, "fuzz-shard: the reader does not open: %s\n", err.message);
		abort();
	}
	mti_reader_set_threads(u->r, 1);
	uint64_t rows = mt_reader_info(u->r)->rows;
	for (size_t i = 0; i < mt_reader_nattrs(u->r); i++) {
		read_range(u, i, 0, rows);
		if (!rows)
			continue;
		read_range(u, i, 0, 1);
		read_range(u, i, rows - 1, rows);
		read_range(u, i, rows / 2, rows / 2 + (rows - rows / 2 < 3 ? rows - rows / 2 : 3));
	}
	mt_reader_close(u->r);
	u->r = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HEAD)
		return 0;
	uint64_t ioff = mti_get_u32(data), ibytes = mti_get_u32(data + 4);
	unsigned tweak = data[8];
	size_t len = size - HEAD;
	uint8_t *sh = malloc(len ? len : 1);
	if (!sh)
		return 0;
	memcpy(sh, data + HEAD, len);
	mt_index *ix0 = NULL, *ix = NULL;
	char *json = NULL;
	mt_manifest *m = NULL;
	if (ioff + ibytes > len || index_seal(sh, len, ioff, ibytes, tweak, &ix0) ||
	    manifest_make(ix0, sh, len, ioff, ibytes, tweak, &json, &m))
		goto out;
	mt_error err;
	int sound = mti_shard_check(sh, len, m, 0, "fuzz", &ix, &err) == 0;
	char *shard_key = mti_key_shard(DATASET, m->shards[0].sha256);
	char *manifest_key = mti_key_manifest(DATASET, VERSION);
	if (!shard_key || !manifest_key)
		abort();
	static char url[] = "mem://fuzz";
	struct mem st = {.base = {.ops = &mem_near, .url = url},
			 .key = {manifest_key, shard_key}, .data = {json, sh},
			 .len = {strlen(json), len}};
	struct shard_run u = {.sh = sh, .ix = sound ? ix : NULL};
	read_all(&u, &st.base);
	free(shard_key);
	free(manifest_key);
out:
	mti_index_free(ix);
	mti_index_free(ix0);
	mti_manifest_free(m);
	free(json);
	free(sh);
	return 0;
}
