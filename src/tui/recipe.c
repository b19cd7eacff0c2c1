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
	char **stores; /* every --allow-store URL typed: no other grant */
	size_t nstores;
	uint64_t max_memory, max_seconds; /* the defaults unless typed */
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
	for (size_t i = 0; i < r->nstores; i++)
		free(r->stores[i]);
	free(r->stores);
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
	o.allowed_stores = (const char *const *)r->stores;
	o.nallowed_stores = r->nstores;
	o.max_memory = r->max_memory;
	o.max_seconds = r->max_seconds;
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

static void add_word(char ***v, size_t *n, const char *w)
{
	*v = app_xreallocarray(*v, *n + 1, sizeof **v);
	(*v)[(*n)++] = app_xstrdup(w);
}

/* A number with an optional K, M or G (powers of 1024) when bytes. */
static int parse_limit(const char *text, int bytes, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	unsigned shift = 0;
	if (bytes && *end && strchr("kK", *end))
		shift = 10;
	else if (bytes && *end && strchr("mM", *end))
		shift = 20;
	else if (bytes && *end && strchr("gG", *end))
		shift = 30;
	end += shift != 0;
	if (end == text || *end || errno || *text == '-' || (v << shift) >> shift != v)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* One of the options before the script's name; NULL when it is fine, else
 * what is wrong.  They are those of `matorage run`, and the only grants. */
static const char *recipe_option(struct recipe *r, const char *name, const char *value)
{
	if (!value)
		return "an option needs a value: :run [--allow DIR] [--allow-store URL] "
		       "[--max-memory BYTES] [--max-time SECONDS] SCRIPT.lua [KEY=VALUE ...]";
	if (!strcmp(name, "--allow"))
		add_word(&r->allow, &r->nallow, value);
	else if (!strcmp(name, "--allow-store"))
		add_word(&r->stores, &r->nstores, value);
	else if (!strcmp(name, "--max-memory"))
		return parse_limit(value, 1, &r->max_memory) ? "--max-memory: not a size" : NULL;
	else if (!strcmp(name, "--max-time"))
		return parse_limit(value, 0, &r->max_seconds) ? "--max-time: not a number" : NULL;
	return NULL;
}

static int is_option(const char *w)
{
	return !strcmp(w, "--allow") || !strcmp(w, "--allow-store") ||
	       !strcmp(w, "--max-memory") || !strcmp(w, "--max-time");
}

/* line: [OPTION VALUE]... SCRIPT.lua [KEY=VALUE ...], split at spaces. */
void tui_recipe_run(struct tui *t, const char *line)
{
	struct recipe *r = app_xcalloc(1, sizeof *r);
	r->store = app_xstrdup(app_store_name(t->app));
	/* The working directory is allowed as on the command line. */
	add_word(&r->allow, &r->nallow, ".");
	mt_script_opts defaults;
	mt_script_opts_init(&defaults);
	r->max_memory = defaults.max_memory;
	r->max_seconds = defaults.max_seconds;
	char *copy = app_xstrdup(line), *save = NULL;
	const char *bad = NULL;
	for (char *w = strtok_r(copy, " \t", &save); w && !bad; w = strtok_r(NULL, " \t", &save)) {
		if (!r->path && is_option(w)) {
			bad = recipe_option(r, w, strtok_r(NULL, " \t", &save));
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
		bad = "which script? :run [--allow DIR] [--allow-store URL] SCRIPT.lua [KEY=VALUE ...]";
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
