/* jobs.c — worker threads for everything that touches a store: progress and cancel through atomics, log lines under a lock, endings handled on the UI thread. */
#define _GNU_SOURCE 1
#include "config.h"

#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tui.h"

static double job_elapsed(const struct tui_job *j)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - j->started.tv_sec) +
	       (double)(now.tv_nsec - j->started.tv_nsec) / 1e9;
}

static void *job_thread(void *arg)
{
	struct tui_job *j = arg;
	int rc = j->run(j);
	j->seconds = job_elapsed(j);
	if (!j->result[0])
		snprintf(j->result, sizeof j->result, "%s", rc ? mt_strerror(rc) : "done");
	mt_error err;
	if (j->catalog_id)
		mt_catalog_job_end(j->t->cat, j->catalog_id, rc, j->result, &err);
	/* Last: the UI thread reads the rest once it sees the state change. */
	atomic_store(&j->state, !rc ? JOB_OK : rc == MT_ECANCELED ? JOB_CANCELED : JOB_FAILED);
	return NULL;
}

struct tui_job *tui_job_start(struct tui *t, const char *kind, const char *title,
			      const char *unit, int (*run)(struct tui_job *j),
			      void (*finish)(struct tui *t, struct tui_job *j), void *arg,
			      void (*free_arg)(void *arg))
{
	struct tui_job *j = app_xcalloc(1, sizeof *j);
	*j = (struct tui_job){.id = ++t->next_job, .unit = unit, .t = t, .run = run,
			      .finish = finish, .arg = arg, .free_arg = free_arg};
	j->from_view = tui_top(t) ? tui_top(t)->serial : 0;
	snprintf(j->kind, sizeof j->kind, "%s", kind);
	snprintf(j->title, sizeof j->title, "%s", title);
	pthread_mutex_init(&j->lock, NULL);
	clock_gettime(CLOCK_MONOTONIC, &j->started);
	mt_error err;
	/* History is best effort: a job runs even when the catalog is busy.  The
	 * live refresh runs all session long and is no event worth keeping. */
	if (!strcmp(kind, "watch") ||
	    mt_catalog_job_begin(t->cat, kind, title, &j->catalog_id, &err))
		j->catalog_id = 0;
	/* The number :history shows for it too. */
	if (j->catalog_id > 0 && (uint64_t)j->catalog_id <= UINT_MAX)
		j->id = (unsigned)j->catalog_id;
	if (pthread_create(&j->thread, NULL, job_thread, j)) {
		tui_status(t, 1, "%s: cannot start a thread", title);
		if (free_arg)
			free_arg(arg);
		pthread_mutex_destroy(&j->lock);
		free(j);
		return NULL;
	}
	t->jobs = app_xreallocarray(t->jobs, t->njobs + 1, sizeof *t->jobs);
	t->jobs[t->njobs++] = j;
	if (strcmp(kind, "read") && strcmp(kind, "watch"))
		tui_status(t, 0, "started: %s (J: jobs, c: cancel)", title);
	return j;
}

int tui_job_progress(void *ud, uint64_t done, uint64_t total)
{
	struct tui_job *j = ud;
	atomic_store(&j->done, done);
	if (total)
		atomic_store(&j->total, total);
	return atomic_load(&j->cancel);
}

void tui_job_log(struct tui_job *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *line = app_xvasprintf(fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&j->lock);
	j->log = app_xreallocarray(j->log, j->nlog + 1, sizeof *j->log);
	j->log[j->nlog++] = line;
	pthread_mutex_unlock(&j->lock);
}

void tui_job_cancel(struct tui_job *j)
{
	atomic_store(&j->cancel, 1);
	if (j->on_cancel)
		j->on_cancel(j);
}

