/* reader.c — read rows of a version straight from shard chunks (no HDF5): chunk index, ranged reads, xxh3, zstd. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "pool.h"
#include "protect.h"
#include "reader.h"

/* Run buffers of every read of one reader at once (run_room): the loader
 * reads two windows at a time far away, each as many runs as before. */
#define READER_INFLIGHT (32u << 20)
/* Far away, the room grows with the latency: by READER_INFLIGHT for every
 * ROOM_LATENCY of it, up to ROOM_MAX.  A request's buffer is held for its
 * round trip, its transfer and its decode, so at 100 ms the runs of 32 MiB
 * went out in rounds of four that each waited out the latency (an epoch of
 * 62 MB shards took 1.05 s against 0.42 s without it, and 0.73 s with
 * 128 MiB).  The memory follows the latency, not a guess at the bandwidth:
 * a link slower than READER_INFLIGHT per ROOM_LATENCY only holds more than
 * it needed. */
#define ROOM_LATENCY 0.025
#define ROOM_MAX (128u << 20)

static int reader_setup(mt_reader *r, mt_reader **out, mt_error *err);

static mt_reader *reader_new(mt_store *s)
{
	mt_reader *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->frag_lock, NULL);
	pthread_cond_init(&r->ix_done, NULL);
	pthread_cond_init(&r->room_freed, NULL);
	r->store = s;
	r->threads = mti_ncpus();
	r->room = READER_INFLIGHT;
	r->cache = mti_ccache_global();
	return r;
}

int mt_reader_open(mt_store *s, const char *dataset, const char *version, mt_reader **out,
		   mt_error *err)
{
	return mti_reader_open_as(s, dataset, version, MTI_OPEN_META, out, err);
}

int mt_reader_open_lazy(mt_store *s, const char *dataset, const char *version, mt_reader **out,
			mt_error *err)
{
	return mti_reader_open_as(s, dataset, version, MTI_OPEN_META | MTI_OPEN_LAZY, out, err);
}

/* ---- format 2: fragments read when their rows or shards are first wanted ----
 * A lazy reader holds the root alone at open; every entry point that
 * touches shard entries asks for the fragments holding them first, and
 * their shards' keys are made then.  An eager one loaded them all. */

/* The cache's name of a fragment's key ("<sha256>.json"), NULL for other keys. */
static const char *frag_cache_name(const char *key)
{
	const char *b = strrchr(key, '/');
	if (!b || b - key < 10 || strncmp(b - 10, "/fragments", 10) || strlen(b + 1) != 69 ||
	    strcmp(b + 65, ".json"))
		return NULL;
	return strspn(b + 1, "0123456789abcdef") == 64 ? b + 1 : NULL;
}

/* A fragment through the meta cache: taken when its bytes have the sha256
 * its name says; else read from the store and kept.  What the store gave is
 * kept unhashed: the fragment's decoding checks its sha256 next (a wrong
 * one fails the read), and a wrong entry is never taken from the cache. */
static int reader_get_fn(void *ud, const char *key, uint64_t max, void **data, size_t *got,
			 mt_error *err)
{
	mt_reader *r = ud;
	const char *name = r->meta ? frag_cache_name(key) : NULL;
	char sha[MT_SHA256_HEX];
	mt_error e = {0};
	if (name && (*data = mti_meta_cache_get(r->meta, name, got))) {
		if (*got <= max && !mti_sha256_hex(*data, *got, sha, &e) && !strncmp(sha, name, 64))
			return 0;
		free(*data);
		*data = NULL;
	}
	int rc = mti_store_get_fn(r->store, key, max, data, got, err);
	if (!rc && name)
		mti_meta_cache_put(r->meta, name, *data, *got);
	return rc;
}

void mti_reader_set_meta_cache(mt_reader *r, mti_meta_cache *c)
{
	mti_meta_cache_close(r->meta);
	r->meta = c;
}

