/* cmd-ingest.c — `matorage ingest`: records from standard input appended to a dataset, committed by rows, time, end or signal. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const struct cli_option ingest_options[] = {
	{ "attr", 0, "NAME=DTYPE[:SHAPE]", "an attribute of each record, in order (SHAPE: 3 or "
	  "28x28; none: a scalar; * or *x3: ragged, any number of items per record, each a "
	  "scalar or of shape 3); give one per attribute" },
	{ "format", 0, "FORMAT", "jsonl (default), csv or npy" },
	{ "commit-rows", 0, "N", "commit once N rows wait (default 100000)" },
	{ "commit-secs", 0, "T", "commit once the oldest waiting row has waited T seconds "
	  "(default 60; 0: never by time)" },
	{ "skip-bad", 0, NULL, "skip records that do not fit the attributes, count them and say "
	  "how many at the end (default: stop at the first)" },
	{ "spool", 0, "DIR", "write each batch of records to a local spool in DIR (fsynced) before "
	  "it counts as received; a later run commits what the spool holds and no version does; "
	  "while the store is unreachable, keep spooling and retry" },
	CLI_OPT_LEVEL,
	CLI_OPT_THREADS,
	{ "author", 0, "NAME", "who made the versions (default: $USER)" },
	{ "description", 0, "TEXT", "what the versions hold" },
	{ "parity", 0, "K+M", "protect each committed version with K+M Reed–Solomon parity "
	  "(default: the remote's, if it has one)" },
	{ "compact-every", 0, "K", "after every K versions this run commits, compact the latest "
	  "(as matorage compact does: its small shards repacked into 64 MiB ones, as a new "
	  "version); default: never" },
	{ NULL, 0, NULL, NULL },
};

enum { FMT_JSONL, FMT_CSV, FMT_NPY };

/* The bytes read from standard input and not yet consumed. */
struct ingest_in {
	char *buf;
	size_t len, cap, pos;
	int eof;
};

/* A growing buffer of one attribute's waiting rows. */
struct ingest_col {
	uint8_t *data;
	size_t len, cap;
	size_t row_bytes; /* a row's, or a ragged attribute's item's */
	uint8_t *row; /* one record's row while it is parsed */
	int ragged;   /* data holds items back to back, lens each row's count */
	uint64_t *lens;
	size_t nlens, lcap;
};

struct ingest;

/* A commit running on its own thread while the next records are parsed (no
 * spool, no parity: those commit in line).  Its rows are in cols, whose
 * buffers go back and forth with the waiting rows' so none is allocated
 * afresh for every commit. */
struct ingest_job {
	struct ingest *g;
	struct ingest_col *cols; /* data and cap used; len: the batch's bytes */
	uint64_t rows;
	pthread_t thread;
	int busy;    /* started and not waited for */
	int joined;  /* ran in line: nothing to join */
	int rc;
	mt_error err;
};

struct ingest {
	struct cli_ctx *ctx;
	mt_store *s;
	const char *dataset;
	mt_attr *attrs;
	char **names;
	size_t nattrs;
	struct ingest_col *cols;
	void **rows;         /* cols[i].row, as the parsers take them */
	struct app_records *rec;
	int format, skip_bad, header_done;
	uint64_t commit_rows;
	double commit_secs;
	mt_writer_opts wopts;
	int k, m;
	int fresh; /* the dataset looked empty: the first commit creates v1 */
	struct cli_spool *spool;
	const char *spool_dir;
	uint64_t spooled;    /* waiting rows already in the spool */
	int unsure;          /* spooled rows replayed: a version may hold some already */
	double retry_at;     /* the store failed: no commit before this time */
	double backoff;
	struct ingest_in in;
	uint64_t line;       /* lines (text) or frames (npy) read */
	uint64_t pending;    /* rows waiting for a commit */
	double pending_since;
	uint64_t committed, versions, bad;
	char **written;      /* the versions this run made (commits, compactions), for the catalog */
	size_t nwritten;
	size_t frame_attr;   /* npy: the attribute the next frame is for */
	int frame_items;     /* npy: the next frame is a ragged attribute's items (else its lengths) */
	size_t skip_frames;  /* npy: frames left of a batch --skip-bad dropped */
	uint64_t frame_rows; /* npy: rows of this batch's first frame */
	uint64_t frame_total; /* npy: items the ragged attribute's lengths frame announced */
	uint64_t compact_every; /* versions between compactions; 0: none */
	int async;           /* commits run beside the parsing: job */
	struct ingest_job job;
};

/* The signal that asked to stop (SIGINT, SIGTERM), 0 while none did. */
static volatile sig_atomic_t ingest_signal;

static void ingest_on_signal(int sig)
{
	ingest_signal = sig;
}

/* Poll and read return EINTR and the loop commits what waits; a second
 * signal, while a commit hangs, kills as usual. */
static void ingest_catch_signals(void)
{
	cli_catch_signal(SIGINT, ingest_on_signal);
	cli_catch_signal(SIGTERM, ingest_on_signal);
}

