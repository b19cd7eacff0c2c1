/* cmd-put.c — `matorage put`: stream .npy files into a new dataset version, one attribute each. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct cli_option put_options[] = {
	{ "append", 0, NULL, "continue the parent version's rows (its shards are reused)" },
	{ "parent", 0, "VERSION", "the version --append continues (default: the latest)" },
	{ "shard-size", 0, "BYTES", "uncompressed bytes per shard (default 64M)" },
	{ "shard-rows", 0, "N", "rows per shard (default: decided by --shard-size)" },
	{ "chunk-size", 0, "BYTES", "uncompressed bytes per compressed chunk (default 1M)" },
	CLI_OPT_LEVEL,
	CLI_OPT_THREADS,
	{ "author", 0, "NAME", "who made this version (default: $USER)" },
	{ "description", 0, "TEXT", "what this version holds" },
	{ "tag", 0, "TAG", "a tag for this version; may be given several times" },
	CLI_OPT_PARITY_NEW,
	{ NULL, 0, NULL, NULL },
};

/* One NAME=FILE.npy argument and the open file behind it. */
struct put_input {
	const char *arg;
	char *name;
	const char *path;
	mt_npy *npy;
	const mt_npy_info *info;
	uint64_t row_bytes;
	void *buf;
	/* A text file ('<U' n): its rows as UTF-8 back to back and their lengths. */
	char *text;
	uint64_t *lens;
};

struct put_job {
	struct put_input *in;
	size_t n;
	mt_attr *attrs;
	uint64_t rows;
};

static void put_job_free(struct put_job *j)
{
	for (size_t i = 0; i < j->n; i++) {
		free(j->in[i].name);
		mt_npy_close(j->in[i].npy);
		free(j->in[i].buf);
		free(j->in[i].text);
		free(j->in[i].lens);
	}
	free(j->in);
	free(j->attrs);
}

/* Split the NAME=FILE arguments (usage errors) before touching any file. */
static int put_parse_inputs(const struct cli_args *a, struct put_job *j)
{
	j->n = (size_t)a->argc - 1;
	j->in = app_xcalloc(j->n, sizeof *j->in);
	for (size_t i = 0; i < j->n; i++) {
		const char *arg = a->argv[i + 1];
		const char *eq = strchr(arg, '=');
		if (!eq || eq == arg || !eq[1])
			return cli_usage_error(a->cmd, "'%s' is not NAME=FILE.npy", arg);
		j->in[i].arg = arg;
		j->in[i].name = app_xasprintf("%.*s", (int)(eq - arg), arg);
		j->in[i].path = eq + 1;
	}
	return 0;
}

/* Open every file and turn it into an attribute; all must have the same rows. */
static int put_open_inputs(struct put_job *j)
{
	mt_error err = { 0 };
	j->attrs = app_xcalloc(j->n, sizeof *j->attrs);
	for (size_t i = 0; i < j->n; i++) {
		struct put_input *in = &j->in[i];
		if (mt_npy_open(in->path, &in->npy, &err))
			return cli_fail(&err);
		in->info = mt_npy_get_info(in->npy);
		if (in->info->rank == 0)
			return cli_error("%s: a 0-d array has no rows to store (save it with shape "
					 "(1,) instead)", in->arg);
		if (in->info->rank > MT_MAX_RANK + 1)
			return cli_error("%s: %d dimensions, at most %d are supported", in->arg,
					 in->info->rank, MT_MAX_RANK + 1);
		if (in->info->dtype == MT_STR && in->info->rank != 1)
			return cli_error("%s: text of %d dimensions; a str attribute takes a 1-d "
					 "array, one string a row", in->arg, in->info->rank);
		mt_attr *at = &j->attrs[i];
		at->name = in->name;
		at->dtype = in->info->dtype;
		at->rank = in->info->rank - 1;
		memcpy(at->shape, in->info->shape + 1, (size_t)at->rank * sizeof *at->shape);
		/* Text is ragged: each row's UTF-8 bytes, whatever the file's width. */
		at->ragged = at->dtype == MT_STR;
		if (at->ragged)
			in->row_bytes = 4 * in->info->text_chars;
		else if (__builtin_mul_overflow(mt_attr_items(at), mt_dtype_size(at->dtype),
						&in->row_bytes))
			return cli_error("%s: rows are too large", in->arg);
		if (i == 0) {
			j->rows = in->info->shape[0];
		} else if (in->info->shape[0] != j->rows) {
			return cli_error("rows differ: %s has %" PRIu64 " rows, %s has %" PRIu64,
					 j->in[0].arg, j->rows, in->arg, in->info->shape[0]);
		}
	}
	return 0;
}