static int reader_frags(mt_reader *r, size_t f0, size_t f1, mt_error *err)
{
	mt_manifest *m = r->m;
	pthread_mutex_lock(&r->frag_lock);
	int rc = mti_manifest_load_frags(m, f0, f1, reader_get_fn, r, err);
	for (size_t f = f0; !rc && f < f1 && f < m->nfrags; f++) {
		size_t end = m->frags[f].first_shard + m->frags[f].nshards;
		/* Keys are made in shard order and the loop stops at the first
		 * failure, so a fragment whose last key exists has them all: a
		 * caller walking every shard (mt_reader_shard) pays one check per
		 * shard, not one per shard of its fragment. */
		if (end > m->frags[f].first_shard && r->keys[end - 1])
			continue;
		for (size_t i = m->frags[f].first_shard; !rc && i < end; i++)
			if (!r->keys[i] && !(r->keys[i] = mti_key_shard(m->dataset, m->shards[i].sha256)))
				rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	pthread_mutex_unlock(&r->frag_lock);
	return rc;
}

/* The fragments of shards [s0, s1). */
int mti_reader_need_shards(mt_reader *r, size_t s0, size_t s1, mt_error *err)
{
	const mt_manifest *m = r->m;
	if (!m->nfrags || s0 >= s1 || s0 >= m->nshards)
		return 0;
	return reader_frags(r, mti_manifest_frag_of_shard(m, s0),
			    mti_manifest_frag_of_shard(m, s1 - 1) + 1, err);
}

/* The fragments of rows [a, b). */
static int reader_need_rows(mt_reader *r, uint64_t a, uint64_t b, mt_error *err)
{
	const mt_manifest *m = r->m;
	if (!m->nfrags || a >= b)
		return 0;
	return reader_frags(r, mti_manifest_frag_of_row(m, a), mti_manifest_frag_of_row(m, b - 1) + 1,
			    err);
}

/* Fragment f's shards from the root's layout, without reading it. */
static int frag_runs(const mt_mfrag *f, mti_shard_rows_fn fn, void *ud, mt_error *err)
{
	uint64_t row = f->first_row;
	int rc = 0;
	for (size_t k = 0; !rc && k < f->nlayout; k++)
		for (uint64_t j = 0; !rc && j < f->layout[k].shards; j++, row += f->layout[k].rows)
			rc = fn(ud, row, f->layout[k].rows, err);
	return rc;
}

int mti_reader_each_shard(mt_reader *r, mti_shard_rows_fn fn, void *ud, mt_error *err)
{
	const mt_manifest *m = r->m;
	int rc = 0;
	for (size_t i = 0; !rc && !m->nfrags && i < m->nshards; i++)
		rc = fn(ud, m->shards[i].first_row, m->shards[i].rows, err);
	for (size_t f = 0; !rc && f < m->nfrags; f++) {
		const mt_mfrag *fr = &m->frags[f];
		if (fr->nlayout && !fr->loaded) {
			rc = frag_runs(fr, fn, ud, err);
			continue;
		}
		rc = reader_frags(r, f, f + 1, err);
		for (size_t i = fr->first_shard; !rc && i < fr->first_shard + fr->nshards; i++)
			rc = fn(ud, m->shards[i].first_row, m->shards[i].rows, err);
	}
	return rc;
}

int mti_reader_open_as(mt_store *s, const char *dataset, const char *version, int with_meta,
		       mt_reader **out, mt_error *err)
{
	*out = NULL;
	mt_reader *r = reader_new(s);
	if (!r)
		return mti_err(err, MT_ENOMEM, "out of memory");
	r->lazy = (with_meta & MTI_OPEN_LAZY) != 0;
	int rc = mti_dataset_open(s, dataset, version, with_meta, &r->m, &r->json, err);
	if (rc) {
		mt_reader_close(r);
		return rc;
	}
	return reader_setup(r, out, err);
}

int mti_reader_open_manifest(mt_store *s, mt_manifest *m, char *json, mt_reader **out,
			     mt_error *err)
{
	*out = NULL;
	mt_reader *r = reader_new(s);
	if (!r) {
		mti_manifest_free(m);
		free(json);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	r->lazy = 1;
	r->m = m;
	r->json = json;
	return reader_setup(r, out, err);
}

const char *mti_reader_json(const mt_reader *r)
{
	return r->json;
}

/* The version's manifest is gone: its protection record's copy, for a
 * version that was not removed (its tombstone says it was). */
static int reader_lost_manifest(mt_reader *r, const char *dataset, const char *version,
				mt_error *err)
{
	int rc = mt_name_check(dataset, "dataset", err);
	if (!rc && (!version || !*version))
		rc = mti_err(err, MT_EINVAL, "dataset %s: a lost version is opened by its name",
			     dataset);
	mt_error e = {0};
	if (!rc && (rc = mti_dataset_removed(r->store, dataset, version, &e)) == MT_EEXIST)
		rc = mti_err(err, MT_ENOTFOUND, "%s@%s was removed", dataset, version);
	else if (rc)
		rc = mti_err_copy(err, &e);
	mti_prec *p = NULL;
	if (!rc)
		rc = mti_prec_load(r->store, dataset, version, &p, err);
	if (!rc)
		rc = mti_manifest_decode(p->manifest, p->manifest_len, "protection record's manifest",
					 &r->m, err);
	if (!rc)
		rc = mti_manifest_load_frags(r->m, 0, r->m->nfrags, mti_store_get_fn, r->store, err);
	if (!rc && !(r->json = malloc(p->manifest_len + 1)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc) {
		memcpy(r->json, p->manifest, p->manifest_len);
		r->json[p->manifest_len] = '\0';
	}
	mti_prec_free(p);
	return rc;
}

int mt_reader_open_lost(mt_store *s, const char *dataset, const char *version, mt_reader **out,
			mt_error *err)
{
	*out = NULL;
	mt_reader *r = reader_new(s);
	if (!r)
		return mti_err(err, MT_ENOMEM, "out of memory");
	int rc = reader_lost_manifest(r, dataset, version, err);
	if (rc) {
		mt_reader_close(r);
		return rc;
	}
	return reader_setup(r, out, err);
}

/* The reader's tables, from its manifest r->m. */
static int reader_setup(mt_reader *r, mt_reader **out, mt_error *err)
{
	mt_store *s = r->store;
	int rc = 0;
	mt_manifest *m = r->m;
	r->keys = calloc(m->nshards ? m->nshards : 1, sizeof *r->keys);
	r->ix = calloc(m->nshards ? m->nshards : 1, sizeof *r->ix);
	r->ix_busy = calloc(m->nshards ? m->nshards : 1, 1);
	r->offs_ok = calloc(m->nshards ? m->nshards : 1, 1);
	r->whole = calloc(m->nshards ? m->nshards : 1, sizeof *r->whole);
	r->tags = calloc(m->ntags ? m->ntags : 1, sizeof *r->tags);
	if (!r->keys || !r->ix || !r->ix_busy || !r->offs_ok || !r->tags || !r->whole)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_heal_new(s, m, &r->heal, err);
	for (size_t i = 0; !rc && !m->nfrags && i < m->nshards; i++)
		if (!(r->keys[i] = mti_key_shard(m->dataset, m->shards[i].sha256)))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc && !r->lazy)
		rc = mti_reader_need_shards(r, 0, m->nshards, err);
	if (rc) {
		mt_reader_close(r);
		return rc;
	}
	uint64_t stored = 0;
	for (size_t i = 0; !m->nfrags && i < m->nshards; i++)
		stored += m->shards[i].bytes;
	for (size_t f = 0; f < m->nfrags; f++)
		stored += m->frags[f].shard_bytes;
	for (size_t i = 0; i < m->ntags; i++)
		r->tags[i] = m->tags[i];
	r->info = (mt_version_info){
		.dataset = m->dataset, .version = m->version, .parent = m->parent,
		.author = m->author, .description = m->description, .created = m->created,
		.tags = r->tags, .ntags = m->ntags, .rows = m->rows, .nshards = m->nshards,
		.stored_bytes = stored, .raw_bytes = m->raw_bytes, .level = m->level,
		.recipe = m->recipe, .recipe_args = (const char *const *)m->recipe_args,
		.nrecipe_args = m->nrecipe_args,
	};
	*out = r;
	return 0;
}

void mti_reader_set_threads(mt_reader *r, int threads)
{
	r->threads = threads > 0 ? threads : mti_ncpus();
}

void mti_reader_set_cache(mt_reader *r, mti_ccache *cache, int keep_all)
{
	r->cache = cache;
	r->keep_all = keep_all;
}

void mti_reader_cache_stats(const mt_reader *r, mt_cache_stats *out)
{
	mti_ccache_stats(r->cache, out);
}

/* What the reader holds for shards [a, b): their keys, chunk indexes and
 * objects read whole. */
static void shards_free(mt_reader *r, size_t a, size_t b)
{
	for (size_t i = a; i < b; i++) {
		if (r->keys)
			free(r->keys[i]);
		if (r->ix)
			mti_index_free(r->ix[i]);
		if (r->whole)
			free(r->whole[i].data);
	}
}

void mt_reader_close(mt_reader *r)
{
	if (!r)
		return;
	const mt_manifest *m = r->m;
	/* Of a format-2 version only the shards of loaded fragments hold
	 * anything (nothing is read without the key a fragment gives): walking
	 * all of a million-shard version's arrays faulted in 50 MB of zero
	 * pages and took 0.3 s of an `info` that read one root. */
	for (size_t f = 0; m && m->nfrags && f < m->nfrags; f++)
		if (m->frags[f].loaded)
			shards_free(r, m->frags[f].first_shard,
				    m->frags[f].first_shard + m->frags[f].nshards);
	if (m && !m->nfrags)
		shards_free(r, 0, m->nshards);
	free(r->whole);
	free(r->keys);
	free(r->ix);
	free(r->ix_busy);
	free(r->offs_ok);
	free(r->tags);
	mti_heal_free(r->heal);
	mti_meta_cache_close(r->meta);
	free(r->json);
	mti_manifest_free(r->m);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->frag_lock);
	pthread_cond_destroy(&r->ix_done);
	pthread_cond_destroy(&r->room_freed);
	free(r);
}

const mt_version_info *mt_reader_info(const mt_reader *r)
{
	return &r->info;
}

size_t mt_reader_nsources(const mt_reader *r)
{
	return r->m->nsources;
}

const mt_source *mt_reader_source(const mt_reader *r, size_t i)
{
	return i < r->m->nsources ? &r->m->sources[i] : NULL;
}

size_t mt_reader_nattrs(const mt_reader *r)
{
	return r->m->nattrs;
}

const mt_attr *mt_reader_attr(const mt_reader *r, size_t i)
{
	return i < r->m->nattrs ? &r->m->attrs[i] : NULL;
}

int mt_reader_attr_index(const mt_reader *r, const char *name)
{
	for (size_t i = 0; i < r->m->nattrs; i++)
		if (strcmp(r->m->attrs[i].name, name) == 0)
			return (int)i;
	return MT_ENOTFOUND;
}

int mt_reader_shard(const mt_reader *r, size_t i, mt_shard_info *out)
{
	mt_error e = {0};
	return mt_reader_shard_err(r, i, out, &e);
}

int mt_reader_shard_err(const mt_reader *r, size_t i, mt_shard_info *out, mt_error *err)
{
	if (i >= r->m->nshards)
		return mti_err(err, MT_ERANGE, "%s@%s: shard %zu of %zu", r->m->dataset,
			      r->m->version, i, r->m->nshards);
	/* Loading a fragment changes nothing a caller sees of r but its cost. */
	int rc = mti_reader_need_shards((mt_reader *)(uintptr_t)r, i, i + 1, err);
	if (rc)
		return rc;
	const mt_mshard *s = &r->m->shards[i];
	*out = (mt_shard_info){s->sha256, r->keys[i], s->bytes, s->rows, s->first_row};
	return 0;
}

const char *mt_reader_manifest(const mt_reader *r)
{
	return r->json;
}

int mt_reader_recipe(mt_reader *r, char **script, size_t *len, mt_error *err)
{
	*script = NULL;
	*len = 0;
	const mt_manifest *m = r->m;
	if (!m->recipe[0])
		return mti_err(err, MT_ENOTFOUND, "%s@%s has no recipe", m->dataset, m->version);
	char *key = mti_key_recipe(m->dataset, m->recipe);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	void *data = NULL;
	size_t got = 0;
	char sha[MT_SHA256_HEX];
	int rc = mti_store_get(r->store, key, 0, UINT64_MAX, &data, &got, err);
	if (!rc)
		rc = mti_sha256_hex(data, got, sha, err);
	if (!rc && strcmp(sha, m->recipe) != 0)
		rc = mti_err(err, MT_ECORRUPT, "%s: sha256 is %s, the manifest of %s@%s says %s",
			    key, sha, m->dataset, m->version, m->recipe);
	char *text = rc ? NULL : realloc(data, got + 1);
	if (!rc && !text)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (rc) {
		free(data);
	} else {
		text[got] = 0;
		*script = text;
		*len = got;
	}
	free(key);
	return rc;
}

/* Shard i's object read whole, held until whole_unref; NULL when it is not. */
static const uint8_t *whole_ref(mt_reader *r, size_t i)
{
	pthread_mutex_lock(&r->lock);
	const uint8_t *d = r->whole[i].data;
	if (d)
		r->whole[i].refs++;
	pthread_mutex_unlock(&r->lock);
	return d;
}

/* Free shard i's whole object: now when nothing slices it, else when the last does. */
static void whole_free_locked(mt_reader *r, size_t i)
{
	struct whole *w = &r->whole[i];
	if (w->data && w->dropped && !w->refs) {
		free(w->data);
		w->data = NULL;
		r->whole_bytes -= r->m->shards[i].bytes;
		pthread_cond_broadcast(&r->room_freed);
	}
}

static void whole_unref(mt_reader *r, size_t i)
{
	pthread_mutex_lock(&r->lock);
	r->whole[i].refs--;
	whole_free_locked(r, i);
	pthread_mutex_unlock(&r->lock);
}

void mti_reader_drop_whole(mt_reader *r, const size_t *shards, size_t n)
{
	pthread_mutex_lock(&r->lock);
	for (size_t k = 0; k < n; k++) {
		if (shards[k] >= r->m->nshards)
			continue;
		struct whole *w = &r->whole[shards[k]];
		/* The drop of the window before the one that asked for it again. */
		if (w->keep) {
			w->keep = 0;
			continue;
		}
		w->dropped = 1;
		whole_free_locked(r, shards[k]);
	}
	pthread_mutex_unlock(&r->lock);
}

/* Why a shard's object, or a chunk of it, cannot be read as stored. */
enum damage { DMG_NONE, DMG_MISSING, DMG_SHORT, DMG_CHECKSUM, DMG_REFUSED };

static const char *const damage_words[] = {
	[DMG_NONE] = "is unreadable",
	[DMG_MISSING] = "is lost: the shard object is missing",
	[DMG_SHORT] = "is lost: the shard object is cut short",
	[DMG_CHECKSUM] = "fails its checksum, read twice",
	[DMG_REFUSED] = "is lost: the shard object is damaged",
};

/* A chunk index read took `seconds`: a few KiB, so about one round trip
 * (the quickest is kept: others waited behind other requests), and the
 * room is sized from it. */
static void room_measured(mt_reader *r, double seconds)
{
	pthread_mutex_lock(&r->lock);
	if (!r->latency || seconds < r->latency) {
		r->latency = seconds;
		double room = (double)READER_INFLIGHT * seconds / ROOM_LATENCY;
		r->room = room < READER_INFLIGHT ? READER_INFLIGHT
			: room > ROOM_MAX ? ROOM_MAX : (uint64_t)room;
		pthread_cond_broadcast(&r->room_freed);
	}
	pthread_mutex_unlock(&r->lock);
}

/* One read of shard i's chunk index, decoded and checked against the
 * manifest (mti_index_decode_shard); *dmg says what a failure means. */
/* The meta cache's name of shard i's chunk index: the shard's sha256 binds
 * every byte range of it. */
static void index_cache_name(const mt_mshard *s, char *name, size_t cap)
{
	snprintf(name, cap, "%s-%llu-%llu", s->sha256, (unsigned long long)s->index_offset,
		 (unsigned long long)s->index_bytes);
}

/* Shard i's chunk index from the meta cache: 0 when it was there and
 * passed the checks a read from the store passes. */
static int index_cached(mt_reader *r, size_t i, const char *what, mt_index **ix)
{
	const mt_mshard *s = &r->m->shards[i];
	char name[128];
	index_cache_name(s, name, sizeof name);
	size_t got = 0;
	void *data = mti_meta_cache_get(r->meta, name, &got);
	mt_error e = {0};
	int rc = !data || got != s->index_bytes ||
		 mti_index_decode_shard(data, got, s->bytes, r->m, i, what, ix, &e);
	free(data);
	return rc;
}

/* Keep shard i's chunk index; `fresh` only when the cache lacks it (an
 * index cut out of a shard read whole, which is read again each epoch). */
static void index_keep(mt_reader *r, size_t i, const void *data, size_t len, int fresh)
{
	char name[128];
	index_cache_name(&r->m->shards[i], name, sizeof name);
	if (!fresh || !mti_meta_cache_has(r->meta, name, len))
		mti_meta_cache_put(r->meta, name, data, len);
}

static int index_read(mt_reader *r, size_t i, const char *what, mt_index **ix, int *dmg,
		      mt_error *err)
{
	const mt_mshard *s = &r->m->shards[i];
	void *data = NULL;
	size_t got = 0;
	*dmg = DMG_NONE;
	if (r->meta && !index_cached(r, i, what, ix))
		return 0;
	double t0 = mti_mono_seconds();
	int rc = mti_store_get(r->store, r->keys[i], s->index_offset, s->index_bytes, &data, &got,
			      err);
	if (!rc && r->store->ops->far)
		room_measured(r, mti_mono_seconds() - t0);
	*dmg = rc == MT_ENOTFOUND ? DMG_MISSING : rc == MT_ERANGE ? DMG_SHORT
		: rc == MT_ECORRUPT ? DMG_REFUSED : DMG_NONE;
	if (!rc && (rc = mti_index_decode_shard(data, got, s->bytes, r->m, i, what, ix, err)))
		*dmg = DMG_CHECKSUM;
	else if (!rc && r->meta)
		index_keep(r, i, data, got, 0);
	free(data);
	return rc;
}

struct index_want {
	const mt_mshard *s;
};

/* Whether rebuilt bytes are the wanted shard's chunk index: its trailing
 * XXH3 covers the rest and is the one the manifest names. */
static int index_check(void *ud, const void *buf, size_t len)
{
	const mt_mshard *s = ((struct index_want *)ud)->s;
	if (len < 8)
		return 1;
	uint64_t tail = mti_get_u64((const uint8_t *)buf + len - 8);
	if (s->has_index_xxh3 && tail != s->index_xxh3)
		return 1;
	return mti_xxh3(buf, len - 8) != tail;
}

/* Shard i's chunk index rebuilt from parity.  A failure keeps the code
 * and message of the damage (*err) and says why parity could not help. */
static int index_heal(mt_reader *r, size_t i, const char *what, mt_index **ix, mt_error *err)
{
	const mt_mshard *s = &r->m->shards[i];
	struct index_want want = {s};
	mt_error e = {0};
	uint8_t *buf = malloc(s->index_bytes ? (size_t)s->index_bytes : 1);
	int rc = buf ? 0 : mti_err(&e, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_heal_span(r->heal, i, s->index_offset, (size_t)s->index_bytes,
				   MTI_HEAL_INDEX, index_check, &want, buf, &e);
	if (!rc)
		rc = mti_index_decode_shard(buf, (size_t)s->index_bytes, s->bytes, r->m, i, what, ix,
					    &e);
	free(buf);
	if (!rc)
		return 0;
	/* err's message is the damage; it goes first in the new one. */
	mt_error was = err ? *err : (mt_error){0};
	int code = was.code ? was.code : rc;
	char rows[64] = "";
	if (s->rows)
		snprintf(rows, sizeof rows, " (rows %llu..%llu)", (unsigned long long)s->first_row,
			 (unsigned long long)(s->first_row + s->rows - 1));
	return mti_err(err, code, "%s%s; parity cannot rebuild its chunk index: %s", was.message,
		       rows, e.message);
}

/* Shard i's chunk index from the store, read twice when the first read
 * fails its checks: damage in transit goes away on a second read. */
static int index_fetch(mt_reader *r, size_t i, const char *what, mt_index **ix, int *dmg,
		       mt_error *err)
{
	int rc = index_read(r, i, what, ix, dmg, err);
	if (rc == MT_ECORRUPT || rc == MT_ERANGE)
		rc = index_read(r, i, what, ix, dmg, err);
	/* A short object (or one a cache cannot hold): the store said which. */
	if (rc == MT_ERANGE)
		mti_err_prefix(err, "%s@%s: shard %zu: ", r->m->dataset, r->m->version, i);
	else if (rc == MT_ENOTFOUND)
		mti_err(err, rc, "%s@%s: shard %zu (%s) is missing", r->m->dataset, r->m->version, i,
		       r->keys[i]);
	return rc;
}

/* The error of a shard already found lost (the reader then skips the
 * store for it). */
static int lost_error(const mt_reader *r, size_t i, int dmg, mt_error *err)
{
	return mti_err(err, dmg == DMG_MISSING ? MT_ENOTFOUND : MT_ECORRUPT, "%s@%s: shard %zu (%s) "
		      "is %s", r->m->dataset, r->m->version, i, r->keys[i],
		      dmg == DMG_MISSING ? "missing" : "damaged");
}

/* Shards read whole share READER_INFLIGHT with the run buffers (taken only
 * when they fit: a run waits for room, a whole object does not, so a run
 * always gets through in the end); each is read in up to WHOLE_PIECES
 * ranged requests at once, none below WHOLE_PIECE_MIN. */
#define WHOLE_PIECES 4
#define WHOLE_PIECE_MIN (1u << 20)

struct whole_read {
	mt_reader *r;
	size_t shard;
	uint8_t *buf;
	uint64_t piece;
};

static int whole_piece(void *ud, size_t k)
{
	struct whole_read *w = ud;
	uint64_t bytes = w->r->m->shards[w->shard].bytes, off = k * w->piece;
	uint64_t len = bytes - off < w->piece ? bytes - off : w->piece;
	mt_error e = {0};
	return mti_store_read(w->r->store, w->r->keys[w->shard], off, w->buf + off, (size_t)len, &e);
}

/* Shard i's object read whole when a caller wants it so and it fits
 * READER_INFLIGHT beside the buffers held; nothing when it cannot be had. */
static void whole_fetch(mt_reader *r, size_t i)
{
	uint64_t bytes = r->m->shards[i].bytes;
	pthread_mutex_lock(&r->lock);
	struct whole *wh = &r->whole[i];
	int go = wh->want && !wh->data && !wh->dropped && !wh->fetching && bytes &&
		 r->run_bytes + r->whole_bytes + bytes <= READER_INFLIGHT;
	if (go) {
		r->whole_bytes += bytes;
		wh->fetching = 1;
	}
	pthread_mutex_unlock(&r->lock);
	if (!go)
		return;
	struct whole_read w = {r, i, NULL, (bytes + WHOLE_PIECES - 1) / WHOLE_PIECES};
	if (w.piece < WHOLE_PIECE_MIN)
		w.piece = WHOLE_PIECE_MIN;
	size_t pieces = (size_t)((bytes + w.piece - 1) / w.piece);
	if (!mti_heal_lost(r->heal, i) && (w.buf = malloc((size_t)bytes)) &&
	    mti_parallel_for((int)pieces, pieces, whole_piece, &w)) {
		free(w.buf);
		w.buf = NULL;
	}
	pthread_mutex_lock(&r->lock);
	wh->fetching = 0;
	if (w.buf) {
		wh->data = w.buf;
		whole_free_locked(r, i); /* dropped while it was read */
	} else {
		r->whole_bytes -= bytes;
		pthread_cond_broadcast(&r->room_freed);
	}
	pthread_mutex_unlock(&r->lock);
}

/* Shard i's chunk index out of its object read whole: 0, or nonzero when
 * it is not held or fails its checks (the index is then read alone, and a
 * failure there is reported as usual). */
static int index_from_whole(mt_reader *r, size_t i, const char *what, mt_index **ix)
{
	const mt_mshard *s = &r->m->shards[i];
	whole_fetch(r, i);
	const uint8_t *data = whole_ref(r, i);
	if (!data)
		return -1;
	mt_error e = {0};
	int rc = s->index_offset + s->index_bytes > s->bytes
		? -1
		: mti_index_decode_shard(data + s->index_offset, (size_t)s->index_bytes, s->bytes,
					 r->m, i, what, ix, &e);
	if (!rc && r->meta)
		index_keep(r, i, data + s->index_offset, (size_t)s->index_bytes, 1);
	whole_unref(r, i);
	return rc;
}

/* Shard i starts with HDF5's signature (mti_shard_check): checked with its
 * index where that costs no request of its own, from a local store or an
 * object read whole. */
static int signature_check(mt_reader *r, size_t i, const char *what, mt_error *err)
{
	uint8_t head[8] = {0};
	const uint8_t *w = whole_ref(r, i);
	if (w) {
		memcpy(head, w, r->m->shards[i].bytes < 8 ? (size_t)r->m->shards[i].bytes : 8);
		whole_unref(r, i);
	} else if (r->store->ops->far) {
		return 0;
	} else {
		mt_error e = {0};
		/* A read that fails here fails again where rows are read, and is reported there. */
		if (mti_store_read(r->store, r->keys[i], 0, head, sizeof head, &e))
			return 0;
	}
	if (!mti_shard_is_hdf5(head, sizeof head))
		return mti_err(err, MT_ECORRUPT, "%s is not an HDF5 file (no HDF5 signature at byte 0)",
			      what);
	return 0;
}

/* Read and decode the chunk index of shard i, checked against the manifest
 * (mti_index_decode_shard); rebuilt from parity when it is lost or damaged
 * and the version is protected. */
static int fetch_index(mt_reader *r, size_t i, mt_index **ix, mt_error *err)
{
	char *what = mti_asprintf("%s@%s: shard %zu: %s", r->m->dataset, r->m->version, i,
				 r->keys[i]);
	if (!what)
		return mti_err(err, MT_ENOMEM, "out of memory");
	int dmg = mti_heal_lost(r->heal, i);
	if (!dmg && !index_from_whole(r, i, what, ix)) {
		int rc = signature_check(r, i, what, err);
		if (rc) {
			mti_index_free(*ix);
			*ix = NULL;
		}
		free(what);
		return rc;
	}
	int rc = dmg ? lost_error(r, i, dmg, err) : index_fetch(r, i, what, ix, &dmg, err);
	if (!rc && !dmg && (rc = signature_check(r, i, what, err))) {
		mti_index_free(*ix);
		*ix = NULL;
	}
	if (rc && dmg != DMG_NONE && mti_heal_protected(r->heal)) {
		/* The object itself is gone: its chunks go straight to parity. */
		if (dmg == DMG_MISSING || dmg == DMG_REFUSED)
			mti_heal_mark_lost(r->heal, i, dmg);
		rc = index_heal(r, i, what, ix, err);
	}
	/* A read that failed before one that worked leaves nothing behind:
	 * callers gathering errors from several threads take the first set. */
	if (!rc && err)
		*err = (mt_error){0};
	free(what);
	return rc;
}

/* The chunk index of shard i: one ranged read, cached for the reader's
 * life.  Threads wanting it at once wait for the one reading it, rather
 * than each paying a round trip for the same bytes. */
static int shard_index(mt_reader *r, size_t i, const mt_index **out, mt_error *err)
{
	pthread_mutex_lock(&r->lock);
	while (!r->ix[i] && r->ix_busy[i])
		pthread_cond_wait(&r->ix_done, &r->lock);
	mt_index *ix = r->ix[i];
	if (!ix)
		r->ix_busy[i] = 1;
	pthread_mutex_unlock(&r->lock);
	if (!ix) {
		int rc = fetch_index(r, i, &ix, err);
		pthread_mutex_lock(&r->lock);
		r->ix_busy[i] = 0;
		if (!rc)
			r->ix[i] = ix;
		pthread_cond_broadcast(&r->ix_done);
		pthread_mutex_unlock(&r->lock);
		if (rc)
			return rc;
	}
	*out = ix;
	return 0;
}

/* Shard holding row `row` (binary search over first_row; in format 2 over
 * the fragments, then within the one holding it, which must be loaded). */
static size_t shard_of(const mt_manifest *m, uint64_t row)
{
	if (!m->nshards)
		return 0;
	if (!m->nfrags)
		return mti_bisect_u64(&m->shards[0].first_row, m->nshards, sizeof m->shards[0], row);
	const mt_mfrag *f = &m->frags[mti_manifest_frag_of_row(m, row)];
	return f->first_shard + mti_bisect_u64(&m->shards[f->first_shard].first_row, f->nshards,
					       sizeof m->shards[0], row);
}

struct index_jobs {
	mt_reader *r;
	const size_t *shards;
};

static int index_job(void *ud, size_t i)
{
	struct index_jobs *j = ud;
	const mt_index *ix;
	mt_error e = {0};
	if (j->shards[i] < j->r->m->nshards)
		shard_index(j->r, j->shards[i], &ix, &e);
	return 0;
}

void mti_reader_load_indexes(mt_reader *r, const size_t *shards, const char *whole, size_t n)
{
	struct index_jobs j = {r, shards};
	/* Cached already: nothing to wait for. */
	size_t missing = 0;
	for (size_t i = 0; i < n; i++) {
		mt_error e = {0};
		/* A fragment that fails is reported by the read that needs it. */
		mti_reader_need_shards(r, shards[i], shards[i] + 1, &e);
	}
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < n; i++) {
		if (shards[i] >= r->m->nshards || r->ix[shards[i]])
			continue;
		missing++;
		if (whole && whole[i] && r->store->ops->far)
			r->whole[shards[i]].want = 1;
	}
	pthread_mutex_unlock(&r->lock);
	if (missing)
		mti_parallel_for((int)(n < 16 ? n : 16), n, index_job, &j);
}

static int whole_job(void *ud, size_t i)
{
	struct index_jobs *j = ud;
	whole_fetch(j->r, j->shards[i]);
	return 0;
}

void mti_reader_fetch_whole(mt_reader *r, const size_t *shards, const char *whole, size_t n)
{
	if (!r->store->ops->far || !n)
		return;
	size_t *want = malloc(n * sizeof *want), m = 0;
	if (!want)
		return;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < n; i++) {
		struct whole *w = shards[i] < r->m->nshards ? &r->whole[shards[i]] : NULL;
		if (!w || !whole[i])
			continue;
		/* Still held for an earlier window (or on its way): kept past
		 * that window's drop, for the one asking now. */
		if (w->data || w->fetching) {
			w->keep = 1;
			continue;
		}
		/* Dropped after an earlier window: wanted again, for the next. */
		w->want = 1;
		w->dropped = 0;
		want[m++] = shards[i];
	}
	pthread_mutex_unlock(&r->lock);
	struct index_jobs j = {r, want};
	if (m)
		mti_parallel_for((int)(m < 16 ? m : 16), m, whole_job, &j);
	free(want);
}

