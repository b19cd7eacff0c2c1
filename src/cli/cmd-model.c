/* cmd-model.c — `matorage model ls|info|export|import`: a store's model checkpoints; and the model: forms of rm, verify, gc and the copies. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct cli_option model_options[] = {
	{ "output", 'o', "FILE", "export: the .safetensors file to write" },
	{ "keep", 0, "N", "import: keep only the newest N checkpoints of the model afterwards" },
	{ "json", 0, NULL, "info: print the checkpoint's manifest (JSON) instead" },
	{ NULL, 0, NULL, NULL },
};

const char *cli_model_spec(const char *arg)
{
	return arg && !strncmp(arg, "model:", 6) ? arg + 6 : NULL;
}

/* What meta member `key` holds as text (a number or a string), or "". */
static const char *meta_field(const char *meta, const char *key, char *buf, size_t cap)
{
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(meta, pat);
	buf[0] = 0;
	if (!p)
		return buf;
	p += strlen(pat);
	size_t n = strcspn(p, ",}");
	if (*p == '"')
		p++, n = strcspn(p, "\"");
	snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
	return buf;
}

static uint64_t total_bytes(const mt_ckpt *c, int stored)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < mt_ckpt_ntensors(c); i++) {
		mt_ckpt_tensor_info t;
		mt_ckpt_tensor(c, i, &t, NULL);
		sum += stored ? t.stored : t.bytes;
	}
	return sum;
}

static int model_ls_one(mt_store *s, const char *name)
{
	char **v = NULL;
	size_t n = 0;
	mt_error err = { 0 };
	if (mt_ckpt_list(s, name, &v, &n, &err))
		return cli_fail(&err);
	printf("VERSION\tCREATED\tSTEP\tTENSORS\tBYTES\n");
	int rc = CLI_OK;
	for (size_t i = 0; i < n && rc == CLI_OK; i++) {
		char *spec = app_xasprintf("%s@%s", name, v[i]), step[32];
		mt_ckpt *c = NULL;
		if (mt_ckpt_open(s, spec, &c, &err))
			rc = cli_fail(&err);
		else
			printf("%s\t%s\t%s\t%zu\t%" PRIu64 "\n", v[i], mt_ckpt_created(c),
			       meta_field(mt_ckpt_meta(c), "step", step, sizeof step),
			       mt_ckpt_ntensors(c), total_bytes(c, 0));
		mt_ckpt_close(c);
		free(spec);
	}
	mt_strv_free(v, n);
	return rc;
}

static int model_ls(mt_store *s, const struct cli_args *a)
{
	if (a->argc > 1)
		return model_ls_one(s, a->argv[1]);
	char **names = NULL;
	size_t n = 0;
	mt_error err = { 0 };
	if (mt_models_list(s, &names, &n, &err))
		return cli_fail(&err);
	for (size_t i = 0; i < n; i++) {
		char **v = NULL;
		size_t nv = 0;
		if (!mt_ckpt_list(s, names[i], &v, &nv, &err))
			printf("%s\t%zu checkpoint(s)\tlatest %s\n", names[i], nv, v[nv - 1]);
		mt_strv_free(v, nv);
	}
	mt_strv_free(names, n);
	return CLI_OK;
}

static void shape_text(const mt_ckpt_tensor_info *t, char *buf, size_t cap)
{
	size_t off = (size_t)snprintf(buf, cap, "(");
	for (int i = 0; i < t->ndim && off < cap; i++)
		off += (size_t)snprintf(buf + off, cap - off, "%s%" PRIu64, i ? "," : "", t->shape[i]);
	if (off < cap)
		snprintf(buf + off, cap - off, ")");
}

/* Whether parent (may be NULL) holds a tensor with these bytes. */
static int shared_with(const mt_ckpt *parent, const char *sha256)
{
	for (size_t i = 0; parent && i < mt_ckpt_ntensors(parent); i++) {
		mt_ckpt_tensor_info t;
		mt_ckpt_tensor(parent, i, &t, NULL);
		if (!strcmp(t.sha256, sha256))
			return 1;
	}
	return 0;
}

