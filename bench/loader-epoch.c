/* loader-epoch.c — one epoch through the loader, for bench/loader.sh: prints "rows bytes seconds peak_rss_kib open_seconds cpu_seconds" (and on stderr what it healed from parity).
 * usage: loader-epoch STORE DATASET[@VERSION] ATTR[,ATTR...] BATCH SHUFFLE BUDGET_BYTES [THREADS [SHUFFLE_ROWS]]
 * seconds is the epoch after mt_loader_open returns; open_seconds is mt_store_open plus
 * mt_loader_open. bench/loader.sh adds the two, as its Python baselines' times cover
 * opening their files: every contender there pays its own start-up.  cpu_seconds is the
 * CPU time of every thread of the process over the open and the epoch: on a busy machine
 * it moves less than the wall time (bench/python-overhead.sh compares it).  With
 * LOADER_EPOCHS=N it runs N epochs and seconds and cpu_seconds cover the last alone; with
 * LOADER_INTO=1 each batch is gathered into fresh malloc'ed buffers, freed after it; with
 * LOADER_HELD=1 each batch's columns of 16 KiB or more are held (mt_loader_next_held) and
 * released once the next batch is in hand, as the Python binding's default has it; with
 * LOADER_STEP_US=N the program sleeps N microseconds after each batch, as a training step
 * on an accelerator leaves the CPU to the loader, and prints a seventh field: the seconds
 * those sleeps took in the timed epoch (the steps alone, the floor of the epoch); with
 * LOADER_CACHE_DIR=DIR the shards are read through a shard cache in DIR (cache_dir), with
 * LOADER_IN_MEMORY=1 the version is held in memory (in_memory); with LOADER_FIRST=1 a last
 * field is the seconds from the start of the open to the first batch in hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <matorage.h>

static double seconds(struct timespec a, struct timespec b)
{
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

/* LOADER_INTO: each attribute's bytes per row, from the loader's own reader. */
static int into_sizes(const mt_loader *l, const char *const *attrs, size_t nattrs, size_t *out)
{
	const mt_reader *r = mt_loader_reader(l);
	for (size_t i = 0; i < nattrs; i++) {
		int k = mt_reader_attr_index(r, attrs[i]);
		const mt_attr *a = k < 0 ? NULL : mt_reader_attr(r, (size_t)k);
		if (!a || a->ragged) {
			fprintf(stderr, "loader-epoch: LOADER_INTO takes fixed-size attributes\n");
			return 1;
		}
		out[i] = (size_t)(mt_attr_items(a) * mt_dtype_size(a->dtype));
	}
	return 0;
}

/* LOADER_HELD: the next batch held, the one before released (the binding's arrays of a
 * batch go when the loop takes the next). */
static int next_held(mt_loader *l, size_t nattrs, const mt_batch **b, mt_error *err)
{
	static uint64_t holds[2][16];
	static int cur;
	int rc = mt_loader_next_held(l, b, holds[cur], 16 << 10, err);
	cur ^= 1;
	for (size_t c = 0; c < nattrs; c++) {
		mt_loader_release(l, holds[cur][c]);
		holds[cur][c] = 0;
	}
	return rc;
}

/* The next batch; with into_bytes, gathered into fresh buffers the caller frees, as a
 * binding handing out arrays of their own (matorage.Loader's copies before it held
 * them) has it. */