int mti_reader_far(const mt_reader *r)
{
	return r->store->ops->far;
}

size_t mti_reader_shard_of(const mt_reader *r, uint64_t row)
{
	mt_error e = {0};
	/* Its caller reads the row next, and reports a fragment that fails. */
	if (reader_need_rows((mt_reader *)(uintptr_t)r, row, row + 1, &e))
		return 0;
	return shard_of(r->m, row);
}

/* One unit of a chunk a gather wants (mt_reader_read_rows), and where it goes. */
struct pick {
	uint64_t unit; /* the row's number in its shard */
	uint8_t *dst;
};

/* One chunk to fetch: units [u0, u1) of it land at dst, or with picks set
 * the units picks[0..npicks) (a gather) land at theirs. */
struct job {
	size_t shard;
	const mt_index_entry *e;
	size_t chunk;
	uint64_t u0, u1;
	uint8_t *dst; /* NULL: the rows go to jobs.each (or to the picks) */
	uint64_t at;  /* u0's place among the units of the read */
	const struct pick *picks;
	size_t npicks;
};

/* Jobs [first, first + n), whose chunks lie in one span of a shard:
 * bytes [off, off + len). */
struct run {
	size_t first, n;
	uint64_t off, len;
};

/* Chunks of one read at most this far apart share a request, up to
 * RUN_BYTES; a large read is cut into at least two runs per thread, not
 * below RUN_MIN, since each run's chunks are decoded on one thread. */
