/* cmd-get.c — `matorage get`: write rows of one attribute to a .npy file, streaming in batches. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const struct cli_option get_options[] = {
	{ "output", 'o', "FILE",
	  "the .npy file to write (required); - for standard output.  A symbolic link is "
	  "written through; a device or FIFO is written as it is.  A str attribute is "
	  "written as NumPy text ('<U' as wide as its longest row), one string a row" },
	{ "rows", 0, "A:B", "only rows A to B-1; also A:, :B, or N for row N alone" },
	{ "lengths", 0, "FILE", "ragged attributes: also write the row lengths (int64 .npy)" },
	{ "attachment", 'a', "NAME", "write the attached file NAME instead of rows (no attribute "
	  "NAME then); its sha256 is checked first" },
	{ NULL, 0, NULL, NULL },
};

struct get_job {
	mt_reader *r;
	size_t attr;
	const mt_attr *at;
	uint64_t a, b;
	const char *what; /* dataset@version, for messages */
	struct cli_progress *p;
	mt_npy_writer *out, *lengths_out;
	uint64_t done;
};

static int get_write(mt_npy_writer *w, const void *buf, size_t bytes)
{
	mt_error err = { 0 };
	return mt_npy_write(w, buf, bytes, &err) ? cli_fail(&err) : 0;
}

static int get_batch(void *ud, uint64_t first, uint64_t n, const void *values, size_t bytes,
		     const uint64_t *lengths)
{
	struct get_job *j = ud;
	int rc = get_write(j->out, values, bytes);
	/* The file says int64; lengths are far below 2^63, so the bytes are the same. */
	if (!rc && j->lengths_out)
		rc = get_write(j->lengths_out, lengths, (size_t)n * sizeof *lengths);
	if (!rc && cli_progress_update(j->p, j->done += bytes, 0))
		rc = cli_error("get %s: interrupted; no file was written", j->what);
	return rc;
}

static int get_finish(mt_npy_writer *w);

/* ---- str: NumPy '<U' text, as wide as the longest row ---- */

/* The code point at p (n bytes left), advancing p; a byte that starts no
 * sequence (the writer refuses such rows) reads as U+FFFD. */
static uint32_t get_utf8_next(const uint8_t **p, size_t n)
{
	const uint8_t *s = *p;
	int len = s[0] < 0x80 ? 1 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	uint32_t cp = len == 1 ? s[0] : s[0] & (0x7f >> len);
	if ((size_t)len > n || (s[0] >= 0x80 && s[0] < 0xc0)) {
		*p = s + 1;
		return 0xfffd;
	}
	for (int k = 1; k < len; k++)
		cp = cp << 6 | (s[k] & 0x3f);
	*p = s + len;
	return cp;
}

/* Characters in len bytes of UTF-8. */
static uint64_t get_utf8_count(const uint8_t *p, size_t len)
{
	uint64_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += (p[i] & 0xc0) != 0x80;
	return n;
}

static int get_width_batch(void *ud, uint64_t first, uint64_t n, const void *values,
			   size_t bytes, const uint64_t *lengths)
{
	uint64_t *width = ud;
	const uint8_t *p = values;
	(void)first;
	(void)bytes;
	for (uint64_t i = 0; i < n; p += lengths[i++]) {
		uint64_t c = get_utf8_count(p, (size_t)lengths[i]);
		if (c > *width)
			*width = c;
	}
	return 0;
}

struct get_text {
	struct get_job *j;
	uint64_t width;
	uint32_t *row; /* one row's code points, padded with 0 */
};

static int get_text_batch(void *ud, uint64_t first, uint64_t n, const void *values,
			  size_t bytes, const uint64_t *lengths)
{
	struct get_text *t = ud;
	const uint8_t *p = values;
	int rc = 0;
	(void)first;
	(void)bytes;
	for (uint64_t i = 0; !rc && i < n; i++) {
		const uint8_t *end = p + lengths[i];
		uint64_t k = 0;
		while (p < end && k < t->width)
			t->row[k++] = get_utf8_next(&p, (size_t)(end - p));
		p = end;
		memset(t->row + k, 0, (size_t)(t->width - k) * sizeof *t->row);
		rc = get_write(t->j->out, t->row, (size_t)t->width * sizeof *t->row);
	}
	if (!rc && cli_progress_update(t->j->p, t->j->done += n, 0))
		rc = cli_error("get %s: interrupted; no file was written", t->j->what);
	return rc;
}

/* Two passes: the first finds the longest row, which fixes the width. */
static int get_run_text(struct cli_ctx *ctx, struct get_job *j, const char *path)
{
	mt_error err = { 0 };
	struct get_text t = { j, 0, NULL };
	int rc = cli_read_rows(j->r, j->attr, j->a, j->b, 0, get_width_batch, &t.width);
	if (rc)
		return rc;
	uint64_t shape[2] = { j->b - j->a, t.width ? t.width : 1 };
	t.width = shape[1];
	if (t.width > SIZE_MAX / 4 / 2)
		return cli_error("get %s: a row of %" PRIu64 " characters is too wide", j->what,
				 t.width);
	if (cli_npy_create(path, MT_STR, 2, shape, &j->out, &err))
		return cli_fail(&err);
	t.row = app_xcalloc((size_t)t.width, sizeof *t.row);
	cli_catch_interrupt();
	j->p = cli_progress_begin(ctx, j->what, shape[0]);
	rc = cli_read_rows(j->r, j->attr, j->a, j->b, 0, get_text_batch, &t);
	cli_progress_end(j->p);
	if (!rc)
		rc = get_finish(j->out);
	mt_npy_writer_close(j->out);
	free(t.row);
	return rc;
}

static int get_finish(mt_npy_writer *w)
{
	mt_error err = { 0 };
	return w && mt_npy_finish(w, &err) ? cli_fail(&err) : 0;
}

