/* stats.c — statistics of a whole attribute in the browser: served from the catalog when kept there, else computed by a cancelable job that keeps them there; shown as a text view. */
#define _GNU_SOURCE 1
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

/* What a finished job opens: the statistics, the frequency view, or
 * nothing (the sheet that asked shows them in its last lines). */
enum { ST_SHOW, ST_FREQ, ST_KEEP };

/* What a statistics job works on and brings back. */
struct st_arg {
	mt_catalog_ref ref;
	char attr[256];
	int mode; /* ST_* */
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

static struct view *st_freq_view(struct tui *t, const mt_stats *s, const char *source);

static void st_finish(struct tui *t, struct tui_job *j)
{
	struct st_arg *a = j->arg;
	if (atomic_load(&j->state) != JOB_OK || !a->s)
		return;
	char source[400];
	snprintf(source, sizeof source, "computed now in %.1f s, reading %llu bytes%s", j->seconds,
		 (unsigned long long)a->s->bytes_read,
		 a->kept[0] ? a->kept : "; kept in the catalog (s opens it again at once)");
	if (a->mode == ST_SHOW) {
		tui_job_show(t, j, st_view(a->s, source));
	} else if (a->mode == ST_FREQ) {
		struct view *v = st_freq_view(t, a->s, source);
		if (v)
			tui_job_show(t, j, v);
	} else {
		tui_status(t, 0, "%s: each column's min, max, mean and std over %llu rows are in "
			   "the sheet's last lines (s opens every number)", j->title,
			   (unsigned long long)a->s->rows);
	}
}

/* A job computing the statistics, then doing what mode says. */
static void st_job(struct tui *t, const mt_catalog_ref *ref, const char *attr, int mode)
{
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
	a->mode = mode;
	tui_job_start(t, "stats", title, "bytes", st_run, st_finish, a, st_free);
}

mt_stats *tui_stats_cached(struct tui *t, const mt_catalog_ref *ref, const char *attr,
			   char **computed)
{
	mt_stats *s = NULL;
	if (computed)
		*computed = NULL;
	if (app_stats_cached(t->cat, ref->url, ref->dataset, ref->version, attr, &s, computed))
		return NULL;
	return s;
}

void tui_stats_start(struct tui *t, const mt_catalog_ref *ref, const char *attr)
{
	char *computed = NULL;
	mt_stats *s = tui_stats_cached(t, ref, attr, &computed);
	if (s) {
		char source[200];
		snprintf(source, sizeof source, "from the catalog, computed %s",
			 computed ? computed : "earlier");
		tui_push(t, st_view(s, source));
		tui_status(t, 0, "statistics of %s: %s", attr, source);
		mt_stats_free(s);
		free(computed);
		return;
	}
	st_job(t, ref, attr, ST_SHOW);
}

void tui_stats_columns(struct tui *t, const mt_catalog_ref *ref, const char *attr)
{
	mt_stats *s = tui_stats_cached(t, ref, attr, NULL);
	/* A result kept before per-column numbers existed is computed again. */
	if (s && s->columns) {
		mt_stats_free(s);
		tui_stats_start(t, ref, attr);
		return;
	}
	mt_stats_free(s);
	st_job(t, ref, attr, ST_KEEP);
}

void tui_freq_start(struct tui *t, const mt_catalog_ref *ref, const char *attr)
{
	char *computed = NULL;
	mt_stats *s = tui_stats_cached(t, ref, attr, &computed);
	if (!s) {
		st_job(t, ref, attr, ST_FREQ);
		return;
	}
	char source[200];
	snprintf(source, sizeof source, "from the catalog, computed %s",
		 computed ? computed : "earlier");
	struct view *v = st_freq_view(t, s, source);
	if (v)
		tui_push(t, v);
	mt_stats_free(s);
	free(computed);
}

/* ---- the frequency view ---- */

/* Classes by count, largest first; equal counts in value order. */
static int st_class_cmp(const void *pa, const void *pb)
{
	const mt_stats_class *a = pa, *b = pb;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return a->value < b->value ? -1 : a->value > b->value;
}

/* The class balance in one line: how many classes, the largest and the
 * smallest share, and their ratio. */
static char *st_balance_line(const mt_stats *s, const mt_stats_class *c, uint64_t total)
{
	const mt_stats_class *big = &c[0], *small = &c[s->nclasses - 1];
	double pb = total ? 100.0 * (double)big->count / (double)total : 0;
	double ps = total ? 100.0 * (double)small->count / (double)total : 0;
	char ratio[48] = "";
	if (small->count)
		snprintf(ratio, sizeof ratio, ", ratio %.2f:1",
			 (double)big->count / (double)small->count);
	return app_xasprintf("class balance: %d classes; largest %lld %.2f%%, smallest %lld %.2f%%%s",
			     s->nclasses, (long long)big->value, pb, (long long)small->value, ps,
			     ratio);
}

/* The value | count | share | bar lines, fitting `width` columns. */
static char *st_freq_line(const mt_stats_class *c, uint64_t total, uint64_t most, int vw, int cw,
			  int width)
{
	double pct = total ? 100.0 * (double)c->count / (double)total : 0;
	char head[160];
	int used = snprintf(head, sizeof head, "  %*lld  %*llu  %6.2f%%  ", vw, (long long)c->value,
			    cw, (unsigned long long)c->count, pct);
	int room = width - used - 1;
	room = room > 50 ? 50 : room;
	int bar = room > 0 && most ? (int)((double)room * (double)c->count / (double)most + 0.5) : 0;
	if (c->count && room > 0 && bar == 0)
		bar = 1; /* a class that is there never looks absent */
	char *line = app_xcalloc(1, strlen(head) + (size_t)bar * 3 + 1);
	strcpy(line, head);
	for (int i = 0; i < bar; i++)
		strcat(line, "█");
	return line;
}

static struct view *st_freq_view(struct tui *t, const mt_stats *s, const char *source)
{
	if (s->nclasses < 0) {
		tui_status(t, 1, "frequency of %s: %s", s->attr,
			   s->nclasses < 0 && (s->dtype == MT_FLOAT16 || s->dtype == MT_FLOAT32 ||
					       s->dtype == MT_FLOAT64 || s->ragged)
				   ? "counts are kept for integer attributes of one value a row "
				     "(s: the histogram)"
				   : "not one integer a row, or more than 256 distinct values "
				     "(s: the histogram)");
		return NULL;
	}
	mt_stats_class *c = app_xcalloc((size_t)s->nclasses + 1, sizeof *c);
	memcpy(c, s->classes, (size_t)s->nclasses * sizeof *c);
	qsort(c, (size_t)s->nclasses, sizeof *c, st_class_cmp);
	uint64_t total = 0;
	int vw = 5, cw = 5;
	for (int i = 0; i < s->nclasses; i++) {
		char b[32];
		total += c[i].count;
		int k = snprintf(b, sizeof b, "%lld", (long long)c[i].value);
		vw = k > vw ? k : vw;
		k = snprintf(b, sizeof b, "%llu", (unsigned long long)c[i].count);
		cw = k > cw ? k : cw;
	}
	size_t n = 0;
	char **lines = app_xcalloc((size_t)s->nclasses + 6, sizeof *lines);
	lines[n++] = app_xasprintf("%s@%s %s  %s  %llu rows", s->dataset, s->version, s->attr,
				   mt_dtype_name(s->dtype), (unsigned long long)s->rows);
	lines[n++] = s->nclasses ? st_balance_line(s, c, total) : app_xstrdup("no values");
	lines[n++] = app_xasprintf("  (%s)", source);
	lines[n++] = app_xstrdup("");
	lines[n++] = app_xasprintf("  %*s  %*s  %7s", vw, "VALUE", cw, "COUNT", "SHARE");
	for (int i = 0; i < s->nclasses; i++)
		lines[n++] = st_freq_line(&c[i], total, c[0].count, vw, cw, disp_width());
	free(c);
	char title[300];
	snprintf(title, sizeof title, "frequency %s", s->attr);
	return tui_text_view(title, lines, n);
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