#define RUN_GAP (64u << 10)
#define RUN_BYTES (8u << 20)
#define RUN_MIN (512u << 10)
#define RUN_REQUESTS 16

/* Which chunks a read puts in the chunk cache once decoded: none (reads of
 * whole chunks, an epoch: they would only push out what random reads
 * use), those it uses in part (the rest of such a chunk is likely wanted
 * next), or all (gathers, and readers told so). */
enum { KEEP_NONE, KEEP_PART, KEEP_ALL };

struct jobs {
	mt_reader *r;
	int keep;         /* KEEP_* */
	mti_rows_fn each; /* with dst NULL: where each chunk's rows go */
	void *each_ud;
	struct job *v;
	size_t n, cap;
	struct run *runs;
	size_t nruns;
	mt_error *errs;
};

static int jobs_add(struct jobs *js, const struct job *j)
{
	if (js->n == js->cap) {
		size_t cap = js->cap ? js->cap * 2 : 64;
		struct job *v = realloc(js->v, cap * sizeof *v);
		if (!v)
			return MT_ENOMEM;
		js->v = v;
		js->cap = cap;
	}
	js->v[js->n++] = *j;
	return 0;
}

/* Queue the chunks holding units [u0, u1) of entry e of a shard. */
int mt_reader_chunks(mt_reader *r, size_t shard, void (*fn)(void *ud, const mt_chunk_info *c),
		     void *ud, mt_error *err)
{
	if (shard >= r->m->nshards)
		return mti_err(err, MT_ERANGE, "%s@%s: no shard %zu (it has %zu)", r->m->dataset,
			      r->m->version, shard, r->m->nshards);
	const mt_index *ix;
	int rc = mti_reader_need_shards(r, shard, shard + 1, err);
	if (!rc)
		rc = shard_index(r, shard, &ix, err);
	for (size_t a = 0; !rc && a < ix->n; a++) {
		const mt_index_entry *e = &ix->e[a];
		for (size_t k = 0; k < e->nchunks; k++) {
			const mt_chunk *ch = &e->chunks[k];
			mt_chunk_info ci = { e->name, mt_dtype_name(e->dtype), ch->offset, ch->size,
					     ch->first, ch->count, e->unit_bytes };
			fn(ud, &ci);
		}
	}
	return rc;
}