/* The writer's progress counts uploaded bytes, whose total is unknown; the bar
 * shows input read instead, so this callback only carries the cancel flag. */
static int put_cancel(void *ud, uint64_t done, uint64_t total)
{
	return cli_interrupted;
}

static int put_opts(const struct cli_args *a, const struct cli_ref *ref, mt_writer_opts *o)
{
	int rc;
	mt_writer_opts_init(o);
	o->version = ref->version;
	o->append = cli_has(a, "append");
	o->parent = cli_get(a, "parent");
	if (o->parent && !o->append)
		return cli_usage_error(a->cmd, "--parent needs --append");
	/* The writer takes 0 for "the default"; from the command line it is a mistake. */
	if ((rc = cli_opt_bytes(a, "shard-size", 1, &o->shard_bytes)) ||
	    (rc = cli_opt_u64(a, "shard-rows", 1, &o->shard_rows)) ||
	    (rc = cli_opt_bytes(a, "chunk-size", 1, &o->chunk_bytes)) ||
	    (rc = cli_opt_int(a, "level", 1, 22, &o->level)) ||
	    (rc = cli_opt_int(a, "threads", 1, 4096, &o->threads)))
		return rc;
	o->author = cli_get(a, "author");
	if (!o->author)
		o->author = getenv("USER");
	o->description = cli_get(a, "description");
	o->tags = cli_get_all(a, "tag", &o->ntags);
	o->progress = put_cancel;
	return 0;
}

/* A cancel the library reports is our Ctrl-C; say so in the same words as ours. */
static int put_fail(const mt_error *err, const char *dataset)
{
	if (err->code == MT_ECANCELED && cli_interrupted)
		return cli_error("put %s: interrupted; nothing was committed", dataset);
	return cli_fail(err);
}

