/* test-chunk-cache.c — the decoded-chunk cache: budget, eviction order, pins, threads; and the reader's gathers through it (one decode per chunk, errors never kept). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunk-cache.h"
#include "dataset.h"
#include "tap.h"
#include "tap-store.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/* Chunk k's bytes: a pattern only it has, so a mixed-up entry shows. */
static void fill(uint8_t *p, size_t n, uint64_t k)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(k * 131 + i * 7 + (i >> 8));
}

static int holds(const void *data, size_t n, uint64_t k)
{
	const uint8_t *p = data;
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(k * 131 + i * 7 + (i >> 8)))
			return 0;
	return 1;
}

static mti_ckey key(uint64_t k)
{
	return (mti_ckey){SHA_A, "image", k, 1000 + k};
}

static mt_cache_stats stats(mti_ccache *c)
{
	mt_cache_stats st = MT_CACHE_STATS_INIT;
	mti_ccache_stats(c, &st);
	return st;
}

static void test_budget(void)
{
	uint8_t buf[1000];
	mti_ccache *c = mti_ccache_new(10000);
	uint64_t worst = 0;
	for (uint64_t k = 0; k < 100; k++) {
		fill(buf, sizeof buf, k);
		mti_ckey kk = key(k);
		mti_ccache_put(c, &kk, buf, sizeof buf);
		mt_cache_stats st = stats(c);
		worst = st.bytes > worst ? st.bytes : worst;
	}
	mt_cache_stats st = stats(c);
	tap_ok(worst <= 10000 && st.chunks >= 5 && st.chunks < 10 && st.evictions == 100 - st.chunks,
	       "a budget of 10000 bytes: never more held (at most %llu), %llu chunks of 1000 kept, "
	       "%llu evicted", (unsigned long long)worst, (unsigned long long)st.chunks,
	       (unsigned long long)st.evictions);
	int newest = 1;
	for (uint64_t k = 100 - st.chunks; k < 100; k++) {
		mti_ckey kk = key(k);
		newest &= mti_ccache_has(c, &kk);
	}
	tap_ok(newest, "the chunks kept are the newest ones");
	mti_ccache_set_budget(c, 2500);
	st = stats(c);
	tap_ok(st.bytes <= 2500 && st.chunks == 2, "a smaller budget lets go at once (%llu bytes, %llu "
	       "chunks)", (unsigned long long)st.bytes, (unsigned long long)st.chunks);
	uint8_t big[3000] = {0};
	mti_ckey kb = key(500);
	mti_ccache_put(c, &kb, big, sizeof big);
	tap_ok(!mti_ccache_has(c, &kb) && stats(c).chunks == 2,
	       "a chunk larger than the whole budget is not kept, and evicts nothing");
	mti_ccache_set_budget(c, 0);
	mti_ccache_put(c, &kb, buf, 10);
	tap_ok(stats(c).chunks == 0 && stats(c).bytes == 0, "a budget of 0 holds nothing");
	mti_ccache_free(c);
}

static void test_lru(void)
{
	uint8_t buf[1000];
	mti_ccache *probe = mti_ccache_new(1u << 20);
	mti_ckey k0 = key(0);
	fill(buf, sizeof buf, 0);
	mti_ccache_put(probe, &k0, buf, sizeof buf);
	uint64_t cost = stats(probe).bytes;
	mti_ccache_free(probe);

	mti_ccache *c = mti_ccache_new(3 * cost);
	for (uint64_t k = 0; k < 3; k++) {
		mti_ckey kk = key(k);
		fill(buf, sizeof buf, k);
		mti_ccache_put(c, &kk, buf, sizeof buf);
	}
	const void *data;
	size_t len;
	mti_centry *e = mti_ccache_get(c, &k0, &data, &len);
	int ok = e && len == sizeof buf && holds(data, len, 0);
	mti_ccache_release(c, e);
	mti_ckey k1 = key(1), k2 = key(2), k3 = key(3);
	fill(buf, sizeof buf, 3);
	mti_ccache_put(c, &k3, buf, sizeof buf);
	tap_ok(ok && mti_ccache_has(c, &k0) && !mti_ccache_has(c, &k1) && mti_ccache_has(c, &k2) &&
	       mti_ccache_has(c, &k3), "least recently used goes first: chunk 0, used after 1 and 2 "
	       "were put, stays; chunk 1 goes");
	mti_ccache_put(c, &k3, buf, 10);
	e = mti_ccache_get(c, &k3, &data, &len);
	tap_ok(e && len == sizeof buf && holds(data, len, 3), "a second put of a key keeps the first");
	mti_ccache_release(c, e);

	/* A pinned chunk outlives its eviction; its memory goes at the release (ASan sees both). */
	e = mti_ccache_get(c, &k2, &data, &len);
	mti_ccache_clear(c);
	tap_ok(e && !mti_ccache_has(c, &k2) && holds(data, len, 2) && stats(c).bytes == 0,
	       "a chunk evicted while in use stays readable until released, and is not counted");
	mti_ccache_release(c, e);

	mti_ckey other[3] = {{SHA_B, "image", 0, 1000}, {SHA_A, "label", 0, 1000},
			     {SHA_A, "image", 0, 999}};
	int apart = 1;
	fill(buf, sizeof buf, 0);
	mti_ccache_put(c, &k0, buf, sizeof buf);
	for (int i = 0; i < 3; i++)
		apart &= !mti_ccache_has(c, &other[i]);
	tap_ok(apart, "another shard, another attribute or another checksum is another chunk");
	uint64_t hits = stats(c).hits, misses = stats(c).misses;
	e = mti_ccache_get(c, &other[0], &data, &len);
	tap_ok(!e && stats(c).misses == misses + 1 && stats(c).hits == hits, "a miss is counted");
	mti_ccache_free(c);
}