/* Jobs for units [u0, u1) of entry e of a shard, going to dst (NULL: to
 * js->each), the first of them the read's unit number at. */
static int plan_units(struct jobs *js, size_t shard, const mt_index_entry *e, uint64_t u0,
		      uint64_t u1, uint8_t *dst, uint64_t at)
{
	if (u0 >= u1)
		return 0;
	size_t c0 = (size_t)(u0 / e->chunk_units), c1 = (size_t)((u1 - 1) / e->chunk_units);
	for (size_t c = c0; c <= c1 && c < e->nchunks; c++) {
		const mt_chunk *k = &e->chunks[c];
		uint64_t a = u0 > k->first ? u0 : k->first;
		uint64_t b = u1 < k->first + k->count ? u1 : k->first + k->count;
		struct job j = {shard, e, c, a, b, dst ? dst + (a - u0) * e->unit_bytes : NULL,
				at + (a - u0), NULL, 0};
		if (jobs_add(js, &j))
			return MT_ENOMEM;
	}
	return 0;
}

const char *mti_reader_unit_word(const mt_index_entry *e)
{
	return strstr(e->name, "/values") ? "items" : strstr(e->name, "/offsets") ? "offsets"
										  : "rows";
}

/* Job j's chunk named as users count: "x chunk 1 (rows 40..49)", or for
 * items and offsets, which only exist inside the shard, "(items 0..99 of
 * the shard)". */
static void chunk_where(const mt_reader *r, const struct job *j, char *buf, size_t cap)
{
	const mt_chunk *k = &j->e->chunks[j->chunk];
	int rows = strcmp(mti_reader_unit_word(j->e), "rows") == 0;
	uint64_t base = rows ? r->m->shards[j->shard].first_row : 0;
	snprintf(buf, cap, "%s chunk %zu (%s %llu..%llu%s)", j->e->name, j->chunk,
		 mti_reader_unit_word(j->e),
		 (unsigned long long)(base + k->first),
		 (unsigned long long)(base + k->first + k->count - 1), rows ? "" : " of the shard");
}

/* Job j's compressed chunk into z, its checksum checked.  One that fails
 * it is read once more, since damage in transit goes away on a second
 * read; so is an object a cache refused, when parity could replace it.
 * *dmg says what is wrong with the stored chunk when it cannot be had. */
static int chunk_read(mt_reader *r, const struct job *j, uint8_t *z, int *dmg, mt_error *err)
{
	const mt_chunk *k = &j->e->chunks[j->chunk];
	int rc = 0;
	for (int attempt = 0; attempt < 2; attempt++) {
		rc = mti_store_read(r->store, r->keys[j->shard], k->offset, z, k->size, err);
		*dmg = rc == MT_ENOTFOUND ? DMG_MISSING : rc == MT_ERANGE ? DMG_SHORT
			: rc == MT_ECORRUPT ? DMG_REFUSED : DMG_NONE;
		if (rc == MT_ENOTFOUND || rc == MT_ERANGE || (rc && rc != MT_ECORRUPT))
			return rc;
		if (rc && !mti_heal_protected(r->heal))
			return rc;
		if (!rc && mti_xxh3(z, k->size) == k->xxh3)
			return 0;
		if (!rc)
			*dmg = DMG_CHECKSUM;
	}
	return rc ? rc : MT_ECORRUPT;
}

/* The error of a chunk that cannot be read, when parity cannot help. */
static int chunk_error(mt_reader *r, const struct job *j, int rc, int dmg, mt_error *err)
{
	char where[320];
	if (dmg == DMG_MISSING || dmg == DMG_SHORT)
		return mti_err(err, rc == MT_ENOTFOUND ? rc : MT_ECORRUPT,
			      "%s@%s: shard %zu (%s) is %s", r->m->dataset, r->m->version, j->shard,
			      r->keys[j->shard], dmg == DMG_MISSING ? "missing" : "cut short");
	if (dmg != DMG_CHECKSUM)
		return rc; /* the store's own message */
	/* Rows are named as the user counts them. */
	chunk_where(r, j, where, sizeof where);
	return mti_err(err, MT_ECORRUPT, "%s@%s: shard %zu (%s): %s fails its checksum, read twice",
		      r->m->dataset, r->m->version, j->shard, r->keys[j->shard], where);
}

struct chunk_want {
	const mt_chunk *k;
};

/* Whether rebuilt bytes are the wanted chunk: its size and xxh3. */
static int chunk_check(void *ud, const void *buf, size_t len)
{
	const mt_chunk *k = ((struct chunk_want *)ud)->k;
	return len != k->size || mti_xxh3(buf, len) != k->xxh3;
}

/* Job j's chunk rebuilt from parity into z; the error names the chunk,
 * its rows and what is wrong with it when that fails. */
static int chunk_heal(mt_reader *r, const struct job *j, uint8_t *z, int dmg, mt_error *err)
{
	const mt_chunk *k = &j->e->chunks[j->chunk];
	struct chunk_want want = {k};
	mt_error e = {0};
	int rc = mti_heal_span(r->heal, j->shard, k->offset, (size_t)k->size, MTI_HEAL_CHUNK,
			       chunk_check, &want, z, &e);
	if (!rc)
		return 0;
	char where[320], rows[64] = "";
	chunk_where(r, j, where, sizeof where);
	const mt_mshard *s = &r->m->shards[j->shard];
	if (strcmp(mti_reader_unit_word(j->e), "rows") != 0 && s->rows)
		snprintf(rows, sizeof rows, " of rows %llu..%llu", (unsigned long long)s->first_row,
			 (unsigned long long)(s->first_row + s->rows - 1));
	return mti_err(err, dmg == DMG_MISSING ? MT_ENOTFOUND : MT_ECORRUPT,
		      "%s@%s: shard %zu (%s): %s%s %s, and parity cannot rebuild it: %s",
		      r->m->dataset, r->m->version, j->shard, r->keys[j->shard], where, rows,
		      damage_words[dmg], e.message);
}

/* Job j's compressed chunk into z, checked: from the store, else rebuilt
 * from parity when the version is protected. */
static int chunk_fetch(mt_reader *r, const struct job *j, uint8_t *z, mt_error *err)
{
	int dmg = mti_heal_lost(r->heal, j->shard);
	int rc = dmg ? MT_ECORRUPT : chunk_read(r, j, z, &dmg, err);
	if (rc && dmg != DMG_NONE) {
		if (!mti_heal_protected(r->heal))
			return chunk_error(r, j, rc, dmg, err);
		/* The object itself is gone: its other chunks go straight to parity. */
		if (dmg == DMG_MISSING || dmg == DMG_REFUSED)
			mti_heal_mark_lost(r->heal, j->shard, dmg);
		rc = chunk_heal(r, j, z, dmg, err);
	}
	/* run_jobs reports the first job with an error set: a read that failed
	 * before one that worked leaves nothing behind. */
	if (!rc)
		*err = (mt_error){0};
	return rc;
}

