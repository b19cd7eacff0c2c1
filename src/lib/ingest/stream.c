/* stream.c — rows appended a few at a time, committed by rows or time as versions on top of the latest. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataset.h"
#include "opts.h"
#include "util.h"

#define STREAM_OPTS_FIRST MT_OPTS_SIZE_UPTO(mt_stream_opts, committed_ud)
#define DEFAULT_COMMIT_ROWS 100000

struct mt_stream {
	mt_store *store;
	char *dataset;
	mt_attr *attrs;
	size_t nattrs;
	mt_stream_opts o;
	size_t *row_bytes; /* per row (fixed) or per item (ragged) */
	uint8_t **data; /* waiting rows, per attribute */
	size_t *cap;    /* bytes allocated, per attribute */
	size_t *used;   /* bytes of waiting rows, per attribute */
	uint64_t **lens; /* ragged attributes: the waiting rows' lengths (NULL for fixed ones) */
	uint64_t lcap;   /* rows the lens arrays hold */
	int ragged;      /* some attribute is */
	uint64_t pending;
	uint64_t since_ms; /* when the oldest waiting row came */
	int fresh;         /* the dataset looked empty: the next commit makes v1 */
};

static uint64_t now_ms(void)
{
	return (uint64_t)(mti_mono_seconds() * 1000.0);
}

void mt_stream_opts_init_size(mt_stream_opts *o, size_t size)
{
	mt_stream_opts d;
	memset(&d, 0, sizeof d);
	d.commit_rows = DEFAULT_COMMIT_ROWS;
	mti_opts_init(o, size, &d, sizeof d);
}

void mt_stream_close(mt_stream *st)
{
	if (!st)
		return;
	for (size_t i = 0; st->data && i < st->nattrs; i++)
		free(st->data[i]);
	for (size_t i = 0; st->lens && i < st->nattrs; i++)
		free(st->lens[i]);
	free(st->data);
	free(st->lens);
	free(st->cap);
	free(st->used);
	free(st->row_bytes);
	mti_attrs_free(st->attrs, st->nattrs);
	free(st->dataset);
	free(st);
}

int mt_stream_open(mt_store *s, const char *dataset, const mt_attr *attrs, size_t nattrs,
		   const mt_stream_opts *o, mt_stream **out, mt_error *err)
{
	*out = NULL;
	mt_stream_opts opts;
	mt_stream_opts_init(&opts);
	int rc = o ? mti_opts_take(&opts, sizeof opts, o, STREAM_OPTS_FIRST, "mt_stream_opts", err)
		   : 0;
	if (!rc)
		rc = mt_name_check(dataset, "dataset", err);
	if (!rc && !nattrs)
		rc = mti_err(err, MT_EINVAL, "dataset %s: a stream needs attributes", dataset);
	if (!rc)
		rc = mti_attrs_check(attrs, nattrs, err);
	if (rc)
		return rc;
	mt_stream *st = calloc(1, sizeof *st);
	if (!st)
		return mti_err(err, MT_ENOMEM, "out of memory");
	st->store = s;
	st->o = opts;
	if (!st->o.commit_rows)
		st->o.commit_rows = DEFAULT_COMMIT_ROWS;
	st->nattrs = nattrs;
	if (!(st->dataset = mti_strdup(dataset)) || mti_attrs_dup(attrs, nattrs, &st->attrs) ||
	    !(st->row_bytes = calloc(nattrs, sizeof *st->row_bytes)) ||
	    !(st->data = calloc(nattrs, sizeof *st->data)) ||
	    !(st->cap = calloc(nattrs, sizeof *st->cap)) ||
	    !(st->used = calloc(nattrs, sizeof *st->used)) ||
	    !(st->lens = calloc(nattrs, sizeof *st->lens))) {
		mt_stream_close(st);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nattrs; i++) {
		st->row_bytes[i] = (size_t)(mt_attr_items(&attrs[i]) * mt_dtype_size(attrs[i].dtype));
		st->ragged |= attrs[i].ragged;
	}
	*out = st;
	return 0;
}

uint64_t mt_stream_pending(const mt_stream *st)
{
	return st->pending;
}

/* One writer appending to the latest version (or making v1), every waiting
 * row, one commit. */
static int stream_commit_once(mt_stream *st, char *version, size_t cap, mt_error *err)
{
	mt_writer_opts wo;
	mt_writer_opts_init(&wo);
	if (st->o.writer) {
		int rc = mti_opts_take(&wo, sizeof wo, st->o.writer, sizeof(size_t), "mt_writer_opts",
				       err);
		if (rc)
			return rc;
	}
	wo.append = !st->fresh;
	wo.version = st->fresh ? "v1" : NULL;
	wo.parent = NULL;
	wo.stage_id = NULL;
	mt_writer *w = NULL;
	int rc = mt_writer_open(st->store, st->dataset, st->attrs, st->nattrs, &wo, &w, err);
	/* A ragged attribute whose rows are all empty has no bytes, yet data. */
	static const uint8_t none[1];
	const void **data = calloc(st->nattrs, sizeof *data);
	if (!rc && !data)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < st->nattrs; i++)
		data[i] = st->data[i] ? st->data[i] : none;
	if (!rc)
		rc = mt_writer_append(w, st->pending, data,
				      st->ragged ? (const uint64_t *const *)st->lens : NULL, err);
	free(data);
	if (!rc)
		rc = mt_writer_commit(w, version, cap, err);
	mt_writer_close(w);
	return rc;
}