/* One UTF-32 code point as UTF-8 into out (room for 4); its byte count. */
static size_t put_utf8(uint32_t c, char *out)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | (c >> 6 & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | (c >> 12 & 0x3f));
	out[2] = (char)(0x80 | (c >> 6 & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* Turn n rows of NumPy text (NUL-padded UTF-32) into UTF-8 rows and lengths.
 * A code point that is no character, or a NUL before the row's end, names the
 * file and row: a str row holds neither. */
static int put_text(struct put_input *in, uint64_t first, uint64_t n)
{
	uint64_t w = in->info->text_chars;
	const uint32_t *u = in->buf;
	size_t at = 0;
	for (uint64_t r = 0; r < n; r++, u += w) {
		uint64_t len = w;
		while (len && !u[len - 1])
			len--;
		size_t start = at;
		for (uint64_t k = 0; k < len; k++) {
			uint32_t c = u[k];
			if (!c || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
				return cli_error("%s: row %" PRIu64 ", character %" PRIu64 ": U+%04X "
						 "cannot be stored as str (%s)", in->arg, first + r,
						 k, (unsigned)c,
						 c ? "not a Unicode character" : "a NUL inside the text");
			at += put_utf8(c, in->text + at);
		}
		in->lens[r] = at - start;
	}
	return 0;
}

/* Read every file in batches of rows (about CLI_BATCH_BYTES of the widest attribute)
 * and append them; memory stays flat whatever the file sizes. */
static int put_stream(struct put_job *j, mt_writer *w, struct cli_progress *p, const char *label)
{
	uint64_t widest = 1;
	for (size_t i = 0; i < j->n; i++)
		widest = j->in[i].row_bytes > widest ? j->in[i].row_bytes : widest;
	uint64_t batch = CLI_BATCH_BYTES / widest ? CLI_BATCH_BYTES / widest : 1;
	/* No rows, no buffers: a (0, 2**37) array must not need a 1 TiB row. */
	if (batch > j->rows)
		batch = j->rows;
	const void **data = app_xcalloc(j->n, sizeof *data);
	int rc = 0;
	for (size_t i = 0; !rc && batch && i < j->n; i++) {
		struct put_input *in = &j->in[i];
		uint64_t bytes = batch * in->row_bytes;
		char human[32], shape[96];
		/* A row may be larger than memory: say which file and shape, not just "out of
		 * memory". */
		if (bytes > SIZE_MAX || !(in->buf = malloc((size_t)bytes)))
			rc = cli_error("%s: out of memory: %" PRIu64 " row(s) take %s (rows of shape "
				       "%s, %s)", in->arg, batch,
				       app_human_bytes(bytes, human, sizeof human),
				       app_shape_str(&j->attrs[i], shape, sizeof shape),
				       mt_dtype_name(j->attrs[i].dtype));
		data[i] = in->buf;
		if (!rc && in->info->dtype == MT_STR) {
			/* UTF-8 takes at most 4 bytes a code point, as UTF-32 does. */
			in->text = app_xcalloc((size_t)bytes + 1, 1);
			in->lens = app_xcalloc((size_t)batch, sizeof *in->lens);
			data[i] = in->text;
		}
	}
	const uint64_t **lens = app_xcalloc(j->n, sizeof *lens);
	for (size_t i = 0; i < j->n; i++)
		lens[i] = j->in[i].lens;

	mt_error err = { 0 };
	uint64_t done = 0;
	for (uint64_t r = 0; !rc && r < j->rows; r += batch) {
		uint64_t n = j->rows - r < batch ? j->rows - r : batch;
		for (size_t i = 0; !rc && i < j->n; i++) {
			size_t bytes = (size_t)(n * j->in[i].row_bytes);
			if (mt_npy_read_rows(j->in[i].npy, r, r + n, j->in[i].buf, bytes, &err))
				rc = cli_fail(&err);
			else if (j->in[i].text)
				rc = put_text(&j->in[i], r, n);
			done += bytes;
		}
		if (!rc && mt_writer_append(w, n, data, lens, &err))
			rc = put_fail(&err, label);
		if (!rc && cli_progress_update(p, done, 0))
			rc = cli_error("put %s: interrupted; nothing was committed", label);
	}
	free(data);
	free(lens);
	return rc;
}

static int put_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref;
	struct put_job job = { 0 };
	mt_writer_opts o;
	mt_writer *w = NULL;
	struct cli_progress *p = NULL;
	mt_error err = { 0 };
	int rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	int k, m;
	if ((rc = put_opts(a, &ref, &o)) ||
	    (rc = cli_parity_opt(a, ctx->app.store_url, &k, &m)) ||
	    (rc = put_parse_inputs(a, &job)) || (rc = put_open_inputs(&job)))
		goto out;
	ctx->app.store_opts.create = 1; /* a first put makes the store */
	mt_store *s = cli_store(ctx);
	if (!s) {
		rc = CLI_FAIL;
		goto out;
	}
	cli_catch_interrupt();
	if (mt_writer_open(s, ref.dataset, job.attrs, job.n, &o, &w, &err)) {
		rc = cli_fail(&err);
		goto out;
	}
	uint64_t total = 0;
	for (size_t i = 0; i < job.n; i++)
		total += job.in[i].info->data_bytes;
	p = cli_progress_begin(ctx, ref.dataset, total);
	if ((rc = put_stream(&job, w, p, ref.dataset)))
		goto out;
	cli_progress_label(p, "committing");
	char version[256];
	if (mt_writer_commit(w, version, sizeof version, &err)) {
		rc = put_fail(&err, ref.dataset);
		goto out;
	}
	cli_progress_end(p);
	p = NULL;
	printf("%s@%s\n", ref.dataset, version);
	fflush(stdout);
	/* Committed either way: a failed protection is reported, the version stays.
	 * The catalog learns the version with its protection. */
	if (k)
		rc = cli_protect(ctx, s, ref.dataset, version, k, m, o.threads, 0);
	cli_catalog_note_version(app_store_name(&ctx->app), s, ref.dataset, version);
out:
	cli_progress_end(p);
	mt_writer_close(w);
	put_job_free(&job);
	cli_ref_free(&ref);
	return rc;
}

const struct cli_cmd cli_cmd_put = {
	"put", "DATASET[@VERSION] NAME=FILE.npy [NAME=FILE.npy ...]", put_options, put_exec,
	"Store .npy files as the attributes of a new version of DATASET", 2, -1,
};
