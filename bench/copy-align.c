/* copy-align.c — large copies into memory whose alignment another allocator chose: glibc's
 * memcpy against mti_copy, for destinations 0, 16 and 48 bytes past the source modulo 4 KiB,
 * 64 KB copies from cache and 200 KB copies from memory (a 75 MB buffer written with
 * streaming stores, read once, as a loader's window is).  Prints GB/s, the median of RUNS.
 * usage: bench/copy-align [RUNS]   (doc/BENCHMARKS.md) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "util.h"
#include "bench.h"

#define WINDOW (75u << 20)
#define COLD 200704u /* 256 rows of 784 bytes */
#define HOT 65536u

typedef void (*copy_fn)(void *, const void *, size_t);

static void with_memcpy(void *d, const void *s, size_t n)
{
	memcpy(d, s, n);
}

/* The window as memory the cache does not hold: written with streaming stores. */
static void window_fill(uint8_t *w)
{
#ifdef __SSE2__
	for (size_t i = 0; i < WINDOW; i += 16)
		_mm_stream_si128((__m128i *)(void *)(w + i), _mm_set1_epi8((char)i));
	_mm_sfence();
#else
	memset(w, 1, WINDOW);
#endif
}

/* GB/s of one pass: the window copied COLD bytes at a time, or HOT bytes 4,000 times. */
static double pass(copy_fn f, uint8_t *w, uint8_t *dst, int cold)
{
	volatile uint8_t sink;
	if (cold)
		window_fill(w);
	double t = bench_now(), bytes = 0;
	if (cold)
		for (size_t o = 0; o + COLD <= WINDOW; o += COLD, bytes += COLD)
			f(dst, w + o, COLD);
	else
		for (int r = 0; r < 4000; r++, bytes += HOT)
			f(dst, w, HOT);
	sink = dst[7];
	(void)sink;
	return bytes / (bench_now() - t) / 1e9;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	uint8_t *w = aligned_alloc(4096, WINDOW), *d0 = aligned_alloc(4096, COLD + 4096);
	if (!w || !d0 || runs < 1 || runs > 99) {
		fprintf(stderr, "usage: copy-align [RUNS 1-99]\n");
		return 2;
	}
	memset(d0, 0, COLD + 4096);
	const int offs[] = {0, 16, 48};
	printf("| destination past the source (mod 4 KiB) | copy | 64 KB from cache, GB/s | "
	       "200 KB from memory, GB/s |\n|---|---|---|---|\n");
	for (size_t oi = 0; oi < sizeof offs / sizeof *offs; oi++)
		for (int m = 0; m < 2; m++) {
			double hot[99], cold[99];
			for (int r = 0; r < runs; r++) {
				hot[r] = pass(m ? mti_copy : with_memcpy, w, d0 + offs[oi], 0);
				cold[r] = pass(m ? mti_copy : with_memcpy, w, d0 + offs[oi], 1);
			}
			printf("| %d | %s | %.1f | %.1f |\n", offs[oi], m ? "mti_copy" : "memcpy",
			       bench_median(hot, (size_t)runs), bench_median(cold, (size_t)runs));
		}
	free(w);
	free(d0);
	return 0;
}