static double ingest_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void ingest_free(struct ingest *g)
{
	for (size_t i = 0; i < g->nattrs; i++) {
		free(g->names[i]);
		if (g->cols) {
			free(g->cols[i].data);
			free(g->cols[i].row);
		}
		if (g->cols)
			free(g->cols[i].lens);
		if (g->job.cols) {
			free(g->job.cols[i].data);
			free(g->job.cols[i].lens);
		}
	}
	free(g->job.cols);
	free(g->names);
	mt_strv_free(g->written, g->nwritten);
	free(g->attrs);
	free(g->cols);
	free(g->rows);
	free(g->in.buf);
	app_records_free(g->rec);
	cli_spool_close(g->spool);
}

static int ingest_parse_attrs(const struct cli_args *a, struct ingest *g)
{
	const char *const *specs = cli_get_all(a, "attr", &g->nattrs);
	if (!g->nattrs)
		return cli_usage_error(a->cmd, "give the attributes with --attr NAME=DTYPE[:SHAPE]");
	g->attrs = app_xcalloc(g->nattrs, sizeof *g->attrs);
	g->names = app_xcalloc(g->nattrs, sizeof *g->names);
	for (size_t i = 0; i < g->nattrs; i++) {
		char why[256];
		if (app_attr_spec(specs[i], &g->attrs[i], &g->names[i], why, sizeof why))
			return cli_usage_error(a->cmd, "--attr %s", why);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(g->names[j], g->names[i]))
				return cli_usage_error(a->cmd, "--attr %s is given twice", g->names[i]);
	}
	g->rec = app_records_new(g->attrs, g->nattrs);
	g->cols = app_xcalloc(g->nattrs, sizeof *g->cols);
	g->rows = app_xcalloc(g->nattrs, sizeof *g->rows);
	for (size_t i = 0; i < g->nattrs; i++) {
		g->cols[i].row_bytes = app_records_row_bytes(g->rec, i);
		g->cols[i].ragged = g->attrs[i].ragged;
		g->cols[i].row = app_xmalloc(g->cols[i].row_bytes ? g->cols[i].row_bytes : 1);
		g->rows[i] = g->cols[i].row;
	}
	return 0;
}

static int ingest_parse_format(const struct cli_args *a, struct ingest *g)
{
	const char *f = cli_get(a, "format");
	if (!f || !strcmp(f, "jsonl"))
		g->format = FMT_JSONL;
	else if (!strcmp(f, "csv"))
		g->format = FMT_CSV;
	else if (!strcmp(f, "npy"))
		g->format = FMT_NPY;
	else
		return cli_usage_error(a->cmd, "--format %s: jsonl, csv or npy", f);
	return 0;
}

static int ingest_parse(const struct cli_args *a, struct ingest *g)
{
	int rc, threads = 0, level = 0;
	uint64_t secs = 60;
	g->commit_rows = 100000;
	if ((rc = ingest_parse_attrs(a, g)) || (rc = ingest_parse_format(a, g)) ||
	    (rc = cli_opt_u64(a, "commit-rows", 1, &g->commit_rows)) ||
	    (rc = cli_opt_u64(a, "commit-secs", 0, &secs)) ||
	    (rc = cli_opt_u64(a, "compact-every", 1, &g->compact_every)) ||
	    (rc = cli_opt_int(a, "level", 1, 22, &level)) ||
	    (rc = cli_opt_int(a, "threads", 1, 4096, &threads)))
		return rc;
	g->commit_secs = (double)secs;
	g->skip_bad = cli_has(a, "skip-bad");
	mt_writer_opts_init(&g->wopts);
	g->wopts.level = level;
	g->wopts.threads = threads;
	g->wopts.author = cli_get(a, "author");
	if (!g->wopts.author)
		g->wopts.author = getenv("USER");
	g->wopts.description = cli_get(a, "description");
	return 0;
}

/* ---- commits ---- */

static void ingest_col_add(struct ingest_col *c, const void *src, size_t bytes)
{
	c->data = app_xgrow(c->data, &c->cap, c->len + bytes, 4096);
	memcpy(c->data + c->len, src, bytes);
	c->len += bytes;
}

/* Lengths of n more ragged rows. */
static void ingest_col_lens(struct ingest_col *c, const uint64_t *lens, size_t n)
{
	if (c->nlens + n > c->lcap) {
		size_t cap = c->lcap ? c->lcap : 1024;
		while (cap < c->nlens + n)
			cap *= 2;
		c->lens = app_xreallocarray(c->lens, cap, sizeof *c->lens);
		c->lcap = cap;
	}
	memcpy(c->lens + c->nlens, lens, n * sizeof *lens);
	c->nlens += n;
}

/* The bytes the first `rows` waiting rows take. */
static size_t ingest_col_upto(const struct ingest_col *c, uint64_t rows)
{
	if (!c->ragged)
		return (size_t)rows * c->row_bytes;
	uint64_t items = 0;
	for (uint64_t r = 0; r < rows; r++)
		items += c->lens[r];
	return (size_t)items * c->row_bytes;
}

/* Drop the first `rows` waiting rows (committed, or already in a version). */
static void ingest_col_drop(struct ingest_col *c, uint64_t rows)
{
	size_t bytes = ingest_col_upto(c, rows);
	memmove(c->data, c->data + bytes, c->len - bytes);
	c->len -= bytes;
	if (c->ragged) {
		memmove(c->lens, c->lens + rows, (c->nlens - (size_t)rows) * sizeof *c->lens);
		c->nlens -= (size_t)rows;
	}
}

/* One try: a writer appending to the latest version (or creating v1 of an empty
 * dataset), the waiting rows, the commit. */
