/* catalog-bench.c — the browser over a big catalog: sync 10k datasets of 100 shards (1M shards), then time opening the dataset list and filtering it, through the browser's own code drawn headless. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "config.h"

#include <ncursesw/curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "format.h"
#include "store.h"
#include "tui.h"
#include "bench.h"

static void die(const mt_error *err)
{
	fprintf(stderr, "catalog-bench: %s\n", err->message);
	exit(1);
}

/* Manifests only (no shard objects): the catalog reads nothing else. */
static void make_store(mt_store *s, int ndatasets, int nshards)
{
	mt_attr attrs[] = {
		{ "image", MT_UINT8, 2, { 28, 28 }, 0 },
		{ "label", MT_INT64, 0, { 0 }, 0 },
	};
	mt_mshard *shards = calloc((size_t)nshards, sizeof *shards);
	for (int d = 0; d < ndatasets; d++) {
		char name[32], desc[96], tag1[16], tag2[16], created[32];
		char version[] = "v1", parent[] = "", author[] = "bench";
		snprintf(name, sizeof name, "ds%05d", d);
		snprintf(desc, sizeof desc, "synthetic dataset %d of the catalog benchmark", d);
		snprintf(tag1, sizeof tag1, "team%d", d % 20);
		snprintf(tag2, sizeof tag2, "split%d", d % 3);
		snprintf(created, sizeof created, "2026-01-01T00:00:%02d.000Z", d % 60);
		char *tags[] = { tag1, tag2 };
		for (int i = 0; i < nshards; i++) {
			snprintf(shards[i].sha256, sizeof shards[i].sha256, "%032x%032x", d, i);
			shards[i].bytes = 1 << 20;
			shards[i].rows = 1000;
			shards[i].first_row = (uint64_t)i * 1000;
			shards[i].index_offset = 1000;
			shards[i].index_bytes = 100;
		}
		mt_manifest m = {
			.format = MT_FORMAT_VERSION, .dataset = name, .version = version, .parent = parent,
			.created = created, .author = author, .description = desc, .tags = tags,
			.ntags = 2, .rows = (uint64_t)nshards * 1000,
			.raw_bytes = (uint64_t)nshards * 1000 * 792, .level = 3,
			.chunk_bytes = 1 << 20, .attrs = attrs, .nattrs = 2, .shards = shards,
			.nshards = (size_t)nshards,
		};
		bench_put_manifest(s, &m, "catalog-bench");
	}
	free(shards);
}

int main(int argc, char **argv)
{
	int ndatasets = argc > 1 ? atoi(argv[1]) : 10000;
	int nshards = argc > 2 ? atoi(argv[2]) : 100;
	const char *dir = argc > 3 ? argv[3] : "/tmp/mt-bench-catalog";
	char url[512], cat[512], marker[512];
	snprintf(url, sizeof url, "file://%s/store", dir);
	snprintf(cat, sizeof cat, "%s/catalog.db", dir);
	snprintf(marker, sizeof marker, "%s/made-%d-%d", dir, ndatasets, nshards);
	mkdir(dir, 0755);
	mt_store *s;
	mt_error err = { 0 };
	if (mt_store_open(url, &s, &err))
		die(&err);
	struct stat st;
	if (stat(marker, &st) != 0) {
		double t0 = bench_now();
		make_store(s, ndatasets, nshards);
		printf("made %d manifests of %d shards in %.1f s\n", ndatasets, nshards, bench_now() - t0);
		remove(cat);
		FILE *f = fopen(marker, "w");
		if (f)
			fclose(f);
	}
	mt_catalog *c;
	if (mt_catalog_open(cat, &c, &err))
		die(&err);
	mt_catalog_sync_stats ss;
	/* The first sync of a fresh catalog reads every manifest; the second
	 * only lists. */
	for (int pass = 0; pass < 2; pass++) {
		double t0 = bench_now();
		if (mt_catalog_sync(c, url, s, NULL, 0, NULL, NULL, &ss, &err))
			die(&err);
		printf("sync: %llu datasets, %llu versions, %llu manifests read: %.2f s\n",
		       (unsigned long long)ss.datasets, (unsigned long long)ss.versions,
		       (unsigned long long)ss.versions_read, bench_now() - t0);
	}
	mt_catalog_close(c);
	mt_store_close(s);

	/* The browser as a user meets it: start, open the bucket, open its
	 * 10k datasets (loaded, laid out and drawn), filter them. */
	enum { RUNS = 7 };
	double open_ms[RUNS], filter_ms[RUNS], narrow_ms[RUNS], start_ms[RUNS];
	size_t shown = 0, matched = 0;
	struct app_ctx ctx = { 0 };
	mt_store_opts_init(&ctx.store_opts);
	ctx.store_url = url;
	disp_open_headless(200, 60);
	for (int r = 0; r < RUNS; r++) {
		struct tui t;
		double a = bench_now();
		if (tui_init(&t, &ctx, cat, 0, &err))
			die(&err);
		tui_draw(&t);
		start_ms[r] = (bench_now() - a) * 1e3;
		tui_key(&t, DISP_FN | KEY_ENTER);
		a = bench_now();
		tui_key(&t, DISP_FN | KEY_ENTER);
		tui_draw(&t);
		open_ms[r] = (bench_now() - a) * 1e3;
		struct view *v = tui_top(&t);
		a = bench_now();
		v->ops->filter(&t, v, "team7");
		tui_draw(&t);
		filter_ms[r] = (bench_now() - a) * 1e3;
		sscanf(t.status, "filter: team7 (%zu rows)", &matched);
		a = bench_now();
		v->ops->filter(&t, v, "ds04242");
		tui_draw(&t);
		narrow_ms[r] = (bench_now() - a) * 1e3;
		v->ops->filter(&t, v, "");
		sscanf(t.status, "no filter (%zu rows)", &shown);
		tui_free(&t);
	}
	disp_close();
	qsort(start_ms, RUNS, sizeof(double), bench_cmp_double);
	qsort(open_ms, RUNS, sizeof(double), bench_cmp_double);
	qsort(filter_ms, RUNS, sizeof(double), bench_cmp_double);
	qsort(narrow_ms, RUNS, sizeof(double), bench_cmp_double);
	printf("datasets listed: %zu; filter 'team7' keeps %zu\n", shown, matched);
	printf("%-40s %8s %8s\n", "step (ms, of 7 runs)", "median", "max");
	printf("%-40s %8.1f %8.1f\n", "start: open catalog, list remotes", start_ms[RUNS / 2],
	       start_ms[RUNS - 1]);
	printf("%-40s %8.1f %8.1f\n", "open the dataset list (10k rows)", open_ms[RUNS / 2],
	       open_ms[RUNS - 1]);
	printf("%-40s %8.1f %8.1f\n", "filter 'team7' (a tag, 500 rows)", filter_ms[RUNS / 2],
	       filter_ms[RUNS - 1]);
	printf("%-40s %8.1f %8.1f\n", "filter 'ds04242' (one row)", narrow_ms[RUNS / 2],
	       narrow_ms[RUNS - 1]);
	return 0;
}
