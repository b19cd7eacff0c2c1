/* reader-frag.c — a format-2 version's fragments as its root describes them, for callers that compare versions fragment by fragment (diff). */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "reader.h"

/* Candidates up to which a fragment's text is searched for each one
 * (memmem) before it is decoded; more, and decoding it is cheaper. */
#define RF_SEARCH_MAX 16

size_t mt_reader_nfragments(const mt_reader *r)
{
	return r ? r->m->nfrags : 0;
}

int mt_reader_fragment(const mt_reader *r, size_t i, mt_fragment_info *out)
{
	if (!r || i >= r->m->nfrags)
		return MT_EINVAL;
	const mt_mfrag *f = &r->m->frags[i];
	*out = (mt_fragment_info){f->sha256, f->bytes, f->first_row, f->rows, f->first_shard,
				  f->nshards, f->shard_bytes};
	return 0;
}

int mt_reader_fragment_same(const mt_reader *a, size_t i, const mt_reader *b, size_t j)
{
	return a && b && i < a->m->nfrags && j < b->m->nfrags &&
	       !strcmp(a->m->dataset, b->m->dataset) &&
	       !mti_frag_cmp(&a->m->frags[i], &b->m->frags[j]);
}

/* A candidate and its place in the caller's list. */
struct rf_cand {
	const char *sha;
	size_t k;
};

static int rf_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rf_cand *)a)->sha, ((const struct rf_cand *)b)->sha);
}

/* Fragment f decoded into r (checked as every load checks it); each of its
 * entries looked up among the n sorted candidates. */
static int rf_exact(mt_reader *r, const mt_mfrag *f, const struct rf_cand *sorted, size_t n,
		    int *found, mt_error *err)
{
	int rc = mti_reader_need_shards(r, f->first_shard, f->first_shard + f->nshards, err);
	for (size_t i = f->first_shard; !rc && i < f->first_shard + f->nshards; i++) {
		struct rf_cand key = {r->m->shards[i].sha256, 0};
		const struct rf_cand *hit = bsearch(&key, sorted, n, sizeof *sorted, rf_cmp);
		if (!hit)
			continue;
		/* The run of equal candidates around the one found. */
		size_t at = (size_t)(hit - sorted), lo = at;
		while (lo > 0 && !rf_cmp(&sorted[lo - 1], &key))
			lo--;
		for (size_t j = lo; j < n && !rf_cmp(&sorted[j], &key); j++)
			found[sorted[j].k] = 1;
	}
	return rc;
}

/* Whether the fragment's text, as stored and bound by the root, can hold
 * none of the candidates not found yet: an entry's sha256 is written as its
 * 64 characters unless the text escapes characters, so a text without a
 * backslash that holds none of them names none.  0: decode it to know. */
static int rf_absent(mt_reader *r, const mt_mfrag *f, const char *const *shas, size_t n,
		     const int *found)
{
	char *key = mti_key_fragment(r->m->dataset, f->sha256);
	void *data = NULL;
	size_t len = 0;
	char hex[MT_SHA256_HEX];
	mt_error e;
	int absent = key && !mti_store_get_max(r->store, key, MT_FRAGMENT_MAX_BYTES, &data, &len, &e) &&
		     len == f->bytes && !mti_sha256_hex(data, len, hex, &e) &&
		     !memcmp(hex, f->sha256, 64) && !memchr(data, '\\', len);
	for (size_t k = 0; absent && k < n; k++)
		if (!found[k] && memmem(data, len, shas[k], 64))
			absent = 0;
	free(data);
	free(key);
	return absent;
}

/* Candidates not found yet (a name of other than 64 characters is none). */
static size_t rf_left(const char *const *shas, size_t n, const int *found)
{
	size_t left = 0;
	for (size_t k = 0; k < n; k++)
		left += !found[k] && strlen(shas[k]) == 64;
	return left;
}

int mt_reader_fragments_name(mt_reader *r, const size_t *frags, size_t nfrags,
			     const char *const *shas, size_t n, int *found, mt_error *err)
{
	struct rf_cand *sorted = malloc((n ? n : 1) * sizeof *sorted);
	if (!sorted)
		return mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t k = 0; k < n; k++)
		sorted[k] = (struct rf_cand){shas[k], k};
	qsort(sorted, n, sizeof *sorted, rf_cmp);
	size_t left = rf_left(shas, n, found);
	int rc = 0;
	for (size_t i = 0; !rc && left && i < nfrags; i++) {
		if (frags[i] >= r->m->nfrags) {
			rc = mti_err(err, MT_EINVAL, "%s@%s: no fragment %zu (it has %zu)",
				     r->m->dataset, r->m->version, frags[i], r->m->nfrags);
			break;
		}
		const mt_mfrag *f = &r->m->frags[frags[i]];
		if (left <= RF_SEARCH_MAX && rf_absent(r, f, shas, n, found))
			continue;
		rc = rf_exact(r, f, sorted, n, found, err);
		left = rf_left(shas, n, found);
	}
	free(sorted);
	return rc;
}