static int ingest_commit_once(struct ingest *g, struct ingest_col *cols, uint64_t rows,
			      char *version, size_t cap, mt_error *err)
{
	mt_writer_opts o = g->wopts;
	o.append = !g->fresh;
	o.version = g->fresh ? "v1" : NULL;
	/* The spool's rows this version ends with, so a run after a crash between the
	 * commit and the spool's own note of it finds them committed. */
	char tag[96];
	const char *tags[1] = { tag };
	if (g->spool) {
		snprintf(tag, sizeof tag, "spool-%s-%" PRIu64, cli_spool_id(g->spool),
			 cli_spool_committed(g->spool) + rows);
		o.tags = tags;
		o.ntags = 1;
	}
	const void **data = app_xcalloc(g->nattrs, sizeof *data);
	const uint64_t **lens = app_xcalloc(g->nattrs, sizeof *lens);
	static const uint8_t none[1];
	for (size_t i = 0; i < g->nattrs; i++) {
		/* A ragged attribute whose rows are all empty has no bytes, yet data. */
		data[i] = cols[i].data ? cols[i].data : none;
		lens[i] = cols[i].lens;
	}
	mt_writer *w = NULL;
	int rc = mt_writer_open(g->s, g->dataset, g->attrs, g->nattrs, &o, &w, err);
	if (!rc)
		rc = mt_writer_append(w, rows, data, lens, err);
	free(lens);
	if (!rc)
		rc = mt_writer_commit(w, version, cap, err);
	mt_writer_close(w);
	free(data);
	return rc;
}

/* Spool the waiting rows not spooled yet, as one batch. */
static int ingest_spool_flush(struct ingest *g)
{
	if (!g->spool || g->pending == g->spooled)
		return 0;
	const uint8_t **cols = app_xcalloc(g->nattrs, sizeof *cols);
	const uint64_t **lens = app_xcalloc(g->nattrs, sizeof *lens);
	for (size_t i = 0; i < g->nattrs; i++) {
		cols[i] = g->cols[i].data + ingest_col_upto(&g->cols[i], g->spooled);
		lens[i] = g->cols[i].ragged ? g->cols[i].lens + g->spooled : NULL;
	}
	int rc = cli_spool_append(g->spool, g->pending - g->spooled, cols, lens);
	free(cols);
	free(lens);
	if (!rc)
		g->spooled = g->pending;
	return rc;
}

/* The rows of the spool a version holds: what its state says, or more when a
 * commit made after the state's last note (a crash between the two) carries
 * this spool's tag; only versions after the noted one can.  *end is left alone
 * when none does. */
static int ingest_spool_scan(struct ingest *g, uint64_t *end, char **version, mt_error *err)
{
	char **v;
	size_t n, start = 0;
	int rc = mt_store_versions(g->s, g->dataset, &v, &n, err);
	if (rc)
		return rc == MT_ENOTFOUND ? 0 : rc;
	const char *noted = cli_spool_version(g->spool);
	for (size_t i = 0; noted && i < n; i++)
		if (!strcmp(v[i], noted))
			start = i + 1;
	char prefix[64];
	snprintf(prefix, sizeof prefix, "spool-%s-", cli_spool_id(g->spool));
	for (size_t i = n; !rc && i-- > start && !*version;) {
		mt_reader *r;
		rc = mt_reader_open(g->s, g->dataset, v[i], &r, err);
		if (rc == MT_ENOTFOUND) {
			rc = 0; /* removed since the listing */
			continue;
		}
		const mt_version_info *vi = rc ? NULL : mt_reader_info(r);
		for (size_t t = 0; vi && t < vi->ntags; t++)
			if (!strncmp(vi->tags[t], prefix, strlen(prefix))) {
				*end = strtoull(vi->tags[t] + strlen(prefix), NULL, 10);
				*version = app_xstrdup(v[i]);
			}
		mt_reader_close(r);
	}
	mt_strv_free(v, n);
	return rc;
}

/* Before the first commit after a replay: drop the replayed rows a version
 * already holds, so each spooled row is committed exactly once. */
static int ingest_spool_settle(struct ingest *g, mt_error *err)
{
	uint64_t noted = cli_spool_committed(g->spool), end = noted;
	char *version = NULL;
	int rc = ingest_spool_scan(g, &end, &version, err);
	if (!rc && end > noted) {
		uint64_t drop = end - noted < g->pending ? end - noted : g->pending;
		for (size_t i = 0; i < g->nattrs; i++)
			ingest_col_drop(&g->cols[i], drop);
		g->pending -= drop;
		g->spooled -= drop;
		if (!g->ctx->quiet)
			fprintf(stderr, "matorage: ingest %s: %" PRIu64 " spooled row(s) were already "
				"committed in %s@%s\n", g->dataset, drop, g->dataset, version);
		if (cli_spool_commit(g->spool, end, version))
			rc = mt_error_set(err, MT_EIO, "spool %s: its state was not saved",
					  g->spool_dir);
	}
	free(version);
	if (!rc)
		g->unsure = 0;
	return rc;
}

/* Failures the store may get over (a network down, a server failing, writers
 * racing): with a spool, the rows stay spooled and the commit is tried again
 * later, backing off from 1 s to a minute; anything else ends the run. */
