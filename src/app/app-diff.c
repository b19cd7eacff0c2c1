/* app-diff.c — what two versions have in common: the shard references they share, those new in one against the other, in shards, bytes and rows (the command's `diff` and the browser's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

/* A shard object of one side and how many of that side's references to it
 * are not yet matched with one of the other side. */
struct ref_count {
	const char *sha256;
	size_t left;
	int seen; /* a reference to it was met already, going through its side */
};

static int cmp_count(const void *a, const void *b)
{
	return strcmp(((const struct ref_count *)a)->sha256, ((const struct ref_count *)b)->sha256);
}

/* The shard objects of r, each with how often r lists it, sorted (pointers
 * into r); *n distinct objects. */
static struct ref_count *count_refs(const mt_reader *r, size_t *n)
{
	size_t ns = (size_t)mt_reader_info(r)->nshards, k = 0;
	struct ref_count *v = app_xcalloc(ns ? ns : 1, sizeof *v);
	for (size_t i = 0; i < ns; i++) {
		mt_shard_info si;
		if (!mt_reader_shard(r, i, &si))
			v[k++] = (struct ref_count){ si.sha256, 1, 0 };
	}
	qsort(v, k, sizeof *v, cmp_count);
	size_t u = 0;
	for (size_t i = 0; i < k; i++) {
		if (u && !strcmp(v[u - 1].sha256, v[i].sha256))
			v[u - 1].left++;
		else
			v[u++] = v[i];
	}
	*n = u;
	return v;
}

static struct ref_count *find_ref(struct ref_count *v, size_t n, const char *sha)
{
	struct ref_count key = { sha, 0, 0 };
	return bsearch(&key, v, n, sizeof *v, cmp_count);
}

/* Each shard reference of `from` as shared (matched with a reference of the
 * other side not matched yet) or as `change`, appended to d.  A reference is
 * a repeat when its object is no new one: the other side holds it too, or
 * `from` listed it before. */
static void diff_side(struct app_diff *d, const mt_reader *from, struct ref_count *own,
		      size_t nown, struct ref_count *other, size_t nother, int change,
		      int list_shared)
{
	size_t ns = (size_t)mt_reader_info(from)->nshards;
	for (size_t i = 0; i < ns; i++) {
		mt_shard_info si;
		if (mt_reader_shard(from, i, &si))
			continue;
		struct ref_count *o = find_ref(other, nother, si.sha256);
		struct ref_count *self = find_ref(own, nown, si.sha256);
		int c = o && o->left ? APP_DIFF_SHARED : change;
		int repeat = c != APP_DIFF_SHARED && (o || (self && self->seen));
		if (c == APP_DIFF_SHARED)
			o->left--;
		if (self)
			self->seen = 1;
		if (c == APP_DIFF_SHARED && !list_shared)
			continue;
		d->shards[c]++;
		d->repeats[c] += (uint64_t)repeat;
		d->bytes[c] += si.bytes;
		d->rows[c] += si.rows;
		d->s = app_xreallocarray(d->s, d->ns + 1, sizeof *d->s);
		struct app_diff_shard *e = &d->s[d->ns++];
		snprintf(e->sha256, sizeof e->sha256, "%s", si.sha256);
		e->bytes = si.bytes;
		e->rows = si.rows;
		e->first_row = si.first_row;
		e->change = c;
		e->repeat = repeat;
	}
}

/* Whether a and b list the same shards in the same order. */
static int same_order(const mt_reader *a, const mt_reader *b)
{
	size_t na = (size_t)mt_reader_info(a)->nshards, nb = (size_t)mt_reader_info(b)->nshards;
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++) {
		mt_shard_info sa, sb;
		if (mt_reader_shard(a, i, &sa) || mt_reader_shard(b, i, &sb) ||
		    strcmp(sa.sha256, sb.sha256))
			return 0;
	}
	return 1;
}

void app_diff_readers(const mt_reader *a, const mt_reader *b, struct app_diff *d)
{
	memset(d, 0, sizeof *d);
	size_t na, nb;
	struct ref_count *ca = count_refs(a, &na), *cb = count_refs(b, &nb);
	diff_side(d, a, ca, na, cb, nb, APP_DIFF_ADDED, 1);
	diff_side(d, b, cb, nb, ca, na, APP_DIFF_REMOVED, 0);
	d->same_order = same_order(a, b);
	free(ca);
	free(cb);
}

void app_diff_free(struct app_diff *d)
{
	free(d->s);
	d->s = NULL;
	d->ns = 0;
}

const char *app_diff_change_name(int change)
{
	static const char *const names[] = { "shared", "new", "removed" };
	return change >= 0 && change < APP_DIFF_N ? names[change] : "?";
}

const char *app_diff_shard_change(const struct app_diff_shard *s)
{
	if (s->repeat && s->change == APP_DIFF_ADDED)
		return "repeat";
	return app_diff_change_name(s->change);
}

const char *app_diff_line(const struct app_diff *d, int change, char *buf, size_t cap)
{
	char human[32];
	int n = snprintf(buf, cap, "%-8s %6llu shard%s %10s %10llu rows",
			 app_diff_change_name(change), (unsigned long long)d->shards[change],
			 d->shards[change] == 1 ? " " : "s",
			 app_human_bytes(d->bytes[change], human, sizeof human),
			 (unsigned long long)d->rows[change]);
	/* New references to objects stored already: new rows, no new objects. */
	if (change == APP_DIFF_ADDED && d->repeats[change] && n > 0 && (size_t)n < cap)
		snprintf(buf + n, cap - (size_t)n, " (%llu %s already held)",
			 (unsigned long long)d->repeats[change],
			 d->repeats[change] == 1 ? "repeats a shard" : "repeat shards");
	return buf;
}

const char *app_diff_verdict(const struct app_diff *d)
{
	if (d->shards[APP_DIFF_ADDED] || d->shards[APP_DIFF_REMOVED])
		return NULL;
	return d->same_order ? "every shard is shared, in the same order: the same rows"
			     : "every shard is shared, in another order: the same rows reordered";
}
