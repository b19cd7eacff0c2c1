/* stream.c — rows appended a few at a time, committed by rows or time as versions on top of the latest (in line or on a thread of their own), with an optional local spool that commits every row exactly once. */
#define _GNU_SOURCE /* vasprintf */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataset.h"
#include "opts.h"
#include "spool.h"
#include "util.h"

#define STREAM_OPTS_FIRST MT_OPTS_SIZE_UPTO(mt_stream_opts, committed_ud)
#define DEFAULT_COMMIT_ROWS 100000
#define BACKOFF_MAX_MS 60000

/* Rows of every attribute, back to back: the waiting ones, or a commit's. */
struct rows {
	uint8_t **data;  /* per attribute */
	size_t *cap;     /* bytes allocated, per attribute */
	size_t *used;    /* bytes of the rows, per attribute */
	uint64_t **lens; /* ragged attributes: the rows' lengths (NULL for fixed ones) */
	uint64_t lcap;   /* rows the lens arrays hold */
	uint64_t n;
};

struct mt_stream {
	mt_store *store;
	char *dataset;
	mt_attr *attrs;
	size_t nattrs;
	mt_stream_opts o;
	size_t *row_bytes; /* per row (fixed) or per item (ragged) */
	size_t *add;       /* append's scratch: each attribute's new bytes */
	int ragged;        /* some attribute is */
	struct rows wait;
	uint64_t since_ms; /* when the oldest waiting row came */
	int fresh;         /* the dataset looked empty: the next commit makes v1 */
	/* o.background: the commit on its thread, and its rows */
	struct rows job;
	pthread_t thread;
	int busy;          /* started and not joined */
	int joined;        /* ran in line: nothing to join */
	int done;          /* the thread is over (atomic) */
	int job_rc;
	mt_error job_err;
	/* o.spool_dir */
	struct mti_spool *spool;
	uint64_t spooled;  /* waiting rows already in the spool */
	int unsure;        /* a version may hold some waiting rows already */
	int replayed;      /* rows came back from the spool: commit them first */
	uint64_t retry_ms; /* the store failed: no commit by rows or time before this */
	uint64_t backoff_ms;
};

/* The coarse clock: a few ms off at most, and cheap enough to read at every
 * append (the precise one costs more than parsing a short record). */
static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void mt_stream_opts_init_size(mt_stream_opts *o, size_t size)
{
	mt_stream_opts d;
	memset(&d, 0, sizeof d);
	d.commit_rows = DEFAULT_COMMIT_ROWS;
	mti_opts_init(o, size, &d, sizeof d);
}

static void rows_free(struct rows *r, size_t nattrs)
{
	for (size_t i = 0; r->data && i < nattrs; i++)
		free(r->data[i]);
	for (size_t i = 0; r->lens && i < nattrs; i++)
		free(r->lens[i]);
	free(r->data);
	free(r->lens);
	free(r->cap);
	free(r->used);
	memset(r, 0, sizeof *r);
}

static int rows_init(struct rows *r, size_t nattrs)
{
	return !(r->data = calloc(nattrs, sizeof *r->data)) ||
	       !(r->cap = calloc(nattrs, sizeof *r->cap)) ||
	       !(r->used = calloc(nattrs, sizeof *r->used)) ||
	       !(r->lens = calloc(nattrs, sizeof *r->lens));
}

static void rows_clear(struct rows *r, size_t nattrs)
{
	r->n = 0;
	for (size_t i = 0; i < nattrs; i++)
		r->used[i] = 0;
}

static void stream_join(mt_stream *st);

void mt_stream_close(mt_stream *st)
{
	if (!st)
		return;
	stream_join(st);
	rows_free(&st->wait, st->nattrs);
	rows_free(&st->job, st->nattrs);
	mti_spool_close(st->spool);
	free(st->row_bytes);
	free(st->add);
	mti_attrs_free(st->attrs, st->nattrs);
	free(st->dataset);
	free(st);
}

static void stream_notice(const mt_stream *st, int retry, const char *fmt, ...) MT_PRINTF(3, 4);

static void stream_notice(const mt_stream *st, int retry, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	/* Out of memory: the user misses a notice, nothing else. */
	if (st->o.notice && vasprintf(&msg, fmt, ap) >= 0)
		st->o.notice(st->o.notice_ud, retry, msg);
	va_end(ap);
	free(msg);
}

