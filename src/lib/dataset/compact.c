/* compact.c — a version's rows repacked into full-size shards as a new version (mt_compact). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "opts.h"
#include "util.h"

#define DEFAULT_SHARD_BYTES (64ull << 20)
/* Rows are copied through buffers of about this many bytes per batch. */
#define COPY_BYTES (8ull << 20)
/* A shard size given in rows only: bytes never seal a shard first. */
#define NO_BYTE_LIMIT (1ull << 62)

/* One batch of rows on its way from the reader to the writer. */
struct compact_copy {
	mt_reader *r;
	mt_writer *w;
	size_t nattrs;
	const mt_attr *attrs;
	void **buf;          /* per attribute */
	size_t *cap;
	uint64_t **lengths;  /* ragged attributes: a batch's row lengths; NULL otherwise */
	uint64_t batch;      /* rows per batch */
};

static int copy_init(struct compact_copy *c, mt_reader *r, mt_writer *w, const mt_manifest *b)
{
	c->r = r;
	c->w = w;
	c->nattrs = b->nattrs;
	c->attrs = b->attrs;
	c->buf = calloc(b->nattrs ? b->nattrs : 1, sizeof *c->buf);
	c->cap = calloc(b->nattrs ? b->nattrs : 1, sizeof *c->cap);
	c->lengths = calloc(b->nattrs ? b->nattrs : 1, sizeof *c->lengths);
	if (!c->buf || !c->cap || !c->lengths)
		return MT_ENOMEM;
	uint64_t row = 0;
	for (size_t i = 0; i < b->nattrs; i++)
		row += b->attrs[i].ragged ? 8 : mt_attr_items(&b->attrs[i]) *
							mt_dtype_size(b->attrs[i].dtype);
	c->batch = row ? COPY_BYTES / row : 1;
	if (c->batch < 1)
		c->batch = 1;
	for (size_t i = 0; i < b->nattrs; i++)
		if (b->attrs[i].ragged && !(c->lengths[i] = calloc(c->batch, sizeof **c->lengths)))
			return MT_ENOMEM;
	return 0;
}

static void copy_free(struct compact_copy *c)
{
	for (size_t i = 0; i < c->nattrs; i++) {
		if (c->buf)
			free(c->buf[i]);
		if (c->lengths)
			free(c->lengths[i]);
	}
	free(c->buf);
	free(c->cap);
	free(c->lengths);
}

/* Read rows [a, a+k) of every attribute into the batch buffers. */
static int copy_read(struct compact_copy *c, uint64_t a, uint64_t k, mt_error *err)
{
	for (size_t i = 0; i < c->nattrs; i++) {
		const mt_attr *at = &c->attrs[i];
		uint64_t unit = mt_attr_items(at) * mt_dtype_size(at->dtype), items = k;
		int rc = at->ragged ? mt_reader_ragged_lengths(c->r, i, a, a + k, c->lengths[i],
							      &items, err) : 0;
		if (rc)
			return rc;
		size_t bytes = (size_t)(items * unit);
		if (bytes > c->cap[i]) {
			void *n = realloc(c->buf[i], bytes);
			if (!n)
				return mti_err(err, MT_ENOMEM, "out of memory");
			c->buf[i] = n;
			c->cap[i] = bytes;
		}
		if (bytes && (rc = mt_reader_read(c->r, i, a, a + k, c->buf[i], c->cap[i], err)))
			return rc;
	}
	return 0;
}

/* Rows [a, a+n) through the writer, a batch at a time. */
static int copy_rows(struct compact_copy *c, uint64_t a, uint64_t n, mt_error *err)
{
	for (uint64_t done = 0; done < n;) {
		uint64_t k = n - done < c->batch ? n - done : c->batch;
		int rc = copy_read(c, a + done, k, err);
		if (!rc)
			rc = mt_writer_append(c->w, k, (const void *const *)c->buf,
					      (const uint64_t *const *)c->lengths, err);
		if (rc)
			return rc;
		done += k;
	}
	return 0;
}

struct raw_sum {
	uint64_t bytes;
};

static void raw_add(void *ud, const mt_chunk_info *ci)
{
	struct raw_sum *s = ud;
	s->bytes += ci->count * ci->unit_bytes;
}

/* Whether shard i is full size, and its uncompressed bytes. */
static int shard_full(mt_reader *r, const mt_manifest *b, size_t i, uint64_t shard_rows,
		      uint64_t shard_bytes, uint64_t *raw_bytes, int *full, mt_error *err)
{
	struct raw_sum raw = {0};
	int rc = mt_reader_chunks(r, i, raw_add, &raw, err);
	*raw_bytes = raw.bytes;
	*full = (shard_rows && b->shards[i].rows >= shard_rows) || raw.bytes >= shard_bytes;
	return rc;
}

/* A version whose shards are all full size but the last is compact already:
 * writing it again would only add a version. */
static int compact_needed(mt_reader *r, const mt_manifest *b, uint64_t shard_rows,
			  uint64_t shard_bytes, int *need, mt_error *err)
{
	*need = 0;
	for (size_t i = 0; i + 1 < b->nshards && !*need; i++) {
		uint64_t raw;
		int full, rc = shard_full(r, b, i, shard_rows, shard_bytes, &raw, &full, err);
		if (rc)
			return rc;
		*need = !full;
	}
	return 0;
}

