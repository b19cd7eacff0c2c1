/* stats.c — statistics of a whole attribute in the browser: served from the catalog when kept there, else computed by a cancelable job that keeps them there; shown as a text view. */
#define _GNU_SOURCE 1
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

/* What a statistics job works on and brings back. */
struct st_arg {
	mt_catalog_ref ref;
	char attr[256];
	int stale;
	mt_stats *s;
	char kept[300]; /* why the result is not in the catalog ("": it is) */
};

static void st_free(void *arg)
{
	struct st_arg *a = arg;
	mt_catalog_ref_free(&a->ref);
	mt_stats_free(a->s);
	free(a);
}

static void st_ref_copy(mt_catalog_ref *dst, const mt_catalog_ref *src)
{
	*dst = (mt_catalog_ref){ .remote = app_xstrdup(src->remote), .url = app_xstrdup(src->url),
				 .dataset = app_xstrdup(src->dataset),
				 .version = app_xstrdup(src->version), .shard = -1 };
}

/* The view: the numbers, the histogram, the class balance, and where they
 * came from. */
static struct view *st_view(const mt_stats *s, const char *source)
{
	size_t n;
	char **lines = app_stats_lines(s, disp_width(), &n);
	/* Where they came from, under the first line: long histograms run off
	 * the screen. */
	lines = app_xreallocarray(lines, n + 1, sizeof *lines);
	memmove(lines + 2, lines + 1, (n - 1) * sizeof *lines);
	lines[1] = app_xasprintf("  (%s)", source);
	n++;
	char title[300];
	snprintf(title, sizeof title, "stats %s", s->attr);
	return tui_text_view(title, lines, n);
}

static int st_run(struct tui_job *j)
{
	struct st_arg *a = j->arg;
	mt_error err = { 0 };
	mt_store *s = tui_open_bucket(j, &a->ref, &a->stale, &err);
	mt_reader *r = NULL;
	int rc = s ? mt_reader_open(s, a->ref.dataset, a->ref.version, &r, &err) : err.code;
	int ai = rc ? -1 : mt_reader_attr_index(r, a->attr);
	if (!rc && ai < 0)
		rc = mt_error_set(&err, MT_ENOTFOUND, "%s@%s has no attribute %s", a->ref.dataset,
				  a->ref.version, a->attr);
	if (!rc) {
		mt_stats_opts o;
		mt_stats_opts_init(&o);
		o.progress = tui_job_progress;
		o.progress_ud = j;
		rc = mt_stats_compute(r, (size_t)ai, &o, &a->s, &err);
	}
	mt_reader_close(r);
	mt_store_close(s);
	if (rc)
		return tui_job_fail(j, &err);
	/* The catalog is a cache: a result it cannot keep is still shown. */
	mt_error cerr = { 0 };
	if (app_stats_record(j->t->cat, a->ref.url, a->s, &cerr))
		snprintf(a->kept, sizeof a->kept, "; not kept in the catalog: %.250s", cerr.message);
	snprintf(j->result, sizeof j->result, "%llu elements: mean %.6g, std %.6g%s",
		 (unsigned long long)a->s->count, a->s->mean, a->s->std, a->kept);
	return 0;
}

static void st_finish(struct tui *t, struct tui_job *j)
{
	struct st_arg *a = j->arg;
	if (atomic_load(&j->state) != JOB_OK || !a->s)
		return;
	char source[400];
	snprintf(source, sizeof source, "computed now in %.1f s, reading %llu bytes%s", j->seconds,
		 (unsigned long long)a->s->bytes_read,
		 a->kept[0] ? a->kept : "; kept in the catalog (s opens it again at once)");
	tui_job_show(t, j, st_view(a->s, source));
}

void tui_stats_start(struct tui *t, const mt_catalog_ref *ref, const char *attr)
{
	mt_stats *s = NULL;
	char *computed = NULL;
	if (!app_stats_cached(t->cat, ref->url, ref->dataset, ref->version, attr, &s, &computed)) {
		char source[200];
		snprintf(source, sizeof source, "from the catalog, computed %s",
			 computed ? computed : "earlier");
		tui_push(t, st_view(s, source));
		tui_status(t, 0, "statistics of %s: %s", attr, source);
		mt_stats_free(s);
		free(computed);
		return;
	}
	char title[160];
	snprintf(title, sizeof title, "stats %s@%s %s", ref->dataset, ref->version, attr);
	/* A second s while the first job reads would read it all again. */
	for (size_t i = 0; i < t->njobs; i++)
		if (atomic_load(&t->jobs[i]->state) == JOB_RUNNING &&
		    !strcmp(t->jobs[i]->title, title)) {
			tui_status(t, 0, "%s: already running (J: jobs, c: cancel)", title);
			return;
		}
	struct st_arg *a = app_xcalloc(1, sizeof *a);
	st_ref_copy(&a->ref, ref);
	snprintf(a->attr, sizeof a->attr, "%s", attr);
	tui_job_start(t, "stats", title, "bytes", st_run, st_finish, a, st_free);
}

/* Numbers as the matrix viewer's own statistics read. */
static const char *st_num(double v, char *buf, size_t cap)
{
	if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, cap, "%.0f", v);
	else
		snprintf(buf, cap, "%.4g", v);
	return buf;
}

void tui_stats_line(struct tui *t, const mt_catalog_ref *ref, const char *attr, char *buf,
		    size_t cap)
{
	mt_stats *s = NULL;
	buf[0] = '\0';
	if (app_stats_cached(t->cat, ref->url, ref->dataset, ref->version, attr, &s, NULL))
		return;
	char a[32], b[32], c[32], d[32];
	snprintf(buf, cap, "whole attribute (%llu rows): min %s  max %s  mean %s  std %s%s",
		 (unsigned long long)s->rows, st_num(s->min, a, sizeof a),
		 st_num(s->max, b, sizeof b), st_num(s->mean, c, sizeof c),
		 st_num(s->std, d, sizeof d), s->nan || s->posinf || s->neginf ? "  (+NaN/Inf)" : "");
	mt_stats_free(s);
}
