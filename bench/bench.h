/* bench.h — what the benchmark programs share: a monotonic clock, the median of a set of
 * runs, and (where the internal format and store headers come first) a generated manifest
 * put into a store. */
#ifndef MT_BENCH_H
#define MT_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of t[0..n) (sorts t). */
static inline double bench_median(double *t, size_t n)
{
	qsort(t, n, sizeof *t, bench_cmp_double);
	return n ? t[n / 2] : 0;
}

#if defined(MT_FORMAT_H) && defined(MT_STORE_H)
/* Manifest m encoded and put as its version's object (no sync: a benchmark's store is
 * scratch); exits naming `prog` when that fails. */
static inline void bench_put_manifest(mt_store *s, const mt_manifest *m, const char *prog)
{
	char *json = NULL, *key = mti_key_manifest(m->dataset, m->version);
	mt_error err = {0};
	if (!key || mti_manifest_encode(m, &json, &err) ||
	    mti_store_put(s, key, json, strlen(json), MT_PUT_NOSYNC, &err)) {
		fprintf(stderr, "%s: %s\n", prog, err.message[0] ? err.message : "out of memory");
		exit(1);
	}
	free(json);
	free(key);
}
#endif

#endif