/* Room for `add` more bytes of attribute i's rows. */
static int rows_reserve(mt_stream *st, struct rows *r, size_t i, size_t add, mt_error *err)
{
	size_t have = r->used[i];
	if (add > SIZE_MAX / 2 - have)
		return mti_err(err, MT_ERANGE, "dataset %s: attribute %s: too many waiting bytes",
			       st->dataset, st->attrs[i].name);
	if (have + add <= r->cap[i])
		return 0;
	size_t c = r->cap[i] ? r->cap[i] : 4096;
	while (c < have + add)
		c *= 2;
	uint8_t *p = realloc(r->data[i], c);
	if (!p)
		return mti_err(err, MT_ENOMEM, "out of memory");
	r->data[i] = p;
	r->cap[i] = c;
	return 0;
}

/* Room for `nrows` more lengths in every ragged attribute's array. */
static int rows_reserve_lens(mt_stream *st, struct rows *r, uint64_t nrows, mt_error *err)
{
	if (r->n + nrows <= r->lcap)
		return 0;
	uint64_t c = r->lcap ? r->lcap : 256;
	while (c < r->n + nrows)
		c *= 2;
	for (size_t i = 0; i < st->nattrs; i++) {
		if (!st->attrs[i].ragged)
			continue;
		uint64_t *p = c > SIZE_MAX / sizeof *p ? NULL : realloc(r->lens[i], (size_t)c * sizeof *p);
		if (!p)
			return mti_err(err, MT_ENOMEM, "out of memory");
		r->lens[i] = p;
	}
	r->lcap = c;
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

/* Copy nrows rows after r's; every buffer is sized before any is written, so
 * a failure adds no row. */
static int rows_add(mt_stream *st, struct rows *r, uint64_t nrows, const void *const *data,
		    const uint64_t *const *lengths, mt_error *err)
{
	int rc = st->ragged ? rows_reserve_lens(st, r, nrows, err) : 0;
	for (size_t i = 0; !rc && i < st->nattrs; i++)
		if (!(rc = stream_bytes(st, i, nrows, lengths, &st->add[i], err)) &&
		    !(rc = mti_str_rows_check(st->dataset, &st->attrs[i], nrows, data[i],
					      lengths ? lengths[i] : NULL, err)))
			rc = rows_reserve(st, r, i, st->add[i], err);
	for (size_t i = 0; !rc && i < st->nattrs; i++) {
		if (st->add[i])
			memcpy(r->data[i] + r->used[i], data[i], st->add[i]);
		r->used[i] += st->add[i];
		if (st->attrs[i].ragged && nrows)
			memcpy(r->lens[i] + r->n, lengths[i], (size_t)nrows * sizeof(uint64_t));
	}
	if (!rc)
		r->n += nrows;
	return rc;
}

/* The bytes of attribute i's first `rows` rows in r. */
static size_t rows_upto(const mt_stream *st, const struct rows *r, size_t i, uint64_t rows)
{
	if (!st->attrs[i].ragged)
		return (size_t)rows * st->row_bytes[i];
	uint64_t items = 0;
	for (uint64_t k = 0; k < rows; k++)
		items += r->lens[i][k];
	return (size_t)items * st->row_bytes[i];
}

/* Drop r's first `rows` rows. */
static void rows_drop(const mt_stream *st, struct rows *r, uint64_t rows)
{
	for (size_t i = 0; i < st->nattrs; i++) {
		size_t b = rows_upto(st, r, i, rows);
		if (b)
			memmove(r->data[i], r->data[i] + b, r->used[i] - b);
		r->used[i] -= b;
		if (st->attrs[i].ragged)
			memmove(r->lens[i], r->lens[i] + rows, (size_t)(r->n - rows) * sizeof(uint64_t));
	}
	r->n -= rows;
}

/* ---- the spool ---- */

static int stream_replay_rows(void *ud, uint64_t rows, const uint8_t *const *cols,
			      const uint64_t *const *lens, mt_error *err)
{
	mt_stream *st = ud;
	int rc = rows_add(st, &st->wait, rows, (const void *const *)cols, lens, err);
	st->spooled = st->wait.n;
	return rc;
}

/* The attributes as a spool names them: "x=float32(2,),y=int64()". */
static char *stream_layout(const mt_stream *st)
{
	mt_buf b = { 0 };
	int bad = 0;
	for (size_t i = 0; i < st->nattrs; i++) {
		const mt_attr *a = &st->attrs[i];
		char dims[(MT_MAX_RANK + 1) * 24] = "";
		size_t len = a->ragged ? (size_t)snprintf(dims, sizeof dims, "*") : 0;
		for (int d = 0; d < a->rank && d < MT_MAX_RANK; d++)
			len += (size_t)snprintf(dims + len, sizeof dims - len, "%s%" PRIu64,
						len ? ", " : "", a->shape[d]);
		char *part = mti_asprintf("%s%s=%s(%s%s)", i ? "," : "", a->name,
					  mt_dtype_name(a->dtype), dims,
					  a->rank + (a->ragged ? 1 : 0) == 1 ? "," : "");
		bad |= !part || mti_buf_append(&b, part, strlen(part));
		free(part);
	}
	bad |= mti_buf_append(&b, "", 1);
	if (bad)
		mti_buf_free(&b);
	return bad ? NULL : (char *)b.data;
}

/* Open the spool and take back what it holds that its state does not call
 * committed: those rows are committed first, once it is sure no version holds
 * them already (stream_settle). */
static int stream_spool_open(mt_stream *st, mt_error *err)
{
	char *layout = stream_layout(st);
	int *ragged = calloc(st->nattrs, sizeof *ragged);
	int rc = layout && ragged ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < st->nattrs; i++)
		ragged[i] = st->attrs[i].ragged;
	if (!rc)
		rc = mti_spool_open(st->o.spool_dir, st->dataset, layout, st->nattrs, st->row_bytes,
				    ragged, &st->spool, err);
	free(layout);
	free(ragged);
	if (rc)
		return rc;
	uint64_t from = mti_spool_committed(st->spool), end = mti_spool_end(st->spool);
	if (end > from)
		stream_notice(st, 0, "replaying %" PRIu64 " spooled row(s) (%" PRIu64 "..%" PRIu64 ")",
			      end - from, from, end);
	rc = mti_spool_replay(st->spool, from, stream_replay_rows, st, err);
	if (!rc && st->wait.n)
		st->unsure = st->replayed = 1;
	return rc;
}

