/* protect-version.c — protecting a version of a store: groups, parity objects written under the writer's lock, the record last; and what a record says. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "dataset.h"
#include "lock.h"
#include "opts.h"
#include "pool.h"
#include "protect.h"

#define PROTECT_OPTS_FIRST MT_OPTS_SIZE_UPTO(mt_protect_opts, stats)
#define DEFAULT_K 8
#define DEFAULT_M 2
/* Members are read and coded this many bytes at a time: memory is the
 * group's parity plus k pieces, whatever the shard size. */
#define PIECE_BYTES (8u << 20)

void mt_protect_opts_init_size(mt_protect_opts *o, size_t size)
{
	mt_protect_opts d;
	memset(&d, 0, sizeof d);
	d.k = DEFAULT_K;
	d.m = DEFAULT_M;
	mti_opts_init(o, size, &d, sizeof d);
}

typedef struct pv {
	mt_store *s;
	const char *dataset;
	char *version;
	mt_protect_opts o;
	mt_protect_stats st;
	mt_dlock *lock;
	mt_manifest *man;
	char *json; /* the manifest's text */
	mti_prec *rec;
	mti_prec *stale;      /* the record replaced, when it still decodes: its groups may serve */
	uint64_t done, total; /* shard bytes read / to read */
	char **written;       /* parity keys sent, to make durable */
	size_t nwritten;
	int replace;          /* the record there fails its checks: written over */
} pv;

/* ---- one group's coding --------------------------------------------------- */

struct pv_code {
	pv *p;
	mti_pgroup *g;
	int frags;            /* the members are fragments, not shards */
	mt_sha256 *h[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M];
	uint8_t *in[MTI_PARITY_MAX_K];
	uint8_t *par[MTI_PARITY_MAX_M];
	uint64_t off;
	size_t n;
	mt_error errs[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M];
};

/* Read member i's piece at c->off (zeros past its end) and hash it. */
static int pv_read_job(void *ud, size_t i)
{
	struct pv_code *c = ud;
	const mti_pmember *mb = &c->g->members[i];
	uint64_t bytes = mb->bytes;
	size_t have = c->off >= bytes ? 0 : bytes - c->off < c->n ? (size_t)(bytes - c->off) : c->n;
	int rc = 0;
	if (have) {
		char *key = c->frags ? mti_key_fragment(c->p->dataset, mb->sha256)
				     : mti_key_shard(c->p->dataset, mb->sha256);
		rc = key ? mti_store_read(c->p->s, key, c->off, c->in[i], have, &c->errs[i])
			 : mti_err(&c->errs[i], MT_ENOMEM, "out of memory");
		free(key);
		if (!rc)
			rc = mti_sha256_update(c->h[i], c->in[i], have, &c->errs[i]);
	}
	memset(c->in[i] + have, 0, c->n - have);
	return rc;
}

static int pv_hash_job(void *ud, size_t r)
{
	struct pv_code *c = ud;
	int k = c->p->o.k;
	return mti_sha256_hex(c->par[r], c->g->stripe, c->g->parity[r].sha256, &c->errs[k + r]);
}

static int pv_first_error(struct pv_code *c, int rc, size_t n, mt_error *err)
{
	for (size_t i = 0; i < n; i++)
		if (c->errs[i].code)
			return mti_err_copy(err, &c->errs[i]);
	return mti_err(err, rc, "%s@%s: coding parity failed", c->p->dataset, c->p->version);
}

/* Each member's bytes must hash to its name: parity over a damaged shard
 * would rebuild the damage. */
static int pv_check_members(struct pv_code *c, mt_error *err)
{
	for (size_t i = 0; i < c->g->nmembers; i++) {
		char hex[MT_SHA256_HEX];
		const mti_pmember *mb = &c->g->members[i];
		int rc = mti_sha256_final(c->h[i], hex, err);
		if (rc)
			return rc;
		if (strcmp(hex, mb->sha256) != 0)
			return mti_err(err, MT_ECORRUPT, "%s@%s: %s %zu (%.12s...) is damaged: its "
				      "bytes hash to %.12s...; nothing was protected (repair it "
				      "first)", c->p->dataset, c->p->version,
				      c->frags ? "fragment" : "shard", mb->shard, mb->sha256, hex);
	}
	return 0;
}

static int pv_tick(pv *p, uint64_t n)
{
	p->done += n;
	p->st.bytes_read += n;
	if (p->o.progress && p->o.progress(p->o.progress_ud, p->done, p->total))
		return 1;
	return 0;
}

