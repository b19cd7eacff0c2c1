/* catalog-note.c — what recording a written version costs the catalog as a dataset's versions
 * pile up, for bench/catalog-chain.sh: on a dataset of a local store with a warm catalog,
 * R times: append one row, then bring the catalog up
 * to date with a sync of the dataset (what a write did before) or by recording the one
 * new version (mt_catalog_sync_version, what a write does now), alternately; prints the
 * median seconds of each and the manifests each read.
 * With a fifth argument "list": first the time of one listing of the dataset's versions
 * (MT_CAT_VERSIONS, the browser's version list, with each version's shards shared with
 * its parent) and of the latest version's shards.
 * usage: catalog-note STORE_DIR DATASET CATALOG R [list] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <matorage-catalog.h>
#include <matorage.h>

#include "bench.h"

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static const char *dataset;

struct found {
	const char *name; /* the row wanted by its first column; NULL: the last row */
	int64_t id;
	unsigned long n;
};

static int find_row(void *ud, const mt_catalog_row *r)
{
	struct found *f = ud;
	f->n++;
	if (!f->name || (r->ncols && r->cols[0] && !strcmp(r->cols[0], f->name)))
		f->id = r->id;
	return 0;
}

/* The time of listing the dataset's versions, then the latest's shards. */
static int time_lists(mt_catalog *c, mt_error *err)
{
	struct found rem = {"local", -1, 0}, b = {NULL, -1, 0}, d = {dataset, -1, 0};
	struct found v = {NULL, -1, 0}, sh = {NULL, -1, 0};
	int rc = mt_catalog_list(c, MT_CAT_REMOTES, 0, NULL, find_row, &rem, err);
	if (!rc)
		rc = mt_catalog_list(c, MT_CAT_BUCKETS, rem.id, NULL, find_row, &b, err);
	if (!rc)
		rc = mt_catalog_list(c, MT_CAT_DATASETS, b.id, NULL, find_row, &d, err);
	double t0 = bench_now();
	if (!rc)
		rc = mt_catalog_list(c, MT_CAT_VERSIONS, d.id, NULL, find_row, &v, err);
	double t1 = bench_now();
	if (!rc)
		rc = mt_catalog_list(c, MT_CAT_SHARDS, v.id, NULL, find_row, &sh, err);
	if (!rc)
		printf("list %lu versions %.4f s, %lu shards of the latest %.4f s\n", v.n, t1 - t0,
		       sh.n, bench_now() - t1);
	return rc;
}

static int append_one(mt_store *s, char *version, size_t cap, mt_error *err)
{
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.append = 1;
	mt_writer *w;
	int rc = mt_writer_open(s, dataset, NULL, 0, &o, &w, err);
	if (rc)
		return rc;
	int64_t x = 7;
	const void *data[1] = {&x};
	rc = mt_writer_append(w, 1, data, NULL, err);
	if (!rc)
		rc = mt_writer_commit(w, version, cap, err);
	mt_writer_close(w);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: catalog-note STORE_DIR DATASET CATALOG R [list]\n");
		return 2;
	}
	dataset = argv[2];
	int runs = atoi(argv[4]);
	char url[4096];
	snprintf(url, sizeof url, "file://%s", argv[1]);
	mt_store *s;
	mt_catalog *c;
	mt_error err = {0};
	mt_catalog_sync_stats st;
	if (mt_store_open(url, &s, &err) || mt_catalog_open(argv[3], &c, &err) ||
	    mt_catalog_sync(c, "local", s, dataset, 0, NULL, NULL, &st, &err)) {
		fprintf(stderr, "catalog-note: %s\n", err.message);
		return 1;
	}
	if (argc == 6 && time_lists(c, &err)) {
		fprintf(stderr, "catalog-note: %s\n", err.message);
		return 1;
	}
	double *tsync = calloc((size_t)runs, sizeof *tsync), *tone = calloc((size_t)runs, sizeof *tone);
	uint64_t read_sync = 0, read_one = 0, versions = st.versions;
	for (int i = 0; i < runs; i++) {
		char v[256];
		if (append_one(s, v, sizeof v, &err))
			break;
		double t0 = bench_now();
		if (mt_catalog_sync(c, "local", s, dataset, 0, NULL, NULL, &st, &err))
			break;
		tsync[i] = bench_now() - t0;
		read_sync = st.versions_read;
#if MT_CATALOG_SCHEMA >= 8
		if (append_one(s, v, sizeof v, &err))
			break;
		t0 = bench_now();
		if (mt_catalog_sync_version(c, "local", s, dataset, v, &st, &err))
			break;
		tone[i] = bench_now() - t0;
		read_one = st.versions_read;
#endif
	}
	if (err.code) {
		fprintf(stderr, "catalog-note: %s\n", err.message);
		return 1;
	}
	qsort(tsync, (size_t)runs, sizeof *tsync, dcmp);
	qsort(tone, (size_t)runs, sizeof *tone, dcmp);
	printf("versions %llu dataset-sync %.4f s (%llu read) one-version %.4f s (%llu read)\n",
	       (unsigned long long)versions, tsync[runs / 2], (unsigned long long)read_sync,
	       tone[runs / 2], (unsigned long long)read_one);
	free(tsync);
	free(tone);
	mt_catalog_close(c);
	mt_store_close(s);
	return 0;
}
