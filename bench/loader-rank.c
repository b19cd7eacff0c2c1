/* loader-rank.c — one rank of a job opens its loader and takes its first batch, for bench/growth-v2.sh: prints "open_seconds first_batch_seconds batches".
 * usage: loader-rank STORE DATASET[@VERSION] ATTR RANK WORLD [SHUFFLE]
 * open_seconds covers mt_store_open and mt_loader_open (the version opened and the
 * rank's plan made); first_batch_seconds the first mt_loader_next after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <matorage.h>

static double since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: loader-rank STORE DATASET[@VERSION] ATTR RANK WORLD [SHUFFLE]\n");
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
	if (rc)
		fprintf(stderr, "loader-rank: %s\n", err.message);
	else
		printf("%.6f %.6f %d\n", open_s, first_s, b != NULL);
	mt_loader_close(l);
	mt_store_close(s);
	return rc ? 1 : 0;
}
