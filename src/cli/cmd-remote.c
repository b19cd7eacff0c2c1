/* cmd-remote.c — `matorage remote add|ls|rm`: named stores in matorage's configuration file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const struct cli_option remote_options[] = {
	{ "endpoint", 0, "URL", "add: the S3 server, http(s)://HOST[:PORT]" },
	{ "region", 0, "NAME", "add: the S3 region" },
	{ "profile", 0, "NAME", "add: the AWS profile whose credentials to use" },
	{ "ca-bundle", 0, "FILE", "add: PEM file of trusted certificate authorities" },
	{ "insecure", 0, NULL, "add: do not verify the server's TLS certificate" },
	{ "addressing", 0, "STYLE", "add: auto, path or virtual" },
	{ "parity", 0, "K+M", "add: protect versions written to it with K+M parity unless told "
	  "otherwise" },
	{ "replace", 0, NULL, "add: replace a remote of the same name" },
	{ "json", 0, NULL, "ls: print a JSON array" },
	{ NULL, 0, NULL, NULL },
};

static const char *const addressing_names[] = { "auto", "path", "virtual" };

/* A copy of an option's value, else of the same global option given before the
 * command; NULL when neither was given. */
static char *remote_opt(const struct cli_args *a, const char *name, const char *global)
{
	const char *v = cli_get(a, name);
	v = v ? v : global;
	return v ? app_xstrdup(v) : NULL;
}

static int remote_add(struct cli_ctx *ctx, const struct cli_args *a)
{
	if (a->argc != 3)
		return cli_usage_error(a->cmd, "add takes a NAME and a URL");
	const mt_store_opts *g = &ctx->app.store_opts;
	/* A directory may be given as a plain absolute path. */
	char *url = a->argv[2][0] == '/' ? app_xasprintf("file://%s", a->argv[2])
					 : app_xstrdup(a->argv[2]);
	mt_remote r = {
		.name = app_xstrdup(a->argv[1]),
		.url = url,
		.endpoint = remote_opt(a, "endpoint", g->endpoint),
		.region = remote_opt(a, "region", g->region),
		.profile = remote_opt(a, "profile", g->profile),
		.ca_bundle = remote_opt(a, "ca-bundle", g->ca_bundle),
		.insecure = cli_has(a, "insecure") || g->insecure,
		.addressing = g->addressing,
		.parity = remote_opt(a, "parity", NULL),
	};
	const char *style = cli_get(a, "addressing");
	int rc = CLI_OK;
	if (style) {
		r.addressing = -1;
		for (int i = 0; i < 3; i++)
			if (!strcmp(style, addressing_names[i]))
				r.addressing = i;
		if (r.addressing < 0)
			rc = cli_usage_error(a->cmd, "--addressing: '%s' is not auto, path or virtual",
					     style);
	}
	mt_error err = { 0 };
	if (rc == CLI_OK && mt_remote_add(&r, cli_has(a, "replace"), &err))
		rc = cli_fail(&err);
	else if (rc == CLI_OK)
		printf("remote %s: %s\n", r.name, r.url);
	char *own[] = { r.name, r.url, r.endpoint, r.region, r.profile, r.ca_bundle, r.parity };
	for (size_t i = 0; i < sizeof own / sizeof *own; i++)
		free(own[i]);
	return rc;
}

static const char *dash(const char *s)
{
	return s && *s ? s : "-";
}

/* What a remote sets beyond the columns, "-" for nothing. */
static char *remote_extras(const mt_remote *r)
{
	char *s = app_xasprintf("%s%s%s%s%s%s%s", r->insecure ? ",insecure" : "",
				r->addressing ? ",addressing=" : "",
				r->addressing ? addressing_names[r->addressing] : "",
				r->ca_bundle ? ",ca-bundle=" : "", r->ca_bundle ? r->ca_bundle : "",
				r->parity ? ",parity=" : "", r->parity ? r->parity : "");
	if (!*s) {
		free(s);
		return app_xstrdup("-");
	}
	memmove(s, s + 1, strlen(s)); /* the leading comma */
	return s;
}

/* Columns as wide as their widest cell: URLs and endpoints vary too much for
 * fixed widths. */