static int ingest_commit_failed(struct ingest *g, const mt_error *err)
{
	int transient = err->code == MT_EIO || err->code == MT_ENET || err->code == MT_EEXIST;
	if (!g->spool || !transient)
		return cli_error("ingest %s: %s; %" PRIu64 " row(s) not committed", g->dataset,
				 err->message, g->pending);
	/* A commit can fail after its manifest landed (the answer lost on the way
	 * back): the next try looks for this spool's tag first. */
	g->unsure = 1;
	g->backoff = g->backoff ? (g->backoff * 2 < 60 ? g->backoff * 2 : 60) : 1;
	g->retry_at = ingest_now() + g->backoff;
	fprintf(stderr, "matorage: ingest %s: %s; %" PRIu64 " row(s) wait in the spool, next try "
		"in %.0f s\n", g->dataset, err->message, g->pending, g->backoff);
	return 0;
}

/* The commit, with another try when the dataset turned out to be empty (or
 * no longer empty) after all. */
static int ingest_commit_try(struct ingest *g, struct ingest_col *cols, uint64_t rows,
			     char *version, size_t cap, mt_error *err)
{
	int rc = 0;
	for (int attempt = 0; attempt < 4; attempt++) {
		rc = ingest_commit_once(g, cols, rows, version, cap, err);
		if (rc == MT_ENOTFOUND && !g->fresh)
			g->fresh = 1;
		else if (rc == MT_EEXIST && g->fresh)
			g->fresh = 0;
		else
			break;
	}
	if (!rc)
		g->fresh = 0;
	return rc;
}

/* Keep the name of a version this run made: the catalog learns those alone
 * at the end (cli_catalog_note_versions). */
static void ingest_wrote(struct ingest *g, const char *version)
{
	g->written = app_xreallocarray(g->written, g->nwritten + 1, sizeof *g->written);
	g->written[g->nwritten++] = app_xstrdup(version);
}

/* Every compact_every versions: the one just made compacted.  The rows are
 * committed either way, so a failed compaction is reported and the run goes
 * on; the next one tries again. */
static void ingest_compact(struct ingest *g, const char *version)
{
	if (!g->compact_every || g->versions % g->compact_every)
		return;
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.level = g->wopts.level;
	o.threads = g->wopts.threads;
	o.author = g->wopts.author;
	char out[256];
	int rc = cli_compact(g->ctx, g->s, g->dataset, version, &o, out, sizeof out);
	if (rc == CLI_OK && out[0])
		ingest_wrote(g, out);
	if (rc == CLI_OK && out[0] && g->k) {
		cli_protect(g->ctx, g->s, g->dataset, out, g->k, g->m, g->wopts.threads, 0);
		ingest_catch_signals();
	}
}

/* The job's thread: the main thread touches fresh, committed, versions and
 * standard output only once it has waited for the job. */
static void *ingest_job_run(void *arg)
{
	struct ingest_job *j = arg;
	struct ingest *g = j->g;
	char version[256];
	j->rc = ingest_commit_try(g, j->cols, j->rows, version, sizeof version, &j->err);
	if (!j->rc) {
		printf("%s@%s\n", g->dataset, version);
		fflush(stdout);
		g->committed += j->rows;
		ingest_wrote(g, version);
		g->versions++;
		ingest_compact(g, version);
	}
	return NULL;
}

/* Wait for the commit in flight; its failure ends the run. */
static int ingest_job_wait(struct ingest *g)
{
	struct ingest_job *j = &g->job;
	if (!j->busy)
		return 0;
	if (!j->joined)
		pthread_join(j->thread, NULL);
	j->busy = 0;
	if (j->rc)
		return cli_error("ingest %s: %s; %" PRIu64 " row(s) not committed", g->dataset,
				 j->err.message, j->rows + g->pending);
	return 0;
}

/* Hand the waiting rows to a commit on its own thread, once the one before
 * is done: commits stay in order, and at most two batches are in memory. */
static int ingest_commit_async(struct ingest *g)
{
	int rc = ingest_job_wait(g);
	if (rc)
		return rc;
	struct ingest_job *j = &g->job;
	if (!j->cols)
		j->cols = app_xcalloc(g->nattrs, sizeof *j->cols);
	for (size_t i = 0; i < g->nattrs; i++) {
		struct ingest_col *c = &g->cols[i], *b = &j->cols[i], t = *b;
		size_t done = ingest_col_upto(c, g->pending);
		b->data = c->data;
		b->cap = c->cap;
		b->len = done;
		c->data = t.data;
		c->cap = t.cap;
		/* Frames of an npy batch still coming stay, after the committed rows
		 * (only fixed attributes come as frames). */
		size_t left = c->len - done;
		c->len = 0;
		if (left)
			ingest_col_add(c, b->data + done, left);
		/* So do the lengths of a ragged attribute's frame whose items are to come. */
		size_t lleft = c->ragged ? c->nlens - (size_t)g->pending : 0;
		b->lens = c->lens;
		b->lcap = c->lcap;
		b->nlens = (size_t)g->pending;
		c->lens = t.lens;
		c->lcap = t.lcap;
		c->nlens = 0;
		if (lleft)
			ingest_col_lens(c, b->lens + g->pending, lleft);
	}
	j->g = g;
	j->rows = g->pending;
	j->rc = 0;
	j->busy = 1;
	g->pending = 0;
	/* The signals stay the main thread's: its poll must see them. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	j->joined = pthread_create(&j->thread, NULL, ingest_job_run, j) != 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (j->joined)
		ingest_job_run(j); /* no thread to be had: in line */
	return 0;
}

