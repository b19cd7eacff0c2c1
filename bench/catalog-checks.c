/* catalog-checks.c — what recording a verify's results costs the catalog: one dataset of N
 * shards (its manifest only; the catalog reads nothing else), synced into a fresh catalog,
 * then mt_catalog_shards_checked of N results (every other one a verification, the rest a
 * health state), R times; prints each time and the median, in seconds and microseconds a
 * result.
 * usage: catalog-checks N [R [DIR]]   (DIR: where the store and catalog go, made if missing) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "format.h"
#include "matorage-catalog.h"
#include "store.h"
#include "bench.h"

static void die(const mt_error *err)
{
	fprintf(stderr, "catalog-checks: %s\n", err->message);
	exit(1);
}

/* Shard i's sha256, as the manifest and the results name it. */
static void shard_sha(char *out, size_t cap, size_t i)
{
	snprintf(out, cap, "%032x%032zx", 0xc4ecu, i);
}

static void make_store(mt_store *s, size_t nshards)
{
	mt_attr attrs[] = {{"x", MT_INT64, 0, {0}, 0}};
	mt_mshard *shards = calloc(nshards, sizeof *shards);
	for (size_t i = 0; i < nshards; i++) {
		shard_sha(shards[i].sha256, sizeof shards[i].sha256, i);
		shards[i].bytes = 4096;
		shards[i].rows = 10;
		shards[i].first_row = (uint64_t)i * 10;
		shards[i].index_offset = 4000;
		shards[i].index_bytes = 96;
	}
	char name[] = "ck", version[] = "v1", parent[] = "", author[] = "bench", desc[] = "";
	char created[] = "2026-01-01T00:00:00.000Z";
	mt_manifest m = {
		.format = MT_FORMAT_VERSION, .dataset = name, .version = version, .parent = parent,
		.created = created, .author = author, .description = desc, .rows = nshards * 10,
		.raw_bytes = nshards * 80, .level = 3, .chunk_bytes = 1 << 20, .attrs = attrs,
		.nattrs = 1, .shards = shards, .nshards = nshards,
	};
	bench_put_manifest(s, &m, "catalog-checks");
	free(shards);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	const char *dir = argc > 3 ? argv[3] : "/tmp/mt-bench-checks";
	if (!n || runs < 1 || runs > 99) {
		fprintf(stderr, "usage: catalog-checks N [R [DIR]]\n");
		return 2;
	}
	char url[512], cat[512], marker[512];
	snprintf(url, sizeof url, "file://%s/store", dir);
	snprintf(cat, sizeof cat, "%s/catalog.db", dir);
	snprintf(marker, sizeof marker, "%s/made-%zu", dir, n);
	mkdir(dir, 0755);
	mt_store *s;
	mt_error err = {0};
	if (mt_store_open(url, &s, &err))
		die(&err);
	struct stat st;
	if (stat(marker, &st) != 0) {
		double t0 = bench_now();
		make_store(s, n);
		printf("made a manifest of %zu shards in %.1f s\n", n, bench_now() - t0);
		FILE *f = fopen(marker, "w");
		if (f)
			fclose(f);
	}
	remove(cat);
	mt_catalog *c;
	if (mt_catalog_open(cat, &c, &err))
		die(&err);
	double t0 = bench_now();
	mt_catalog_sync_stats ss;
	if (mt_catalog_sync(c, url, s, NULL, 0, NULL, NULL, &ss, &err))
		die(&err);
	printf("sync of %zu shards: %.1f s\n", n, bench_now() - t0);

	char (*sha)[65] = malloc(n * sizeof *sha);
	mt_catalog_shard_check *k = calloc(n, sizeof *k);
	for (size_t i = 0; i < n; i++) {
		shard_sha(sha[i], sizeof sha[i], i);
		k[i].sha256 = sha[i];
		k[i].verified = i % 2 == 0;
		k[i].code = i % 4 == 0 ? 0 : MT_ECORRUPT;
		k[i].state = MT_HEALTH_REPAIRABLE;
		k[i].note = i % 2 ? "one chunk's parity is short" : NULL;
	}
	double t[99];
	for (int r = 0; r < runs; r++) {
		double a = bench_now();
		if (mt_catalog_shards_checked(c, url, "ck", k, n, &err))
			die(&err);
		t[r] = bench_now() - a;
		printf("shards_checked of %zu results: %.3f s (%.2f us a result)\n", n, t[r],
		       t[r] * 1e6 / (double)n);
	}
	qsort(t, (size_t)runs, sizeof *t, bench_cmp_double);
	printf("median of %d: %.3f s, %.2f us a result\n", runs, t[runs / 2],
	       t[runs / 2] * 1e6 / (double)n);
	free(k);
	free(sha);
	mt_catalog_close(c);
	mt_store_close(s);
	return 0;
}