/* Read the members piece by piece, coding each piece into the parity. */
static int pv_code_pieces(struct pv_code *c, mt_error *err)
{
	pv *p = c->p;
	int rc = 0;
	for (c->off = 0; !rc && c->off < c->g->stripe; c->off += c->n) {
		uint64_t left = c->g->stripe - c->off;
		c->n = left < PIECE_BYTES ? (size_t)left : PIECE_BYTES;
		rc = mti_parallel_for(p->o.threads, c->g->nmembers, pv_read_job, c);
		if (rc)
			return pv_first_error(c, rc, c->g->nmembers, err);
		uint8_t *out[MTI_PARITY_MAX_M];
		for (int r = 0; r < p->o.m; r++)
			out[r] = c->par[r] + c->off;
		rc = mti_parity_encode(p->o.k, p->o.m, p->rec->matrix, c->g->nmembers,
				       (const uint8_t *const *)c->in, c->n, out, p->o.threads, err);
		uint64_t read = 0;
		for (size_t i = 0; i < c->g->nmembers; i++)
			read += c->off >= c->g->members[i].bytes ? 0
				: c->g->members[i].bytes - c->off < c->n
					? c->g->members[i].bytes - c->off : c->n;
		if (!rc && pv_tick(p, read))
			rc = mti_err(err, MT_ECANCELED, "protecting %s@%s: canceled", p->dataset,
				    p->version);
	}
	if (!rc)
		rc = pv_check_members(c, err);
	if (!rc && (rc = mti_parallel_for(p->o.threads, (size_t)p->o.m, pv_hash_job, c)))
		rc = pv_first_error(c, rc, (size_t)(p->o.k + p->o.m), err);
	return rc;
}

/* Pin a parity object, then send it unless the store holds it already
 * (doc/FORMAT.md, "Writers and gc"). */
static int pv_put_parity(pv *p, const mti_pparity *pp, const uint8_t *data, mt_error *err)
{
	char *key = mti_key_parity(p->dataset, pp->sha256);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	int rc = mti_dlock_pin_keys(p->lock, (const char *const *)&key, 1, err);
	if (!rc)
		rc = mti_dlock_wait_gc(p->lock, err);
	uint64_t have = 0;
	mt_error ignored;
	if (!rc && mti_store_head(p->s, key, &have, NULL, &ignored) == 0 && have == pp->bytes) {
		p->st.parity_present++;
		free(key);
		return 0;
	}
	if (!rc)
		rc = mti_store_put(p->s, key, data, (size_t)pp->bytes, MT_PUT_NOSYNC, err);
	char **w = rc ? NULL : realloc(p->written, (p->nwritten + 1) * sizeof *w);
	if (!rc && !w)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (rc) {
		free(key);
		return rc;
	}
	p->written = w;
	p->written[p->nwritten++] = key;
	p->st.parity_written++;
	p->st.bytes_written += pp->bytes;
	return 0;
}

static int pv_code_group(pv *p, mti_pgroup *g, int frags, mt_error *err)
{
	struct pv_code c = {.p = p, .g = g, .frags = frags};
	size_t piece = g->stripe < PIECE_BYTES ? (size_t)g->stripe : PIECE_BYTES;
	int rc = 0;
	for (size_t i = 0; !rc && i < g->nmembers; i++)
		if (!(c.in[i] = malloc(piece ? piece : 1)) || mti_sha256_new(&c.h[i], err))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	for (int r = 0; !rc && r < p->o.m; r++)
		if (!(c.par[r] = malloc(g->stripe ? (size_t)g->stripe : 1)))
			rc = mti_err(err, MT_ENOMEM, "%s@%s: out of memory for %llu bytes of parity",
				    p->dataset, p->version, (unsigned long long)g->stripe);
	if (!rc)
		rc = pv_code_pieces(&c, err);
	for (int r = 0; !rc && r < p->o.m; r++) {
		g->parity[r].bytes = g->stripe;
		rc = pv_put_parity(p, &g->parity[r], c.par[r], err);
	}
	for (size_t i = 0; i < g->nmembers; i++) {
		free(c.in[i]);
		mti_sha256_free(c.h[i]);
	}
	for (int r = 0; r < p->o.m; r++)
		free(c.par[r]);
	return rc;
}

/* ---- planning the groups --------------------------------------------------- */

