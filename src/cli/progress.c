/* progress.c — the progress bar long commands draw on stderr, and the Ctrl-C flag that cancels. */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

volatile sig_atomic_t cli_interrupted;

static void cli_on_sigint(int sig)
{
	cli_interrupted = 1;
}

void cli_catch_signal(int sig, void (*fn)(int))
{
	/* No SA_RESTART: a blocking read or poll returns EINTR and the loop sees
	 * the flag.  SA_RESETHAND: if cancelling hangs, a second signal still
	 * kills the process. */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

void cli_catch_interrupt(void)
{
	cli_catch_signal(SIGINT, cli_on_sigint);
}

struct cli_progress {
	pthread_mutex_t lock; /* the writer reports from its upload thread */
	int enabled;
	int drawn;
	char label[64];
	const char *unit; /* NULL: bytes */
	uint64_t done, total;
	double start, last_draw;
};

static double cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The bar on screen, so an error line can erase it first instead of landing after it. */
static struct cli_progress *cli_active;

struct cli_progress *cli_progress_begin(const struct cli_ctx *ctx, const char *label,
					uint64_t total)
{
	struct cli_progress *p = app_xcalloc(1, sizeof *p);
	cli_active = p;
	pthread_mutex_init(&p->lock, NULL);
	p->enabled = !ctx->quiet && isatty(STDERR_FILENO);
	snprintf(p->label, sizeof p->label, "%s", label);
	p->total = total;
	p->start = cli_now();
	return p;
}

/* n bytes as "1.5 MiB", or n counted things as "1500 rows". */
static const char *cli_amount(const struct cli_progress *p, uint64_t n, char *buf, size_t cap)
{
	if (!p->unit)
		return app_human_bytes(n, buf, cap);
	snprintf(buf, cap, "%" PRIu64 " %s", n, p->unit);
	return buf;
}

void cli_progress_unit(struct cli_progress *p, const char *unit)
{
	if (p)
		p->unit = unit;
}

/* One line, short enough for an 80-column terminal: label, bar, bytes, rate, ETA. */
static void cli_progress_draw(struct cli_progress *p, double now)
{
	/* rate holds "  " + an amount (under 32 bytes) + "/s". */
	char done[32], total[32], rate[40] = "";
	double secs = now - p->start;
	double bps = secs > 0.2 ? (double)p->done / secs : 0;
	cli_amount(p, p->done, done, sizeof done);
	if (bps > 0)
		snprintf(rate, sizeof rate, "  %s/s", cli_amount(p, (uint64_t)bps, total,
								   sizeof total));
	if (p->total) {
		uint64_t d = p->done < p->total ? p->done : p->total;
		int filled = (int)((double)d / (double)p->total * 20);
		char bar[21];
		memset(bar, '#', (size_t)filled);
		memset(bar + filled, '.', (size_t)(20 - filled));
		bar[20] = '\0';
		char eta[32] = "";
		if (bps > 0) {
			uint64_t left = (uint64_t)((double)(p->total - d) / bps);
			snprintf(eta, sizeof eta, "  ETA %" PRIu64 ":%02" PRIu64, left / 60,
				 left % 60);
		}
		cli_amount(p, p->total, total, sizeof total);
		fprintf(stderr, "\r%s [%s] %s / %s%s%s\033[K", p->label, bar, done, total, rate,
			eta);
	} else {
		fprintf(stderr, "\r%s %s%s\033[K", p->label, done, rate);
	}
	fflush(stderr);
	p->drawn = 1;
	p->last_draw = now;
}

int cli_progress_update(struct cli_progress *p, uint64_t done, uint64_t total)
{
	if (!p)
		return cli_interrupted;
	pthread_mutex_lock(&p->lock);
	p->done = done;
	if (total)
		p->total = total;
	if (p->enabled) {
		double now = cli_now();
		if (now - p->last_draw >= 0.1)
			cli_progress_draw(p, now);
	}
	pthread_mutex_unlock(&p->lock);
	return cli_interrupted;
}

void cli_progress_label(struct cli_progress *p, const char *label)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	snprintf(p->label, sizeof p->label, "%s", label);
	if (p->enabled)
		cli_progress_draw(p, cli_now());
	pthread_mutex_unlock(&p->lock);
}

/* Erase the bar; the next update draws it again. */
static void cli_progress_erase(struct cli_progress *p)
{
	if (p->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		p->drawn = 0;
	}
}

void cli_progress_hide(void)
{
	if (!cli_active)
		return;
	pthread_mutex_lock(&cli_active->lock);
	cli_progress_erase(cli_active);
	pthread_mutex_unlock(&cli_active->lock);
}

void cli_progress_end(struct cli_progress *p)
{
	if (!p)
		return;
	if (cli_active == p)
		cli_active = NULL;
	cli_progress_erase(p);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int cli_progress_fn(void *ud, uint64_t done, uint64_t total)
{
	return cli_progress_update(ud, done, total);
}