int tui_jobs_poll(struct tui *t)
{
	int changed = 0;
	for (size_t i = 0; i < t->njobs; i++) {
		struct tui_job *j = t->jobs[i];
		int st = atomic_load(&j->state);
		/* A running job's progress moves on screen; a quiet one has none. */
		changed |= st == JOB_RUNNING && !j->quiet;
		if (st == JOB_RUNNING || j->joined)
			continue;
		pthread_join(j->thread, NULL);
		j->joined = 1;
		changed = 1;
		if (!j->quiet || st == JOB_FAILED)
			tui_status(t, st == JOB_FAILED, "%s: %s", j->title, j->result);
		if (st == JOB_FAILED)
			t->last_error_job = i + 1;
		if (j->finish)
			j->finish(t, j);
		tui_reload_all(t);
	}
	return changed;
}

void tui_job_show(struct tui *t, struct tui_job *j, struct view *v)
{
	struct view *top = tui_top(t);
	if (top && top->serial == j->from_view && !t->prompt.active) {
		tui_push(t, v);
		return;
	}
	if (j->view)
		j->view->ops->free(j->view);
	j->view = v;
	tui_status(t, 0, "%s: done; its result waits in the jobs list (J, Enter opens it)",
		   j->title);
}

void tui_job_progress_text(const struct tui_job *j, char *buf, size_t cap)
{
	uint64_t done = atomic_load(&j->done), total = atomic_load(&j->total);
	int st = atomic_load(&j->state);
	double secs = st == JOB_RUNNING ? job_elapsed(j) : j->seconds;
	char d[32], tot[32], rate[32] = "";
	int bytes = j->unit && !strcmp(j->unit, "bytes");
	if (bytes) {
		app_human_bytes(done, d, sizeof d);
		app_human_bytes(total, tot, sizeof tot);
		if (secs > 0.2) {
			char r[32];
			snprintf(rate, sizeof rate, ", %s/s",
				 app_human_bytes((uint64_t)((double)done / secs), r, sizeof r));
		}
	} else {
		snprintf(d, sizeof d, "%llu", (unsigned long long)done);
		snprintf(tot, sizeof tot, "%llu", (unsigned long long)total);
	}
	if (!j->unit) {
		snprintf(buf, cap, "%.1fs", secs);
		return;
	}
	if (!total) {
		snprintf(buf, cap, "%s %s%s, %.0fs", d, j->unit, rate, secs);
		return;
	}
	int pct = (int)(100.0 * (double)done / (double)total);
	char eta[32] = "";
	if (st == JOB_RUNNING && done && done < total) {
		double left = secs * (double)(total - done) / (double)done;
		snprintf(eta, sizeof eta, ", ETA %d:%02d", (int)left / 60, (int)left % 60);
	}
	snprintf(buf, cap, "%3d%% %s of %s%s%s%s", pct > 100 ? 100 : pct, d, tot,
		 bytes ? "" : " ", bytes ? rate : j->unit ? j->unit : "", eta);
}

int tui_jobs_wait(struct tui *t, int ms)
{
	for (size_t i = 0; i < t->njobs; i++)
		tui_job_cancel(t->jobs[i]);
	for (int waited = 0;; waited += 10) {
		int running = 0;
		for (size_t i = 0; i < t->njobs; i++)
			running += atomic_load(&t->jobs[i]->state) == JOB_RUNNING;
		if (!running)
			return 1;
		if (waited >= ms)
			return 0;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

void tui_jobs_stop(struct tui *t)
{
	for (size_t i = 0; i < t->njobs; i++)
		tui_job_cancel(t->jobs[i]);
	for (size_t i = 0; i < t->njobs; i++) {
		struct tui_job *j = t->jobs[i];
		if (!j->joined)
			pthread_join(j->thread, NULL);
		for (size_t k = 0; k < j->nlog; k++)
			free(j->log[k]);
		free(j->log);
		if (j->free_arg)
			j->free_arg(j->arg);
		if (j->view)
			j->view->ops->free(j->view);
		pthread_mutex_destroy(&j->lock);
		free(j);
	}
	free(t->jobs);
	t->jobs = NULL;
	t->njobs = 0;
}
