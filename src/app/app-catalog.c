/* app-catalog.c — how the command line and the browser name stores in the catalog: one name per store, and the entries of stores that are no longer remotes dropped. */
#define _GNU_SOURCE 1
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

const char *app_store_name(const struct app_ctx *app)
{
	if (app->store_name[0])
		return app->store_name;
	return app->store_url && *app->store_url ? app->store_url : APP_LOCAL;
}

/* A store's URL as text to compare: file:// and a plain path are the same
 * directory, a trailing slash is no different place. */
static void app_url_key(const char *url, char *out, size_t cap)
{
	const char *p = strncmp(url, "file://", 7) ? url : url + 7;
	char real[PATH_MAX];
	if (!strstr(p, "://") && realpath(p, real))
		p = real;
	snprintf(out, cap, "%s", p);
	size_t n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
}

static int app_same_url(const char *a, const char *b)
{
	char ka[PATH_MAX + 16], kb[PATH_MAX + 16];
	app_url_key(a, ka, sizeof ka);
	app_url_key(b, kb, sizeof kb);
	return !strcmp(ka, kb);
}

const char *app_remote_of_url(const mt_remote *r, size_t n, const char *url)
{
	for (size_t i = 0; url && i < n; i++)
		if (app_same_url(url, r[i].url))
			return r[i].name;
	return NULL;
}

void app_store_name_resolve(struct app_ctx *app)
{
	const char *url = app->store_url;
	if (!url || !*url)
		return;
	const char *env = getenv("MATORAGE_STORE");
	if (env && *env && app_same_url(url, env)) {
		snprintf(app->store_name, sizeof app->store_name, "%s", APP_LOCAL);
		return;
	}
	mt_remote *r = NULL;
	size_t n = 0;
	mt_error err = { 0 };
	if (mt_remotes_list(&r, &n, &err))
		return;
	for (size_t i = 0; i < n; i++)
		if (strcmp(url, r[i].name) && app_same_url(url, r[i].url)) {
			snprintf(app->store_name, sizeof app->store_name, "%s", r[i].name);
			break;
		}
	mt_remotes_free(r, n);
}

/* ---- pruning ---- */

struct app_entry {
	char *name, *url;
};

struct app_entries {
	struct app_entry *v;
	size_t n;
};

static int app_entry_row(void *ud, const mt_catalog_row *row)
{
	struct app_entries *e = ud;
	e->v = app_xreallocarray(e->v, e->n + 1, sizeof *e->v);
	e->v[e->n].name = app_xstrdup(row->cols[0]);
	e->v[e->n++].url = app_xstrdup(row->cols[1]);
	return 0;
}

static int app_configured(const mt_remote *r, size_t n, const char *name)
{
	if (!strcmp(name, APP_LOCAL))
		return 1;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(r[i].name, name))
			return 1;
	return 0;
}

/* Whether catalog entry i should go: a remote name no longer configured, or
 * a URL whose store a named entry already lists. */
static int app_stale(const struct app_entries *e, size_t i, const mt_remote *r, size_t n)
{
	const char *name = e->v[i].name;
	int is_url = strchr(name, '/') || strchr(name, ':');
	if (!is_url)
		return !app_configured(r, n, name);
	for (size_t k = 0; k < n; k++)
		if (app_same_url(e->v[i].url, r[k].url))
			return 1;
	for (size_t k = 0; k < e->n; k++)
		if (k != i && app_configured(r, n, e->v[k].name) &&
		    app_same_url(e->v[i].url, e->v[k].url))
			return 1;
	return 0;
}

int app_catalog_prune(mt_catalog *c, mt_error *err)
{
	mt_remote *r = NULL;
	size_t n = 0;
	int rc = mt_remotes_list(&r, &n, err);
	struct app_entries e = { 0 };
	if (!rc)
		rc = mt_catalog_list(c, MT_CAT_REMOTES, 0, NULL, app_entry_row, &e, err);
	for (size_t i = 0; !rc && i < e.n; i++)
		if (app_stale(&e, i, r, n))
			rc = mt_catalog_forget(c, e.v[i].name, err);
	for (size_t i = 0; i < e.n; i++) {
		free(e.v[i].name);
		free(e.v[i].url);
	}
	free(e.v);
	mt_remotes_free(r, n);
	return rc;
}