/* Job j's chunk in the chunk cache: its key. */
static mti_ckey job_key(const mt_reader *r, const struct job *j)
{
	return (mti_ckey){r->m->shards[j->shard].sha256, j->e->name, j->chunk,
			  j->e->chunks[j->chunk].xxh3};
}

/* Job j's units out of its decoded chunk `plain`: to the picks, to dst
 * (nothing to do when the chunk was decoded straight there) or to js->each. */
static void job_deliver(const struct jobs *js, const struct job *j, const uint8_t *plain)
{
	const mt_chunk *k = &j->e->chunks[j->chunk];
	size_t ub = (size_t)j->e->unit_bytes;
	for (size_t i = 0; i < j->npicks; i++)
		mti_copy(j->picks[i].dst, plain + (j->picks[i].unit - k->first) * ub, ub);
	if (j->picks)
		return;
	const uint8_t *part = plain + (j->u0 - k->first) * ub;
	if (!j->dst)
		js->each(js->each_ud, j->at, j->u1 - j->u0, part);
	else if (part != j->dst)
		mti_copy(j->dst, part, (size_t)((j->u1 - j->u0) * ub));
}

/* The decoded chunk of job j into the chunk cache, when the read keeps it. */
static void job_keep(const struct jobs *js, const struct job *j, const uint8_t *plain)
{
	const mt_chunk *k = &j->e->chunks[j->chunk];
	int keep = js->r->keep_all ? KEEP_ALL : js->keep;
	int part = j->picks || j->u0 != k->first || j->u1 != k->first + k->count;
	if (js->r->cache && (keep == KEEP_ALL || (keep == KEEP_PART && part))) {
		mti_ckey key = job_key(js->r, j);
		mti_ccache_put(js->r->cache, &key, plain, (size_t)(k->count * j->e->unit_bytes));
	}
}

/* Job j's chunk decoded into its rows, or handed to js->each.  z: the
 * compressed chunk already read and checked (a slice of a run), or NULL to
 * fetch it alone, healed when that is needed. */
static int job_decode(const struct jobs *js, const struct job *j, const uint8_t *z, mt_error *err)
{
	mt_reader *r = js->r;
	const mt_chunk *k = &j->e->chunks[j->chunk];
	const char *key = r->keys[j->shard];
	/* Both buffers are the thread's own, reused chunk after chunk. */
	uint8_t *own = z ? NULL : mti_thread_scratch(0, (size_t)k->size);
	/* Bounded by mti_index_decode (MT_CHUNK_MAX_BYTES, MT_ZSTD_MAX_RATIO). */
	size_t full = (size_t)(j->e->chunk_units * j->e->unit_bytes);
	int whole = j->dst && j->u0 == k->first && j->u1 == k->first + k->count &&
		    k->count == j->e->chunk_units;
	uint8_t *plain = NULL;
	int rc = 0;
	if (!z && !own)
		rc = mti_err(err, MT_ENOMEM, "%s: out of memory", key);
	if (!rc && !z && !(rc = chunk_fetch(r, j, own, err)))
		z = own;
	/* The frame's declared size is checked before its buffer is had. */
	if (!rc && mti_zstd_frame_check(z, k->size, full, err))
		rc = mti_err_prefix(err, "%s@%s: shard %zu (%s): %s chunk %zu: ", r->m->dataset,
				   r->m->version, j->shard, key, j->e->name, j->chunk);
	if (!rc && !(plain = whole ? j->dst : mti_thread_scratch(1, full)))
		rc = mti_err(err, MT_ENOMEM, "%s: out of memory", key);
	if (!rc && mti_zstd_decompress(z, k->size, plain, full, err))
		rc = mti_err_prefix(err, "%s@%s: shard %zu (%s): %s chunk %zu: ", r->m->dataset,
				   r->m->version, j->shard, key, j->e->name, j->chunk);
	if (rc)
		return rc;
	/* Only now, read, checked and decoded: a chunk that failed is never kept. */
	job_keep(js, j, plain);
	job_deliver(js, j, plain);
	return 0;
}

/* The jobs whose chunks the cache holds, done from it at once (on this
 * thread: a copy each, no request, no decode) and taken off the list. */
static void jobs_from_cache(struct jobs *js)
{
	mti_ccache *c = js->r->cache;
	size_t left = 0;
	for (size_t i = 0; c && i < js->n; i++) {
		const struct job *j = &js->v[i];
		mti_ckey key = job_key(js->r, j);
		const void *data;
		size_t len;
		mti_centry *e = mti_ccache_get(c, &key, &data, &len);
		int hit = e && len == j->e->chunks[j->chunk].count * j->e->unit_bytes;
		if (hit)
			job_deliver(js, j, data);
		mti_ccache_release(c, e);
		if (!hit)
			js->v[left++] = *j;
	}
	if (c)
		js->n = left;
}

/* Wait until a run buffer of len bytes fits in the room beside those every
 * read of r holds now (and the shards held whole), and count it: the loader
 * reads several windows at once, and their requests share one allowance of
 * memory.  A run larger than all of it goes alone. */
static void run_room(mt_reader *r, uint64_t len)
{
	pthread_mutex_lock(&r->lock);
	while (r->run_bytes && r->run_bytes + r->whole_bytes + len > r->room)
		pthread_cond_wait(&r->room_freed, &r->lock);
	r->run_bytes += len;
	pthread_mutex_unlock(&r->lock);
}

static void run_room_free(mt_reader *r, uint64_t len)
{
	pthread_mutex_lock(&r->lock);
	r->run_bytes -= len;
	pthread_cond_broadcast(&r->room_freed);
	pthread_mutex_unlock(&r->lock);
}

/* One ranged read of run i's span, then each chunk checked and decoded
 * from its slice.  A chunk the span cannot give (the read failed, or the
 * slice fails its checksum) is fetched alone: that path reads it again and
 * heals it, and its error names exactly that chunk. */
static int run_run(void *ud, size_t i)
{
	struct jobs *js = ud;
	const struct run *u = &js->runs[i];
	mt_reader *r = js->r;
	size_t shard = js->v[u->first].shard;
	uint8_t *buf = NULL;
	/* The shard read whole: the run is a slice of it (only ever far away). */
	const uint8_t *whole = r->store->ops->far ? whole_ref(r, shard) : NULL, *base = whole;
	uint64_t base_off = 0;
	int held = !whole && u->n > 1 && !mti_heal_lost(r->heal, shard);
	if (held)
		run_room(r, u->len);
	if (held && (buf = malloc((size_t)u->len))) {
		mt_error e = {0};
		if (mti_store_read(r->store, r->keys[shard], u->off, buf, (size_t)u->len, &e)) {
			free(buf);
			buf = NULL;
		}
		base = buf;
		base_off = u->off;
	}
	int rc = 0;
	for (size_t n = 0; !rc && n < u->n; n++) {
		const struct job *j = &js->v[u->first + n];
		const mt_chunk *k = &j->e->chunks[j->chunk];
		const uint8_t *z = base ? base + (k->offset - base_off) : NULL;
		if (z && mti_xxh3(z, k->size) != k->xxh3)
			z = NULL;
		rc = job_decode(js, j, z, &js->errs[u->first + n]);
	}
	free(buf);
	if (held)
		run_room_free(r, u->len);
	if (whole)
		whole_unref(r, shard);
	return rc;
}

/* Whether job j's chunk joins run u: same shard, after it and close. */
static int run_joins(const struct jobs *js, const struct run *u, const struct job *j,
		     uint64_t cap)
{
	const struct job *last = &js->v[u->first + u->n - 1];
	const mt_chunk *k = &j->e->chunks[j->chunk];
	uint64_t end = u->off + u->len;
	return j->shard == last->shard && k->offset >= end && k->offset - end <= RUN_GAP &&
	       k->offset + k->size - u->off <= cap;
}

/* Cut the jobs into runs of chunks near each other in one shard: one
 * request each, since a store far away charges its latency per request
 * (a local store reads chunk by chunk: runs of one). */
static int plan_runs(struct jobs *js)
{
	js->runs = malloc(js->n * sizeof *js->runs);
	if (!js->runs)
		return MT_ENOMEM;
	js->nruns = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < js->n; i++)
		total += js->v[i].e->chunks[js->v[i].chunk].size;
	int far = js->r->store->ops->far;
	uint64_t cap = total / (2 * (uint64_t)js->r->threads);
	cap = cap < RUN_MIN ? RUN_MIN : cap > RUN_BYTES ? RUN_BYTES : cap;
	for (size_t i = 0; i < js->n; i++) {
		const mt_chunk *k = &js->v[i].e->chunks[js->v[i].chunk];
		struct run *u = js->nruns ? &js->runs[js->nruns - 1] : NULL;
		if (u && far && run_joins(js, u, &js->v[i], cap)) {
			u->len = k->offset + k->size - u->off;
			u->n++;
		} else {
			js->runs[js->nruns++] = (struct run){i, 1, k->offset, k->size};
		}
	}
	return 0;
}

/* Threads for the runs.  Far away, a thread mostly waits on its request:
 * more of the read's runs go out at once, up to half the room in buffers
 * (the store caps the requests in flight). */