static int model_info(mt_store *s, const struct cli_args *a)
{
	mt_ckpt *c = NULL, *parent = NULL;
	mt_error err = { 0 };
	if (mt_ckpt_open(s, a->argv[1], &c, &err))
		return cli_fail(&err);
	if (cli_has(a, "json")) {
		printf("%s\n", mt_ckpt_manifest(c));
		mt_ckpt_close(c);
		return CLI_OK;
	}
	/* The previous checkpoint may have been removed: then nothing is shared. */
	if (*mt_ckpt_parent(c)) {
		char *spec = app_xasprintf("%s@%s", mt_ckpt_model(c), mt_ckpt_parent(c));
		mt_ckpt_open(s, spec, &parent, NULL);
		free(spec);
	}
	char human[32], stored[32];
	app_human_bytes(total_bytes(c, 0), human, sizeof human);
	app_human_bytes(total_bytes(c, 1), stored, sizeof stored);
	printf("model:    %s@%s\nparent:   %s\ncreated:  %s\ntensors:  %zu, %s (%s stored)\n"
	       "meta:     %s\nstate:    %zu bytes of JSON\n",
	       mt_ckpt_model(c), mt_ckpt_version(c), *mt_ckpt_parent(c) ? mt_ckpt_parent(c) : "-",
	       mt_ckpt_created(c), mt_ckpt_ntensors(c), human, stored, mt_ckpt_meta(c),
	       strlen(mt_ckpt_state(c)));
	printf("KEY\tDTYPE\tSHAPE\tBYTES\tSTORED\tSHARED\n");
	for (size_t i = 0; i < mt_ckpt_ntensors(c); i++) {
		mt_ckpt_tensor_info t;
		char shape[160];
		mt_ckpt_tensor(c, i, &t, NULL);
		shape_text(&t, shape, sizeof shape);
		printf("%s\t%s\t%s\t%" PRIu64 "\t%" PRIu64 "\t%s\n", t.key, mt_dtype_name(t.dtype),
		       shape, t.bytes, t.stored,
		       !parent ? "-" : shared_with(parent, t.sha256) ? "shared" : "new");
	}
	mt_ckpt_close(parent);
	mt_ckpt_close(c);
	return CLI_OK;
}

static int model_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	const char *sub = a->argv[0];
	int want = !strcmp(sub, "ls") ? 1 : !strcmp(sub, "info") || !strcmp(sub, "export") ? 2
					    : !strcmp(sub, "import") ? 3 : 0;
	if (!want)
		return cli_usage_error(a->cmd, "'%s': not one of ls, info, export, import", sub);
	if (a->argc < want || (want > 1 && a->argc != want))
		return cli_usage_error(a->cmd, "%s: wrong number of arguments", sub);
	if (!strcmp(sub, "export") && (!cli_get(a, "output") || !*cli_get(a, "output")))
		return cli_usage_error(a->cmd, "export: give the file to write with -o FILE");
	if (!strcmp(sub, "import"))
		ctx->app.store_opts.create = 1;
	mt_store *s = cli_store(ctx);
	if (!s)
		return CLI_FAIL;
	if (!strcmp(sub, "ls"))
		return model_ls(s, a);
	if (!strcmp(sub, "info"))
		return model_info(s, a);
	if (!strcmp(sub, "export"))
		return cli_safetensors_export(s, a->argv[1], cli_get(a, "output"));
	int keep = 0;
	int rc = cli_opt_int(a, "keep", 1, 1 << 30, &keep);
	return rc ? rc : cli_safetensors_import(s, a->argv[1], a->argv[2], keep);
}

const struct cli_cmd cli_cmd_model = {
	"model", "ls [NAME] | info NAME[@V] | export NAME[@V] -o FILE | import NAME FILE",
	model_options, model_exec,
	"Model checkpoints: list them, show one's tensors, export to or import from "
	".safetensors",
	1, 3,
};

/* ---- the model: forms of other commands ---- */

int cli_model_rm(mt_store *s, const char *spec)
{
	const char *at = strchr(spec, '@');
	if (!at || !at[1])
		return cli_error("'model:%s': name the checkpoint to remove, as model:NAME@VERSION",
				 spec);
	char *name = app_xasprintf("%.*s", (int)(at - spec), spec);
	mt_error err = { 0 };
	int rc = mt_ckpt_delete(s, name, at + 1, &err) ? cli_fail(&err) : CLI_OK;
	if (!rc)
		printf("removed model:%s\n", spec);
	free(name);
	return rc;
}

static void verify_bad(void *ud, const char *version, const char *key, const char *object,
		       const char *message)
{
	++*(uint64_t *)ud;
	fprintf(stderr, "matorage: %s: tensor '%s' (%s): %s\n", version, key, object, message);
}

/* A damaged or missing parity object (or record) of a checkpoint. */
static void verify_bad_parity(void *ud, const mt_repair_report *r)
{
	++((uint64_t *)ud)[1];
	if (r->kind == MT_REPAIR_RECORD)
		fprintf(stderr, "matorage: %s: protection record %s: %s\n", r->version, r->key,
			r->problem ? r->problem : "damaged");
	else
		fprintf(stderr, "matorage: %s: parity object of group %zu (%s): %s\n", r->version,
			r->number, r->key, r->problem ? r->problem : "damaged");
}

void cli_model_record(const char *remote, mt_store *s, struct app_model_health *h, int create)
{
	mt_catalog *c = NULL;
	mt_error err = { 0 };
	int rc = cli_catalog_open(create, &c, &err);
	if (rc && !create)
		return; /* no catalog to tell */
	if (!rc)
		rc = mt_catalog_sync(c, remote, s, NULL, MT_CATALOG_MODELS, NULL, NULL, NULL, &err);
	if (c && (!rc || rc == MT_ECORRUPT || rc == MT_EFORMAT))
		rc = app_model_health_record(h, c, mt_store_url(s), &err);
	if (rc) {
		cli_progress_hide();
		fprintf(stderr, "matorage: warning: catalog not updated (run 'matorage sync'): %s\n",
			err.message);
	}
	mt_catalog_close(c);
}

