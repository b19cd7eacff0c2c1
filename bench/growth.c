/* growth.c — what a dataset's commits and its "latest" cost as versions pile up, for
 * bench/growth.sh: N appends of one row each to a dataset in a local store, in one
 * process, printing the median commit time of each tenth of them; then the time to
 * open the latest version (median of 9) with the order markers, and with them deleted
 * (every manifest read, as before markers).
 * usage: growth STORE_DIR N */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <matorage.h>

#include "bench.h"

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, dcmp);
	return v[n / 2];
}

static int commit_one(mt_store *s, int64_t i, mt_error *err)
{
	static const mt_attr x = {"x", MT_INT64, 0, {0}, 0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.append = i > 0;
	mt_writer *w;
	int rc = mt_writer_open(s, "g", i ? NULL : &x, i ? 0 : 1, &o, &w, err);
	if (rc)
		return rc;
	const void *data[1] = {&i};
	rc = mt_writer_append(w, 1, data, NULL, err);
	char v[64];
	if (!rc)
		rc = mt_writer_commit(w, v, sizeof v, err);
	mt_writer_close(w);
	return rc;
}

/* Median time to open the latest version (9 opens). */
static double open_latest(mt_store *s, char *version, size_t cap, mt_error *err)
{
	double t[9];
	for (int k = 0; k < 9; k++) {
		mt_reader *r;
		double t0 = bench_now();
		if (mt_reader_open(s, "g", NULL, &r, err))
			return -1;
		t[k] = bench_now() - t0;
		snprintf(version, cap, "%s", mt_reader_info(r)->version);
		mt_reader_close(r);
	}
	return median(t, 9);
}

static void unmark(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/datasets/g/versions", dir);
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strstr(e->d_name, ".at.")) {
			char f[8192];
			snprintf(f, sizeof f, "%s/%s", path, e->d_name);
			unlink(f);
		}
	}
	if (d)
		closedir(d);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: growth STORE_DIR N\n");
		return 2;
	}
	long n = atol(argv[2]);
	mt_store *s;
	mt_error err = {0};
	if (n < 10 || mt_store_open(argv[1], &s, &err)) {
		fprintf(stderr, "growth: %s\n", n < 10 ? "N must be at least 10" : err.message);
		return 1;
	}
	double *t = malloc((size_t)n * sizeof *t);
	for (long i = 0; i < n; i++) {
		double t0 = bench_now();
		if (commit_one(s, i, &err)) {
			fprintf(stderr, "growth: commit %ld: %s\n", i + 1, err.message);
			return 1;
		}
		t[i] = bench_now() - t0;
	}
	printf("commits: median ms per tenth of %ld:", n);
	for (int k = 0; k < 10; k++)
		printf(" %.2f", 1e3 * median(t + k * (n / 10), (size_t)(n / 10)));
	printf("\n");
	char v[64] = "";
	double marked = open_latest(s, v, sizeof v, &err);
	unmark(argv[1]);
	char v2[64] = "";
	double unmarked = open_latest(s, v2, sizeof v2, &err);
	if (marked < 0 || unmarked < 0 || strcmp(v, v2)) {
		fprintf(stderr, "growth: %s\n", err.message[0] ? err.message : "latest differs");
		return 1;
	}
	printf("open latest (%s) of %ld versions: %.2f ms with order markers, %.2f ms without\n",
	       v, n, 1e3 * marked, 1e3 * unmarked);
	free(t);
	mt_store_close(s);
	return 0;
}
