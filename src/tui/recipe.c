/* recipe.c — the browser's `:run`: a Lua recipe as a job, its rows as progress, its print() lines as the job's log, canceled from the jobs list. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"
#include "tui.h"

struct recipe {
	char *store;   /* the catalog's name of the store it writes to */
	char *path;
	char **args;   /* KEY=VALUE */
	size_t nargs;
	char **allow;  /* "." and every --allow DIR */
	size_t nallow;
	mt_script *script; /* while it runs; under the job's lock */
};

static void recipe_free(void *arg)
{
	struct recipe *r = arg;
	free(r->store);
	free(r->path);
	for (size_t i = 0; i < r->nargs; i++)
		free(r->args[i]);
	free(r->args);
	for (size_t i = 0; i < r->nallow; i++)
		free(r->allow[i]);
	free(r->allow);
	free(r);
}

static void recipe_log(void *ud, const char *line)
{
	tui_job_log(ud, "%s", line);
}

/* A recipe reads files between progress reports for seconds at a time;
 * the runner's own cancel stops it at its next instruction. */
static void recipe_cancel(struct tui_job *j)
{
	struct recipe *r = j->arg;
	pthread_mutex_lock(&j->lock);
	if (r->script)
		mt_script_cancel(r->script);
	pthread_mutex_unlock(&j->lock);
}

/* The catalog learns the new versions here, so the lists show them as
 * soon as the job ends. */
static void recipe_note(struct tui_job *j, mt_store *s, const mt_script *sc)
{
	struct recipe *r = j->arg;
	mt_error err = { 0 };
	for (size_t i = 0; i < mt_script_nversions(sc); i++) {
		const char *v = mt_script_version(sc, i);
		char *dataset = app_xasprintf("%.*s", (int)strcspn(v, "@"), v);
		mt_catalog_sync_stats st;
		if (mt_catalog_sync(j->t->cat, r->store, s, dataset, 0, NULL, NULL, &st, &err))
			tui_job_log(j, "catalog: %s", err.message);
		free(dataset);
	}
}

static int recipe_job(struct tui_job *j)
{
	struct recipe *r = j->arg;
	mt_error err = { 0 };
	size_t len = 0;
	char *code = app_read_file(r->path, &len);
	if (!code) {
		snprintf(j->result, sizeof j->result, "%s: %s", r->path, strerror(errno));
		return MT_EIO;
	}
	mt_store *s = tui_open_store(j, r->store, &err);
	if (!s) {
		free(code);
		return tui_job_fail(j, &err);
	}
	/* A recipe writes: the stores it opens by URL are made when missing. */
	mt_store_opts so = j->t->app->store_opts;
	so.create = 1;
	mt_script_opts o;
	mt_script_opts_init(&o);
	o.store = s;
	o.store_opts = &so;
	o.allowed_paths = (const char *const *)r->allow;
	o.nallowed = r->nallow;
	o.progress = tui_job_progress;
	o.progress_ud = j;
	o.log = recipe_log;
	o.log_ud = j;
	mt_script *sc = NULL;
	int rc = mt_script_open(&o, &sc, &err);
	if (!rc) {
		pthread_mutex_lock(&j->lock);
		r->script = sc;
		pthread_mutex_unlock(&j->lock);
		/* A cancel asked for before the handle existed. */
		if (atomic_load(&j->cancel))
			mt_script_cancel(sc);
		rc = mt_script_run(sc, r->path, code, len, (const char *const *)r->args, r->nargs,
				   &err);
	}
	if (rc && sc && *mt_script_error(sc)) {
		/* The result is its first line, FILE:LINE: message; the log
		 * keeps the traceback. */
		const char *text = mt_script_error(sc);
		size_t first = strcspn(text, "\n");
		snprintf(j->result, sizeof j->result, "%.*s (nothing was committed)", (int)first,
			 text);
		for (const char *p = text; *p;) {
			size_t n = strcspn(p, "\n");
			tui_job_log(j, "%.*s", (int)n, p);
			p += n + (p[n] == '\n');
		}
	} else if (rc) {
		tui_job_fail(j, &err);
	} else {
		size_t at = 0;
		at += (size_t)snprintf(j->result, sizeof j->result, "built");
		for (size_t i = 0; i < mt_script_nversions(sc) && at < sizeof j->result; i++)
			at += (size_t)snprintf(j->result + at, sizeof j->result - at, "%s%s",
					       i ? ", " : " ", mt_script_version(sc, i));
		if (!mt_script_nversions(sc))
			snprintf(j->result, sizeof j->result, "done; it committed no version");
		recipe_note(j, s, sc);
	}
	pthread_mutex_lock(&j->lock);
	r->script = NULL;
	pthread_mutex_unlock(&j->lock);
	mt_script_close(sc);
	mt_store_close(s);
	free(code);
	return rc;
}

/* line: [--allow DIR]... SCRIPT.lua [KEY=VALUE ...], split at spaces. */
void tui_recipe_run(struct tui *t, const char *line)
{
	struct recipe *r = app_xcalloc(1, sizeof *r);
	r->store = app_xstrdup(app_store_name(t->app));
	/* The working directory is allowed as on the command line. */
	r->allow = app_xcalloc(1, sizeof *r->allow);
	r->allow[r->nallow++] = app_xstrdup(".");
	char *copy = app_xstrdup(line), *save = NULL;
	const char *bad = NULL;
	for (char *w = strtok_r(copy, " \t", &save); w && !bad; w = strtok_r(NULL, " \t", &save)) {
		if (!r->path && !strcmp(w, "--allow")) {
			char *dir = strtok_r(NULL, " \t", &save);
			if (!dir) {
				bad = "--allow needs a directory";
				break;
			}
			r->allow = app_xreallocarray(r->allow, r->nallow + 1, sizeof *r->allow);
			r->allow[r->nallow++] = app_xstrdup(dir);
		} else if (!r->path) {
			r->path = app_xstrdup(w);
		} else if (!strchr(w + 1, '=') || *w == '=') {
			tui_status(t, 1, "run: '%s' is not KEY=VALUE", w);
			bad = "";
		} else {
			r->args = app_xreallocarray(r->args, r->nargs + 1, sizeof *r->args);
			r->args[r->nargs++] = app_xstrdup(w);
		}
	}
	free(copy);
	if (!bad && !r->path)
		bad = "which script? :run [--allow DIR] SCRIPT.lua [KEY=VALUE ...]";
	if (bad) {
		if (*bad)
			tui_status(t, 1, "run: %s", bad);
		recipe_free(r);
		return;
	}
	char title[160];
	snprintf(title, sizeof title, "run %s", r->path);
	struct tui_job *j = tui_job_start(t, "recipe", title, "rows", recipe_job, NULL, r,
					  recipe_free);
	if (j)
		j->on_cancel = recipe_cancel;
}
