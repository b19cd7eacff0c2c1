/* app-diff.c — what two versions have in common: the shards they share, those new in one against the other, in shards, bytes and rows (the command's `diff` and the browser's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The sha256 of every shard of r, sorted (pointers into r). */
static const char **sorted_shards(const mt_reader *r, size_t *n)
{
	size_t ns = (size_t)mt_reader_info(r)->nshards, k = 0;
	const char **v = app_xcalloc(ns ? ns : 1, sizeof *v);
	for (size_t i = 0; i < ns; i++) {
		mt_shard_info si;
		if (!mt_reader_shard(r, i, &si))
			v[k++] = si.sha256;
	}
	qsort(v, k, sizeof *v, cmp_str);
	*n = k;
	return v;
}

static int holds(const char **sorted, size_t n, const char *sha)
{
	return bsearch(&sha, sorted, n, sizeof *sorted, cmp_str) != NULL;
}

/* Each shard of `from` as shared (in `other`) or as `change`, appended to d. */
static void diff_side(struct app_diff *d, const mt_reader *from, const char **other, size_t nother,
		      int change, int list_shared)
{
	size_t ns = (size_t)mt_reader_info(from)->nshards;
	for (size_t i = 0; i < ns; i++) {
		mt_shard_info si;
		if (mt_reader_shard(from, i, &si))
			continue;
		int c = holds(other, nother, si.sha256) ? APP_DIFF_SHARED : change;
		if (c == APP_DIFF_SHARED && !list_shared)
			continue;
		d->shards[c]++;
		d->bytes[c] += si.bytes;
		d->rows[c] += si.rows;
		d->s = app_xreallocarray(d->s, d->ns + 1, sizeof *d->s);
		struct app_diff_shard *e = &d->s[d->ns++];
		snprintf(e->sha256, sizeof e->sha256, "%s", si.sha256);
		e->bytes = si.bytes;
		e->rows = si.rows;
		e->first_row = si.first_row;
		e->change = c;
	}
}

void app_diff_readers(const mt_reader *a, const mt_reader *b, struct app_diff *d)
{
	memset(d, 0, sizeof *d);
	size_t na, nb;
	const char **sa = sorted_shards(a, &na), **sb = sorted_shards(b, &nb);
	diff_side(d, a, sb, nb, APP_DIFF_ADDED, 1);
	diff_side(d, b, sa, na, APP_DIFF_REMOVED, 0);
	free(sa);
	free(sb);
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

const char *app_diff_line(const struct app_diff *d, int change, char *buf, size_t cap)
{
	char human[32];
	snprintf(buf, cap, "%-8s %6llu shard%s %10s %10llu rows", app_diff_change_name(change),
		 (unsigned long long)d->shards[change], d->shards[change] == 1 ? " " : "s",
		 app_human_bytes(d->bytes[change], human, sizeof human),
		 (unsigned long long)d->rows[change]);
	return buf;
}
