/* test-roundtrip.c — randomized round trips: random attributes, dtypes, shapes, shard/chunk sizes and batches; prints its seed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matorage.h"
#include "tap.h"
#include "tap-store.h"

static uint64_t rng;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static uint64_t upto(uint64_t n)
{
	return n ? next() % n : 0;
}

struct col {
	mt_attr a;
	char name[16];
	uint8_t *vals;
	uint64_t *lens;
	uint64_t *start; /* item where each row starts */
	uint64_t items;
};

static int one_case(mt_store *s, int c, uint64_t seed)
{
	mt_error err = {0};
	int nattrs = 1 + (int)upto(3);
	uint64_t rows = upto(5) == 0 ? upto(3) : upto(3000);
	struct col cols[3];
	memset(cols, 0, sizeof cols);
	for (int i = 0; i < nattrs; i++) {
		struct col *k = &cols[i];
		snprintf(k->name, sizeof k->name, "a%d", i);
		k->a.name = k->name;
		k->a.dtype = (mt_dtype)(1 + upto(MT_FLOAT64));
		k->a.rank = (int)upto(4);
		for (int d = 0; d < k->a.rank; d++)
			k->a.shape[d] = 1 + upto(d == 0 ? 6 : 3);
		k->a.ragged = upto(4) == 0;
		uint64_t item = mt_attr_items(&k->a) * mt_dtype_size(k->a.dtype);
		k->lens = malloc((rows + 1) * 8);
		k->start = malloc((rows + 1) * 8);
		for (uint64_t r = 0; r < rows; r++) {
			k->lens[r] = k->a.ragged ? upto(8) : 1;
			k->start[r] = k->items;
			k->items += k->lens[r];
		}
		k->vals = malloc(k->items * item + 1);
		for (uint64_t b = 0; b < k->items * item; b++)
			k->vals[b] = (uint8_t)next();
		if (k->a.dtype == MT_BOOL)
			for (uint64_t b = 0; b < k->items * item; b++)
				k->vals[b] &= 1;
	}
	mt_attr attrs[3];
	for (int i = 0; i < nattrs; i++)
		attrs[i] = cols[i].a;
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = upto(2) ? 1 + upto(700) : 0;
	o.shard_bytes = 1 + upto(200000);
	o.chunk_bytes = 1 + upto(20000);
	o.level = 1 + (int)upto(5);
	o.threads = 1 + (int)upto(3);
	char ds[32];
	snprintf(ds, sizeof ds, "rt%d", c);
	mt_writer *w;
	int ok = 1;
	if (mt_writer_open(s, ds, attrs, (size_t)nattrs, &o, &w, &err)) {
		tap_diag("open: %s", err.message);
		ok = 0;
	}
	for (uint64_t r = 0; ok && r < rows;) {
		uint64_t n = 1 + upto(rows - r < 400 ? rows - r : 400);
		const void *data[3];
		const uint64_t *lens[3];
		for (int i = 0; i < nattrs; i++) {
			uint64_t item = mt_attr_items(&cols[i].a) * mt_dtype_size(cols[i].a.dtype);
			data[i] = cols[i].vals + cols[i].start[r] * item;
			lens[i] = cols[i].lens + r;
		}
		if (mt_writer_append(w, n, data, lens, &err)) {
			tap_diag("append: %s", err.message);
			ok = 0;
		}
		r += n;
	}
	char ver[64];
	if (ok && mt_writer_commit(w, ver, sizeof ver, &err)) {
		tap_diag("commit: %s", err.message);
		ok = 0;
	}
	if (ok)
		mt_writer_close(w);
	mt_reader *rd = NULL;
	if (ok && mt_reader_open(s, ds, NULL, &rd, &err)) {
		tap_diag("reader: %s", err.message);
		ok = 0;
	}
	for (int t = 0; ok && t < 6; t++) {
		uint64_t a = upto(rows + 1), b = a + upto(rows - a + 1);
		if (t == 0)
			a = 0, b = rows;
		for (int i = 0; ok && i < nattrs; i++) {
			struct col *k = &cols[i];
			uint64_t item = mt_attr_items(&k->a) * mt_dtype_size(k->a.dtype);
			uint64_t i0 = a < rows ? k->start[a] : k->items;
			uint64_t i1 = b < rows ? k->start[b] : k->items;
			size_t bytes = (size_t)((i1 - i0) * item);
			uint8_t *got = malloc(bytes + 1);
			if (mt_reader_read(rd, (size_t)i, a, b, got, bytes, &err) ||
			    memcmp(got, k->vals + i0 * item, bytes) != 0) {
				tap_diag("attr %s %s rows %llu:%llu differ: %s", k->name,
					 mt_dtype_name(k->a.dtype), (unsigned long long)a,
					 (unsigned long long)b, err.message);
				ok = 0;
			}
			free(got);
			if (ok && k->a.ragged) {
				uint64_t *l = malloc((b - a) * 8 + 8), tot = 0;
				if (mt_reader_ragged_lengths(rd, (size_t)i, a, b, l, &tot, &err) ||
				    memcmp(l, k->lens + a, (b - a) * 8) != 0 || tot != i1 - i0) {
					tap_diag("attr %s lengths %llu:%llu differ", k->name,
						 (unsigned long long)a, (unsigned long long)b);
					ok = 0;
				}
				free(l);
			}
		}
	}
	/* verify holds every shard's chunk index against the manifest too. */
	if (ok && mt_reader_verify(rd, NULL, NULL, NULL, NULL, &err)) {
		tap_diag("verify: %s", err.message);
		ok = 0;
	}
	mt_reader_close(rd);
	for (int i = 0; i < nattrs; i++) {
		free(cols[i].vals);
		free(cols[i].lens);
		free(cols[i].start);
	}
	return tap_ok(ok, "random case %d (seed %llu): %d attrs, %llu rows", c,
		      (unsigned long long)seed, nattrs, (unsigned long long)rows);
}

int main(void)
{
	const char *env = getenv("MT_SEED");
	/* A fixed seed by default: make check passes or fails the same way
	 * every time; other seeds are explored on purpose with MT_SEED. */
	uint64_t seed = env ? strtoull(env, NULL, 10) : 20261123;
	printf("# seed %llu (rerun with MT_SEED=%llu)\n", (unsigned long long)seed,
	       (unsigned long long)seed);
	char root[256];
	mt_store *s;
	if (tap_scratch_store("roundtrip", root, sizeof root, &s))
		return 1;
	for (int c = 0; c < 25; c++) {
		rng = seed * 2654435761u + (uint64_t)c * 0x9E3779B97F4A7C15ull + 1;
		one_case(s, c, seed);
	}
	mt_store_close(s);
	tap_rm_tree(root);
	return tap_done();
}