int cli_model_verify(const char *remote, mt_store *s, const char *spec, int threads)
{
	const char *at = strchr(spec, '@');
	char *name = app_xasprintf("%.*s", (int)(at ? (size_t)(at - spec) : strlen(spec)), spec);
	const char *version = at && at[1] && strcmp(at + 1, "latest") ? at + 1 : NULL;
	mt_ckpt *c = NULL;
	mt_error err = { 0 };
	int rc = CLI_OK;
	/* "latest" (or no version) checks the newest only when named so. */
	if (at && !version) {
		if (mt_ckpt_open(s, spec, &c, &err))
			rc = cli_fail(&err);
		else
			version = mt_ckpt_version(c);
	}
	uint64_t n = 0, bad[2] = { 0, 0 };
	struct app_model_health h;
	app_model_health_init(&h, name);
	int vrc = rc ? 0 : app_model_verify(s, version, threads, verify_bad, verify_bad_parity, bad,
					     &h, &n, &err);
	/* Each damaged object was named as it was found: a count ends the report. */
	if (vrc == MT_ECORRUPT && bad[0])
		rc = cli_error("model:%s: %" PRIu64 " of %" PRIu64 " tensor object(s) damaged or "
			       "missing", spec, bad[0], n);
	else if (vrc == MT_ECORRUPT && bad[1])
		rc = cli_error("model:%s: %" PRIu64 " tensor object(s) intact, %" PRIu64 " parity "
			       "object(s) or record(s) damaged or missing ('matorage repair "
			       "model:%s' rebuilds parity from the tensors)", spec, n, bad[1], spec);
	else if (vrc)
		rc = cli_fail(&err);
	else if (!rc)
		printf("model:%s: %" PRIu64 " tensor object(s) verified, all intact\n", spec, n);
	if (!rc || vrc == MT_ECORRUPT)
		cli_model_record(remote, s, &h, 0);
	app_model_health_free(&h);
	mt_ckpt_close(c);
	free(name);
	return rc;
}

static void gc_found(void *ud, const char *key, uint64_t bytes)
{
	printf("%" PRIu64 "\t%s\n", bytes, key);
}

int cli_model_gc(mt_store *s, const char *name, int dry_run, uint64_t grace, uint64_t *nobjects,
		 uint64_t *nbytes)
{
	mt_error err = { 0 };
	uint64_t n = 0, b = 0;
	int rc = mt_ckpt_gc(s, name, dry_run, grace, gc_found, NULL, &n, &b, &err) ? cli_fail(&err)
										    : CLI_OK;
	*nobjects += n;
	*nbytes += b;
	return rc;
}

/* Copy one model (all its checkpoints, or the one named; "latest" is the newest). */
static int model_copy_one(struct cli_ctx *ctx, mt_store *src, mt_store *dst, const char *name,
			  const char *version)
{
	mt_ckpt *c = NULL;
	mt_error err = { 0 };
	if (version && !strcmp(version, "latest")) {
		char *spec = app_xasprintf("%s@latest", name);
		int orc = mt_ckpt_open(src, spec, &c, &err);
		free(spec);
		if (orc)
			return cli_fail(&err);
		version = mt_ckpt_version(c);
	}
	struct cli_progress *p = cli_progress_begin(ctx, name, 0);
	mt_copy_stats st = { 0 };
	int crc = mt_ckpt_copy(src, dst, name, version, cli_progress_fn, p, &st, &err);
	cli_progress_end(p);
	char sent[32];
	app_human_bytes(st.bytes, sent, sizeof sent);
	int rc = CLI_OK;
	if (crc)
		rc = cli_fail(&err);
	else
		printf("model %s: %" PRIu64 " checkpoint(s) copied to %s, %" PRIu64
		       " already there; %" PRIu64 " tensor(s) sent (%s), %" PRIu64
		       " already there\n",
		       name, st.versions, mt_store_url(dst), st.versions_present, st.shards, sent,
		       st.shards_present);
	mt_ckpt_close(c);
	return rc;
}

int cli_model_copy(struct cli_ctx *ctx, mt_store *src, mt_store *dst, const char *spec)
{
	if (spec) {
		const char *at = strchr(spec, '@');
		char *name = app_xasprintf("%.*s", (int)(at ? (size_t)(at - spec) : strlen(spec)),
					   spec);
		int rc = model_copy_one(ctx, src, dst, name, at && at[1] ? at + 1 : NULL);
		free(name);
		return rc;
	}
	char **names = NULL;
	size_t n = 0;
	mt_error err = { 0 };
	if (mt_models_list(src, &names, &n, &err))
		return cli_fail(&err);
	int rc = CLI_OK;
	for (size_t i = 0; i < n && rc == CLI_OK; i++)
		rc = model_copy_one(ctx, src, dst, names[i], NULL);
	mt_strv_free(names, n);
	return rc;
}