int mt_stream_sync(mt_stream *st, mt_error *err)
{
	struct rows *r = &st->wait;
	if (!st->spool || r->n == st->spooled)
		return 0;
	const uint8_t **cols = calloc(st->nattrs, sizeof *cols);
	const uint64_t **lens = calloc(st->nattrs, sizeof *lens);
	int rc = cols && lens ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < st->nattrs; i++) {
		/* A ragged attribute whose rows are all empty has no bytes. */
		cols[i] = r->data[i] ? r->data[i] + rows_upto(st, r, i, st->spooled)
				     : (const uint8_t *)"";
		lens[i] = st->attrs[i].ragged ? r->lens[i] + st->spooled : NULL;
	}
	if (!rc)
		rc = mti_spool_append(st->spool, r->n - st->spooled, cols, lens, err);
	free(cols);
	free(lens);
	if (!rc)
		st->spooled = r->n;
	return rc;
}

/* The rows of the spool a version holds: what its state says, or more when a
 * commit made after the state's last note (a crash between the two) carries
 * this spool's tag; only versions after the noted one can.  *end is left alone
 * when none does. */
static int stream_spool_scan(mt_stream *st, uint64_t *end, char **version, mt_error *err)
{
	char **v;
	size_t n, start = 0;
	int rc = mt_store_versions(st->store, st->dataset, &v, &n, err);
	if (rc)
		return rc == MT_ENOTFOUND ? 0 : rc;
	const char *noted = mti_spool_version(st->spool);
	for (size_t i = 0; noted && i < n; i++)
		if (!strcmp(v[i], noted))
			start = i + 1;
	char prefix[64];
	snprintf(prefix, sizeof prefix, "spool-%s-", mti_spool_id(st->spool));
	for (size_t i = n; !rc && i-- > start && !*version;) {
		mt_reader *r;
		rc = mt_reader_open(st->store, st->dataset, v[i], &r, err);
		if (rc == MT_ENOTFOUND) {
			rc = 0; /* removed since the listing */
			continue;
		}
		const mt_version_info *vi = rc ? NULL : mt_reader_info(r);
		for (size_t t = 0; vi && t < vi->ntags; t++)
			if (!strncmp(vi->tags[t], prefix, strlen(prefix))) {
				*end = strtoull(vi->tags[t] + strlen(prefix), NULL, 10);
				if (!(*version = mti_strdup(v[i])))
					rc = mti_err(err, MT_ENOMEM, "out of memory");
			}
		mt_reader_close(r);
	}
	mt_strv_free(v, n);
	return rc;
}