static int get_run(struct cli_ctx *ctx, struct get_job *j, const char *path,
		   const char *lengths_path)
{
	mt_error err = { 0 };
	uint64_t shape[MT_MAX_RANK + 1];
	uint64_t item_bytes = mt_attr_items(j->at) * mt_dtype_size(j->at->dtype);
	uint64_t nrows = j->b - j->a, total = nrows;
	if (j->at->ragged &&
	    mt_reader_ragged_lengths(j->r, j->attr, j->a, j->b, NULL, &total, &err))
		return cli_fail(&err);
	shape[0] = total;
	memcpy(shape + 1, j->at->shape, (size_t)j->at->rank * sizeof *shape);

	int rc = 0;
	if (cli_npy_create(path, j->at->dtype, j->at->rank + 1, shape, &j->out, &err) ||
	    (lengths_path &&
	     cli_npy_create(lengths_path, MT_INT64, 1, &nrows, &j->lengths_out, &err)))
		rc = cli_fail(&err);
	if (!rc) {
		cli_catch_interrupt();
		j->p = cli_progress_begin(ctx, j->what, total * item_bytes);
		rc = cli_read_rows(j->r, j->attr, j->a, j->b, mt_npy_writer_offset(j->out),
				   get_batch, j);
		cli_progress_end(j->p);
	}
	if (!rc)
		rc = get_finish(j->out);
	if (!rc)
		rc = get_finish(j->lengths_out);
	/* After a failure these remove the unfinished files. */
	mt_npy_writer_close(j->out);
	mt_npy_writer_close(j->lengths_out);
	return rc;
}

/* The attachment is read whole and checked before the file is created, so
 * a missing or damaged one leaves no file behind. */
static int get_attachment(struct cli_ctx *ctx, const struct cli_args *a, const char *path)
{
	const char *name = cli_get(a, "attachment");
	if (a->argc != 1)
		return cli_usage_error(a->cmd, "--attachment %s takes no attribute NAME", name);
	if (cli_has(a, "rows") || cli_has(a, "lengths"))
		return cli_usage_error(a->cmd, "--attachment takes no --rows or --lengths");
	struct cli_ref ref;
	mt_reader *r;
	int rc = cli_ref_open_lazy(ctx, a, &ref, &r);
	if (rc)
		return rc;
	void *data = NULL;
	size_t len = 0;
	mt_error err = { 0 };
	if (mt_reader_attachment(r, name, &data, &len, &err))
		rc = cli_fail(&err);
	FILE *f = rc ? NULL : !strcmp(path, "-") ? stdout : fopen(path, "wb");
	if (!rc && !f)
		rc = cli_error("get: cannot create %s: %s", path, strerror(errno));
	if (!rc && ((len && fwrite(data, 1, len, f) != len) | (f != stdout ? fclose(f) : fflush(f))))
		rc = cli_error("get: cannot write %s: %s", path, strerror(errno));
	free(data);
	cli_ref_close(&ref, r);
	return rc;
}

static int get_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref;
	struct cli_rows rows;
	const char *path = cli_get(a, "output");
	const char *lengths_path = cli_get(a, "lengths");
	int rc = cli_opt_rows(a, "rows", &rows);
	if (rc)
		return rc;
	if (!path)
		return cli_usage_error(a->cmd, "missing -o FILE, the .npy file to write");
	if (!*path || (lengths_path && !*lengths_path))
		return cli_usage_error(a->cmd, "%s names no file: give a path, or - for standard "
				       "output", !*path ? "-o ''" : "--lengths ''");
	if (lengths_path && !strcmp(path, "-") && !strcmp(lengths_path, "-"))
		return cli_usage_error(a->cmd, "-o and --lengths cannot both be standard output");
	if ((!strcmp(path, "-") || (lengths_path && !strcmp(lengths_path, "-"))) &&
	    isatty(STDOUT_FILENO))
		return cli_usage_error(a->cmd, "standard output is a terminal; redirect it to a "
				       "file or a pipe for the .npy bytes");
	if (cli_get(a, "attachment"))
		return get_attachment(ctx, a, path);
	if (a->argc != 2)
		return cli_usage_error(a->cmd, "name the attribute to write (or --attachment NAME)");
	struct get_job j = { 0 };
	if ((rc = cli_ref_open_lazy(ctx, a, &ref, &j.r)))
		return rc;
	int idx = cli_attr_index(j.r, a->argv[1]);
	if (idx < 0) {
		rc = CLI_FAIL;
		goto out;
	}
	const mt_version_info *vi = mt_reader_info(j.r);
	char *what = app_xasprintf("%s@%s", vi->dataset, vi->version);
	j.what = what;
	j.attr = (size_t)idx;
	j.at = mt_reader_attr(j.r, j.attr);
	if (lengths_path && (!j.at->ragged || j.at->dtype == MT_STR))
		rc = cli_usage_error(a->cmd, "--lengths: attribute '%s' of %s is %s", j.at->name,
				     what, j.at->ragged ? "text, one string a row" : "not ragged");
	if (!rc)
		rc = cli_rows_resolve(&rows, vi->rows, what, &j.a, &j.b);
	if (!rc)
		rc = j.at->dtype == MT_STR ? get_run_text(ctx, &j, path)
					   : get_run(ctx, &j, path, lengths_path);
	free(what);
out:
	cli_ref_close(&ref, j.r);
	return rc;
}

const struct cli_cmd cli_cmd_get = {
	"get", "DATASET[@VERSION] NAME -o FILE.npy | DATASET[@VERSION] --attachment NAME -o FILE",
	get_options, get_exec,
	"Write rows of attribute NAME to a .npy file, or an attached file", 1, 2,
};
