/* repair-salvage.c — what a damaged version's own bytes still give: a shard whose HDF5 metadata alone is damaged, written again from its chunks; a new version holding every row that can still be read, and the list of the rows that cannot. */
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "dataset.h"
#include "pool.h"
#include "repair.h"

/* Rows are copied to the new version in batches of about this many bytes. */
#define BATCH_BYTES (16u << 20)

typedef struct ranges {
	uint64_t (*r)[2];
	size_t n, cap;
} ranges;

/* Add [first, first + count), merged with the last range when adjacent. */
static int ranges_add(ranges *l, uint64_t first, uint64_t count)
{
	if (l->n && l->r[l->n - 1][0] + l->r[l->n - 1][1] == first) {
		l->r[l->n - 1][1] += count;
		return 0;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		uint64_t (*n)[2] = realloc(l->r, cap * sizeof *n);
		if (!n)
			return MT_ENOMEM;
		l->r = n;
		l->cap = cap;
	}
	l->r[l->n][0] = first;
	l->r[l->n][1] = count;
	l->n++;
	return 0;
}

typedef struct salvage {
	rp_ctx *c;
	mt_reader *r;
	size_t nattrs;
	int ragged;
	ranges keep, lost;
	void **data;          /* one batch, per attribute */
	uint64_t **lengths;   /* ragged attributes: row lengths of the batch */
} salvage;

static uint64_t unit_bytes(const mt_attr *a)
{
	return mt_attr_items(a) * mt_dtype_size(a->dtype);
}

/* Read rows [a, b) of every attribute into sv->data (and lengths): 0, or
 * MT_ECORRUPT when a chunk covering them is damaged or the shard is gone. */
static int read_rows(salvage *sv, uint64_t a, uint64_t b, mt_error *err)
{
	for (size_t i = 0; i < sv->nattrs; i++) {
		const mt_attr *at = mt_reader_attr(sv->r, i);
		uint64_t units = b - a;
		free(sv->data[i]);
		free(sv->lengths[i]);
		sv->data[i] = NULL;
		sv->lengths[i] = NULL;
		if (at->ragged) {
			if (!(sv->lengths[i] = malloc((b - a) * sizeof **sv->lengths)))
				return mti_err(err, MT_ENOMEM, "out of memory");
			int rc = mt_reader_ragged_lengths(sv->r, i, a, b, sv->lengths[i], &units, err);
			if (rc)
				return rc == MT_ENOTFOUND || rc == MT_EFORMAT ? MT_ECORRUPT : rc;
		}
		size_t cap = (size_t)(units * unit_bytes(at));
		if (!(sv->data[i] = malloc(cap ? cap : 1)))
			return mti_err(err, MT_ENOMEM, "out of memory");
		int rc = mt_reader_read(sv->r, i, a, b, sv->data[i], cap, err);
		if (rc)
			return rc == MT_ENOTFOUND || rc == MT_EFORMAT ? MT_ECORRUPT : rc;
	}
	return 0;
}

/* Sort rows [a, b) into kept and lost.  A run that reads is kept; one
 * that does not is halved until each part is known: with fixed-size rows
 * only, a run inside one chunk of each attribute is lost whole. */
static int sort_rows(salvage *sv, uint64_t a, uint64_t b, mt_error *err)
{
	mt_error e = {0};
	int rc = read_rows(sv, a, b, &e);
	if (!rc)
		return ranges_add(&sv->keep, a, b - a) ? mti_err(err, MT_ENOMEM, "out of memory") : 0;
	if (rc != MT_ECORRUPT)
		return mti_err_copy(err, &e);
	if (b - a == 1 || !sv->ragged)
		return ranges_add(&sv->lost, a, b - a) ? mti_err(err, MT_ENOMEM, "out of memory") : 0;
	uint64_t mid = a + (b - a) / 2;
	rc = sort_rows(sv, a, mid, err);
	return rc ? rc : sort_rows(sv, mid, b, err);
}

typedef struct bounds {
	uint64_t *v;
	size_t n, cap;
	uint64_t first, last; /* the shard's rows [first, last) */
} bounds;

/* A chunk of rows starts a new run (ragged values count in items, and are
 * sorted out by halving instead). */