int mt_stream_commit(mt_stream *st, char *version, size_t cap, mt_error *err)
{
	char name[256] = "";
	if (version && cap)
		version[0] = 0;
	if (!st->pending)
		return 0;
	int rc = 0;
	/* The first version under a fixed name: of two streams that both found
	 * the dataset empty, the loser appends to the winner's version. */
	for (int attempt = 0; attempt < 4; attempt++) {
		rc = stream_commit_once(st, name, sizeof name, err);
		if (rc == MT_ENOTFOUND && !st->fresh)
			st->fresh = 1;
		else if (rc == MT_EEXIST && st->fresh)
			st->fresh = 0;
		else
			break;
	}
	if (rc)
		return rc;
	st->fresh = 0;
	uint64_t rows = st->pending;
	st->pending = 0;
	for (size_t i = 0; i < st->nattrs; i++)
		st->used[i] = 0;
	if (version && cap && snprintf(version, cap, "%s", name) >= (int)cap)
		rc = mti_err(err, MT_ERANGE, "version name %s does not fit %zu bytes", name, cap);
	if (st->o.committed)
		st->o.committed(st->o.committed_ud, name, rows);
	return rc;
}

static int stream_due(const mt_stream *st)
{
	return st->pending && (st->pending >= st->o.commit_rows ||
			       (st->o.commit_ms && now_ms() - st->since_ms >= st->o.commit_ms));
}

/* Room for `add` more bytes of attribute i's waiting rows. */
static int stream_reserve(mt_stream *st, size_t i, size_t add, mt_error *err)
{
	size_t have = st->used[i];
	if (add > SIZE_MAX / 2 - have)
		return mti_err(err, MT_ERANGE, "dataset %s: attribute %s: too many waiting bytes",
			       st->dataset, st->attrs[i].name);
	if (have + add <= st->cap[i])
		return 0;
	size_t c = st->cap[i] ? st->cap[i] : 4096;
	while (c < have + add)
		c *= 2;
	uint8_t *p = realloc(st->data[i], c);
	if (!p)
		return mti_err(err, MT_ENOMEM, "out of memory");
	st->data[i] = p;
	st->cap[i] = c;
	return 0;
}

/* Room for `nrows` more lengths in every ragged attribute's array. */
static int stream_reserve_lens(mt_stream *st, uint64_t nrows, mt_error *err)
{
	if (st->pending + nrows <= st->lcap)
		return 0;
	uint64_t c = st->lcap ? st->lcap : 256;
	while (c < st->pending + nrows)
		c *= 2;
	for (size_t i = 0; i < st->nattrs; i++) {
		if (!st->attrs[i].ragged)
			continue;
		uint64_t *p = c > SIZE_MAX / sizeof *p ? NULL : realloc(st->lens[i], (size_t)c * sizeof *p);
		if (!p)
			return mti_err(err, MT_ENOMEM, "out of memory");
		st->lens[i] = p;
	}
	st->lcap = c;
	return 0;
}

/* The bytes of attribute i's nrows new rows; a ragged attribute's lengths
 * are checked and summed first. */
static int stream_bytes(const mt_stream *st, size_t i, uint64_t nrows,
			const uint64_t *const *lengths, size_t *out, mt_error *err)
{
	uint64_t units = nrows;
	if (st->attrs[i].ragged) {
		if (!lengths || !lengths[i])
			return mti_err(err, MT_EINVAL, "dataset %s: attribute %s is ragged: give its "
				       "rows' lengths", st->dataset, st->attrs[i].name);
		units = 0;
		for (uint64_t r = 0; r < nrows; r++)
			if (__builtin_add_overflow(units, lengths[i][r], &units))
				break;
	}
	if (units > SIZE_MAX || __builtin_mul_overflow((size_t)units, st->row_bytes[i], out))
		return mti_err(err, MT_ERANGE, "dataset %s: %llu rows are too many", st->dataset,
			       (unsigned long long)nrows);
	return 0;
}

int mt_stream_append_ragged(mt_stream *st, uint64_t nrows, const void *const *data,
			    const uint64_t *const *lengths, mt_error *err)
{
	size_t *add = calloc(st->nattrs, sizeof *add);
	if (!add)
		return mti_err(err, MT_ENOMEM, "out of memory");
	/* Every buffer is sized before any is written: a failure adds no row. */
	int rc = st->ragged ? stream_reserve_lens(st, nrows, err) : 0;
	for (size_t i = 0; !rc && i < st->nattrs; i++)
		if (!(rc = stream_bytes(st, i, nrows, lengths, &add[i], err)))
			rc = stream_reserve(st, i, add[i], err);
	for (size_t i = 0; !rc && i < st->nattrs; i++) {
		if (add[i])
			memcpy(st->data[i] + st->used[i], data[i], add[i]);
		st->used[i] += add[i];
		if (st->attrs[i].ragged && nrows)
			memcpy(st->lens[i] + st->pending, lengths[i], (size_t)nrows * sizeof(uint64_t));
	}
	free(add);
	if (rc)
		return rc;
	if (!st->pending && nrows)
		st->since_ms = now_ms();
	st->pending += nrows;
	return stream_due(st) ? mt_stream_commit(st, NULL, 0, err) : 0;
}

int mt_stream_append(mt_stream *st, uint64_t nrows, const void *const *data, mt_error *err)
{
	return mt_stream_append_ragged(st, nrows, data, NULL, err);
}

int mt_stream_poll(mt_stream *st, uint64_t *wait_ms, mt_error *err)
{
	int rc = stream_due(st) ? mt_stream_commit(st, NULL, 0, err) : 0;
	if (wait_ms) {
		uint64_t waited = now_ms() - st->since_ms;
		*wait_ms = !st->pending || !st->o.commit_ms ? UINT64_MAX
			 : waited >= st->o.commit_ms ? 0 : st->o.commit_ms - waited;
	}
	return rc;
}