static int run_threads(const struct jobs *js)
{
	int threads = js->r->threads;
	if (!js->r->store->ops->far || js->nruns <= (size_t)threads)
		return threads;
	uint64_t bytes = 0;
	for (size_t i = 0; i < js->nruns; i++)
		bytes += js->runs[i].len;
	pthread_mutex_lock(&js->r->lock);
	uint64_t half = js->r->room / 2;
	pthread_mutex_unlock(&js->r->lock);
	uint64_t fit = half / (bytes / js->nruns + 1);
	uint64_t n = js->nruns < fit ? js->nruns : fit;
	return n > (uint64_t)threads ? (int)(n < RUN_REQUESTS ? n : RUN_REQUESTS) : threads;
}

static int run_jobs(struct jobs *js, mt_error *err)
{
	int rc = 0;
	jobs_from_cache(js);
	if (js->n) {
		js->errs = calloc(js->n, sizeof *js->errs);
		if (!js->errs || plan_runs(js))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
		if (!rc)
			rc = mti_parallel_for(run_threads(js), js->nruns, run_run, js);
		for (size_t i = 0; rc && js->errs && i < js->n; i++)
			if (js->errs[i].code) {
				rc = mti_err_copy(err, &js->errs[i]);
				break;
			}
	}
	free(js->errs);
	free(js->runs);
	free(js->v);
	*js = (struct jobs){.r = js->r, .keep = js->keep, .each = js->each, .each_ud = js->each_ud};
	return rc;
}

/* And, as every read of rows starts here, the fragments of those rows. */
static int check_range(mt_reader *r, size_t attr, uint64_t a, uint64_t b, mt_error *err)
{
	if (attr >= r->m->nattrs)
		return mti_err(err, MT_EINVAL, "%s@%s: no attribute #%zu", r->m->dataset,
			      r->m->version, attr);
	if (a > b || b > r->m->rows)
		return mti_err(err, MT_ERANGE, "%s@%s: rows %llu:%llu are outside 0:%llu",
			      r->m->dataset, r->m->version, (unsigned long long)a,
			      (unsigned long long)b, (unsigned long long)r->m->rows);
	return reader_need_rows(r, a, b, err);
}

static int entry_of(mt_reader *r, size_t shard, const char *attr, const char *sub,
		    const mt_index_entry **e, mt_error *err)
{
	const mt_index *ix;
	int rc = shard_index(r, shard, &ix, err);
	if (rc)
		return rc;
	char name[300];
	snprintf(name, sizeof name, "%s%s", attr, sub);
	*e = mti_index_find(ix, name);
	if (!*e)
		return mti_err(err, MT_ECORRUPT, "%s: chunk index has no dataset '%s'",
			      r->keys[shard], name);
	return 0;
}

/* One ragged attribute's offsets in a shard, chunk by chunk (the runs may
 * decode them on several threads, each chunk into its own slot): its first
 * and last offset, and whether they decrease inside it. */
struct offs_scan {
	const mt_index_entry *e;
	uint64_t (*ends)[3]; /* per chunk: first, last, decreasing */
};

static void offs_each(void *ud, uint64_t at, uint64_t n, const void *rows)
{
	struct offs_scan *sc = ud;
	const uint8_t *p = rows;
	size_t c = (size_t)(at / sc->e->chunk_units);
	if (c >= sc->e->nchunks || !n)
		return;
	uint64_t prev = mti_get_u64(p), bad = 0;
	sc->ends[c][0] = prev;
	for (uint64_t u = 1; u < n; u++) {
		uint64_t v = mti_get_u64(p + 8 * u);
		bad |= v < prev;
		prev = v;
	}
	sc->ends[c][1] = prev;
	sc->ends[c][2] = bad;
}

/* The offsets of attribute attr in shard s start at 0, never decrease and
 * end at the items its values hold (mti_shard_check's rule), all of them
 * read once before any of them is used: a read of some rows could not
 * tell that the shard around them is unsound. */
static int offsets_scan(mt_reader *r, size_t s, size_t attr, mt_error *err)
{
	const char *name = r->m->attrs[attr].name;
	const mt_index_entry *o, *v;
	int rc = entry_of(r, s, name, "/offsets", &o, err);
	if (!rc)
		rc = entry_of(r, s, name, "/values", &v, err);
	if (rc)
		return rc;
	struct offs_scan sc = {o, calloc(o->nchunks ? o->nchunks : 1, sizeof *sc.ends)};
	struct jobs js = {.r = r, .each = offs_each, .each_ud = &sc};
	if (!sc.ends || plan_units(&js, s, o, 0, o->units, NULL, 0)) {
		free(sc.ends);
		free(js.v);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	rc = run_jobs(&js, err);
	const char *bad = NULL;
	uint64_t prev = 0;
	for (size_t c = 0; !rc && !bad && c < o->nchunks; c++) {
		if (c == 0 && sc.ends[0][0] != 0)
			bad = "do not start at 0";
		else if (sc.ends[c][2] || sc.ends[c][0] < prev)
			bad = "decrease";
		prev = sc.ends[c][1];
	}
	if (!rc && !bad && prev != v->units)
		bad = "do not end at the number of items its values hold";
	free(sc.ends);
	if (!rc && bad)
		rc = mti_err(err, MT_ECORRUPT, "%s@%s: shard %zu (%s): %s/offsets %s", r->m->dataset,
			    r->m->version, s, r->keys[s], name, bad);
	return rc;
}

/* Shard s's ragged offsets checked by offsets_scan, once for the reader's life. */
static int offsets_sound(mt_reader *r, size_t s, mt_error *err)
{
	pthread_mutex_lock(&r->lock);
	int ok = r->offs_ok[s];
	pthread_mutex_unlock(&r->lock);
	int rc = 0;
	for (size_t a = 0; !ok && !rc && a < r->m->nattrs; a++)
		if (r->m->attrs[a].ragged)
			rc = offsets_scan(r, s, a, err);
	if (!ok && !rc) {
		pthread_mutex_lock(&r->lock);
		r->offs_ok[s] = 1;
		pthread_mutex_unlock(&r->lock);
	}
	return rc;
}

/* The per-shard ragged offsets for rows [a, b): offs receives b-a+1
 * values per shard piece, relative to the shard. */
static int ragged_offsets(mt_reader *r, size_t attr, uint64_t a, uint64_t b, uint64_t *offs,
			  mt_error *err)
{
	struct jobs js = {.r = r, .keep = KEEP_PART};
	const char *name = r->m->attrs[attr].name;
	int rc = 0;
	uint64_t *dst = offs;
	/* Up to b's shard: a lazy reader's next fragment may not be loaded. */
	size_t s1 = a < b ? shard_of(r->m, b - 1) + 1 : 0;
	for (size_t s = shard_of(r->m, a); !rc && a < b && s < s1; s++) {
		const mt_mshard *sh = &r->m->shards[s];
		uint64_t la = a > sh->first_row ? a - sh->first_row : 0;
		uint64_t lb = b - sh->first_row < sh->rows ? b - sh->first_row : sh->rows;
		if (sh->first_row >= b)
			break;
		const mt_index_entry *e;
		rc = offsets_sound(r, s, err);
		if (!rc)
			rc = entry_of(r, s, name, "/offsets", &e, err);
		if (!rc && plan_units(&js, s, e, la, lb + 1, (uint8_t *)dst, 0))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
		dst += lb - la + 1;
	}
	if (rc) {
		free(js.v);
		return rc;
	}
	return run_jobs(&js, err);
}

/* Pieces of [a, b) per shard, in order: how many rows of the range each covers. */
static size_t count_pieces(const mt_manifest *m, uint64_t a, uint64_t b)
{
	if (a >= b)
		return 0;
	return shard_of(m, b - 1) - shard_of(m, a) + 1;
}

int mt_reader_ragged_lengths(mt_reader *r, size_t attr, uint64_t a, uint64_t b,
			     uint64_t *lengths, uint64_t *total, mt_error *err)
{
	int rc = check_range(r, attr, a, b, err);
	if (rc)
		return rc;
	if (!r->m->attrs[attr].ragged)
		return mti_err(err, MT_EINVAL, "%s@%s: attribute %s is not ragged", r->m->dataset,
			      r->m->version, r->m->attrs[attr].name);
	size_t pieces = count_pieces(r->m, a, b);
	uint64_t *offs = malloc(((b - a) + pieces + 1) * sizeof *offs);
	if (!offs)
		return mti_err(err, MT_ENOMEM, "out of memory");
	rc = ragged_offsets(r, attr, a, b, offs, err);
	uint64_t sum = 0, row = a;
	const uint64_t *o = offs;
	for (size_t s = shard_of(r->m, a); !rc && row < b; s++) {
		const mt_mshard *sh = &r->m->shards[s];
		uint64_t n = (b < sh->first_row + sh->rows ? b : sh->first_row + sh->rows) - row;
		for (uint64_t i = 0; i < n && !rc; i++) {
			if (o[i + 1] < o[i])
				rc = mti_err(err, MT_ECORRUPT, "%s: %s offsets decrease at row %llu",
					    r->keys[s], r->m->attrs[attr].name,
					    (unsigned long long)(row + i));
			else if (lengths)
				lengths[row - a + i] = o[i + 1] - o[i];
			sum += o[i + 1] - o[i];
		}
		o += n + 1;
		row += n;
	}
	free(offs);
	if (!rc && total)
		*total = sum;
	return rc;
}

/* Rows [a, b) of attr into buf (cap bytes), or, with js.each set, each
 * chunk's rows handed to it as they are decoded. */
static int read_rows(struct jobs js, size_t attr, uint64_t a, uint64_t b, void *buf, size_t cap,
		     mt_error *err)
{
	mt_reader *r = js.r;
	int rc = check_range(r, attr, a, b, err);
	if (rc)
		return rc;
	const mt_attr *at = &r->m->attrs[attr];
	uint64_t unit = mt_attr_items(at) * mt_dtype_size(at->dtype);
	uint64_t *offs = NULL;
	uint64_t need = 0;
	if (at->ragged) {
		size_t pieces = count_pieces(r->m, a, b);
		offs = malloc(((b - a) + pieces + 1) * sizeof *offs);
		if (!offs)
			return mti_err(err, MT_ENOMEM, "out of memory");
		rc = ragged_offsets(r, attr, a, b, offs, err);
		const uint64_t *o = offs;
		for (uint64_t row = a; !rc && row < b;) {
			const mt_mshard *sh = &r->m->shards[shard_of(r->m, row)];
			uint64_t n = (b < sh->first_row + sh->rows ? b : sh->first_row + sh->rows) - row;
			if (o[n] < o[0])
				rc = mti_err(err, MT_ECORRUPT, "%s@%s: %s offsets decrease near row %llu",
					    r->m->dataset, r->m->version, at->name,
					    (unsigned long long)row);
			need += (o[n] - o[0]) * unit;
			o += n + 1;
			row += n;
		}
	} else {
		need = (b - a) * unit;
	}
	if (!rc && !js.each && need > cap)
		rc = mti_err(err, MT_ERANGE, "%s@%s: %s rows %llu:%llu need %llu bytes, buffer "
			    "holds %zu", r->m->dataset, r->m->version, at->name,
			    (unsigned long long)a, (unsigned long long)b,
			    (unsigned long long)need, cap);
	uint8_t *dst = js.each ? NULL : buf;
	uint64_t done = 0;
	const uint64_t *o = offs;
	size_t s1 = a < b ? shard_of(r->m, b - 1) + 1 : 0;
	for (size_t s = shard_of(r->m, a); !rc && a < b && s < s1; s++) {
		const mt_mshard *sh = &r->m->shards[s];
		if (sh->first_row >= b)
			break;
		uint64_t la = a > sh->first_row ? a - sh->first_row : 0;
		uint64_t lb = b - sh->first_row < sh->rows ? b - sh->first_row : sh->rows;
		const mt_index_entry *e;
		rc = entry_of(r, s, at->name, at->ragged ? "/values" : "", &e, err);
		uint64_t u0 = at->ragged ? o[0] : la, u1 = at->ragged ? o[lb - la] : lb;
		if (!rc && (e->unit_bytes != unit || u1 > e->units))
			rc = mti_err(err, MT_ECORRUPT, "%s: '%s' does not match the manifest",
				    r->keys[s], e->name);
		if (!rc && plan_units(&js, s, e, u0, u1, dst, done))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
		if (dst)
			dst += (u1 - u0) * unit;
		done += u1 - u0;
		if (at->ragged)
			o += lb - la + 1;
	}
	free(offs);
	if (rc) {
		free(js.v);
		return rc;
	}
	return run_jobs(&js, err);
}

int mt_reader_read(mt_reader *r, size_t attr, uint64_t a, uint64_t b, void *buf, size_t cap,
		   mt_error *err)
{
	return read_rows((struct jobs){.r = r, .keep = KEEP_PART}, attr, a, b, buf, cap, err);
}

int mti_reader_read_each(mt_reader *r, size_t attr, uint64_t a, uint64_t b, mti_rows_fn fn,
			 void *ud, mt_error *err)
{
	if (attr < r->m->nattrs && r->m->attrs[attr].ragged)
		return mti_err(err, MT_EINVAL, "%s@%s: attribute %s is ragged", r->m->dataset,
			      r->m->version, r->m->attrs[attr].name);
	return read_rows((struct jobs){.r = r, .each = fn, .each_ud = ud}, attr, a, b, NULL, 0,
			 err);
}

/* ---- gathers ------------------------------------------------------------- */

static int pick_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct pick *)a)->unit, y = ((const struct pick *)b)->unit;
	return x < y ? -1 : x > y;
}

