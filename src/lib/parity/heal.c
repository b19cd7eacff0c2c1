/* heal.c — self-healing reads: a reader's damaged or missing chunks rebuilt from the version's parity by ranged reads. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "heal.h"

struct mti_heal {
	mt_store *store;
	const mt_manifest *m;
	pthread_mutex_t lock; /* guards everything below */
	int looked;           /* the record was looked for */
	int rc;               /* what looking found: 0, MT_ENOTFOUND, or why it is unreadable */
	mt_error load_err;
	mti_prec *prec;
	unsigned char *lost; /* per shard */
	uint64_t chunks, indexes, bytes_read;
};

int mti_heal_new(mt_store *s, const mt_manifest *m, mti_heal **out, mt_error *err)
{
	*out = NULL;
	mti_heal *h = calloc(1, sizeof *h);
	if (h)
		h->lost = calloc(m->nshards ? m->nshards : 1, 1);
	if (!h || !h->lost) {
		free(h);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	pthread_mutex_init(&h->lock, NULL);
	h->store = s;
	h->m = m;
	*out = h;
	return 0;
}

void mti_heal_free(mti_heal *h)
{
	if (!h)
		return;
	mti_prec_free(h->prec);
	free(h->lost);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* The record, looked for once: loading it under the lock makes the
 * threads that meet damage together wait for one GET. */
static int heal_record(mti_heal *h, const mti_prec **out, mt_error *err)
{
	pthread_mutex_lock(&h->lock);
	if (!h->looked) {
		h->rc = mti_prec_load(h->store, h->m->dataset, h->m->version, &h->prec,
				      &h->load_err);
		h->looked = 1;
	}
	int rc = h->rc;
	*out = h->prec;
	if (rc && err)
		*err = h->load_err;
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int mti_heal_protected(mti_heal *h)
{
	const mti_prec *p;
	return heal_record(h, &p, NULL) != MT_ENOTFOUND;
}

void mti_heal_mark_lost(mti_heal *h, size_t shard, int why)
{
	pthread_mutex_lock(&h->lock);
	if (shard < h->m->nshards)
		h->lost[shard] = (unsigned char)why;
	pthread_mutex_unlock(&h->lock);
}

int mti_heal_lost(mti_heal *h, size_t shard)
{
	pthread_mutex_lock(&h->lock);
	int lost = shard < h->m->nshards ? h->lost[shard] : 0;
	pthread_mutex_unlock(&h->lock);
	return lost;
}

/* The group of `shard`, checked against the reader's manifest: a record
 * whose member names another object would rebuild the wrong bytes.  avoid
 * (k + m flags) gets the members already known lost, which are not read. */
static int heal_group(mti_heal *h, const mti_prec *p, size_t shard, unsigned char *avoid,
		      mt_error *err)
{
	size_t member;
	const mti_pgroup *g = mti_prec_find(p, shard, &member);
	const mt_manifest *m = h->m;
	if (!g)
		return mti_err(err, MT_ECORRUPT, "the protection record of %s@%s has no group "
			      "holding shard %zu", m->dataset, m->version, shard);
	if (strcmp(g->members[member].sha256, m->shards[shard].sha256) != 0)
		return mti_err(err, MT_ECORRUPT, "the protection record of %s@%s names another "
			      "object for shard %zu", m->dataset, m->version, shard);
	memset(avoid, 0, (size_t)(p->k + p->m));
	pthread_mutex_lock(&h->lock);
	for (size_t j = 0; j < g->nmembers; j++)
		if (g->members[j].shard < m->nshards)
			avoid[j] = h->lost[g->members[j].shard] != 0;
	pthread_mutex_unlock(&h->lock);
	avoid[member] = 1;
	return 0;
}

int mti_heal_span(mti_heal *h, size_t shard, uint64_t off, size_t len, int what,
		  mti_rebuild_check check, void *check_ud, void *out, mt_error *err)
{
	const mti_prec *p;
	int rc = heal_record(h, &p, err);
	if (rc == MT_ENOTFOUND)
		return mti_err(err, rc, "%s@%s is not protected", h->m->dataset, h->m->version);
	if (rc)
		return rc;
	unsigned char avoid[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M];
	if (p->k < 1 || p->m < 1 || p->k > MTI_PARITY_MAX_K || p->m > MTI_PARITY_MAX_M)
		return mti_err(err, MT_ECORRUPT, "the protection record of %s@%s codes %d+%d",
			      h->m->dataset, h->m->version, p->k, p->m);
	if ((rc = heal_group(h, p, shard, avoid, err)))
		return rc;
	uint64_t got = 0;
	rc = mti_parity_rebuild_span(h->store, p, shard, off, len, avoid, check, check_ud, out, &got,
				     err);
	pthread_mutex_lock(&h->lock);
	h->bytes_read += got;
	if (!rc && what == MTI_HEAL_CHUNK)
		h->chunks++;
	else if (!rc)
		h->indexes++;
	pthread_mutex_unlock(&h->lock);
	return rc;
}

void mti_heal_counts(mti_heal *h, uint64_t *chunks, uint64_t *indexes, uint64_t *bytes_read)
{
	pthread_mutex_lock(&h->lock);
	*chunks = h->chunks;
	*indexes = h->indexes;
	*bytes_read = h->bytes_read;
	pthread_mutex_unlock(&h->lock);
}
