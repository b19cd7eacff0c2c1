/* format-fragment.c — format 2's fragments: loading them into a manifest, finding them by row or shard, cutting a shard list into them. */
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "pool.h"

/* Fragments read at once: on a store far away each is a round trip. */
#define FF_THREADS 8

struct ff_load {
	mt_manifest *m;
	size_t f0;
	mti_get_fn get;
	void *ud;
	mt_error *errs; /* one per fragment */
	int *rcs;
};

static int ff_load_one(void *arg, size_t i)
{
	struct ff_load *l = arg;
	size_t fi = l->f0 + i;
	mt_mfrag *f = &l->m->frags[fi];
	mt_error *err = &l->errs[i];
	if (f->loaded)
		return 0;
	char *key = mti_key_fragment(l->m->dataset, f->sha256);
	void *data = NULL;
	size_t len = 0;
	int rc = key ? l->get(l->ud, key, MT_FRAGMENT_MAX_BYTES, &data, &len, err)
		     : mti_err(err, MT_ENOMEM, "out of memory");
	if (rc == MT_ENOTFOUND)
		rc = mti_err(err, MT_ECORRUPT, "%s@%s: fragment %s (rows %llu to %llu, shards %zu "
			    "to %zu): missing", l->m->dataset, l->m->version, key,
			    (unsigned long long)f->first_row,
			    (unsigned long long)(f->first_row + f->rows - 1), f->first_shard,
			    f->first_shard + f->nshards - 1);
	else if (rc)
		mti_err_prefix(err, "%s@%s: fragment %s (rows %llu to %llu): ", l->m->dataset,
			       l->m->version, key, (unsigned long long)f->first_row,
			       (unsigned long long)(f->first_row + f->rows - 1));
	if (!rc)
		rc = mti_fragment_decode(l->m, fi, data, len, key, err);
	free(data);
	free(key);
	l->rcs[i] = rc;
	return 0;
}

int mti_manifest_load_frags(mt_manifest *m, size_t f0, size_t f1, mti_get_fn get, void *ud,
			    mt_error *err)
{
	if (f1 > m->nfrags)
		f1 = m->nfrags;
	size_t n = f0 < f1 ? f1 - f0 : 0, todo = 0;
	for (size_t i = f0; i < f1; i++)
		todo += !m->frags[i].loaded;
	if (!todo)
		return 0;
	struct ff_load l = {m, f0, get, ud, calloc(n, sizeof(mt_error)), calloc(n, sizeof(int))};
	int rc = l.errs && l.rcs ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		mti_parallel_for(todo < FF_THREADS ? (int)todo : FF_THREADS, n, ff_load_one, &l);
	/* The first fragment in row order that failed speaks for all. */
	for (size_t i = 0; !rc && i < n; i++)
		if (l.rcs[i])
			rc = mti_err_copy(err, &l.errs[i]);
	free(l.errs);
	free(l.rcs);
	return rc;
}

size_t mti_fragment_shards(void)
{
	const char *v = getenv("MATORAGE_FRAGMENT_SHARDS");
	char *end = NULL;
	unsigned long n = v && *v ? strtoul(v, &end, 10) : 0;
	return end && !*end && n >= 1 && n <= MT_FRAGMENT_SHARDS_MAX ? (size_t)n : MT_FRAGMENT_SHARDS;
}

/* The last fragment whose first shard (by_row 0) or first row (by_row 1) is
 * at most v; fragments are in order of both. */
static size_t frag_last_from(const mt_manifest *m, uint64_t v, int by_row)
{
	size_t lo = 0, hi = m->nfrags;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t first = by_row ? m->frags[mid].first_row : m->frags[mid].first_shard;
		if (first <= v)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

size_t mti_manifest_frag_of_shard(const mt_manifest *m, size_t i)
{
	return frag_last_from(m, i, 0);
}

size_t mti_manifest_frag_of_row(const mt_manifest *m, uint64_t row)
{
	return frag_last_from(m, row, 1);
}

static int ff_cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

int mti_frag_cmp(const mt_mfrag *a, const mt_mfrag *b)
{
	int c = memcmp(a->sha256, b->sha256, sizeof a->sha256);
	const uint64_t va[] = {a->bytes, a->first_row, a->rows, a->nshards, a->shard_bytes, a->nlayout};
	const uint64_t vb[] = {b->bytes, b->first_row, b->rows, b->nshards, b->shard_bytes, b->nlayout};
	for (size_t i = 0; !c && i < sizeof va / sizeof va[0]; i++)
		c = ff_cmp_u64(va[i], vb[i]);
	for (size_t i = 0; !c && i < a->nlayout && i < MT_FRAGMENT_LAYOUT_RUNS; i++) {
		c = ff_cmp_u64(a->layout[i].shards, b->layout[i].shards);
		if (!c)
			c = ff_cmp_u64(a->layout[i].rows, b->layout[i].rows);
	}
	return c;
}

/* Whether m's shards [at, at + p->nshards) encode to fragment p's very
 * bytes: then the fragment already stored is theirs.  -1: out of memory. */
static int ff_repeats(const mt_manifest *m, size_t at, const mt_mfrag *p, mt_error *err)
{
	if (at + p->nshards > m->nshards || m->shards[at].first_row != p->first_row)
		return 0;
	mt_mfrag f = {0};
	char *json = NULL;
	int rc = mti_fragment_encode(m->dataset, m->shards + at, p->nshards, &f, &json, err);
	free(json);
	if (rc)
		return rc == MT_ENOMEM ? -1 : 0;
	return f.bytes == p->bytes && !memcmp(f.sha256, p->sha256, 64);
}

int mti_manifest_cut(mt_manifest *m, const mt_mfrag *prev, size_t nprev, size_t per,
		     mt_error *err)
{
	if (per == 0 || per > MT_FRAGMENT_SHARDS_MAX)
		per = MT_FRAGMENT_SHARDS;
	size_t cap = nprev + m->nshards / per + 1, n = 0, at = 0;
	mt_mfrag *v = calloc(cap, sizeof *v);
	if (!v)
		return mti_err(err, MT_ENOMEM, "out of memory");
	/* The version built on keeps its full fragments; a short last one is
	 * written again with the new shards after it. */
	for (size_t i = 0; i < nprev; i++) {
		if (i + 1 == nprev && prev[i].nshards < per && at + prev[i].nshards < m->nshards)
			break;
		int same = ff_repeats(m, at, &prev[i], err);
		if (same < 0) {
			free(v);
			return MT_ENOMEM;
		}
		if (!same)
			break;
		v[n] = prev[i];
		v[n].first_shard = at;
		v[n].loaded = 1;
		v[n++].fresh = 0;
		at += prev[i].nshards;
	}
	for (; at < m->nshards; n++) {
		size_t k = m->nshards - at < per ? m->nshards - at : per;
		const mt_mshard *last = &m->shards[at + k - 1];
		v[n] = (mt_mfrag){.first_shard = at, .nshards = k, .first_row = m->shards[at].first_row,
				  .rows = last->first_row + last->rows - m->shards[at].first_row,
				  .loaded = 1, .fresh = 1};
		at += k;
	}
	free(m->frags);
	m->frags = v;
	m->nfrags = n;
	return 0;
}