/* One job per chunk holding any of picks[0..n) (sorted by row, all of
 * shard s, turned here into rows of the shard). */
static int gather_shard(struct jobs *js, size_t s, size_t attr, struct pick *p, size_t n,
			mt_error *err)
{
	mt_reader *r = js->r;
	const mt_attr *at = &r->m->attrs[attr];
	const mt_index_entry *e;
	int rc = entry_of(r, s, at->name, "", &e, err);
	uint64_t unit = mt_attr_items(at) * mt_dtype_size(at->dtype);
	if (!rc && (e->unit_bytes != unit || e->units != r->m->shards[s].rows || !e->chunk_units))
		rc = mti_err(err, MT_ECORRUPT, "%s: '%s' does not match the manifest", r->keys[s],
			    e->name);
	for (size_t i = 0; i < n; i++)
		p[i].unit -= r->m->shards[s].first_row;
	for (size_t i = 0, next; !rc && i < n; i = next) {
		size_t c = (size_t)(p[i].unit / e->chunk_units);
		for (next = i + 1; next < n && p[next].unit / e->chunk_units == c; next++)
			;
		if (c >= e->nchunks)
			return mti_err(err, MT_ECORRUPT, "%s: '%s' has no chunk %zu", r->keys[s],
				      e->name, c);
		const mt_chunk *k = &e->chunks[c];
		if (p[next - 1].unit >= k->first + k->count || p[i].unit < k->first)
			return mti_err(err, MT_ECORRUPT, "%s: '%s' chunk %zu does not hold rows %llu..%llu",
				      r->keys[s], e->name, c, (unsigned long long)p[i].unit,
				      (unsigned long long)p[next - 1].unit);
		struct job j = {s, e, c, p[i].unit, p[next - 1].unit + 1, NULL, 0, p + i, next - i};
		if (jobs_add(js, &j))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	return rc;
}

int mt_reader_read_rows(mt_reader *r, size_t attr, const uint64_t *rows, size_t n, void *buf,
			size_t cap, mt_error *err)
{
	int rc = check_range(r, attr, 0, 0, err);
	if (rc)
		return rc;
	const mt_attr *at = &r->m->attrs[attr];
	uint64_t unit = mt_attr_items(at) * mt_dtype_size(at->dtype), need;
	if (at->ragged)
		return mti_err(err, MT_EINVAL, "%s@%s: attribute %s is ragged: read its rows by range",
			      r->m->dataset, r->m->version, at->name);
	if (!mti_mul_ok(unit, n, &need) || need > cap)
		return mti_err(err, MT_ERANGE, "%s@%s: %zu rows of %s need %llu bytes, buffer holds "
			      "%zu", r->m->dataset, r->m->version, n, at->name,
			      (unsigned long long)(n * unit), cap);
	struct pick *p = malloc((n ? n : 1) * sizeof *p);
	if (!p)
		return mti_err(err, MT_ENOMEM, "out of memory");
	int sorted = 1;
	for (size_t i = 0; !rc && i < n; i++) {
		if (rows[i] >= r->m->rows)
			rc = mti_err(err, MT_ERANGE, "%s@%s: row %llu is past its %llu rows", r->m->dataset,
				    r->m->version, (unsigned long long)rows[i],
				    (unsigned long long)r->m->rows);
		p[i] = (struct pick){rows[i], (uint8_t *)buf + i * unit};
		sorted &= !i || rows[i] >= rows[i - 1];
	}
	/* In row order, each chunk's rows are one run of picks: one job. */
	if (!rc && !sorted)
		qsort(p, n, sizeof *p, pick_cmp);
	struct jobs js = {.r = r, .keep = KEEP_ALL};
	for (size_t i = 0, next; !rc && i < n; i = next) {
		/* A lazy reader: the fragment of each shard's first pick. */
		if ((rc = reader_need_rows(r, p[i].unit, p[i].unit + 1, err)))
			break;
		size_t s = shard_of(r->m, p[i].unit);
		uint64_t end = r->m->shards[s].first_row + r->m->shards[s].rows;
		for (next = i + 1; next < n && p[next].unit < end; next++)
			;
		rc = gather_shard(&js, s, attr, p + i, next - i, err);
	}
	if (!rc)
		rc = run_jobs(&js, err);
	else
		free(js.v);
	free(p);
	return rc;
}

void mt_reader_stats(const mt_reader *r, mt_read_stats *out)
{
	mt_read_stats st = MT_READ_STATS_INIT;
	mti_heal_counts(r->heal, &st.healed_chunks, &st.healed_indexes, &st.heal_bytes);
	/* A caller built against an older matorage.h gets the fields it knows. */
	size_t n = out->size < sizeof st ? out->size : sizeof st;
	if (n > sizeof st.size)
		memcpy((char *)out + sizeof st.size, (char *)&st + sizeof st.size,
		       n - sizeof st.size);
}