/* Commit the waiting rows as one version on top of the latest.  The first
 * version of a dataset is created under the name v1, so two ingesters that both
 * found the dataset empty cannot both make a first version: the one that loses
 * appends to the winner's instead. */
static int ingest_commit(struct ingest *g)
{
	if (!g->pending)
		return 0;
	if (g->async)
		return ingest_commit_async(g);
	if (ingest_spool_flush(g))
		return CLI_FAIL;
	mt_error err = { 0 };
	char version[256];
	int rc = g->unsure ? ingest_spool_settle(g, &err) : 0;
	if (rc)
		return ingest_commit_failed(g, &err);
	if (!g->pending)
		return 0;
	if ((rc = ingest_commit_try(g, g->cols, g->pending, version, sizeof version, &err)))
		return ingest_commit_failed(g, &err);
	g->backoff = 0;
	if (g->spool && cli_spool_commit(g->spool, cli_spool_committed(g->spool) + g->pending,
					 version))
		return CLI_FAIL;
	printf("%s@%s\n", g->dataset, version);
	fflush(stdout);
	g->committed += g->pending;
	ingest_wrote(g, version);
	g->versions++;
	/* Frames of an npy batch still coming stay, after the committed rows. */
	for (size_t i = 0; i < g->nattrs; i++)
		ingest_col_drop(&g->cols[i], g->pending);
	g->pending = 0;
	g->spooled = 0;
	if (g->k) {
		/* Committed either way: a failed protection is reported, the rows stay. */
		rc = cli_protect(g->ctx, g->s, g->dataset, version, g->k, g->m, g->wopts.threads, 0);
		ingest_catch_signals(); /* the protection caught SIGINT for itself */
	}
	ingest_compact(g, version);
	return rc;
}

/* ---- records ---- */

static void ingest_rows_added(struct ingest *g, uint64_t n)
{
	if (!g->pending)
		g->pending_since = ingest_now();
	g->pending += n;
}

/* A record that does not fit: the end of the run (nothing waiting is committed),
 * or with --skip-bad one more to count; the first few are shown either way. */
static int ingest_bad(struct ingest *g, const char *what, uint64_t where, const char *why)
{
	if (!g->skip_bad)
		return cli_error("ingest %s: %s %" PRIu64 ": %s; stopped, %" PRIu64 " waiting row(s) "
				 "not committed", g->dataset, what, where, why, g->pending);
	if (g->bad++ < 10 && !g->ctx->quiet) {
		fprintf(stderr, "matorage: ingest %s: skipped %s %" PRIu64 ": %s\n", g->dataset, what,
			where, why);
		if (g->bad == 10)
			fprintf(stderr, "matorage: ingest %s: not showing more bad records\n", g->dataset);
	}
	return 0;
}

/* The record just parsed joins the waiting rows. */
static void ingest_record(struct ingest *g)
{
	for (size_t i = 0; i < g->nattrs; i++) {
		struct ingest_col *c = &g->cols[i];
		if (!c->ragged) {
			ingest_col_add(c, g->rows[i], c->row_bytes);
			continue;
		}
		uint64_t items;
		const void *p = app_records_ragged(g->rec, i, &items);
		if (items)
			ingest_col_add(c, p, (size_t)items * c->row_bytes);
		ingest_col_lens(c, &items, 1);
	}
	ingest_rows_added(g, 1);
}

/* One line of text: the CSV header, or a record. */
static int ingest_line(struct ingest *g, const char *line, size_t len)
{
	char why[512];
	void *const *rows = g->rows;
	g->line++;
	if (len && line[len - 1] == '\r')
		len--;
	int rc = 0, bad = 0;
	if (!len) {
		/* Blank lines separate nothing; skip them. */
	} else if (g->format == FMT_CSV && !g->header_done) {
		if (app_records_csv_header(g->rec, line, len, why, sizeof why))
			rc = cli_error("ingest %s: line %" PRIu64 " (the header): %s", g->dataset,
				       g->line, why);
		g->header_done = 1;
	} else {
		bad = g->format == FMT_CSV
			      ? app_records_csv(g->rec, line, len, rows, why, sizeof why)
			      : app_records_json(g->rec, line, len, rows, why, sizeof why);
		if (bad) {
			rc = ingest_bad(g, "line", g->line, why);
		} else {
			ingest_record(g);
		}
	}
	return rc;
}

/* ---- npy frames ---- */

/* Check a frame's header against what comes next: attribute frame_attr's
 * rows, or for a ragged attribute its rows' lengths (int64, one a row) and
 * then their items (as many as the lengths add up to); -1 with why. */