static void chunk_bound(void *ud, const mt_chunk_info *ci)
{
	bounds *b = ud;
	if (strstr(ci->attr, "/values"))
		return;
	uint64_t row = b->first + ci->first;
	if (row <= b->first || row >= b->last || b->n == b->cap)
		return;
	b->v[b->n++] = row;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* A damaged shard: the runs of rows between chunk boundaries, each sorted;
 * a shard whose chunk index cannot be read is lost whole. */
static int sort_shard(salvage *sv, const rp_obj *o, mt_error *err)
{
	uint64_t a = o->first_row, z = o->first_row + o->rows;
	bounds b = {.first = a, .last = z, .cap = 4096};
	if (!(b.v = malloc(b.cap * sizeof *b.v)))
		return mti_err(err, MT_ENOMEM, "out of memory");
	mt_error e = {0};
	int rc = mt_reader_chunks(sv->r, o->number, chunk_bound, &b, &e);
	if (rc) {
		free(b.v);
		return ranges_add(&sv->lost, a, z - a) ? mti_err(err, MT_ENOMEM, "out of memory") : 0;
	}
	qsort(b.v, b.n, sizeof *b.v, cmp_u64);
	uint64_t at = a;
	rc = 0;
	for (size_t i = 0; !rc && i <= b.n; i++) {
		uint64_t end = i < b.n ? b.v[i] : z;
		if (end > at)
			rc = sort_rows(sv, at, end, err);
		at = end > at ? end : at;
	}
	free(b.v);
	return rc;
}

/* Kept and lost rows of the whole version, shard by shard. */
static int sort_version(salvage *sv, mt_error *err)
{
	const mt_manifest *m = sv->c->m;
	int rc = 0;
	for (size_t i = 0; !rc && i < m->nshards; i++) {
		const mt_mshard *sh = &m->shards[i];
		int bad = 0;
		for (size_t j = 0; j < sv->c->nobjs; j++)
			if (sv->c->objs[j].kind == MT_REPAIR_SHARD &&
			    !strcmp(sv->c->objs[j].sha256, sh->sha256))
				bad = sv->c->objs[j].state == RP_DAMAGED;
		if (!sh->rows)
			continue;
		if (!bad) {
			rc = ranges_add(&sv->keep, sh->first_row, sh->rows)
				     ? mti_err(err, MT_ENOMEM, "out of memory") : 0;
			continue;
		}
		rp_obj o = {.number = i, .first_row = sh->first_row, .rows = sh->rows};
		rc = sort_shard(sv, &o, err);
	}
	return rc;
}

/* Rows [a, b) from the damaged version into the new one, in batches. */
static int copy_range(salvage *sv, mt_writer *w, uint64_t a, uint64_t b, mt_error *err)
{
	uint64_t row_bytes = 0;
	for (size_t i = 0; i < sv->nattrs; i++) {
		const mt_attr *at = mt_reader_attr(sv->r, i);
		row_bytes += at->ragged ? 64 * unit_bytes(at) : unit_bytes(at);
	}
	uint64_t step = row_bytes ? BATCH_BYTES / row_bytes : b - a;
	step = step ? step : 1;
	int rc = 0;
	for (uint64_t at = a; !rc && at < b; at += step) {
		uint64_t end = b - at < step ? b : at + step;
		rc = read_rows(sv, at, end, err);
		if (!rc)
			rc = mt_writer_append(w, end - at, (const void *const *)sv->data,
					      (const uint64_t *const *)sv->lengths, err);
	}
	return rc;
}

static int write_version(salvage *sv, char *name, size_t cap, mt_error *err)
{
	rp_ctx *c = sv->c;
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.parent = c->version;
	o.level = c->m->level;
	o.chunk_bytes = c->m->chunk_bytes;
	o.author = c->m->author;
	char *desc = mti_asprintf("salvage of %s@%s: rows of damaged chunks left out",
				  c->dataset, c->version);
	o.description = desc;
	mt_attr *attrs = malloc((sv->nattrs ? sv->nattrs : 1) * sizeof *attrs);
	for (size_t i = 0; attrs && i < sv->nattrs; i++)
		attrs[i] = *mt_reader_attr(sv->r, i);
	mt_writer *w = NULL;
	int rc = desc && attrs ? mt_writer_open(c->s, c->dataset, attrs, sv->nattrs, &o, &w, err)
			       : mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < sv->keep.n; i++)
		rc = copy_range(sv, w, sv->keep.r[i][0], sv->keep.r[i][0] + sv->keep.r[i][1], err);
	if (!rc)
		rc = mti_writer_set_salvage(w, c->version, (const uint64_t(*)[2])sv->lost.r,
					    sv->lost.n, err);
	if (!rc)
		rc = mt_writer_commit(w, name, cap, err);
	mt_writer_close(w);
	free(attrs);
	free(desc);
	return rc;
}

static void salvage_report(salvage *sv, const char *name)
{
	rp_ctx *c = sv->c;
	if (!c->o.salvaged)
		return;
	mt_salvage_report r = {.dataset = c->dataset, .from = c->version, .version = name,
			       .lost = (const uint64_t(*)[2])sv->lost.r, .nlost = sv->lost.n};
	for (size_t i = 0; i < sv->keep.n; i++)
		r.rows_kept += sv->keep.r[i][1];
	for (size_t i = 0; i < sv->lost.n; i++)
		r.rows_lost += sv->lost.r[i][1];
	c->o.salvaged(c->o.report_ud, &r);
}