/* Threads putting and getting 64 keys in a cache with room for 16: every
 * chunk got is the chunk of its key, whole. */
struct hammer {
	mti_ccache *c;
	unsigned seed;
	atomic_int wrong;
};

static void *hammer_run(void *arg)
{
	struct hammer *h = arg;
	unsigned s = h->seed;
	uint8_t buf[512];
	for (int i = 0; i < 20000; i++) {
		s = s * 1103515245u + 12345u;
		uint64_t k = (s >> 16) % 64;
		mti_ckey kk = key(k);
		const void *data;
		size_t len;
		mti_centry *e = mti_ccache_get(h->c, &kk, &data, &len);
		if (e && (len != sizeof buf || !holds(data, len, k)))
			atomic_fetch_add(&h->wrong, 1);
		mti_ccache_release(h->c, e);
		if (!e) {
			fill(buf, sizeof buf, k);
			mti_ccache_put(h->c, &kk, buf, sizeof buf);
		}
		if (i % 5000 == 4999 && i < 15000)
			mti_ccache_clear(h->c);
	}
	return NULL;
}

static void test_threads(void)
{
	mti_ccache *c = mti_ccache_new(16 * 700);
	struct hammer h = {.c = c};
	atomic_init(&h.wrong, 0);
	pthread_t t[4];
	struct hammer hs[4];
	for (int i = 0; i < 4; i++) {
		hs[i] = (struct hammer){.c = c, .seed = 17u + (unsigned)i};
		atomic_init(&hs[i].wrong, 0);
		pthread_create(&t[i], NULL, hammer_run, &hs[i]);
	}
	int wrong = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		wrong += atomic_load(&hs[i].wrong);
	}
	mt_cache_stats st = stats(c);
	tap_ok(!wrong && st.bytes <= 16 * 700 && st.hits > 0 && st.evictions > 0,
	       "4 threads, 80000 gets and puts of 64 keys: every chunk right (%d wrong), within the "
	       "budget (%llu bytes), %llu hits, %llu evictions", wrong, (unsigned long long)st.bytes,
	       (unsigned long long)st.hits, (unsigned long long)st.evictions);
	mti_ccache_free(c);
	(void)h;
}

/* ---- through a reader ------------------------------------------------------ */

static char root[256];
static mt_store *store;
static atomic_int reads;
static mt_store_ops counting_ops;
static const mt_store_ops *real_ops;

static int counting_read(mt_store *s, const char *k, uint64_t off, void *buf, size_t len,
			 mt_error *err)
{
	atomic_fetch_add(&reads, 1);
	return real_ops->read(s, k, off, buf, len, err);
}