static int ingest_frame_check(struct ingest *g, const mt_npy_info *ni, char *why, size_t cap)
{
	const mt_attr *at = &g->attrs[g->frame_attr];
	int lengths = at->ragged && !g->frame_items;
	mt_attr want = *at;
	if (lengths) {
		want.dtype = MT_INT64;
		want.rank = 0;
	}
	const char *part = lengths ? " (lengths)" : at->ragged ? " (items)" : "";
	int ok = ni->rank == want.rank + 1;
	for (int d = 0; ok && d < want.rank; d++)
		ok = ni->shape[d + 1] == want.shape[d];
	char shape[96];
	if (ni->dtype != want.dtype)
		return snprintf(why, cap, "field %s%s: dtype %s, %s %s", at->name, part,
				mt_dtype_name(ni->dtype), lengths ? "lengths are" : "the attribute's is",
				mt_dtype_name(want.dtype)), -1;
	if (!ok)
		return snprintf(why, cap, "field %s%s: rows of the wrong shape (the attribute's "
				"%s are %s, after a leading %s dimension)", at->name, part,
				at->ragged ? "items" : "rows", app_shape_str(at, shape, sizeof shape),
				at->ragged && !lengths ? "items" : "rows"), -1;
	if (ni->big_endian && mt_dtype_size(ni->dtype) > 1)
		return snprintf(why, cap, "field %s: big-endian data; send little-endian", at->name), -1;
	if (ni->fortran_order && ni->rank > 2)
		return snprintf(why, cap, "field %s: Fortran order; send C order", at->name), -1;
	if (at->ragged && !lengths && ni->shape[0] != g->frame_total)
		return snprintf(why, cap, "field %s (items): %" PRIu64 " items, but its lengths add up "
				"to %" PRIu64, at->name, ni->shape[0], g->frame_total), -1;
	if ((g->frame_attr || g->frame_items) && !(at->ragged && !lengths) &&
	    ni->shape[0] != g->frame_rows)
		return snprintf(why, cap, "field %s%s: %" PRIu64 " rows, but the batch's first frame "
				"(%s) has %" PRIu64, at->name, part, ni->shape[0], g->attrs[0].name,
				g->frame_rows), -1;
	return 0;
}

/* A ragged attribute's lengths frame (checked): no length below zero; their
 * sum is the items the next frame must hold. */
static int ingest_frame_lengths(struct ingest *g, const mt_npy_info *ni, const char *p,
				char *why, size_t cap)
{
	g->frame_total = 0;
	for (uint64_t r = 0; r < ni->shape[0]; r++) {
		int64_t v;
		memcpy(&v, p + r * sizeof v, sizeof v);
		if (v < 0 || __builtin_add_overflow(g->frame_total, (uint64_t)v, &g->frame_total))
			return snprintf(why, cap, "field %s (lengths): row %" PRIu64 " has length %"
					PRId64, g->attrs[g->frame_attr].name, r, v), -1;
	}
	return 0;
}

/* Frames in a batch (a ragged attribute has two), and the next one's place in it. */
static size_t ingest_frames(const struct ingest *g, size_t upto)
{
	size_t n = 0;
	for (size_t i = 0; i < upto; i++)
		n += g->attrs[i].ragged ? 2 : 1;
	return n;
}

/* A bad frame: what waits is whole rows again (frames of this batch came
 * after them), and the batch's other frames are read and dropped. */
static int ingest_frame_bad(struct ingest *g, const char *why)
{
	for (size_t i = 0; i < g->nattrs; i++) {
		struct ingest_col *c = &g->cols[i];
		c->len = ingest_col_upto(c, g->pending);
		if (c->ragged)
			c->nlens = (size_t)g->pending;
	}
	g->skip_frames = ingest_frames(g, g->nattrs) - ingest_frames(g, g->frame_attr) -
			 (size_t)g->frame_items - 1;
	g->frame_attr = 0;
	g->frame_items = 0;
	return ingest_bad(g, "frame", g->line, why);
}

/* A whole frame's bytes are in the buffer at p: take its rows.  The rows of a
 * batch count only once its last attribute's frame is in.  A bad frame spoils its
 * whole batch: with --skip-bad the batch's other frames are read and dropped. */
static int ingest_frame(struct ingest *g, const mt_npy_info *ni, const char *p)
{
	char why[512];
	g->line++;
	if (g->skip_frames) {
		g->skip_frames--;
		return 0;
	}
	struct ingest_col *c = &g->cols[g->frame_attr];
	int lengths = c->ragged && !g->frame_items;
	const char *data = p + ni->header_bytes;
	if (ingest_frame_check(g, ni, why, sizeof why) ||
	    (lengths && ingest_frame_lengths(g, ni, data, why, sizeof why)))
		return ingest_frame_bad(g, why);
	if (!g->frame_attr && !g->frame_items)
		g->frame_rows = ni->shape[0];
	if (lengths) {
		/* int64 and uint64 agree on lengths that passed the check. */
		for (uint64_t r = 0; r < ni->shape[0]; r++) {
			uint64_t v;
			memcpy(&v, data + r * sizeof v, sizeof v);
			ingest_col_lens(c, &v, 1);
		}
		g->frame_items = 1;
		return 0;
	}
	g->frame_items = 0;
	if (ni->data_bytes)
		ingest_col_add(c, data, (size_t)ni->data_bytes);
	if (++g->frame_attr == g->nattrs) {
		g->frame_attr = 0;
		ingest_rows_added(g, g->frame_rows);
	}
	return 0;
}

/* The size of the frame starting at p (len bytes there), 0 when more bytes must
 * come first; -1 with why when it is no .npy frame. */
