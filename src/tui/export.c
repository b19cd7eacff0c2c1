/* export.c — rows of an attribute written to a local .npy file from the matrix viewer: the range and the path asked for (Tab completes it), a file already there replaced only when confirmed, the writing a job. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tui.h"

/* Rows read and written at a time. */
#define EXPORT_BATCH_BYTES (8u << 20)

struct export_arg {
	mt_catalog_ref ref;
	char attr[128];
	int all;             /* every row; else [first, end) */
	uint64_t first, end;
	char *path;
	char range[64];      /* as typed, for messages */
};

static void export_free(void *arg)
{
	struct export_arg *x = arg;
	if (!x)
		return;
	mt_catalog_ref_free(&x->ref);
	free(x->path);
	free(x);
}

int tui_export_range(const char *text, int *all, uint64_t *first, uint64_t *end)
{
	while (*text == ' ')
		text++;
	*all = !*text;
	*first = 0;
	*end = 0;
	if (*all)
		return 0;
	char *e;
	const char *colon = strchr(text, ':');
	if (*text != ':') {
		if (*text == '-')
			return -1;
		*first = strtoull(text, &e, 10);
		if (e == text || (colon ? e != colon : *e))
			return -1;
	}
	if (!colon) {
		*end = *first + 1;
		return 0;
	}
	if (!colon[1]) {
		*end = UINT64_MAX; /* to the last row */
		return 0;
	}
	if (colon[1] == '-')
		return -1;
	*end = strtoull(colon + 1, &e, 10);
	return e == colon + 1 || *e || *end <= *first ? -1 : 0;
}

/* The rows [a, b) of the attribute into the file, a batch at a time. */
static int export_rows(struct tui_job *j, mt_reader *r, size_t ai, uint64_t a, uint64_t b,
		       mt_error *err)
{
	struct export_arg *x = j->arg;
	const mt_attr *at = mt_reader_attr(r, ai);
	uint64_t shape[MT_MAX_RANK + 1] = { b - a };
	for (int i = 0; i < at->rank; i++)
		shape[i + 1] = at->shape[i];
	size_t row_bytes = (size_t)mt_attr_items(at) * mt_dtype_size(at->dtype);
	uint64_t batch = row_bytes ? EXPORT_BATCH_BYTES / row_bytes : b - a;
	batch = batch ? batch : 1;
	mt_npy_writer *w = NULL;
	void *buf = malloc(row_bytes * (size_t)(batch < b - a ? batch : b - a) + 1);
	int rc = buf ? mt_npy_create(x->path, at->dtype, at->rank + 1, shape, &w, err)
		     : mt_error_set(err, MT_ENOMEM, "out of memory");
	for (uint64_t row = a; !rc && row < b;) {
		uint64_t n = b - row < batch ? b - row : batch;
		rc = mt_reader_read(r, ai, row, row + n, buf, row_bytes * (size_t)n, err);
		if (!rc)
			rc = mt_npy_write(w, buf, row_bytes * (size_t)n, err);
		row += n;
		if (!rc && tui_job_progress(j, row - a, b - a))
			rc = mt_error_set(err, MT_ECANCELED, "export canceled: %s not written",
					  x->path);
	}
	if (!rc)
		rc = mt_npy_finish(w, err);
	mt_npy_writer_close(w);
	free(buf);
	return rc;
}