/* Before the first commit after a replay or a failure: drop the waiting rows
 * a version already holds, so each spooled row is committed exactly once. */
static int stream_settle(mt_stream *st, mt_error *err)
{
	uint64_t noted = mti_spool_committed(st->spool), end = noted;
	char *version = NULL;
	int rc = stream_spool_scan(st, &end, &version, err);
	if (!rc && end > noted) {
		uint64_t drop = end - noted < st->wait.n ? end - noted : st->wait.n;
		rows_drop(st, &st->wait, drop);
		st->spooled -= drop;
		stream_notice(st, 0, "%" PRIu64 " spooled row(s) were already committed in %s@%s",
			      drop, st->dataset, version);
		if (mti_spool_commit(st->spool, end, version, err))
			rc = mti_err(err, MT_EIO, "spool %s: its state was not saved", st->o.spool_dir);
	}
	free(version);
	if (!rc)
		st->unsure = 0;
	return rc;
}

/* A failure the store may get over (a network down, a server failing, writers
 * racing): with a spool the rows stay spooled and the commit is tried again
 * later, backing off from 1 s to a minute; anything else is the caller's. */
static int stream_failed(mt_stream *st, int rc, const mt_error *err)
{
	int transient = rc == MT_EIO || rc == MT_ENET || rc == MT_EEXIST;
	if (!st->spool || !transient)
		return rc;
	/* A commit can fail after its manifest landed (the answer lost on the way
	 * back): the next try looks for this spool's tag first. */
	st->unsure = 1;
	st->backoff_ms = st->backoff_ms ? (st->backoff_ms * 2 < BACKOFF_MAX_MS ? st->backoff_ms * 2
									      : BACKOFF_MAX_MS)
					: 1000;
	st->retry_ms = now_ms() + st->backoff_ms;
	stream_notice(st, 1, "%s; %" PRIu64 " row(s) wait in the spool, next try in %.0f s",
		      err->message, st->wait.n, (double)st->backoff_ms / 1000.0);
	return 0;
}

/* ---- commits ---- */

/* One writer appending to the latest version (or making v1), the rows of r,
 * one commit. */
static int stream_commit_once(mt_stream *st, const struct rows *r, char *version, size_t cap,
			      mt_error *err)
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
	/* The spool's rows this version ends with, so a stream after a crash between
	 * the commit and the spool's own note of it finds them committed. */
	char tag[96];
	const char *tags[1] = { tag };
	if (st->spool) {
		snprintf(tag, sizeof tag, "spool-%s-%" PRIu64, mti_spool_id(st->spool),
			 mti_spool_committed(st->spool) + r->n);
		wo.tags = tags;
		wo.ntags = 1;
	}
	mt_writer *w = NULL;
	int rc = mt_writer_open(st->store, st->dataset, st->attrs, st->nattrs, &wo, &w, err);
	/* A ragged attribute whose rows are all empty has no bytes, yet data. */
	static const uint8_t none[1];
	const void **data = calloc(st->nattrs, sizeof *data);
	if (!rc && !data)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < st->nattrs; i++)
		data[i] = r->data[i] ? r->data[i] : none;
	if (!rc)
		rc = mt_writer_append(w, r->n, data,
				      st->ragged ? (const uint64_t *const *)r->lens : NULL, err);
	free(data);
	if (!rc)
		rc = mt_writer_commit(w, version, cap, err);
	mt_writer_close(w);
	return rc;
}

/* The first version under a fixed name: of two streams that both found the
 * dataset empty, the loser appends to the winner's version. */
static int stream_commit_rows(mt_stream *st, const struct rows *r, char *version, size_t cap,
			      mt_error *err)
{
	int rc = 0;
	for (int attempt = 0; attempt < 4; attempt++) {
		rc = stream_commit_once(st, r, version, cap, err);
		if (rc == MT_ENOTFOUND && !st->fresh)
			st->fresh = 1;
		else if (rc == MT_EEXIST && st->fresh)
			st->fresh = 0;
		else
			break;
	}
	if (!rc)
		st->fresh = 0;
	return rc;
}

