/* ec-limit.c — the floor for `matorage protect`: ISA-L's ec_encode_data alone over the same shard files, grouped and padded as FORMAT.md says, on N threads.
 *
 *   ec-limit K M THREADS RUNS FILE...
 *
 * Reads the files (a version's shards, in manifest order) into memory, pads each group of
 * K to its longest member, then times RUNS passes of coding every group's M parity rows
 * (each group's bytes split between the threads, as matorage does) and prints the median
 * and the spread in seconds and MiB/s of shard bytes. Nothing else is timed: no reading,
 * no hashing, no writing. */
#include <isa-l/erasure_code.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

struct group {
	int n;
	size_t stripe;
	unsigned char *in[64], *out[16];
	unsigned char *tables;
};

struct job {
	struct group *g;
	int ngroups, m, t, threads;
};

static void *work(void *arg)
{
	struct job *j = arg;
	for (int i = 0; i < j->ngroups; i++) {
		struct group *g = &j->g[i];
		size_t piece = (g->stripe + (size_t)j->threads - 1) / (size_t)j->threads;
		piece = (piece + 63) & ~(size_t)63;
		size_t off = (size_t)j->t * piece;
		if (off >= g->stripe)
			continue;
		size_t n = g->stripe - off < piece ? g->stripe - off : piece;
		unsigned char *in[64], *out[16];
		for (int k = 0; k < g->n; k++)
			in[k] = g->in[k] + off;
		for (int r = 0; r < j->m; r++)
			out[r] = g->out[r] + off;
		ec_encode_data((int)n, g->n, j->m, g->tables, in, out);
	}
	return NULL;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc(*len ? *len : 1);
	if (b && fread(b, 1, *len, f) != *len) {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int load(int k, int m, char **files, int nfiles, struct group *gs, size_t *total)
{
	unsigned char matrix[80 * 64], sub[16 * 64];
	gf_gen_cauchy1_matrix(matrix, k + m, k);
	int ng = 0;
	for (int f = 0; f < nfiles; f += k, ng++) {
		struct group *g = &gs[ng];
		g->n = nfiles - f < k ? nfiles - f : k;
		size_t lens[64];
		for (int i = 0; i < g->n; i++) {
			if (!(g->in[i] = slurp(files[f + i], &lens[i])))
				return -1;
			*total += lens[i];
			g->stripe = lens[i] > g->stripe ? lens[i] : g->stripe;
		}
		for (int i = 0; i < g->n; i++) {
			g->in[i] = realloc(g->in[i], g->stripe);
			memset(g->in[i] + lens[i], 0, g->stripe - lens[i]);
		}
		for (int r = 0; r < m; r++)
			g->out[r] = malloc(g->stripe);
		/* A short group codes its own columns, as matorage does. */
		for (int r = 0; r < m; r++)
			memcpy(sub + r * g->n, matrix + (k + r) * k, (size_t)g->n);
		g->tables = malloc((size_t)32 * (size_t)g->n * (size_t)m);
		ec_init_tables(g->n, m, sub, g->tables);
	}
	return ng;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: ec-limit K M THREADS RUNS FILE...\n");
		return 2;
	}
	int k = atoi(argv[1]), m = atoi(argv[2]), threads = atoi(argv[3]), runs = atoi(argv[4]);
	int nfiles = argc - 5;
	if (k < 1 || k > 64 || m < 1 || m > 16 || threads < 1 || threads > 64 || runs < 1)
		return 2;
	struct group *gs = calloc((size_t)nfiles, sizeof *gs);
	size_t total = 0;
	int ng = gs ? load(k, m, argv + 5, nfiles, gs, &total) : -1;
	if (ng < 0) {
		fprintf(stderr, "ec-limit: cannot read the files\n");
		return 1;
	}
	double *t = calloc((size_t)runs, sizeof *t);
	for (int r = 0; r < runs; r++) {
		pthread_t th[64];
		struct job jobs[64];
		double s = bench_now();
		for (int i = 0; i < threads; i++) {
			jobs[i] = (struct job){gs, ng, m, i, threads};
			pthread_create(&th[i], NULL, work, &jobs[i]);
		}
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		t[r] = bench_now() - s;
	}
	qsort(t, (size_t)runs, sizeof *t, cmp);
	double mib = (double)total / 1048576.0;
	printf("ec_encode_data %d+%d, %d threads, %d groups, %.1f MiB: median %.3f s (%.0f MiB/s), "
	       "min %.3f max %.3f\n", k, m, threads, ng, mib, t[runs / 2], mib / t[runs / 2], t[0],
	       t[runs - 1]);
	return 0;
}
