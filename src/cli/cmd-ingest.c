/* cmd-ingest.c — `matorage ingest`: records from standard input appended to a dataset, committed by rows, time, end or signal. */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <poll.h>
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

/* A growing buffer of one attribute's rows: an npy batch's frames until its
 * last one is in. */
struct ingest_col {
	uint8_t *data;
	size_t len, cap;
	size_t row_bytes; /* a row's, or a ragged attribute's item's */
	uint8_t *row; /* one record's row while it is parsed */
	int ragged;   /* data holds items back to back, lens each row's count */
	uint64_t *lens;
	size_t nlens, lcap;
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
	const void **data;   /* what goes to the stream: each attribute's rows or items */
	const uint64_t **lens; /* and each ragged one's lengths */
	uint64_t *items;     /* one record's item count, per attribute */
	struct app_records *rec;
	int format, skip_bad, header_done;
	uint64_t commit_rows;
	double commit_secs;
	mt_writer_opts wopts;
	int k, m;
	mt_stream *st;       /* batching, commits, the spool */
	const char *spool_dir;
	int after_failed;    /* a protection after a commit failed: the run ends */
	struct ingest_in in;
	uint64_t line;       /* lines (text) or frames (npy) read */
	uint64_t committed, versions, bad;
	char **written;      /* the versions this run made (commits, compactions), for the catalog */
	size_t nwritten;
	size_t frame_attr;   /* npy: the attribute the next frame is for */
	int frame_items;     /* npy: the next frame is a ragged attribute's items (else its lengths) */
	size_t skip_frames;  /* npy: frames left of a batch --skip-bad dropped */
	uint64_t frame_rows; /* npy: rows of this batch's first frame */
	uint64_t frame_total; /* npy: items the ragged attribute's lengths frame announced */
	uint64_t compact_every; /* versions between compactions; 0: none */
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
	}
	mt_stream_close(g->st);
	free(g->names);
	mt_strv_free(g->written, g->nwritten);
	free(g->attrs);
	free(g->cols);
	free(g->rows);
	free(g->data);
	free(g->lens);
	free(g->items);
	free(g->in.buf);
	app_records_free(g->rec);
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
	g->data = app_xcalloc(g->nattrs, sizeof *g->data);
	g->lens = app_xcalloc(g->nattrs, sizeof *g->lens);
	g->items = app_xcalloc(g->nattrs, sizeof *g->items);
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

/* ---- an npy batch ---- */

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

/* The batch's frames are dropped (a bad one) or taken. */
static void ingest_batch_clear(struct ingest *g)
{
	for (size_t i = 0; i < g->nattrs; i++) {
		g->cols[i].len = 0;
		g->cols[i].nlens = 0;
	}
}

/* ---- commits ---- */

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

/* Each commit the stream makes (on its own thread when commits run beside
 * the parsing: the main thread reads these counts once the stream is done). */
static void ingest_committed(void *ud, const char *version, uint64_t rows)
{
	struct ingest *g = ud;
	printf("%s@%s\n", g->dataset, version);
	fflush(stdout);
	g->committed += rows;
	ingest_wrote(g, version);
	g->versions++;
	if (g->k) {
		/* Committed either way: a failed protection is reported and ends the run. */
		if (cli_protect(g->ctx, g->s, g->dataset, version, g->k, g->m, g->wopts.threads, 0))
			g->after_failed = 1;
		ingest_catch_signals(); /* the protection caught SIGINT for itself */
	}
	ingest_compact(g, version);
}

/* What the stream tells: replayed or already committed rows, and always a
 * commit that failed and waits in the spool for another try. */
static void ingest_notice(void *ud, int retry, const char *message)
{
	struct ingest *g = ud;
	if (retry || !g->ctx->quiet)
		fprintf(stderr, "matorage: ingest %s: %s\n", g->dataset, message);
}

/* After a stream call that may have committed: its error, or a protection
 * that failed after a commit, ends the run. */
static int ingest_check(struct ingest *g, int rc, const mt_error *err)
{
	if (rc)
		return cli_error("ingest %s: %s; %" PRIu64 " row(s) not committed", g->dataset,
				 err->message, mt_stream_pending(g->st));
	return g->after_failed ? CLI_FAIL : 0;
}

/* Rows go to the stream, which commits them by rows or time. */
static int ingest_append(struct ingest *g, uint64_t rows)
{
	mt_error err = { 0 };
	return ingest_check(g, mt_stream_append_ragged(g->st, rows, g->data, g->lens, &err), &err);
}

/* ---- records ---- */

/* A record that does not fit: the end of the run (nothing waiting is committed),
 * or with --skip-bad one more to count; the first few are shown either way. */
static int ingest_bad(struct ingest *g, const char *what, uint64_t where, const char *why)
{
	if (!g->skip_bad)
		return cli_error("ingest %s: %s %" PRIu64 ": %s; stopped, %" PRIu64 " waiting row(s) "
				 "not committed", g->dataset, what, where, why, mt_stream_pending(g->st));
	if (g->bad++ < 10 && !g->ctx->quiet) {
		fprintf(stderr, "matorage: ingest %s: skipped %s %" PRIu64 ": %s\n", g->dataset, what,
			where, why);
		if (g->bad == 10)
			fprintf(stderr, "matorage: ingest %s: not showing more bad records\n", g->dataset);
	}
	return 0;
}