/* Commit every waiting row in line: version gets its name, "" when nothing
 * was committed (nothing waited, or a spooled stream will try again). */
static int stream_commit_wait(mt_stream *st, char *version, size_t cap, mt_error *err)
{
	version[0] = 0;
	st->replayed = 0;
	int rc = mt_stream_sync(st, err);
	if (rc)
		return rc;
	if (st->unsure && st->spool && (rc = stream_settle(st, err)))
		return stream_failed(st, rc, err);
	if (!st->wait.n)
		return 0;
	if ((rc = stream_commit_rows(st, &st->wait, version, cap, err))) {
		version[0] = 0;
		return stream_failed(st, rc, err);
	}
	st->backoff_ms = 0;
	st->retry_ms = 0;
	uint64_t rows = st->wait.n;
	if (st->spool && mti_spool_commit(st->spool, mti_spool_committed(st->spool) + rows,
					  version, err))
		return err->code;
	rows_clear(&st->wait, st->nattrs);
	st->spooled = 0;
	if (st->o.committed)
		st->o.committed(st->o.committed_ud, version, rows);
	return 0;
}

static void *stream_job_run(void *arg)
{
	mt_stream *st = arg;
	char version[256];
	st->job_rc = stream_commit_rows(st, &st->job, version, sizeof version, &st->job_err);
	if (!st->job_rc && st->o.committed)
		st->o.committed(st->o.committed_ud, version, st->job.n);
	__atomic_store_n(&st->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Wait for the commit on its thread.  Its rows are done with, or, when it
 * failed, wait again in front of the rows that came since (and its error is
 * in job_err). */
static void stream_join(mt_stream *st)
{
	if (!st->busy)
		return;
	if (!st->joined)
		pthread_join(st->thread, NULL);
	st->busy = 0;
	if (!st->job_rc) {
		rows_clear(&st->job, st->nattrs);
		return;
	}
	/* Back in order: the job's rows, then the waiting ones after them. */
	const void **data = calloc(st->nattrs, sizeof *data);
	int rc = data ? 0 : MT_ENOMEM;
	for (size_t i = 0; data && i < st->nattrs; i++)
		data[i] = st->wait.data[i];
	if (!rc && st->wait.n)
		rc = rows_add(st, &st->job, st->wait.n, data,
			      (const uint64_t *const *)st->wait.lens, &st->job_err);
	free(data);
	if (rc) {
		/* Nowhere to put them together: the job's rows are lost, say so. */
		mti_err(&st->job_err, rc, "dataset %s: %" PRIu64 " row(s) of a failed commit "
			"dropped: out of memory", st->dataset, st->job.n);
		rows_clear(&st->job, st->nattrs);
		return;
	}
	struct rows t = st->wait;
	st->wait = st->job;
	st->job = t;
	rows_clear(&st->job, st->nattrs);
}

/* The error of a commit that ran on its thread, once joined. */
static int stream_join_result(mt_stream *st, mt_error *err)
{
	if (!st->busy)
		return 0;
	stream_join(st);
	int rc = st->job_rc;
	if (rc && err)
		*err = st->job_err;
	st->job_rc = 0;
	return rc;
}

/* Hand the waiting rows to a commit on its own thread, once the one before
 * is done: commits stay in order, and at most two batches are in memory. */
static int stream_commit_background(mt_stream *st, mt_error *err)
{
	int rc = stream_join_result(st, err);
	if (rc || !st->wait.n)
		return rc;
	struct rows t = st->job;
	st->job = st->wait;
	st->wait = t;
	rows_clear(&st->wait, st->nattrs);
	st->job_rc = 0;
	memset(&st->job_err, 0, sizeof st->job_err);
	st->busy = 1;
	st->done = 0;
	/* Signals stay the caller's threads' to take. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	st->joined = pthread_create(&st->thread, NULL, stream_job_run, st) != 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (st->joined)
		stream_job_run(st); /* no thread to be had: in line */
	return 0;
}

int mt_stream_commit(mt_stream *st, char *version, size_t cap, mt_error *err)
{
	char name[256] = "";
	if (version && cap)
		version[0] = 0;
	int rc = stream_join_result(st, err);
	if (!rc)
		rc = stream_commit_wait(st, name, sizeof name, err);
	if (!rc && version && cap && snprintf(version, cap, "%s", name) >= (int)cap)
		rc = mti_err(err, MT_ERANGE, "version name %s does not fit %zu bytes", name, cap);
	return rc;
}

/* Enough rows wait, or the oldest long enough, and the store is not resting
 * after a failure; rows back from the spool go first, whatever the thresholds. */
static int stream_due(const mt_stream *st, uint64_t now)
{
	if (!st->wait.n)
		return 0;
	if (st->replayed)
		return 1;
	return now >= st->retry_ms &&
	       (st->wait.n >= st->o.commit_rows ||
		(st->o.commit_ms && now - st->since_ms >= st->o.commit_ms));
}

static int stream_commit_due(mt_stream *st, mt_error *err)
{
	if (st->o.background)
		return stream_commit_background(st, err);
	char name[256];
	return stream_commit_wait(st, name, sizeof name, err);
}

int mt_stream_append_ragged(mt_stream *st, uint64_t nrows, const void *const *data,
			    const uint64_t *const *lengths, mt_error *err)
{
	int rc = rows_add(st, &st->wait, nrows, data, lengths, err);
	if (rc)
		return rc;
	uint64_t now = now_ms();
	if (st->wait.n == nrows && nrows)
		st->since_ms = now;
	return stream_due(st, now) ? stream_commit_due(st, err) : 0;
}

int mt_stream_append(mt_stream *st, uint64_t nrows, const void *const *data, mt_error *err)
{
	return mt_stream_append_ragged(st, nrows, data, NULL, err);
}

int mt_stream_poll(mt_stream *st, uint64_t *wait_ms, mt_error *err)
{
	uint64_t now = now_ms();
	/* A commit that ended on its thread reports now, not at the next one. */
	int rc = st->busy && __atomic_load_n(&st->done, __ATOMIC_ACQUIRE)
		 ? stream_join_result(st, err) : 0;
	if (!rc && stream_due(st, now))
		rc = stream_commit_due(st, err);
	if (wait_ms) {
		now = now_ms();
		uint64_t at = UINT64_MAX;
		if (st->wait.n && st->wait.n >= st->o.commit_rows)
			at = now;
		else if (st->wait.n && st->o.commit_ms)
			at = st->since_ms + st->o.commit_ms;
		if (at != UINT64_MAX && at < st->retry_ms)
			at = st->retry_ms;
		*wait_ms = at == UINT64_MAX ? UINT64_MAX : at > now ? at - now : 0;
	}
	return rc;
}

uint64_t mt_stream_pending(const mt_stream *st)
{
	return st->wait.n + (st->busy ? st->job.n : 0);
}

static int stream_check(const char *dataset, const mt_attr *attrs, size_t nattrs,
			const mt_stream_opts *o, mt_error *err)
{
	int rc = mt_name_check(dataset, "dataset", err);
	if (!rc && !nattrs)
		rc = mti_err(err, MT_EINVAL, "dataset %s: a stream needs attributes", dataset);
	if (!rc && o->background && o->spool_dir)
		rc = mti_err(err, MT_EINVAL, "dataset %s: a spooled stream commits in line, not in "
			     "the background", dataset);
	return rc ? rc : mti_attrs_check(attrs, nattrs, err);
}

int mt_stream_open(mt_store *s, const char *dataset, const mt_attr *attrs, size_t nattrs,
		   const mt_stream_opts *o, mt_stream **out, mt_error *err)
{
	*out = NULL;
	mt_stream_opts opts;
	int rc = MTI_OPTS_GET(opts, mt_stream_opts_init, o, STREAM_OPTS_FIRST, "mt_stream_opts",
			      err);
	if (rc || (rc = stream_check(dataset, attrs, nattrs, &opts, err)))
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
	    !(st->add = calloc(nattrs, sizeof *st->add)) || rows_init(&st->wait, nattrs) ||
	    rows_init(&st->job, nattrs)) {
		mt_stream_close(st);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nattrs; i++) {
		st->row_bytes[i] = (size_t)(mt_attr_items(&attrs[i]) * mt_dtype_size(attrs[i].dtype));
		st->ragged |= attrs[i].ragged;
	}
	if (st->o.spool_dir && (rc = stream_spool_open(st, err))) {
		mt_stream_close(st);
		return rc;
	}
	*out = st;
	return 0;
}
