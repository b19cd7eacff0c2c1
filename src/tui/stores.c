/* stores.c — how a job opens a store: by the catalog's name for it, or the very bucket a catalog row lives in. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tui.h"

static void store_opts(const struct tui_job *j, mt_store_opts *o)
{
	const struct app_ctx *app = j->t->app;
	if (app)
		*o = app->store_opts;
	else
		mt_store_opts_init(o);
	/* --debug lines on stderr would land in the middle of the screen. */
	o->log = NULL;
}

static mt_store *open_named(struct tui_job *j, const char *remote, int create, mt_error *err)
{
	const struct app_ctx *app = j->t->app;
	/* The command line's store by the catalog's name for it; "local" otherwise
	 * is the default store (NULL: $MATORAGE_STORE, else the built-in one). */
	const char *url = strcmp(remote, APP_LOCAL) ? remote : NULL;
	if (app && !strcmp(remote, app_store_name(app)))
		url = app->store_url;
	mt_store_opts o;
	store_opts(j, &o);
	o.create = create;
	mt_store *s = NULL;
	if (mt_store_open_opts(url, &o, &s, err))
		return NULL;
	return s;
}

mt_store *tui_open_store(struct tui_job *j, const char *remote, mt_error *err)
{
	/* Unless read-only the browser writes (copies, recipes), so the stores it
	 * opens are made when missing; read-only it creates nothing. */
	return open_named(j, remote, !j->t->read_only, err);
}

/* A bucket a remote no longer points to is still reached the way the remote
 * was: its endpoint, region and profile, at the bucket's own URL. */
static mt_store *open_old_bucket(struct tui_job *j, const mt_catalog_ref *ref, mt_error *err)
{
	mt_store_opts o;
	store_opts(j, &o);
	o.create = 0;
	mt_remote *r = NULL;
	size_t n = 0;
	mt_error e2 = { 0 };
	if (!mt_remotes_list(&r, &n, &e2))
		for (size_t i = 0; i < n; i++)
			if (!strcmp(r[i].name, ref->remote)) {
				o.endpoint = o.endpoint ? o.endpoint : r[i].endpoint;
				o.region = o.region ? o.region : r[i].region;
				o.profile = o.profile ? o.profile : r[i].profile;
				o.ca_bundle = o.ca_bundle ? o.ca_bundle : r[i].ca_bundle;
				o.insecure |= r[i].insecure;
				o.addressing = o.addressing ? o.addressing : r[i].addressing;
			}
	mt_store *s = NULL;
	int rc = mt_store_open_opts(ref->url, &o, &s, err);
	mt_remotes_free(r, n);
	return rc ? NULL : s;
}

mt_store *tui_open_bucket(struct tui_job *j, const mt_catalog_ref *ref, int *stale,
			  mt_error *err)
{
	*stale = 0;
	/* A bucket on screen exists: reading or changing it creates nothing. */
	mt_store *s = open_named(j, ref->remote, 0, err);
	if (!s || !strcmp(mt_store_url(s), ref->url))
		return s;
	/* The remote points elsewhere now: acting there would change a store
	 * other than the one on screen. */
	mt_store_close(s);
	*stale = 1;
	return open_old_bucket(j, ref, err);
}

void tui_ref_copy(mt_catalog_ref *dst, const mt_catalog_ref *src)
{
	dst->remote = app_xstrdup(src->remote);
	dst->url = app_xstrdup(src->url);
	dst->dataset = src->dataset ? app_xstrdup(src->dataset) : NULL;
	dst->version = src->version ? app_xstrdup(src->version) : NULL;
	dst->model = src->model ? app_xstrdup(src->model) : NULL;
	dst->sha256 = NULL;
	dst->shard = -1;
}
