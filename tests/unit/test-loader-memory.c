/* test-loader-memory.c — a shuffled epoch over a version 10x the prefetch budget stays within the budget plus a fixed overhead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "matorage.h"
#include "tap.h"

#define BUDGET (8u << 20)
#define ROW_FLOATS 1024 /* 4 KiB rows */
#define ROWS (10 * BUDGET / (ROW_FLOATS * 4))
/* Threads' stacks, compressed and decompressed chunks in flight, batch buffers. */
#define OVERHEAD (24u << 20)

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			kib = atol(line + 6);
	if (f)
		fclose(f);
	return kib;
}

/* In a fresh process: open, run one epoch, print the growth of the peak RSS. */
static int child(const char *dir)
{
	mt_store *s;
	mt_loader *l;
	mt_error err = {0};
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.batch_rows = 64;
	o.shuffle = 1;
	o.prefetch_bytes = BUDGET;
	if (mt_store_open(dir, &s, &err) || mt_loader_open(s, "big", NULL, &o, &l, &err)) {
		fprintf(stderr, "%s\n", err.message);
		return 2;
	}
	long base = rss_kib();
	const mt_batch *b;
	uint64_t rows = 0;
	while (!mt_loader_next(l, &b, &err) && b)
		rows += b->rows;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%llu %ld %ld\n", (unsigned long long)rows, base, ru.ru_maxrss);
	mt_loader_close(l);
	mt_store_close(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "child"))
		return child(argv[2]);
#if defined(__SANITIZE_ADDRESS__)
	/* Shadow memory and the quarantine of freed blocks are not the loader's. */
	printf("1..0 # SKIP RSS is not meaningful under AddressSanitizer\n");
	return 0;
#endif
	char dir[] = "/tmp/mt-loadmem.XXXXXX";
	if (!mkdtemp(dir))
		return tap_ok(0, "mkdtemp"), tap_done();
	mt_store *s;
	mt_error err = {0};
	mt_attr a = {.name = "x", .dtype = MT_FLOAT32, .rank = 1, .shape = {ROW_FLOATS}};
	mt_writer_opts wo;
	mt_writer_opts_init(&wo);
	wo.shard_bytes = 4u << 20;
	mt_writer *w;
	float *rows = malloc((size_t)ROWS * ROW_FLOATS * sizeof *rows);
	for (size_t i = 0; i < (size_t)ROWS * ROW_FLOATS; i++)
		rows[i] = (float)(i % 977) * 0.25f;
	const void *data[1] = {rows};
	int rc = mt_store_open(dir, &s, &err) || mt_writer_open(s, "big", &a, 1, &wo, &w, &err) ||
		 mt_writer_append(w, ROWS, data, NULL, &err) || mt_writer_commit(w, NULL, 0, &err);
	free(rows);
	if (!tap_ok(!rc, "a %u MiB version, 10x the budget", 10 * BUDGET >> 20))
		tap_diag("%s", err.message);
	mt_writer_close(w);
	mt_store_close(s);

	char cmd[512];
	snprintf(cmd, sizeof cmd, "'%s' child '%s'", argv[0], dir);
	FILE *p = popen(cmd, "r");
	unsigned long long got = 0;
	long base = 0, peak = 0;
	int n = p ? fscanf(p, "%llu %ld %ld", &got, &base, &peak) : 0;
	if (p)
		pclose(p);
	tap_ok(n == 3 && got == ROWS, "the epoch delivers every row (%llu)", got);
	long grown = (peak - base) * 1024;
	tap_ok(n == 3 && grown <= (long)(BUDGET + OVERHEAD),
	       "peak RSS grew by %ld KiB during the epoch: within the %u MiB budget + %u MiB",
	       grown / 1024, BUDGET >> 20, OVERHEAD >> 20);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		tap_diag("cleanup failed");
	return tap_done();
}