#define ROWS 3000
/* Row i of x: 16 int32 values i * 16 + j. */
static int write_rows(mt_error *err)
{
	mt_attr a = {"x", MT_INT32, 1, {16}, 0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 1000;
	o.chunk_bytes = 100 * 64; /* 100 rows a chunk: 30 chunks */
	mt_writer *w;
	int rc = mt_writer_open(store, "g", &a, 1, &o, &w, err);
	if (rc)
		return rc;
	int32_t *x = malloc(ROWS * 16 * sizeof *x);
	for (int i = 0; i < ROWS * 16; i++)
		x[i] = i;
	const void *data[1] = {x};
	rc = mt_writer_append(w, ROWS, data, NULL, err);
	char ver[64];
	if (!rc)
		rc = mt_writer_commit(w, ver, sizeof ver, err);
	mt_writer_close(w);
	free(x);
	return rc;
}

static int rows_right(const int32_t *got, const uint64_t *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (int j = 0; j < 16; j++)
			if (got[i * 16 + j] != (int32_t)(rows[i] * 16 + (uint64_t)j))
				return 0;
	return 1;
}

static void test_gather(void)
{
	mt_error err = {0};
	mt_reader *r;
	if (!TAP_CALL(write_rows(&err), &err, "a version of 3000 rows, 3 shards, 100 rows a chunk") ||
	    !TAP_CALL(mt_reader_open(store, "g", NULL, &r, &err), &err, "open it"))
		return;
	enum { N = 500 };
	uint64_t rows[N];
	unsigned seed = 20261128u;
	tap_diag("seed %u", seed);
	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		rows[i] = (seed >> 8) % ROWS;
	}
	rows[1] = rows[0]; /* a repeat */
	static int32_t got[N * 16];
	/* Every shard's index first, so the counts below are chunk reads only. */
	uint64_t firsts[3] = {0, 1000, 2000};
	mt_reader_read_rows(r, 0, firsts, 3, got, sizeof got, &err);
	mt_chunk_cache_clear();
	atomic_store(&reads, 0);
	char seen[30] = {0};
	int chunks = 0;
	for (int i = 0; i < N; i++)
		chunks += !seen[rows[i] / 100]++;
	int rc = mt_reader_read_rows(r, 0, rows, N, got, sizeof got, &err);
	int first = atomic_load(&reads);
	tap_ok(!rc && rows_right(got, rows, N) && first == chunks,
	       "500 random rows gathered right, one read per chunk (%d reads, %d chunks)", first,
	       chunks);
	memset(got, 0, sizeof got);
	mt_cache_stats st = MT_CACHE_STATS_INIT;
	mt_chunk_cache_stats(&st);
	uint64_t hits = st.hits;
	rc = mt_reader_read_rows(r, 0, rows, N, got, sizeof got, &err);
	mt_chunk_cache_stats(&st);
	tap_ok(!rc && rows_right(got, rows, N) && atomic_load(&reads) == first &&
	       st.hits == hits + (uint64_t)chunks,
	       "again: the same rows from the chunk cache, no read (%d more), %llu hits",
	       atomic_load(&reads) - first, (unsigned long long)(st.hits - hits));
	uint64_t past = ROWS;
	tap_ok(mt_reader_read_rows(r, 0, &past, 1, got, sizeof got, &err) == MT_ERANGE,
	       "a row past the end: %s", err.message);
	tap_ok(mt_reader_read_rows(r, 0, rows, N, got, 100, &err) == MT_ERANGE,
	       "a buffer too small: %s", err.message);
	/* mt_reader_read of a few rows keeps their chunk; of whole chunks, not. */
	mt_chunk_cache_clear();
	mt_reader_read(r, 0, 1005, 1010, got, sizeof got, &err);
	mt_chunk_cache_stats(&st);
	uint64_t part = st.chunks;
	mt_reader_read(r, 0, 2000, 2300, got, sizeof got, &err);
	mt_chunk_cache_stats(&st);
	tap_ok(part == 1 && st.chunks == 1, "a read of part of a chunk keeps it; of 3 whole chunks, "
	       "none (%llu, then %llu)", (unsigned long long)part, (unsigned long long)st.chunks);
	mt_reader_close(r);
}

static void flip(const char *k, uint64_t off)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", root, k);
	FILE *f = fopen(path, "r+b");
	if (!f)
		return;
	fseek(f, (long)off, SEEK_SET);
	int c = fgetc(f);
	fseek(f, (long)off, SEEK_SET);
	fputc(c ^ 0x40, f);
	fclose(f);
}

struct first_chunk {
	uint64_t offset, bytes;
	int seen;
};

static void on_chunk(void *ud, const mt_chunk_info *c)
{
	struct first_chunk *f = ud;
	if (!f->seen++ && !strcmp(c->attr, "x")) {
		f->offset = c->offset;
		f->bytes = c->bytes;
	}
}

