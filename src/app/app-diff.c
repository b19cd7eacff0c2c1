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

/* The shards of one side the comparison goes through: every one, or (by
 * fragment) those of its fragments the other side does not name alike. */
struct side {
	const mt_reader *r;
	size_t *idx;
	size_t n;
};

/* The shard objects of s, each with how often s lists it, sorted (pointers
 * into s's reader); *n distinct objects. */
static struct ref_count *count_refs(const struct side *s, size_t *n)
{
	size_t k = 0;
	struct ref_count *v = app_xcalloc(s->n ? s->n : 1, sizeof *v);
	for (size_t j = 0; j < s->n; j++) {
		mt_shard_info si;
		if (!mt_reader_shard(s->r, s->idx[j], &si))
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

/* References whose repeat depends on shards not gone through: new (or
 * removed) ones of an object the other side's shards gone through lack
 * and their own side did not list before. */
struct pending {
	const char **sha;
	int *change;
	size_t n, cap;
};

/* Each shard reference of `from` as shared (matched with a reference of the
 * other side not matched yet) or as `change`, appended to d.  A reference is
 * a repeat when its object is no new one: the other side holds it too, or
 * `from` listed it before.  With p, a reference that would not be one is
 * left to p (the shards not gone through may hold its object). */
static void diff_side(struct app_diff *d, const struct side *from, struct ref_count *own,
		      size_t nown, struct ref_count *other, size_t nother, int change,
		      int list_shared, int list, struct pending *p)
{
	for (size_t j = 0; j < from->n; j++) {
		mt_shard_info si;
		if (mt_reader_shard(from->r, from->idx[j], &si))
			continue;
		struct ref_count *o = find_ref(other, nother, si.sha256);
		struct ref_count *self = find_ref(own, nown, si.sha256);
		int c = o && o->left ? APP_DIFF_SHARED : change;
		int repeat = c != APP_DIFF_SHARED && (o || (self && self->seen));
		if (c == APP_DIFF_SHARED)
			o->left--;
		if (c != APP_DIFF_SHARED && !repeat && p) {
			if (p->n == p->cap) {
				p->cap = p->cap ? 2 * p->cap : 64;
				p->sha = app_xreallocarray(p->sha, p->cap, sizeof *p->sha);
				p->change = app_xreallocarray(p->change, p->cap, sizeof *p->change);
			}
			p->sha[p->n] = si.sha256;
			p->change[p->n++] = c;
		}
		if (self)
			self->seen = 1;
		if (c == APP_DIFF_SHARED && !list_shared)
			continue;
		d->shards[c]++;
		d->repeats[c] += (uint64_t)repeat;
		d->bytes[c] += si.bytes;
		d->rows[c] += si.rows;
		if (!list)
			continue;
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

/* Whether a and b list the same shards in the same order; a shard of a
 * fragment both name alike at the same place is not read. */
static int same_order(const mt_reader *a, const mt_reader *b, mt_error *err, int *rc)
{
	size_t na = (size_t)mt_reader_info(a)->nshards, nb = (size_t)mt_reader_info(b)->nshards;
	size_t fa = 0, fb = 0, nfa = mt_reader_nfragments(a), nfb = mt_reader_nfragments(b);
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++) {
		mt_fragment_info ia, ib;
		while (fa + 1 < nfa && !mt_reader_fragment(a, fa + 1, &ia) && ia.first_shard <= i)
			fa++;
		while (fb + 1 < nfb && !mt_reader_fragment(b, fb + 1, &ib) && ib.first_shard <= i)
			fb++;
		if (nfa && nfb && !mt_reader_fragment(a, fa, &ia) && !mt_reader_fragment(b, fb, &ib) &&
		    ia.first_shard == i && ib.first_shard == i && mt_reader_fragment_same(a, fa, b, fb)) {
			i += (size_t)ia.nshards - 1;
			continue;
		}
		mt_shard_info sa, sb;
		if ((*rc = mt_reader_shard_err(a, i, &sa, err)) ||
		    (*rc = mt_reader_shard_err(b, i, &sb, err)))
			return 0;
		if (strcmp(sa.sha256, sb.sha256))
			return 0;
	}
	return 1;
}

/* Every shard of r as one side. */
static void side_all(const mt_reader *r, struct side *s)
{
	s->r = r;
	s->n = (size_t)mt_reader_info(r)->nshards;
	s->idx = app_xcalloc(s->n ? s->n : 1, sizeof *s->idx);
	for (size_t i = 0; i < s->n; i++)
		s->idx[i] = i;
}

void app_diff_readers(const mt_reader *a, const mt_reader *b, struct app_diff *d)
{
	memset(d, 0, sizeof *d);
	size_t na, nb;
	struct side sa, sb;
	side_all(a, &sa);
	side_all(b, &sb);
	struct ref_count *ca = count_refs(&sa, &na), *cb = count_refs(&sb, &nb);
	diff_side(d, &sa, ca, na, cb, nb, APP_DIFF_ADDED, 1, 1, NULL);
	diff_side(d, &sb, cb, nb, ca, na, APP_DIFF_REMOVED, 0, 1, NULL);
	mt_error err;
	int rc = 0;
	d->same_order = same_order(a, b, &err, &rc);
	free(ca);
	free(cb);
	free(sa.idx);
	free(sb.idx);
}

/* Mark the fragments of a and of b the other names alike (at the same
 * rows: a fragment holds its first row), and the shards of the others as
 * each side; the shared ones' totals go to d.  A shard gone through is
 * read (its fragment loaded), so one that cannot be is an error. */
static int sides_split(mt_reader *a, mt_reader *b, char *ma, char *mb, struct side *sa,
		       struct side *sb, struct app_diff *d, mt_error *err)
{
	size_t nfa = mt_reader_nfragments(a), nfb = mt_reader_nfragments(b);
	for (size_t i = 0, j = 0; i < nfa && j < nfb;) {
		mt_fragment_info fa, fb;
		mt_reader_fragment(a, i, &fa);
		mt_reader_fragment(b, j, &fb);
		if (fa.first_row == fb.first_row && mt_reader_fragment_same(a, i, b, j)) {
			ma[i] = mb[j] = 1;
			d->shards[APP_DIFF_SHARED] += fa.nshards;
			d->bytes[APP_DIFF_SHARED] += fa.shard_bytes;
			d->rows[APP_DIFF_SHARED] += fa.rows;
		}
		i += fa.first_row <= fb.first_row;
		j += fb.first_row <= fa.first_row;
	}
	struct side *sides[2] = { sa, sb };
	const char *marks[2] = { ma, mb };
	for (int k = 0; k < 2; k++) {
		struct side *s = sides[k];
		size_t nf = mt_reader_nfragments(s->r);
		s->n = 0;
		s->idx = app_xcalloc((size_t)mt_reader_info(s->r)->nshards + 1, sizeof *s->idx);
		for (size_t f = 0, i = 0; i < (size_t)mt_reader_info(s->r)->nshards; i++) {
			mt_fragment_info fi;
			while (f + 1 < nf && !mt_reader_fragment(s->r, f + 1, &fi) && fi.first_shard <= i)
				f++;
			if (nf && marks[k][f])
				continue;
			mt_shard_info si;
			int rc = mt_reader_shard_err(s->r, i, &si, err);
			if (rc)
				return rc;
			s->idx[s->n++] = i;
		}
	}
	return 0;
}

/* Whether each pending reference's object is in a fragment both sides
 * name alike (then it is a repeat after all). */
static int pending_resolve(mt_reader *a, const char *ma, struct app_diff *d,
			   const struct pending *p, mt_error *err)
{
	size_t nf = mt_reader_nfragments(a), n = 0;
	size_t *frags = app_xcalloc(nf + 1, sizeof *frags);
	for (size_t f = 0; f < nf; f++)
		if (ma[f])
			frags[n++] = f;
	int *found = app_xcalloc(p->n + 1, sizeof *found);
	int rc = n && p->n ? mt_reader_fragments_name(a, frags, n, p->sha, p->n, found, err) : 0;
	for (size_t k = 0; !rc && k < p->n; k++)
		d->repeats[p->change[k]] += (uint64_t)found[k];
	free(found);
	free(frags);
	return rc;
}

int app_diff_totals(mt_reader *a, mt_reader *b, struct app_diff *d, mt_error *err)
{
	memset(d, 0, sizeof *d);
	char *ma = app_xcalloc(mt_reader_nfragments(a) + 1, 1);
	char *mb = app_xcalloc(mt_reader_nfragments(b) + 1, 1);
	struct side sa = { a, NULL, 0 }, sb = { b, NULL, 0 };
	struct pending p = { 0 };
	int rc = sides_split(a, b, ma, mb, &sa, &sb, d, err);
	if (!rc) {
		size_t na, nb;
		struct ref_count *ca = count_refs(&sa, &na), *cb = count_refs(&sb, &nb);
		diff_side(d, &sa, ca, na, cb, nb, APP_DIFF_ADDED, 1, 0, &p);
		diff_side(d, &sb, cb, nb, ca, na, APP_DIFF_REMOVED, 0, 0, &p);
		rc = pending_resolve(a, ma, d, &p, err);
		free(ca);
		free(cb);
	}
	/* A new or removed reference means the lists differ. */
	if (!rc && !d->shards[APP_DIFF_ADDED] && !d->shards[APP_DIFF_REMOVED])
		d->same_order = same_order(a, b, err, &rc);
	free(p.sha);
	free(p.change);
	free(sa.idx);
	free(sb.idx);
	free(ma);
	free(mb);
	return rc;
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