static void remote_table(const mt_remote *r, size_t n)
{
	enum { NCOL = 6 };
	static const char *const head[NCOL] = { "NAME", "URL", "ENDPOINT", "REGION", "PROFILE",
						"OPTIONS" };
	char **extras = app_xcalloc(n, sizeof *extras);
	int w[NCOL];
	for (int c = 0; c < NCOL; c++)
		w[c] = (int)strlen(head[c]);
	for (size_t i = 0; i < n; i++) {
		extras[i] = remote_extras(&r[i]);
		const char *cell[NCOL] = { r[i].name, r[i].url, dash(r[i].endpoint),
					   dash(r[i].region), dash(r[i].profile), extras[i] };
		for (int c = 0; c < NCOL; c++)
			if ((int)strlen(cell[c]) > w[c])
				w[c] = (int)strlen(cell[c]);
	}
	printf("%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", w[0], head[0], w[1], head[1], w[2], head[2],
	       w[3], head[3], w[4], head[4], head[5]);
	for (size_t i = 0; i < n; i++) {
		printf("%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", w[0], r[i].name, w[1], r[i].url, w[2],
		       dash(r[i].endpoint), w[3], dash(r[i].region), w[4], dash(r[i].profile),
		       extras[i]);
		free(extras[i]);
	}
	free(extras);
}

/* Replace a remote's URL and endpoint by the forms messages show. */
static void remote_redact(mt_remote *r)
{
	char **fields[] = { &r->url, &r->endpoint };
	for (size_t k = 0; k < 2; k++) {
		if (!*fields[k])
			continue;
		char *shown = mt_url_redact(*fields[k]);
		mt_free(*fields[k]);
		*fields[k] = app_xstrdup(shown ? shown : "***");
		mt_free(shown);
	}
}

static int remote_ls(const struct cli_args *a)
{
	if (a->argc != 1)
		return cli_usage_error(a->cmd, "ls takes no arguments");
	mt_remote *r;
	size_t n;
	mt_error err = { 0 };
	if (mt_remotes_list(&r, &n, &err))
		return cli_fail(&err);
	/* A configuration written by hand may hold credentials in a URL. */
	for (size_t i = 0; i < n; i++)
		remote_redact(&r[i]);
	if (cli_has(a, "json")) {
		json_t *arr = json_array();
		for (size_t i = 0; arr && i < n; i++) {
			json_t *o = json_pack("{s:s, s:s, s:b, s:s}", "name", r[i].name, "url", r[i].url,
					      "insecure", r[i].insecure, "addressing",
					      addressing_names[r[i].addressing]);
			const char *keys[] = { "endpoint", "region", "profile", "ca_bundle",
					       "parity" };
			const char *vals[] = { r[i].endpoint, r[i].region, r[i].profile,
					       r[i].ca_bundle, r[i].parity };
			for (size_t k = 0; o && k < sizeof keys / sizeof *keys; k++)
				if (vals[k])
					json_object_set_new(o, keys[k], json_string(vals[k]));
			if (!o || json_array_append_new(arr, o)) {
				json_decref(arr);
				arr = NULL;
			}
		}
		char *text = arr ? json_dumps(arr, JSON_INDENT(2)) : NULL;
		json_decref(arr);
		if (!text) {
			mt_remotes_free(r, n);
			return cli_error("out of memory");
		}
		puts(text);
		free(text);
	} else if (n > 0) {
		remote_table(r, n);
	}
	mt_remotes_free(r, n);
	return CLI_OK;
}

static int remote_rm(const struct cli_args *a)
{
	if (a->argc != 2)
		return cli_usage_error(a->cmd, "rm takes the NAME of a remote");
	mt_error err = { 0 };
	if (mt_remote_remove(a->argv[1], &err))
		return cli_fail(&err);
	printf("removed remote %s\n", a->argv[1]);
	return CLI_OK;
}

static int remote_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	const char *what = a->argv[0];
	if (!strcmp(what, "add"))
		return remote_add(ctx, a);
	if (!strcmp(what, "ls"))
		return remote_ls(a);
	if (!strcmp(what, "rm"))
		return remote_rm(a);
	return cli_usage_error(a->cmd, "'%s' is not add, ls or rm", what);
}

const struct cli_cmd cli_cmd_remote = {
	"remote", "add NAME URL | ls | rm NAME", remote_options, remote_exec,
	"Name stores (s3:// or file:// URLs and how to reach them) for --store, push, pull and sync",
	1, 3,
};
