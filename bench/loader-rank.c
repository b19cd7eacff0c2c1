/* loader-rank.c — one rank of a job opens its loader and takes its first batch (bench/growth-v2.sh), or its whole epoch (bench/ranks.sh).
 * usage: loader-rank STORE DATASET[@VERSION] ATTR RANK WORLD [SHUFFLE [EPOCH]]
 * prints "open_seconds first_batch_seconds batches": open_seconds covers mt_store_open
 * and mt_loader_open (the version opened and the rank's plan made); first_batch_seconds
 * the first mt_loader_next after it.  With EPOCH 1 it goes on to the end of the epoch
 * and adds "epoch_seconds rows sum sum_of_squares bytes_read": the rank's rows, the sums
 * (mod 2^64) of their global row numbers and of their squares, so that a job's ranks can
 * be checked to take every row once, and the bytes the process read through system calls
 * (/proc/self/io rchar). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <time.h>

#include <matorage.h>

/* The bytes this process has read through system calls, or 0. */
static unsigned long long rchar(void)
{
	unsigned long long n = 0;
	char line[128];
	FILE *f = fopen("/proc/self/io", "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "rchar: %llu", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* The rest of the epoch after batch b: rows, sum and sum of squares of their numbers. */
static int epoch_rest(mt_loader *l, const mt_batch *b, uint64_t sums[3], mt_error *err)
{
	int rc = 0;
	while (!rc && b) {
		for (size_t i = 0; i < b->rows; i++) {
			sums[0]++;
			sums[1] += b->row_ids[i];
			sums[2] += b->row_ids[i] * b->row_ids[i];
		}
		rc = mt_loader_next(l, &b, err);
	}
	return rc;
}

static double since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: loader-rank STORE DATASET[@VERSION] ATTR RANK WORLD [SHUFFLE [EPOCH]]\n");
		return 2;
	}
	char ds[256];
	snprintf(ds, sizeof ds, "%s", argv[2]);
	char *at = strchr(ds, '@');
	if (at)
		*at++ = '\0';
	const char *attrs[] = {argv[3]};
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.attrs = attrs;
	o.nattrs = 1;
	o.batch_rows = 8;
	o.rank = (unsigned)strtoul(argv[4], NULL, 10);
	o.world = (unsigned)strtoul(argv[5], NULL, 10);
	o.shuffle = argc > 6 ? atoi(argv[6]) : 0;
	o.seed = 1;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	mt_error err = {0};
	mt_store *s = NULL;
	mt_loader *l = NULL;
	const mt_batch *b = NULL;
	int rc = mt_store_open(argv[1], &s, &err);
	if (!rc)
		rc = mt_loader_open(s, ds, at, &o, &l, &err);
	double open_s = since(&t0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!rc)
		rc = mt_loader_next(l, &b, &err);
	double first_s = since(&t0);
	int epoch = argc > 7 && atoi(argv[7]);
	uint64_t sums[3] = {0, 0, 0};
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int got = b != NULL;
	if (!rc && epoch)
		rc = epoch_rest(l, b, sums, &err);
	double epoch_s = since(&t0);
	if (rc)
		fprintf(stderr, "loader-rank: %s\n", err.message);
	else if (epoch)
		printf("%.6f %.6f %d %.6f %" PRIu64 " %" PRIu64 " %" PRIu64 " %llu\n", open_s, first_s,
		       got, epoch_s, sums[0], sums[1], sums[2], rchar());
	else
		printf("%.6f %.6f %d\n", open_s, first_s, got);
	mt_loader_close(l);
	mt_store_close(s);
	return rc ? 1 : 0;
}
