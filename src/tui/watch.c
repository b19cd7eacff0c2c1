/* watch.c — the browser's live refresh: the catalog's files looked at once a second (other processes' changes reload the lists), and a quiet job that syncs the command line's store every few seconds (versions written by programs that do not tell the catalog). */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tui.h"

/* File stores are listed cheaply; a remote server is asked less often. */
#define WATCH_FILE_S 5
#define WATCH_REMOTE_S 30

void tui_watch_catalog(struct tui *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec == t->watched_at)
		return;
	t->watched_at = now.tv_sec;
	const char *path = mt_catalog_path(t->cat);
	char wal[4096];
	snprintf(wal, sizeof wal, "%s-wal", path);
	struct stat a = { 0 }, b = { 0 };
	stat(path, &a);
	stat(wal, &b);
	uint64_t sig = (uint64_t)a.st_mtim.tv_sec * 1000000000u + (uint64_t)a.st_mtim.tv_nsec;
	sig = sig * 31 + (uint64_t)b.st_mtim.tv_sec * 1000000000u + (uint64_t)b.st_mtim.tv_nsec;
	sig = sig * 31 + (uint64_t)a.st_size + (uint64_t)b.st_size;
	if (t->catalog_sig && sig != t->catalog_sig)
		tui_reload_all(t);
	t->catalog_sig = sig;
}

/* Sleep `seconds` in short steps; nonzero when canceled meanwhile. */
static int watch_sleep(struct tui_job *j, int seconds)
{
	for (int i = 0; i < seconds * 10; i++) {
		if (atomic_load(&j->cancel))
			return 1;
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return atomic_load(&j->cancel);
}

/* Runs until the browser quits; a failed refresh is tried again next time
 * (the startup sync and r report errors, this one stays quiet). */
static int watch_run(struct tui_job *j)
{
	const char *name = app_store_name(j->t->app);
	mt_store *s = NULL;
	mt_error err = { 0 };
	int every = WATCH_FILE_S;
	while (!watch_sleep(j, every)) {
		if (!s && !(s = tui_open_store(j, name, &err)))
			continue;
		every = strncmp(mt_store_url(s), "file://", 7) ? WATCH_REMOTE_S : WATCH_FILE_S;
		mt_catalog_sync(j->t->cat, name, s, NULL, 0, NULL, NULL, NULL, &err);
	}
	mt_store_close(s);
	return MT_ECANCELED;
}

void tui_watch_start(struct tui *t)
{
	struct tui_job *j = tui_job_start(t, "watch", "watch", NULL, watch_run, NULL, NULL, NULL);
	if (j)
		j->quiet = 1;
}