static void test_damage(void)
{
	mt_error err = {0};
	mt_reader *r;
	if (mt_reader_open(store, "g", NULL, &r, &err))
		return;
	mt_shard_info si;
	mt_reader_shard(r, 1, &si);
	struct first_chunk fc = {0};
	mt_reader_chunks(r, 1, on_chunk, &fc, &err);
	mt_chunk_cache_clear();
	flip(si.key, fc.offset + fc.bytes / 2);
	uint64_t rows[2] = {1010, 1020}; /* chunk 0 of shard 1 */
	int32_t got[32];
	mt_cache_stats st = MT_CACHE_STATS_INIT;
	int rc1 = mt_reader_read_rows(r, 0, rows, 2, got, sizeof got, &err);
	mt_chunk_cache_stats(&st);
	uint64_t held = st.chunks;
	int rc2 = mt_reader_read_rows(r, 0, rows, 2, got, sizeof got, &err);
	int rc3 = mt_reader_read(r, 0, 1010, 1011, got, sizeof got, &err);
	tap_ok(rc1 == MT_ECORRUPT && rc2 == MT_ECORRUPT && rc3 == MT_ECORRUPT && held == 0,
	       "a damaged chunk fails every read, and is never kept (%llu chunks held): %s",
	       (unsigned long long)held, err.message);
	flip(si.key, fc.offset + fc.bytes / 2);
	rc1 = mt_reader_read_rows(r, 0, rows, 2, got, sizeof got, &err);
	mt_chunk_cache_stats(&st);
	tap_ok(!rc1 && rows_right(got, rows, 2) && st.chunks == 1,
	       "mended, the chunk reads right and is kept then");
	mt_reader_close(r);
}

/* A loader with in_memory: the version's decoded chunks are its own, and a
 * second epoch decodes nothing. */
static void test_loader_in_memory(void)
{
	mt_error err = {0};
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.in_memory = 1;
	o.shuffle = 1;
	o.seed = 3;
	o.batch_rows = 128;
	mt_loader *l;
	if (!TAP_CALL(mt_loader_open(store, "g", NULL, &o, &l, &err), &err, "an in-memory loader"))
		return;
	mt_cache_stats a = MT_CACHE_STATS_INIT, b = MT_CACHE_STATS_INIT;
	const mt_batch *bt;
	uint64_t n = 0;
	int ok = 1;
	for (int e = 0; e < 2; e++) {
		mt_loader_set_epoch(l, (uint64_t)e, &err);
		while (!mt_loader_next(l, &bt, &err) && bt) {
			ok &= rows_right(bt->cols[0].data, bt->row_ids, bt->rows);
			n += bt->rows;
		}
		if (e == 0)
			mt_loader_cache_stats(l, &a);
	}
	mt_loader_cache_stats(l, &b);
	/* The second epoch may be read ahead before the first's last batch is
	 * taken: its reads are counted as hits whenever they happen. */
	tap_ok(ok && n == 2 * ROWS && a.chunks == 30 && b.misses == a.misses && b.hits >= 30,
	       "two epochs right; the first keeps all 30 chunks decoded, the second decodes none "
	       "(%llu misses, then %llu; %llu hits)", (unsigned long long)a.misses,
	       (unsigned long long)b.misses, (unsigned long long)b.hits);
	uint64_t rows[3] = {2999, 0, 1500};
	uint64_t before = b.misses;
	int rc = mt_loader_read_rows(l, rows, 3, &bt, &err);
	mt_loader_cache_stats(l, &b);
	tap_ok(!rc && bt->rows == 3 && rows_right(bt->cols[0].data, rows, 3) && b.misses == before,
	       "read_rows from the loader's decoded chunks");
	mt_loader_close(l);
	o.cache_bytes = ROWS * 64 - 1;
	if (!TAP_CALL(mt_loader_open(store, "g", NULL, &o, &l, &err), &err, "a budget too small"))
		return;
	n = 0;
	ok = 1;
	while (!mt_loader_next(l, &bt, &err) && bt) {
		ok &= rows_right(bt->cols[0].data, bt->row_ids, bt->rows);
		n += bt->rows;
	}
	mt_loader_cache_stats(l, &a);
	mt_cache_stats g = MT_CACHE_STATS_INIT;
	mt_chunk_cache_stats(&g);
	tap_ok(ok && n == ROWS && a.budget == g.budget,
	       "when the decoded rows do not fit: every row right, through the process's cache");
	mt_loader_close(l);
}

int main(void)
{
	test_budget();
	test_lru();
	test_threads();
	if (tap_scratch_store("ccache", root, sizeof root, &store))
		return 1;
	real_ops = store->ops;
	counting_ops = *real_ops;
	counting_ops.read = counting_read;
	store->ops = &counting_ops;
	test_gather();
	test_damage();
	test_loader_in_memory();
	store->ops = real_ops;
	mt_store_close(store);
	tap_rm_tree(root);
	return tap_done();
}