static int next_batch(mt_loader *l, const size_t *into_bytes, size_t nattrs, size_t batch,
		      void **into, const mt_batch **b, mt_error *err)
{
	if (getenv("LOADER_HELD"))
		return next_held(l, nattrs, b, err);
	if (!into_bytes)
		return mt_loader_next(l, b, err);
	for (size_t c = 0; c < nattrs; c++)
		into[c] = malloc(batch * into_bytes[c]);
	int rc = mt_loader_next_into(l, (void *const *)into, batch, b, err);
	if (rc || !*b)
		for (size_t c = 0; c < nattrs; c++)
			free(into[c]);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 7) {
		fprintf(stderr, "usage: loader-epoch STORE DATASET[@VERSION] ATTR[,ATTR...] BATCH SHUFFLE "
				"BUDGET_BYTES [THREADS [SHUFFLE_ROWS]]\n");
		return 2;
	}
	const char *attrs[16];
	size_t nattrs = 0;
	for (char *a = strtok(argv[3], ","); a && nattrs < 16; a = strtok(NULL, ","))
		attrs[nattrs++] = a;
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.attrs = attrs;
	o.nattrs = nattrs;
	o.batch_rows = (size_t)atol(argv[4]);
	o.shuffle = atoi(argv[5]);
	o.seed = 1;
	o.prefetch_bytes = strtoull(argv[6], NULL, 10);
	o.decode_threads = argc > 7 ? atoi(argv[7]) : 0;
	/* The window, given so the baselines can shuffle with the very same one. */
	o.shuffle_rows = argc > 8 ? strtoull(argv[8], NULL, 10) : 0;
	o.cache_dir = getenv("LOADER_CACHE_DIR");
	o.in_memory = getenv("LOADER_IN_MEMORY") != NULL;
	mt_store *s;
	mt_loader *l;
	mt_error err = {0};
	/* DATASET@VERSION names a version; the latest otherwise. */
	char *version = strchr(argv[2], '@');
	if (version)
		*version++ = '\0';
	struct timespec t0, topen, tstart, t1, c0, c1, tfirst = {0, 0};
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (mt_store_open(argv[1], &s, &err) || mt_loader_open(s, argv[2], version, &o, &l, &err)) {
		fprintf(stderr, "loader-epoch: %s\n", err.message);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &topen);
	size_t into_bytes[16];
	const size_t *into = getenv("LOADER_INTO") ? into_bytes : NULL;
	void *bufs[16];
	if (into && into_sizes(l, attrs, nattrs, into_bytes))
		return 1;
	/* LOADER_EPOCHS=N runs N epochs and times the last: the steady state of a
	 * training run, window buffers already faulted in by the epochs before. */
	const char *ne = getenv("LOADER_EPOCHS");
	const char *stepv = getenv("LOADER_STEP_US");
	long step_us = stepv ? atol(stepv) : 0;
	int epochs = ne && atoi(ne) > 1 ? atoi(ne) : 1;
	unsigned long long rows = 0, bytes = 0;
	double stepped = 0;
	const mt_batch *b;
	int rc = 0;
	for (int e = 0; !rc && e < epochs; e++) {
		if (e && (rc = mt_loader_set_epoch(l, (uint64_t)e, &err)))
			break;
		rows = bytes = 0;
		stepped = 0;
		clock_gettime(CLOCK_MONOTONIC, &tstart);
		if (e)
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		while (!(rc = next_batch(l, into, nattrs, o.batch_rows, bufs, &b, &err)) && b) {
			if (!tfirst.tv_sec && !tfirst.tv_nsec)
				clock_gettime(CLOCK_MONOTONIC, &tfirst);
			rows += b->rows;
			if (step_us > 0) {
				struct timespec ts = {step_us / 1000000, step_us % 1000000 * 1000}, s0, s1;
				clock_gettime(CLOCK_MONOTONIC, &s0);
				nanosleep(&ts, NULL);
				clock_gettime(CLOCK_MONOTONIC, &s1);
				stepped += seconds(s0, s1);
			}
			for (size_t c = 0; c < b->ncols; c++)
				bytes += b->cols[c].bytes;
			for (size_t c = 0; into && c < nattrs; c++)
				free(bufs[c]);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	if (rc) {
		fprintf(stderr, "loader-epoch: %s\n", err.message);
		return 1;
	}
	/* A protected version's lost shards are rebuilt as they are read. */
	mt_read_stats st = MT_READ_STATS_INIT;
	mt_loader_stats(l, &st);
	if (st.healed_chunks || st.healed_indexes)
		fprintf(stderr, "healed %llu chunks, %llu indexes, %llu bytes read\n",
			(unsigned long long)st.healed_chunks, (unsigned long long)st.healed_indexes,
			(unsigned long long)st.heal_bytes);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%llu %llu %.3f %ld %.3f %.3f", rows, bytes, seconds(tstart, t1), ru.ru_maxrss,
	       seconds(t0, topen), seconds(c0, c1));
	if (step_us > 0)
		printf(" %.3f", stepped);
	if (getenv("LOADER_FIRST"))
		printf(" %.3f", seconds(t0, tfirst));
	putchar('\n');
	mt_loader_close(l);
	mt_store_close(s);
	return 0;
}