/* Member i of the version: shard i, or (frags) fragment i. */
static void pv_member(const pv *p, int frags, size_t i, const char **sha256, uint64_t *bytes)
{
	*sha256 = frags ? p->man->frags[i].sha256 : p->man->shards[i].sha256;
	*bytes = frags ? p->man->frags[i].bytes : p->man->shards[i].bytes;
}

static size_t pv_members(const pv *p, int frags)
{
	return frags ? p->man->nfrags : p->man->nshards;
}

static int pv_group_alloc(pv *p, mti_pgroup *g, size_t first, size_t n, int frags)
{
	g->nmembers = n;
	g->members = calloc(n, sizeof *g->members);
	g->parity = calloc((size_t)p->o.m, sizeof *g->parity);
	if (!g->members || !g->parity)
		return MT_ENOMEM;
	g->stripe = 0;
	for (size_t i = 0; i < n; i++) {
		const char *sha;
		uint64_t bytes;
		pv_member(p, frags, first + i, &sha, &bytes);
		g->members[i].shard = first + i;
		memcpy(g->members[i].sha256, sha, 65);
		g->members[i].bytes = bytes;
		g->stripe = bytes > g->stripe ? bytes : g->stripe;
	}
	return 0;
}

/* A group of another record (the parent's, or this version's own that is
 * replaced) whose members are this version's at the same places, full or
 * ending at this version's last member, and whose parity objects are all
 * there: parity is a function of the members alone, so it is this
 * version's too. */
static int pv_reusable(pv *p, const mti_pgroup *pg, int frags)
{
	size_t total = pv_members(p, frags);
	if (!pg->nmembers || (pg->nmembers != (size_t)p->o.k &&
			      pg->members[pg->nmembers - 1].shard + 1 != total))
		return 0;
	for (size_t i = 0; i < pg->nmembers; i++) {
		const mti_pmember *mb = &pg->members[i];
		const char *sha;
		uint64_t bytes;
		if (mb->shard >= total)
			return 0;
		pv_member(p, frags, mb->shard, &sha, &bytes);
		if (strcmp(mb->sha256, sha) || mb->bytes != bytes)
			return 0;
	}
	mt_error e;
	for (int r = 0; r < p->o.m; r++) {
		char *key = mti_key_parity(p->dataset, pg->parity[r].sha256);
		uint64_t have = 0;
		int ok = key && mti_dlock_pin_keys(p->lock, (const char *const *)&key, 1, &e) == 0 &&
			 mti_dlock_wait_gc(p->lock, &e) == 0 &&
			 mti_store_head(p->s, key, &have, NULL, &e) == 0 && have == pg->parity[r].bytes;
		free(key);
		if (!ok)
			return 0;
	}
	return 1;
}

/* The groups of pr (shard groups, or fragment groups) this version starts
 * with, when pr has the same k+m: into *dst (*n of them); *from gets the
 * first member left to code. */
static int pv_reuse(pv *p, const mti_prec *pr, int frags, mti_pgroup *dst, size_t *n,
		    size_t *from, mt_error *err)
{
	if (!pr || pr->k != p->o.k || pr->m != p->o.m)
		return 0;
	const mti_pgroup *src = frags ? pr->fgroups : pr->groups;
	size_t nsrc = frags ? pr->nfgroups : pr->ngroups;
	for (size_t g = 0; g < nsrc && src[g].members[0].shard == *from &&
			   pv_reusable(p, &src[g], frags); g++) {
		if (pv_group_alloc(p, &dst[*n], *from, src[g].nmembers, frags))
			return mti_err(err, MT_ENOMEM, "out of memory");
		memcpy(dst[(*n)++].parity, src[g].parity, (size_t)p->o.m * sizeof *dst->parity);
		*from += src[g].nmembers;
		p->st.groups_reused++;
	}
	return 0;
}

/* The groups over the version's shards (frags 0) or fragments (frags 1):
 * those of the record replaced or else the parent's that still fit, then
 * new ones for the rest. */
static int pv_plan_groups(pv *p, const mti_prec *parent, int frags, mt_error *err)
{
	size_t k = (size_t)p->o.k, total = pv_members(p, frags), most = total / k + 1, from = 0;
	mti_pgroup *gs = calloc(most, sizeof *gs);
	size_t *n = frags ? &p->rec->nfgroups : &p->rec->ngroups;
	if (!gs)
		return mti_err(err, MT_ENOMEM, "out of memory");
	if (frags)
		p->rec->fgroups = gs;
	else
		p->rec->groups = gs;
	int rc = pv_reuse(p, p->stale, frags, gs, n, &from, err);
	if (!rc && !from)
		rc = pv_reuse(p, parent, frags, gs, n, &from, err);
	for (; !rc && from < total; from += k) {
		size_t cnt = total - from < k ? total - from : k;
		if (pv_group_alloc(p, &gs[(*n)++], from, cnt, frags))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
		for (size_t i = 0; !rc && i < cnt; i++) {
			const char *sha;
			uint64_t bytes;
			pv_member(p, frags, from + i, &sha, &bytes);
			p->total += bytes;
		}
	}
	return rc;
}

