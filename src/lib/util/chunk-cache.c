/* chunk-cache.c — decoded chunks in memory within a byte budget: a hash table and a least-recently-used list under one lock. */
#include "chunk-cache.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BUDGET (256ull << 20)
#define FIRST_BUCKETS 64

/* One chunk: its key's names and its bytes in one allocation.  A chunk
 * evicted while pinned leaves the table and the list (linked 0) and is
 * freed by its last release. */
struct mti_centry {
	struct mti_centry *hnext;      /* next in its bucket */
	struct mti_centry *newer, *older;
	uint64_t hash, chunk, xxh3;
	size_t len;                    /* bytes of data */
	size_t cost;                   /* what it counts against the budget: the whole allocation */
	int refs, linked;
	char *shard, *entry;           /* after the data */
	max_align_t data[];
};

struct mti_ccache {
	pthread_mutex_t lock;
	mti_centry **buckets;
	size_t nbuckets, count;
	mti_centry *newest, *oldest;
	uint64_t budget, bytes;
	uint64_t hits, misses, evictions;
};

static uint64_t key_hash(const mti_ckey *k)
{
	/* FNV-1a over the names, then the numbers mixed in (splitmix64's finaliser). */
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = k->shard; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	h = (h ^ 0xff) * 0x100000001b3ull;
	for (const char *p = k->entry; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	h ^= k->chunk * 0x9e3779b97f4a7c15ull ^ k->xxh3;
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static int key_is(const mti_centry *e, const mti_ckey *k, uint64_t h)
{
	return e->hash == h && e->chunk == k->chunk && e->xxh3 == k->xxh3 &&
	       !strcmp(e->shard, k->shard) && !strcmp(e->entry, k->entry);
}

mti_ccache *mti_ccache_new(uint64_t budget)
{
	mti_ccache *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->buckets = calloc(FIRST_BUCKETS, sizeof *c->buckets);
	if (!c->buckets) {
		free(c);
		return NULL;
	}
	c->nbuckets = FIRST_BUCKETS;
	c->budget = budget;
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

/* ---- under the lock ------------------------------------------------------ */

static mti_centry *find_locked(mti_ccache *c, const mti_ckey *k, uint64_t h)
{
	for (mti_centry *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->hnext)
		if (key_is(e, k, h))
			return e;
	return NULL;
}

static void list_unlink(mti_ccache *c, mti_centry *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void list_push(mti_ccache *c, mti_centry *e)
{
	e->older = c->newest;
	e->newer = NULL;
	if (c->newest)
		c->newest->newer = e;
	c->newest = e;
	if (!c->oldest)
		c->oldest = e;
}

/* Take e out of the table and the list; freed now unless pinned. */
static void drop_locked(mti_ccache *c, mti_centry *e)
{
	mti_centry **p = &c->buckets[e->hash & (c->nbuckets - 1)];
	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	list_unlink(c, e);
	e->linked = 0;
	c->count--;
	c->bytes -= e->cost;
	if (!e->refs)
		free(e);
}

static void evict_to_locked(mti_ccache *c, uint64_t room)
{
	while (c->oldest && c->bytes + room > c->budget) {
		drop_locked(c, c->oldest);
		c->evictions++;
	}
}

/* Twice the buckets once there are more chunks than buckets (a failed
 * allocation keeps the old table: longer chains, still right). */
static void grow_locked(mti_ccache *c)
{
	if (c->count < c->nbuckets)
		return;
	size_t n = c->nbuckets * 2;
	mti_centry **b = calloc(n, sizeof *b);
	if (!b)
		return;
	for (size_t i = 0; i < c->nbuckets; i++)
		for (mti_centry *e = c->buckets[i], *next; e; e = next) {
			next = e->hnext;
			e->hnext = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = n;
}

/* ---- the interface ------------------------------------------------------- */

mti_centry *mti_ccache_get(mti_ccache *c, const mti_ckey *k, const void **data, size_t *len)
{
	uint64_t h = key_hash(k);
	pthread_mutex_lock(&c->lock);
	mti_centry *e = find_locked(c, k, h);
	if (e) {
		e->refs++;
		list_unlink(c, e);
		list_push(c, e);
		c->hits++;
		*data = e->data;
		*len = e->len;
	} else {
		c->misses++;
	}
	pthread_mutex_unlock(&c->lock);
	return e;
}

void mti_ccache_release(mti_ccache *c, mti_centry *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&c->lock);
	int gone = --e->refs == 0 && !e->linked;
	pthread_mutex_unlock(&c->lock);
	if (gone)
		free(e);
}

int mti_ccache_has(mti_ccache *c, const mti_ckey *k)
{
	uint64_t h = key_hash(k);
	pthread_mutex_lock(&c->lock);
	int has = find_locked(c, k, h) != NULL;
	pthread_mutex_unlock(&c->lock);
	return has;
}

void mti_ccache_put(mti_ccache *c, const mti_ckey *k, const void *data, size_t len)
{
	size_t ls = strlen(k->shard) + 1, le = strlen(k->entry) + 1;
	size_t cost = sizeof(mti_centry) + len + ls + le;
	pthread_mutex_lock(&c->lock);
	uint64_t budget = c->budget;
	pthread_mutex_unlock(&c->lock);
	if (cost > budget)
		return;
	/* Copied before the lock is taken: other threads' lookups do not wait on it. */
	mti_centry *e = malloc(cost);
	if (!e)
		return;
	uint64_t h = key_hash(k);
	memset(e, 0, sizeof *e);
	e->hash = h;
	e->chunk = k->chunk;
	e->xxh3 = k->xxh3;
	e->len = len;
	e->cost = cost;
	e->linked = 1;
	memcpy(e->data, data, len);
	e->shard = (char *)e->data + len;
	e->entry = e->shard + ls;
	memcpy(e->shard, k->shard, ls);
	memcpy(e->entry, k->entry, le);
	pthread_mutex_lock(&c->lock);
	if (cost > c->budget || find_locked(c, k, h)) {
		pthread_mutex_unlock(&c->lock);
		free(e);
		return;
	}
	evict_to_locked(c, cost);
	grow_locked(c);
	e->hnext = c->buckets[h & (c->nbuckets - 1)];
	c->buckets[h & (c->nbuckets - 1)] = e;
	list_push(c, e);
	c->count++;
	c->bytes += cost;
	pthread_mutex_unlock(&c->lock);
}

void mti_ccache_set_budget(mti_ccache *c, uint64_t budget)
{
	pthread_mutex_lock(&c->lock);
	c->budget = budget;
	evict_to_locked(c, 0);
	pthread_mutex_unlock(&c->lock);
}

void mti_ccache_clear(mti_ccache *c)
{
	pthread_mutex_lock(&c->lock);
	while (c->oldest)
		drop_locked(c, c->oldest);
	pthread_mutex_unlock(&c->lock);
}

void mti_ccache_stats(mti_ccache *c, mt_cache_stats *out)
{
	mt_cache_stats st = MT_CACHE_STATS_INIT;
	if (c) {
		pthread_mutex_lock(&c->lock);
		st.budget = c->budget;
		st.bytes = c->bytes;
		st.chunks = c->count;
		st.hits = c->hits;
		st.misses = c->misses;
		st.evictions = c->evictions;
		pthread_mutex_unlock(&c->lock);
	}
	/* A caller built against an older matorage.h gets the fields it knows. */
	size_t n = out->size < sizeof st ? out->size : sizeof st;
	if (n > sizeof st.size)
		memcpy((char *)out + sizeof st.size, (char *)&st + sizeof st.size, n - sizeof st.size);
}

void mti_ccache_free(mti_ccache *c)
{
	if (!c)
		return;
	mti_ccache_clear(c);
	free(c->buckets);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* ---- the process's cache -------------------------------------------------- */

static mti_ccache *global;
static pthread_once_t global_once = PTHREAD_ONCE_INIT;

/* $MATORAGE_CHUNK_CACHE as bytes: digits and an optional K, M or G (KiB,
 * MiB, GiB); the default when unset or not of that form. */
static uint64_t env_budget(void)
{
	const char *v = getenv("MATORAGE_CHUNK_CACHE");
	if (!v || !*v)
		return DEFAULT_BUDGET;
	char *end;
	unsigned long long n = strtoull(v, &end, 10);
	if (end == v || *v == '-')
		return DEFAULT_BUDGET;
	int shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end && strcmp(end, "iB") && strcmp(end, "B"))
		return DEFAULT_BUDGET;
	uint64_t out;
	return mti_mul_ok(n, 1ull << shift, &out) ? out : DEFAULT_BUDGET;
}

/* A fork while another thread holds the lock would leave it held forever
 * in the child (DataLoader workers are forked from threaded processes):
 * the lock is taken around fork() so the child's copy is free. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&global->lock);
}

static void fork_after(void)
{
	pthread_mutex_unlock(&global->lock);
}

static void global_init(void)
{
	global = mti_ccache_new(env_budget());
	if (global && pthread_atfork(fork_prepare, fork_after, fork_after)) {
		mti_ccache_free(global);
		global = NULL;
	}
}

mti_ccache *mti_ccache_global(void)
{
	pthread_once(&global_once, global_init);
	return global;
}

/* ---- the public API --------------------------------------------------------- */

void mt_chunk_cache_set_budget(uint64_t bytes)
{
	mti_ccache *c = mti_ccache_global();
	if (c)
		mti_ccache_set_budget(c, bytes);
}

void mt_chunk_cache_clear(void)
{
	mti_ccache *c = mti_ccache_global();
	if (c)
		mti_ccache_clear(c);
}

void mt_chunk_cache_stats(mt_cache_stats *out)
{
	mti_ccache_stats(mti_ccache_global(), out);
}