static int export_run(struct tui_job *j)
{
	struct export_arg *x = j->arg;
	mt_error err = { 0 };
	int stale;
	mt_reader *r = NULL;
	mt_store *s = tui_open_bucket(j, &x->ref, &stale, &err);
	int rc = s ? mt_reader_open(s, x->ref.dataset, x->ref.version, &r, &err) : err.code;
	int ai = rc ? -1 : mt_reader_attr_index(r, x->attr);
	uint64_t rows = rc ? 0 : mt_reader_info(r)->rows;
	uint64_t a = x->all ? 0 : x->first, b = x->all || x->end > rows ? rows : x->end;
	if (!rc && ai < 0)
		rc = mt_error_set(&err, MT_ENOTFOUND, "%s@%s has no attribute %s", x->ref.dataset,
				  x->ref.version, x->attr);
	else if (!rc && mt_reader_attr(r, (size_t)ai)->ragged)
		rc = mt_error_set(&err, MT_EINVAL, "%s is ragged: export it with matorage get "
				  "--lengths", x->attr);
	else if (!rc && (a >= rows || (!x->all && x->end != UINT64_MAX && x->end > rows)))
		rc = mt_error_set(&err, MT_ERANGE, "rows %s: %s@%s has %llu rows", x->range,
				  x->ref.dataset, x->ref.version, (unsigned long long)rows);
	if (!rc)
		rc = export_rows(j, r, (size_t)ai, a, b, &err);
	mt_reader_close(r);
	mt_store_close(s);
	if (rc)
		return tui_job_fail(j, &err);
	snprintf(j->result, sizeof j->result, "exported rows %llu:%llu of %s to %s",
		 (unsigned long long)a, (unsigned long long)b, x->attr, x->path);
	return 0;
}

static void export_start(struct tui *t, struct export_arg *x)
{
	char title[700];
	snprintf(title, sizeof title, "export %s@%s %s rows %s to %s", x->ref.dataset,
		 x->ref.version, x->attr, x->all ? "all" : x->range, x->path);
	tui_job_start(t, "export", title, "rows", export_run, NULL, x, export_free);
}

static void overwrite_submit(struct tui *t, const char *text, void *arg)
{
	struct export_arg *x = arg;
	if (strcmp(text, "overwrite")) {
		tui_status(t, 1, "not exported: %s is left as it was", x->path);
		export_free(x);
		return;
	}
	export_start(t, x);
}

static void path_submit(struct tui *t, const char *text, void *arg)
{
	struct export_arg *x = arg;
	struct stat st;
	if (!*text) {
		tui_status(t, 1, "not exported: no file named");
		export_free(x);
		return;
	}
	x->path = app_xstrdup(text);
	if (!stat(x->path, &st) && S_ISDIR(st.st_mode)) {
		tui_status(t, 1, "not exported: %s is a directory", x->path);
		export_free(x);
	} else if (!stat(x->path, &st)) {
		char label[700];
		snprintf(label, sizeof label, "%.500s exists: type 'overwrite' to replace it: ",
			 x->path);
		tui_ask(t, label, "", overwrite_submit, x, export_free);
	} else {
		export_start(t, x);
	}
}

static void range_submit(struct tui *t, const char *text, void *arg)
{
	struct export_arg *x = arg;
	if (tui_export_range(text, &x->all, &x->first, &x->end)) {
		tui_status(t, 1, "rows: '%s' is not FIRST:END, FIRST:, :END or a row number", text);
		export_free(x);
		return;
	}
	snprintf(x->range, sizeof x->range, "%s", text);
	char label[300], initial[300];
	snprintf(label, sizeof label, "export to .npy file (Tab completes): ");
	snprintf(initial, sizeof initial, "%s-%s.npy", x->ref.dataset, x->attr);
	tui_ask(t, label, initial, path_submit, x, export_free);
	t->prompt.complete = tui_complete_path;
}

void tui_export_action(struct tui *t, const mt_catalog_ref *ref, const char *attr, uint64_t row)
{
	struct export_arg *x = app_xcalloc(1, sizeof *x);
	tui_ref_copy(&x->ref, ref);
	snprintf(x->attr, sizeof x->attr, "%s", attr);
	char label[400], initial[48];
	snprintf(label, sizeof label, "export %s of %s@%s, rows (FIRST:END, empty: all): ", attr,
		 ref->dataset, ref->version);
	snprintf(initial, sizeof initial, "%llu:%llu", (unsigned long long)row,
		 (unsigned long long)row + 1);
	tui_ask(t, label, initial, range_submit, x, export_free);
}