static int pv_plan(pv *p, mt_error *err)
{
	mti_prec *r = p->rec = calloc(1, sizeof *r);
	size_t k = (size_t)p->o.k;
	if (!r || !(r->dataset = mti_strdup(p->dataset)) || !(r->version = mti_strdup(p->version)) ||
	    !(r->matrix = malloc(k * (size_t)p->o.m)) || !(r->manifest = mti_strdup(p->json)))
		return mti_err(err, MT_ENOMEM, "out of memory");
	r->format = p->man->format == 2 ? 2 : 1;
	r->k = p->o.k;
	r->m = p->o.m;
	r->manifest_len = strlen(p->json);
	mti_parity_matrix(r->k, r->m, r->matrix);
	mti_prec *parent = NULL;
	mt_error e;
	if (p->man->parent[0] && mti_prec_load(p->s, p->dataset, p->man->parent, &parent, &e))
		parent = NULL;
	int rc = pv_plan_groups(p, parent, 0, err);
	/* A format-2 root names fragments: they are coded as shards are. */
	if (!rc && r->format == 2)
		rc = pv_plan_groups(p, parent, 1, err);
	mti_prec_free(parent);
	p->st.groups = r->ngroups + r->nfgroups;
	return rc;
}

/* ---- the whole job ----------------------------------------------------------- */

/* The version's manifest, read once its name is pinned: gc keeps its
 * shards from then on. */