static int ingest_frame_size(const char *p, size_t len, mt_npy_info *ni, size_t *size,
			     char *why, size_t cap)
{
	const uint8_t *b = (const uint8_t *)p;
	*size = 0;
	if (len < 12)
		return 0;
	if (memcmp(b, "\x93NUMPY", 6))
		return snprintf(why, cap, "not a .npy frame (no \\x93NUMPY magic)"), -1;
	size_t prefix = b[6] == 1 ? 10 : 12;
	size_t hlen = b[6] == 1 ? (size_t)b[8] | (size_t)b[9] << 8
				: (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
					  (size_t)b[11] << 24;
	if (len < prefix + hlen)
		return 0;
	mt_error err = { 0 };
	if (mt_npy_parse_header(p, prefix + hlen, ni, &err))
		return snprintf(why, cap, "%s", err.message), -1;
	if (ni->rank == 0)
		return snprintf(why, cap, "a 0-d array; a frame has a leading rows dimension"), -1;
	if (len < ni->header_bytes + ni->data_bytes)
		return 0;
	*size = (size_t)(ni->header_bytes + ni->data_bytes);
	return 0;
}

/* ---- the input loop ---- */

/* How long poll may wait: until the oldest waiting row is due (ms), else forever. */
static int ingest_timeout(const struct ingest *g)
{
	if (!g->pending)
		return -1;
	double at = g->pending >= g->commit_rows ? 0 : g->commit_secs > 0 ?
		g->pending_since + g->commit_secs : -1;
	if (at < 0)
		return -1;
	if (at < g->retry_at)
		at = g->retry_at;
	double left = at - ingest_now();
	return left <= 0 ? 0 : (int)(left * 1000.0) + 1;
}

/* Rows wait, enough or long enough, and the store is not resting after a failure. */
static int ingest_due(const struct ingest *g)
{
	double now = ingest_now();
	return g->pending && now >= g->retry_at &&
	       (g->pending >= g->commit_rows ||
		(g->commit_secs > 0 && now >= g->pending_since + g->commit_secs));
}

/* ingest_due between two records: the clock is read only every 64 lines, as
 * reading it costs more than a short record's parse; a commit by rows is
 * still never late. */
static int ingest_due_now(const struct ingest *g)
{
	return (g->pending >= g->commit_rows || !(g->line & 63)) && ingest_due(g);
}

/* Consume every whole record in the buffer (at the end of input, the rest too). */
static int ingest_consume(struct ingest *g)
{
	struct ingest_in *in = &g->in;
	int rc = 0;
	while (!rc && in->pos < in->len && !ingest_due_now(g)) {
		char *p = in->buf + in->pos;
		size_t left = in->len - in->pos;
		if (g->format == FMT_NPY) {
			mt_npy_info ni;
			size_t size;
			char why[512];
			if (ingest_frame_size(p, left, &ni, &size, why, sizeof why))
				return cli_error("ingest %s: frame %" PRIu64 ": %s; stopped, %" PRIu64
						 " waiting row(s) not committed", g->dataset,
						 g->line + 1, why, g->pending);
			if (!size)
				break;
			in->pos += size;
			rc = ingest_frame(g, &ni, p);
			continue;
		}
		char *nl = memchr(p, '\n', left);
		if (!nl && !in->eof)
			break;
		size_t len = nl ? (size_t)(nl - p) : left;
		in->pos += nl ? len + 1 : len;
		rc = ingest_line(g, p, len);
	}
	return rc;
}

/* Read what standard input has (it is readable, or at its end); 1 at the end. */
static int ingest_read(struct ingest *g)
{
	struct ingest_in *in = &g->in;
	if (in->pos) {
		memmove(in->buf, in->buf + in->pos, in->len - in->pos);
		in->len -= in->pos;
		in->pos = 0;
	}
	if (in->cap - in->len < 65536) {
		in->cap = in->cap ? 2 * in->cap : 1 << 20;
		in->buf = app_xreallocarray(in->buf, in->cap, 1);
	}
	ssize_t n = read(STDIN_FILENO, in->buf + in->len, in->cap - in->len);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	in->len += (size_t)n;
	in->eof = n == 0;
	return in->eof;
}

static int ingest_loop(struct ingest *g)
{
	int rc = 0;
	while (!rc && !ingest_signal) {
		if (ingest_due(g)) {
			rc = ingest_commit(g);
			continue;
		}
		/* Whole records still in the buffer go first (a commit by rows stopped them). */
		if (g->in.pos < g->in.len && ((rc = ingest_consume(g)) || (rc = ingest_spool_flush(g))))
			break;
		if (ingest_due(g))
			continue;
		if (g->in.eof)
			break;
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		int pr = poll(&pfd, 1, ingest_timeout(g));
		if (pr < 0 && errno != EINTR)
			rc = cli_error("ingest %s: waiting for standard input: %s", g->dataset,
				       strerror(errno));
		if (pr <= 0)
			continue;
		int r = ingest_read(g);
		if (r < 0)
			rc = cli_error("ingest %s: reading standard input: %s", g->dataset,
				       strerror(errno));
		else
			rc = ingest_consume(g);
		if (!rc)
			rc = ingest_spool_flush(g);
	}
	return rc;
}

/* What is left at the end: a partial npy batch is an error, as is a frame cut short. */
static int ingest_finish(struct ingest *g)
{
	if (g->format == FMT_NPY && g->in.eof &&
	    (g->frame_attr || g->frame_items || g->in.pos < g->in.len))
		return cli_error("ingest %s: frame %" PRIu64 ": the input ends inside a %s; "
				 "stopped, %" PRIu64 " waiting row(s) not committed", g->dataset,
				 g->line + 1, g->in.pos < g->in.len ? "frame" : "batch of frames",
				 g->pending);
	int rc = ingest_commit(g);
	if (!rc)
		rc = ingest_job_wait(g);
	if (!rc && g->pending)
		rc = cli_error("ingest %s: %" PRIu64 " row(s) stay in the spool; a run with --spool "
			       "%s commits them", g->dataset, g->pending, g->spool_dir);
	return rc;
}

static void ingest_replay_rows(void *ud, uint64_t rows, const uint8_t *const *cols,
			       const uint64_t *const *lens)
{
	struct ingest *g = ud;
	for (size_t i = 0; i < g->nattrs; i++) {
		struct ingest_col *c = &g->cols[i];
		size_t bytes = (size_t)rows * c->row_bytes;
		if (c->ragged) {
			uint64_t items = 0;
			for (uint64_t r = 0; r < rows; r++)
				items += lens[i][r];
			bytes = (size_t)items * c->row_bytes;
			ingest_col_lens(c, lens[i], (size_t)rows);
		}
		if (bytes)
			ingest_col_add(c, cols[i], bytes);
	}
	ingest_rows_added(g, rows);
	g->spooled = g->pending;
}

/* Open the spool and take back what it holds that the state does not call
 * committed; those rows are committed first (once it is sure no version holds
 * them already: ingest_spool_settle). */
static int ingest_spool_start(struct ingest *g)
{
	char *layout = NULL;
	size_t *row_bytes = app_xcalloc(g->nattrs, sizeof *row_bytes);
	int *ragged = app_xcalloc(g->nattrs, sizeof *ragged);
	for (size_t i = 0; i < g->nattrs; i++) {
		char shape[96];
		char *l = app_xasprintf("%s%s%s=%s%s", layout ? layout : "", layout ? "," : "",
					g->attrs[i].name, mt_dtype_name(g->attrs[i].dtype),
					app_shape_str(&g->attrs[i], shape, sizeof shape));
		free(layout);
		layout = l;
		row_bytes[i] = g->cols[i].row_bytes;
		ragged[i] = g->cols[i].ragged;
	}
	int rc = cli_spool_open(g->spool_dir, g->dataset, layout, g->nattrs, row_bytes, ragged,
				&g->spool);
	free(layout);
	free(row_bytes);
	free(ragged);
	if (rc)
		return rc;
	uint64_t from = cli_spool_committed(g->spool), end = cli_spool_end(g->spool);
	if (end > from) {
		if (!g->ctx->quiet)
			fprintf(stderr, "matorage: ingest %s: replaying %" PRIu64 " spooled row(s) "
				"(%" PRIu64 "..%" PRIu64 ")\n", g->dataset, end - from, from, end);
		cli_spool_replay(g->spool, from, ingest_replay_rows, g);
		g->unsure = 1;
		/* Commit them now, whatever the thresholds say. */
		g->pending_since = ingest_now() - g->commit_secs;
		return ingest_commit(g);
	}
	cli_spool_replay(g->spool, from, ingest_replay_rows, g);
	return 0;
}

static int ingest_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref;
	struct ingest g = { .ctx = ctx };
	int rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	if (ref.version) {
		rc = cli_usage_error(a->cmd, "ingest appends to the latest version: give DATASET "
				     "without @VERSION");
		goto out;
	}
	g.dataset = ref.dataset;
	if ((rc = ingest_parse(a, &g)) || (rc = cli_parity_opt(a, ctx->app.store_url, &g.k, &g.m)))
		goto out;
	ctx->app.store_opts.create = 1; /* a first ingest makes the store */
	if (!(g.s = cli_store(ctx))) {
		rc = CLI_FAIL;
		goto out;
	}
	ingest_catch_signals();
	g.spool_dir = cli_get(a, "spool");
	/* With a spool or parity a commit's outcome steers what comes next (the
	 * spool's state, the protection), so those commit in line. */
	g.async = !g.spool_dir && !g.k;
	rc = g.spool_dir ? ingest_spool_start(&g) : 0;
	if (!rc)
		rc = ingest_loop(&g);
	if (!rc)
		rc = ingest_finish(&g);
	if (ingest_job_wait(&g) && !rc)
		rc = CLI_FAIL;
	if (g.nwritten)
		cli_catalog_note_versions(app_store_name(&ctx->app), g.s, g.dataset,
					  (const char *const *)g.written, g.nwritten);
	if (!rc && !ctx->quiet)
		fprintf(stderr, "matorage: ingest %s: %" PRIu64 " row(s) committed in %" PRIu64
			" version(s)%s; %" PRIu64 " bad record(s) skipped\n", g.dataset, g.committed,
			g.versions, ingest_signal ? ", stopped by a signal" : "", g.bad);
	/* SIGINT ends as an interrupted command does; SIGTERM is the orderly stop a
	 * service manager asks for, so a clean commit is success. */
	if (!rc && ingest_signal == SIGINT)
		rc = 130;
out:
	ingest_free(&g);
	cli_ref_free(&ref);
	return rc;
}

const struct cli_cmd cli_cmd_ingest = {
	"ingest", "DATASET --attr NAME=DTYPE[:SHAPE] ...", ingest_options, ingest_exec,
	"Append records from standard input (JSON lines, CSV or .npy frames) to DATASET, "
	"committing as they come", 1, 1,
};