/* The record just parsed goes to the stream. */
static int ingest_record(struct ingest *g)
{
	for (size_t i = 0; i < g->nattrs; i++) {
		g->data[i] = g->rows[i];
		g->lens[i] = NULL;
		if (!g->attrs[i].ragged)
			continue;
		const void *p = app_records_ragged(g->rec, i, &g->items[i]);
		/* A ragged row of no items has no bytes, yet data. */
		g->data[i] = p ? p : "";
		g->lens[i] = &g->items[i];
	}
	return ingest_append(g, 1);
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
			rc = ingest_record(g);
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

/* A bad frame spoils its batch: the frames before it are dropped, and the
 * batch's other frames are read and dropped. */
static int ingest_frame_bad(struct ingest *g, const char *why)
{
	ingest_batch_clear(g);
	g->skip_frames = ingest_frames(g, g->nattrs) - ingest_frames(g, g->frame_attr) -
			 (size_t)g->frame_items - 1;
	g->frame_attr = 0;
	g->frame_items = 0;
	return ingest_bad(g, "frame", g->line, why);
}

/* The batch's last frame is in: its rows go to the stream. */
static int ingest_batch_done(struct ingest *g)
{
	for (size_t i = 0; i < g->nattrs; i++) {
		g->data[i] = g->cols[i].data ? g->cols[i].data : (const uint8_t *)"";
		g->lens[i] = g->cols[i].ragged ? g->cols[i].lens : NULL;
	}
	int rc = ingest_append(g, g->frame_rows);
	ingest_batch_clear(g);
	return rc;
}

/* A whole frame's bytes are in the buffer at p: take its rows.  The rows of a
 * batch go to the stream once its last attribute's frame is in.  A bad frame spoils its
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
	if (++g->frame_attr < g->nattrs)
		return 0;
	g->frame_attr = 0;
	return ingest_batch_done(g);
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
	if (ni->dtype == MT_STR)
		return snprintf(why, cap, "NumPy text ('<U') frames are not supported (matorage "
				"put takes a '<U' file)"), -1;
	if (len < ni->header_bytes + ni->data_bytes)
		return 0;
	*size = (size_t)(ni->header_bytes + ni->data_bytes);
	return 0;
}

/* ---- the input loop ---- */

/* Consume every whole record in the buffer (at the end of input, the rest too). */
static int ingest_consume(struct ingest *g)
{
	struct ingest_in *in = &g->in;
	int rc = 0;
	while (!rc && in->pos < in->len) {
		char *p = in->buf + in->pos;
		size_t left = in->len - in->pos;
		if (g->format == FMT_NPY) {
			mt_npy_info ni;
			size_t size;
			char why[512];
			if (ingest_frame_size(p, left, &ni, &size, why, sizeof why))
				return cli_error("ingest %s: frame %" PRIu64 ": %s; stopped, %" PRIu64
						 " waiting row(s) not committed", g->dataset,
						 g->line + 1, why, mt_stream_pending(g->st));
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

/* How long poll may wait for input: until the stream's next commit by time. */
static int ingest_timeout(uint64_t wait_ms)
{
	if (wait_ms == UINT64_MAX)
		return -1;
	return wait_ms >= INT_MAX - 1 ? INT_MAX - 1 : (int)wait_ms + (wait_ms ? 1 : 0);
}

static int ingest_loop(struct ingest *g)
{
	mt_error err = { 0 };
	int rc = 0;
	while (!rc && !ingest_signal) {
		uint64_t wait_ms;
		if ((rc = ingest_check(g, mt_stream_poll(g->st, &wait_ms, &err), &err)) || g->in.eof)
			break;
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		int pr = poll(&pfd, 1, ingest_timeout(wait_ms));
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
		/* What this read brought is spooled as one batch before more is read. */
		if (!rc)
			rc = ingest_check(g, mt_stream_sync(g->st, &err), &err);
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
				 mt_stream_pending(g->st));
	mt_error err = { 0 };
	int rc = ingest_check(g, mt_stream_commit(g->st, NULL, 0, &err), &err);
	if (!rc && mt_stream_pending(g->st))
		rc = cli_error("ingest %s: %" PRIu64 " row(s) stay in the spool; a run with --spool "
			       "%s commits them", g->dataset, mt_stream_pending(g->st), g->spool_dir);
	return rc;
}

/* The stream: commits by rows and time, in the background unless a spool or
 * parity must see each commit's outcome before the next (the spool's state,
 * the protection). */
static int ingest_open(struct ingest *g, const struct cli_args *a)
{
	mt_stream_opts o;
	mt_stream_opts_init(&o);
	g->spool_dir = cli_get(a, "spool");
	o.commit_rows = g->commit_rows;
	o.commit_ms = (uint64_t)(g->commit_secs * 1000.0);
	o.writer = &g->wopts;
	o.committed = ingest_committed;
	o.committed_ud = g;
	o.background = !g->spool_dir && !g->k;
	o.spool_dir = g->spool_dir;
	o.notice = ingest_notice;
	o.notice_ud = g;
	mt_error err = { 0 };
	if (mt_stream_open(g->s, g->dataset, g->attrs, g->nattrs, &o, &g->st, &err))
		return cli_error("%s", err.message);
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
	rc = ingest_open(&g, a);
	if (!rc)
		rc = ingest_loop(&g);
	if (!rc)
		rc = ingest_finish(&g);
	/* A commit still running on its thread ends first: it counts and names versions. */
	mt_stream_close(g.st);
	g.st = NULL;
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