static int pv_load(pv *p, const char *version, mt_error *err)
{
	mt_manifest *m = NULL;
	int latest = !version || !*version || strcmp(version, "latest") == 0;
	int rc = latest ? mti_dataset_load(p->s, p->dataset, NULL, &m, NULL, err) : 0;
	if (!rc && !(p->version = mti_strdup(latest ? m->version : version)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	mti_manifest_free(m);
	if (!rc)
		rc = mti_dlock_open(p->s, p->dataset, MT_LOCK_WRITE, &p->lock, err);
	if (!rc)
		rc = mti_dlock_pin_version(p->lock, p->version, err);
	if (!rc)
		rc = mti_dlock_wait_gc(p->lock, err);
	/* Every fragment of a format-2 root is loaded (and checked) too. */
	if (!rc)
		rc = mti_dataset_load(p->s, p->dataset, p->version, &p->man, &p->json, err);
	return rc;
}

/* The record being replaced, when it still decodes on its own (its
 * manifest another text, as after `matorage upgrade`): its groups whose
 * members are still this version's need no coding again. */
static void pv_stale(pv *p)
{
	char *key = mti_key_protect(p->dataset, p->version);
	void *data = NULL;
	size_t len = 0;
	mt_error e = {0};
	if (key && !mti_store_get_max(p->s, key, MT_MANIFEST_MAX_BYTES, &data, &len, &e) &&
	    !mti_prec_decode(data, len, key, &p->stale, &e) &&
	    (strcmp(p->stale->dataset, p->dataset) || strcmp(p->stale->version, p->version))) {
		mti_prec_free(p->stale);
		p->stale = NULL;
	}
	free(data);
	free(key);
}

/* 1 when the version has a record with this k+m, 0 when it has none.  A
 * record that fails its checks protects nothing: it is replaced, as a
 * repair with no sound copy of it elsewhere advises. */
static int pv_existing(pv *p, mt_error *err)
{
	mti_prec *r = NULL;
	mt_error e = {0};
	int rc = mti_prec_load(p->s, p->dataset, p->version, &r, &e);
	p->replace = rc == MT_ECORRUPT || rc == MT_EFORMAT;
	if (p->replace && !p->stale)
		pv_stale(p);
	if (rc == MT_ENOTFOUND || p->replace)
		return 0;
	if (rc)
		return mti_err_copy(err, &e);
	int same = r->k == p->o.k && r->m == p->o.m;
	if (!same)
		rc = mti_err(err, MT_EEXIST, "%s@%s is already protected with %d+%d parity, not "
			    "%d+%d (a protection record is never replaced)", p->dataset,
			    p->version, r->k, r->m, p->o.k, p->o.m);
	mti_prec_free(r);
	return rc ? rc : 1;
}

/* The commit point: parity durable, lock still ours, record created. */
static int pv_commit(pv *p, mt_error *err)
{
	int rc = p->nwritten ? p->s->ops->sync(p->s, (const char *const *)p->written, p->nwritten,
					       err)
			     : 0;
	if (!rc)
		rc = mti_dlock_check(p->lock, err);
	char *key = mti_key_protect(p->dataset, p->version), *json = NULL;
	if (!rc && (!key || !(p->rec->created = mti_now_rfc3339())))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	/* Pinned like every object a writer adds: a gc that listed the records
	 * before this one exists must not take it for a removed version's. */
	if (!rc)
		rc = mti_dlock_pin_keys(p->lock, (const char *const *)&key, 1, err);
	if (!rc)
		rc = mti_dlock_wait_gc(p->lock, err);
	if (!rc)
		rc = mti_prec_encode(p->rec, &json, err);
	if (!rc)
		rc = mti_store_put(p->s, key, json, strlen(json), p->replace ? 0 : MT_PUT_EXCLUSIVE,
				   err);
	/* Another protect of the same version got there first. */
	if (rc == MT_EEXIST) {
		rc = pv_existing(p, err);
		p->st.already = rc == 1;
		rc = rc == 1 ? 0 : rc ? rc : MT_EEXIST;
	}
	free(json);
	free(key);
	return rc;
}

static int pv_run(pv *p, const char *version, mt_error *err)
{
	int rc = pv_load(p, version, err);
	int have = rc ? rc : pv_existing(p, err);
	if (have)
		p->st.already = have == 1;
	if (have)
		return have == 1 ? 0 : have;
	/* Parity over shards no one can read would protect nothing. */
	rc = mti_version_sound(p->s, p->dataset, p->version, "protect", err);
	if (!rc)
		rc = pv_plan(p, err);
	/* Reused groups have their parity: only the others are coded. */
	for (size_t g = 0; !rc && g < p->rec->ngroups; g++)
		if (!p->rec->groups[g].parity[0].sha256[0])
			rc = pv_code_group(p, &p->rec->groups[g], 0, err);
	for (size_t g = 0; !rc && g < p->rec->nfgroups; g++)
		if (!p->rec->fgroups[g].parity[0].sha256[0])
			rc = pv_code_group(p, &p->rec->fgroups[g], 1, err);
	if (!rc)
		rc = pv_commit(p, err);
	return rc;
}

static int pv_args(pv *p, const char *dataset, const char *version, const mt_protect_opts *o,
		   mt_error *err)
{
	mt_protect_opts_init(&p->o);
	int rc = mt_name_check(dataset, "dataset", err);
	if (!rc && version && *version && strcmp(version, "latest"))
		rc = mt_name_check(version, "version", err);
	if (!rc && o)
		rc = mti_opts_take(&p->o, sizeof p->o, o, PROTECT_OPTS_FIRST, "mt_protect_opts", err);
	if (rc)
		return rc;
	if (p->o.k < 1 || p->o.k > MTI_PARITY_MAX_K || p->o.m < 1 || p->o.m > MTI_PARITY_MAX_M)
		return mti_err(err, MT_EINVAL, "parity %d+%d: K must be 1 to %d and M 1 to %d",
			      p->o.k, p->o.m, MTI_PARITY_MAX_K, MTI_PARITY_MAX_M);
	if (p->o.threads <= 0)
		p->o.threads = mti_ncpus();
	return 0;
}

/* Everything one run of pv_run made, freed: the next run starts over. */
static void pv_clear(pv *p)
{
	mti_dlock_close(p->lock);
	mti_manifest_free(p->man);
	mti_prec_free(p->rec);
	mti_prec_free(p->stale);
	mt_strv_free(p->written, p->nwritten);
	free(p->json);
	p->lock = NULL;
	p->man = NULL;
	p->rec = p->stale = NULL;
	p->written = NULL;
	p->nwritten = 0;
	p->json = NULL;
	p->replace = 0;
	memset(&p->st, 0, sizeof p->st);
}

/* After the record is written: 0 when the version's manifest is still the
 * text it was coded for, 1 when another text replaced it meanwhile (an
 * upgrade that read no record before this one existed: its root is then
 * the manifest, and the record must be written again for it).  The record
 * is written before this read, and an upgrade reads the record after its
 * root is written, so of two that race one sees the other's write. */
static int pv_recheck(pv *p, mt_error *err)
{
	char *key = mti_key_manifest(p->dataset, p->version);
	void *data = NULL;
	size_t len = 0;
	int rc = key ? mti_store_get_max(p->s, key, MT_MANIFEST_MAX_BYTES, &data, &len, err)
		     : mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc && (len != strlen(p->json) || memcmp(data, p->json, len)))
		rc = 1;
	free(data);
	free(key);
	return rc;
}

/* Giving up: the record this protect wrote names a manifest the version
 * no longer has, so it is taken away again (unless something has written
 * another record since): the version is then unprotected, never protected
 * by a record of another text. */
static void pv_withdraw(pv *p)
{
	char *key = mti_key_protect(p->dataset, p->version);
	void *data = NULL;
	size_t len = 0;
	mti_prec *r = NULL;
	mt_error e = {0};
	if (key && !mti_store_get_max(p->s, key, MT_MANIFEST_MAX_BYTES, &data, &len, &e) &&
	    !mti_prec_decode(data, len, key, &r, &e) && r->manifest_len == strlen(p->json) &&
	    !memcmp(r->manifest, p->json, r->manifest_len))
		mti_store_del(p->s, (const char *const *)&key, 1, &e);
	mti_prec_free(r);
	free(data);
	free(key);
}

/* An upgrade replaces a manifest once (format 1 to 2), so a second run
 * meets the same text; more runs than this mean something rewrites it. */
#define PROTECT_RUNS 3

int mt_protect(mt_store *s, const char *dataset, const char *version, const mt_protect_opts *o,
	       mt_error *err)
{
	pv p = {.s = s, .dataset = dataset};
	int rc = pv_args(&p, dataset, version, o, err);
	for (int run = 0; !rc; run++) {
		if (run == PROTECT_RUNS) {
			pv_withdraw(&p);
			rc = mti_err(err, MT_ESTATE, "%s@%s: its manifest was replaced each of the %d "
				     "times it was protected, so it is left unprotected (matorage "
				     "protect %s@%s again, once nothing rewrites it)", dataset,
				     p.version, PROTECT_RUNS, dataset, p.version);
			break;
		}
		/* Again for the version found the first time (not `latest` again). */
		char *again = run ? p.version : NULL;
		if (run) {
			pv_clear(&p);
			p.version = NULL;
		}
		rc = pv_run(&p, run ? again : version, err);
		free(again);
		if (!rc && (rc = pv_recheck(&p, err)) != 1)
			break;
		rc = rc == 1 ? 0 : rc;
	}
	if (rc && rc != MT_ENOMEM && p.version && !strstr(err ? err->message : "", p.version))
		mti_err_prefix(err, "protecting %s@%s: ", dataset, p.version);
	if (p.o.stats)
		*p.o.stats = p.st;
	pv_clear(&p);
	free(p.version);
	return rc;
}

int mt_protect_info(mt_store *s, const char *dataset, const char *version, mt_protection *out,
		    mt_error *err)
{
	memset(out, 0, sizeof *out);
	mt_manifest *m = NULL;
	int latest = !version || !*version || strcmp(version, "latest") == 0;
	int rc = mt_name_check(dataset, "dataset", err);
	if (!rc)
		rc = latest ? mti_dataset_load(s, dataset, NULL, &m, NULL, err)
			    : mt_name_check(version, "version", err);
	mti_prec *p = NULL;
	if (!rc)
		rc = mti_prec_load(s, dataset, latest ? m->version : version, &p, err);
	char *key = rc ? NULL : mti_key_protect(dataset, p->version);
	if (!rc)
		rc = key ? mti_store_head(s, key, &out->record_bytes, NULL, err)
			 : mti_err(err, MT_ENOMEM, "out of memory");
	/* Fragments count as data, as shards do. */
	for (size_t g = 0; !rc && g < p->ngroups + p->nfgroups; g++) {
		const mti_pgroup *pg = g < p->ngroups ? &p->groups[g] : &p->fgroups[g - p->ngroups];
		for (size_t i = 0; i < pg->nmembers; i++)
			out->data_bytes += pg->members[i].bytes;
		out->parity_bytes += pg->stripe * (uint64_t)p->m;
	}
	if (!rc) {
		out->k = p->k;
		out->m = p->m;
		out->groups = p->ngroups + p->nfgroups;
		out->parity_objects = mti_prec_nparity(p);
	}
	free(key);
	mti_prec_free(p);
	mti_manifest_free(m);
	return rc;
}