int mti_rp_salvage(rp_ctx *c, mt_error *err)
{
	salvage sv = {.c = c};
	int rc = mt_reader_open(c->s, c->dataset, c->version, &sv.r, err);
	if (rc)
		return mti_err_prefix(err, "salvage: ");
	sv.nattrs = mt_reader_nattrs(sv.r);
	for (size_t i = 0; i < sv.nattrs; i++)
		sv.ragged |= mt_reader_attr(sv.r, i)->ragged;
	sv.data = calloc(sv.nattrs ? sv.nattrs : 1, sizeof *sv.data);
	sv.lengths = calloc(sv.nattrs ? sv.nattrs : 1, sizeof *sv.lengths);
	rc = sv.data && sv.lengths ? sort_version(&sv, err)
				   : mti_err(err, MT_ENOMEM, "out of memory");
	char name[130] = "";
	if (!rc)
		rc = write_version(&sv, name, sizeof name, err);
	if (!rc)
		salvage_report(&sv, name);
	for (size_t i = 0; sv.data && i < sv.nattrs; i++) {
		free(sv.data[i]);
		free(sv.lengths ? sv.lengths[i] : NULL);
	}
	free(sv.data);
	free(sv.lengths);
	free(sv.keep.r);
	free(sv.lost.r);
	mt_reader_close(sv.r);
	return rc;
}

/* ---- a shard's own chunks ------------------------------------------------ */

/* The zstd levels tried after the manifest's: a shard an append reused may
 * have been written at its parent's level. */
#define LEVEL_MAX 22

/* Shard o written again from its own index and chunks, when those are
 * intact (the index as the manifest names it, every chunk's xxh3) and only
 * the HDF5 metadata around them is damaged: the writer is deterministic,
 * so the image it makes of them is the original, which its sha256 proves. */
static int container_image(rp_ctx *c, const rp_obj *o, const uint8_t *data, size_t len,
			   mt_shard_image *img, mt_error *e)
{
	const mt_mshard *sh = &c->m->shards[o->number];
	mt_index *ix = NULL;
	if (len != sh->bytes || sh->index_offset > len || sh->index_bytes > len - sh->index_offset ||
	    mti_index_decode_shard(data + sh->index_offset, sh->index_bytes, len, c->m, o->number,
				   o->key, &ix, e))
		return MT_ECORRUPT;
	int rc = 0, found = 0;
	for (size_t k = 0; !rc && k < ix->n; k++)
		for (size_t j = 0; !rc && j < ix->e[k].nchunks; j++) {
			const mt_chunk *ch = &ix->e[k].chunks[j];
			if (mti_xxh3(data + ch->offset, ch->size) != ch->xxh3)
				rc = MT_ECORRUPT;
		}
	for (int n = 0; !rc && !found && n <= LEVEL_MAX; n++) {
		int level = n ? n : c->m->level;
		if (n && level == c->m->level)
			continue;
		rc = mti_shard_rebuild(c->dataset, ix, data, len, level, img, e);
		if (!rc && !strcmp(img->sha256, o->sha256))
			found = 1;
		else if (!rc)
			mti_shard_image_free(img);
	}
	mti_index_free(ix);
	if (rc == MT_ENOMEM)
		return rc;
	return found ? 0 : MT_ECORRUPT;
}

static int container_job(void *ud, size_t i)
{
	rp_ctx *c = ud;
	rp_obj *o = &c->objs[i];
	if (o->state != RP_DAMAGED || o->kind != MT_REPAIR_SHARD)
		return 0;
	void *data = NULL;
	size_t len = 0;
	mt_error e = {0};
	if (mti_store_get(c->s, o->key, 0, UINT64_MAX, &data, &len, &e))
		return 0; /* missing, or unreadable: another source's */
	mti_rp_add_read(c, o, len);
	mt_shard_image img = {0};
	int rc = container_image(c, o, data, len, &img, &e);
	free(data);
	if (rc == MT_ENOMEM)
		return mti_rp_fail(c, rc, &e);
	if (rc)
		return 0; /* more than its metadata is damaged */
	o->data = img.image.data; /* the image's buffer, taken over */
	o->source = "its own chunks (HDF5 metadata rebuilt)";
	rc = mti_rp_write_back(c, o, &e);
	return rc ? mti_rp_fail(c, rc, &e) : 0;
}

int mti_rp_container(rp_ctx *c, mt_error *err)
{
	int rc = c->m ? mti_parallel_for(c->o.threads, c->nobjs, container_job, c) : 0;
	if (rc && c->failed)
		mti_err_copy(err, &c->failure);
	return rc;
}