/* Every shard in order: a full-size one taken as it is while nothing waits
 * to be repacked (taking it later would put its rows before those), any
 * other read and written again. */
static int compact_shards(struct compact_copy *c, const mt_manifest *b, uint64_t shard_rows,
			  uint64_t shard_bytes, mt_compact_stats *st, mt_error *err)
{
	uint64_t first = 0;
	for (size_t i = 0; i < b->nshards; i++) {
		const mt_mshard *sh = &b->shards[i];
		uint64_t raw;
		int full, rc = shard_full(c->r, b, i, shard_rows, shard_bytes, &raw, &full, err);
		if (!rc && full && !mti_writer_buffered(c->w)) {
			rc = mti_writer_reuse(c->w, sh, raw, err);
			st->shards_reused++;
		} else if (!rc) {
			rc = copy_rows(c, first, sh->rows, err);
		}
		if (rc)
			return rc;
		first += sh->rows;
	}
	return 0;
}

/* The writer's options: the caller's sizes, level and labels; the parent,
 * lineage and everything else are the compaction's. */
static int compact_opts(const mt_writer_opts *o, const mt_manifest *b, mt_writer_opts *wo,
			mt_error *err)
{
	mt_writer_opts_init(wo);
	int rc = o ? mti_opts_take(wo, sizeof *wo, o, MT_OPTS_SIZE_UPTO(mt_writer_opts, nrecipe_args),
				   "mt_writer_opts", err) : 0;
	if (rc)
		return rc;
	mt_writer_opts d;
	mt_writer_opts_init(&d);
	d.shard_rows = wo->shard_rows;
	d.shard_bytes = wo->shard_bytes ? wo->shard_bytes
		: wo->shard_rows ? NO_BYTE_LIMIT : DEFAULT_SHARD_BYTES;
	d.chunk_bytes = wo->chunk_bytes;
	d.level = wo->level ? wo->level : b->level;
	d.threads = wo->threads;
	d.author = wo->author;
	d.description = wo->description ? wo->description : b->description;
	d.tags = wo->tags;
	d.ntags = wo->ntags;
	d.progress = wo->progress;
	d.progress_ud = wo->progress_ud;
	d.parent = b->version;
	*wo = d;
	return 0;
}

static int compact_write(mt_store *s, const char *dataset, mt_manifest **base,
			 const mt_writer_opts *o, mt_compact_stats *st, char *out, size_t cap,
			 mt_error *err)
{
	const mt_manifest *b = *base;
	mt_writer_opts wo;
	int rc = compact_opts(o, b, &wo, err);
	if (rc)
		return rc;
	mt_source src = { dataset, b->version, "" };
	wo.sources = &src;
	wo.nsources = 1;
	mt_reader *r = NULL;
	mt_writer *w = NULL;
	struct compact_copy c = {0};
	int need = 0;
	rc = mt_reader_open(s, dataset, b->version, &r, err);
	if (!rc)
		rc = compact_needed(r, b, wo.shard_rows, wo.shard_bytes, &need, err);
	if (!rc && !need) {
		/* Nothing to repack: no version, and out names the compact one. */
		st->shards_after = b->nshards;
		st->rows = b->rows;
		st->unchanged = 1;
		if (out && snprintf(out, cap, "%s", b->version) >= (int)cap)
			rc = mti_err(err, MT_ERANGE, "version name %s does not fit %zu bytes",
				     b->version, cap);
		mt_reader_close(r);
		return rc;
	}
	if (!rc)
		rc = mt_writer_open(s, dataset, b->attrs, b->nattrs, &wo, &w, err);
	if (!rc && copy_init(&c, r, w, b))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = compact_shards(&c, b, wo.shard_rows, wo.shard_bytes, st, err);
	if (!rc && mti_writer_set_compact(w, *base))
		rc = mti_err(err, MT_ESTATE, "dataset %s: not a writer a compaction can use",
			     dataset);
	else if (!rc)
		*base = NULL; /* the writer's now */
	if (!rc)
		rc = mt_writer_commit(w, out, cap, err);
	if (!rc) {
		size_t n;
		mti_writer_counts(w, &n, &st->rows, &st->tail_rows);
		st->shards_after = n;
	}
	copy_free(&c);
	mt_writer_close(w);
	mt_reader_close(r);
	return rc;
}

int mt_compact(mt_store *s, const char *dataset, const char *version, const mt_writer_opts *o,
	       mt_compact_stats *stats, char *out, size_t cap, mt_error *err)
{
	mt_compact_stats local;
	mt_compact_stats *st = stats ? stats : &local;
	memset(st, 0, sizeof *st);
	int rc = mt_name_check(dataset, "dataset", err);
	mt_manifest *base = NULL;
	if (!rc)
		rc = mti_dataset_load(s, dataset, version, &base, NULL, err);
	if (rc)
		return rc;
	snprintf(st->base, sizeof st->base, "%s", base->version);
	st->shards_before = base->nshards;
	/* Repacked rows must be rows a reader gets: an unsound version stays as it is. */
	rc = mti_version_sound(s, dataset, base->version, "compact", err);
	if (!rc)
		rc = compact_write(s, dataset, &base, o, st, out, cap, err);
	mti_manifest_free(base);
	return rc;
}
