/* cli-util.c — helpers of every subcommand: allocation, errors, options, numbers, batches. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static CLI_NORETURN void cli_oom(void)
{
	fputs("matorage: out of memory\n", stderr);
	exit(CLI_FAIL);
}

void *cli_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		cli_oom();
	return p;
}

void *cli_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		cli_oom();
	return p;
}

void *cli_xreallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes))
		cli_oom();
	void *q = realloc(p, bytes ? bytes : 1);
	if (!q)
		cli_oom();
	return q;
}

char *cli_xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		cli_oom();
	return p;
}

char *cli_xasprintf(const char *fmt, ...)
{
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		cli_oom();
	char *s = cli_xmalloc((size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	return s;
}

char *cli_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0, got;
	char *buf = cli_xmalloc(cap);
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap)
			buf = cli_xreallocarray(buf, cap *= 2, 1);
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	*len = n;
	return buf;
}

/* Error lines must stay one line even when a message carries a newline (HDF5's do). */
static void cli_print_line(const char *prefix, const char *msg, const char *suffix)
{
	cli_progress_hide();
	fputs(prefix, stderr);
	for (const char *p = msg; *p; p++)
		fputc(*p == '\n' || *p == '\r' ? ' ' : *p, stderr);
	fputs(suffix, stderr);
	fputc('\n', stderr);
}

int cli_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cli_print_line("matorage: ", msg, "");
	return CLI_FAIL;
}

int cli_fail(const mt_error *err)
{
	cli_print_line("matorage: ", err->message[0] ? err->message : mt_strerror(err->code), "");
	return CLI_FAIL;
}

int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	char msg[1024], suffix[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (cmd) {
		char prefix[64];
		snprintf(prefix, sizeof prefix, "matorage: %s: ", cmd->name);
		snprintf(suffix, sizeof suffix, " (see 'matorage help %s')", cmd->name);
		cli_print_line(prefix, msg, suffix);
	} else {
		cli_print_line("matorage: ", msg, " (see 'matorage --help')");
	}
	return CLI_USAGE;
}

/* ---- option parsing ---- */

/* The global options: every command accepts them too, so `matorage ls --store URL`
 * works as well as `matorage --store URL ls`. */
const struct cli_option cli_global_options[] = {
	{ "store", 0, "URL",
	  "a directory, file:// or s3://BUCKET[/PREFIX] URL, or a remote's name (default: "
	  "$MATORAGE_STORE, else the local store)" },
	{ "quiet", 'q', NULL, "draw no progress bars" },
	{ "endpoint", 0, "URL",
	  "S3 server, http(s)://HOST[:PORT] (default: $AWS_ENDPOINT_URL, the profile's, else AWS)" },
	{ "region", 0, "NAME", "S3 region (default: $AWS_REGION, the profile's, else us-east-1)" },
	{ "profile", 0, "NAME", "AWS profile for credentials and defaults (default: $AWS_PROFILE)" },
	{ "ca-bundle", 0, "FILE", "PEM file of trusted certificate authorities for https" },
	{ "insecure", 0, NULL, "do not verify the S3 server's TLS certificate" },
	{ "addressing", 0, "STYLE", "S3 URLs: auto, path (http://host/bucket) or virtual" },
	{ "debug", 0, NULL, "log each S3 request and retry on stderr (secrets redacted)" },
	{ NULL, 0, NULL, NULL },
};
enum { G_STORE, G_QUIET, G_ENDPOINT, G_REGION, G_PROFILE, G_CA, G_INSECURE, G_ADDRESSING,
       G_DEBUG };

int cli_global_find(const char *name, size_t len)
{
	for (int i = 0; cli_global_options[i].name; i++)
		if (strlen(cli_global_options[i].name) == len &&
		    !strncmp(cli_global_options[i].name, name, len))
			return i;
	return -1;
}

static void cli_debug_line(void *ud, const char *line)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&lock);
	cli_print_line("matorage: debug: ", line, "");
	pthread_mutex_unlock(&lock);
}

int cli_global_set(struct cli_ctx *ctx, int g, const char *val)
{
	switch (g) {
	case G_STORE:
		ctx->store_url = val;
		break;
	case G_QUIET:
		ctx->quiet = 1;
		break;
	case G_ENDPOINT:
		ctx->store_opts.endpoint = val;
		break;
	case G_REGION:
		ctx->store_opts.region = val;
		break;
	case G_PROFILE:
		ctx->store_opts.profile = val;
		break;
	case G_CA:
		ctx->store_opts.ca_bundle = val;
		break;
	case G_INSECURE:
		ctx->store_opts.insecure = 1;
		break;
	case G_ADDRESSING:
		if (!strcmp(val, "auto"))
			ctx->store_opts.addressing = MT_S3_AUTO;
		else if (!strcmp(val, "path"))
			ctx->store_opts.addressing = MT_S3_PATH;
		else if (!strcmp(val, "virtual"))
			ctx->store_opts.addressing = MT_S3_VIRTUAL;
		else
			return cli_usage_error(NULL, "--addressing: '%s' is not auto, path or virtual",
					       val);
		break;
	case G_DEBUG:
		ctx->store_opts.log = cli_debug_line;
		break;
	default:
		break;
	}
	return CLI_OK;
}

/* Option numbers: a command's own are its table's indexes; below CLI_G_BASE are
 * the global options (CLI_G_BASE - index). */
enum { CLI_G_HELP = -4, CLI_G_BASE = -10 };

static int cli_find_long(const struct cli_cmd *cmd, const char *name, size_t len)
{
	for (int i = 0; cmd->options[i].name; i++)
		if (strlen(cmd->options[i].name) == len &&
		    !strncmp(cmd->options[i].name, name, len))
			return i;
	int g = cli_global_find(name, len);
	if (g >= 0)
		return CLI_G_BASE - g;
	if (len == 4 && !strncmp(name, "help", 4))
		return CLI_G_HELP;
	return -1;
}

static int cli_find_short(const struct cli_cmd *cmd, char c)
{
	for (int i = 0; cmd->options[i].name; i++)
		if (cmd->options[i].short_name == c)
			return i;
	for (int i = 0; cli_global_options[i].name; i++)
		if (cli_global_options[i].short_name == c)
			return CLI_G_BASE - i;
	if (c == 'h')
		return CLI_G_HELP;
	return -1;
}

static int cli_takes_arg(const struct cli_cmd *cmd, int opt)
{
	if (opt <= CLI_G_BASE)
		return cli_global_options[CLI_G_BASE - opt].arg != NULL;
	return opt >= 0 && cmd->options[opt].arg;
}

/* Record one occurrence of option opt; returns -1 for --help. */
static int cli_store_opt(int opt, const char *val, struct cli_ctx *ctx, struct cli_args *out)
{
	if (opt == CLI_G_HELP)
		return -1;
	if (opt <= CLI_G_BASE)
		return cli_global_set(ctx, CLI_G_BASE - opt, val);
	struct cli_optval *ov = &out->opts[opt];
	ov->v = cli_xreallocarray(ov->v, (size_t)ov->n + 1, sizeof *ov->v);
	ov->v[ov->n++] = val;
	return 0;
}

/* "--name", "--name=value" or "--name value"; *i advances past a consumed value. */
static int cli_parse_long(const struct cli_cmd *cmd, int argc, char **argv, int *i,
			  struct cli_ctx *ctx, struct cli_args *out)
{
	const char *name = argv[*i] + 2;
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	int opt = cli_find_long(cmd, name, len);
	if (opt == -1)
		return cli_usage_error(cmd, "unknown option --%.*s", (int)len, name);
	const char *val = NULL;
	if (cli_takes_arg(cmd, opt)) {
		if (eq)
			val = eq + 1;
		else if (*i + 1 < argc)
			val = argv[++*i];
		else
			return cli_usage_error(cmd, "option --%.*s needs a value", (int)len, name);
	} else if (eq) {
		return cli_usage_error(cmd, "option --%.*s takes no value", (int)len, name);
	}
	return cli_store_opt(opt, val, ctx, out);
}

/* "-x", "-xVALUE", "-x VALUE", or flags grouped as "-ql". */
static int cli_parse_short(const struct cli_cmd *cmd, int argc, char **argv, int *i,
			   struct cli_ctx *ctx, struct cli_args *out)
{
	for (const char *p = argv[*i] + 1; *p; p++) {
		int opt = cli_find_short(cmd, *p);
		if (opt == -1)
			return cli_usage_error(cmd, "unknown option -%c", *p);
		const char *val = NULL;
		if (cli_takes_arg(cmd, opt)) {
			if (p[1])
				val = p + 1;
			else if (*i + 1 < argc)
				val = argv[++*i];
			else
				return cli_usage_error(cmd, "option -%c needs a value", *p);
		}
		int rc = cli_store_opt(opt, val, ctx, out);
		if (rc || val)
			return rc;
	}
	return 0;
}

int cli_args_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_ctx *ctx,
		   struct cli_args *out)
{
	int nopts = 0;
	while (cmd->options[nopts].name)
		nopts++;
	*out = (struct cli_args){ .cmd = cmd };
	out->opts = cli_xcalloc((size_t)nopts + 1, sizeof *out->opts);
	out->argv = cli_xcalloc((size_t)argc + 1, sizeof *out->argv);
	int only_args = 0;
	for (int i = 0; i < argc; i++) {
		const char *s = argv[i];
		int rc = 0;
		if (only_args || s[0] != '-' || s[1] == '\0')
			out->argv[out->argc++] = argv[i];
		else if (!strcmp(s, "--"))
			only_args = 1;
		else if (s[1] == '-')
			rc = cli_parse_long(cmd, argc, argv, &i, ctx, out);
		else
			rc = cli_parse_short(cmd, argc, argv, &i, ctx, out);
		if (rc)
			return rc;
	}
	if (out->argc < cmd->min_args || (cmd->max_args >= 0 && out->argc > cmd->max_args)) {
		fprintf(stderr, "usage: matorage %s %s%s\n", cmd->name, cmd->usage,
			nopts ? " [OPTIONS]" : "");
		return CLI_USAGE;
	}
	return 0;
}

void cli_args_free(struct cli_args *a)
{
	if (!a->opts)
		return;
	for (int i = 0; a->cmd->options[i].name; i++)
		free(a->opts[i].v);
	free(a->opts);
	free(a->argv);
	a->opts = NULL;
	a->argv = NULL;
}

/* Commands ask for their options by name; a name missing from the table is a bug
 * in the command, caught the first time it runs. */
static const struct cli_optval *cli_optval(const struct cli_args *a, const char *name)
{
	for (int i = 0; a->cmd->options[i].name; i++)
		if (!strcmp(a->cmd->options[i].name, name))
			return &a->opts[i];
	fprintf(stderr, "matorage: internal error: %s has no option --%s\n", a->cmd->name, name);
	abort();
}

int cli_has(const struct cli_args *a, const char *name)
{
	return cli_optval(a, name)->n > 0;
}

const char *cli_get(const struct cli_args *a, const char *name)
{
	const struct cli_optval *ov = cli_optval(a, name);
	return ov->n ? ov->v[ov->n - 1] : NULL;
}

const char *const *cli_get_all(const struct cli_args *a, const char *name, size_t *n)
{
	const struct cli_optval *ov = cli_optval(a, name);
	*n = (size_t)ov->n;
	return (const char *const *)ov->v;
}

/* ---- numbers ---- */

/* Decimal digits only: strtoull alone would take "-1", " 7" and "0x10". */
static int cli_parse_u64(const char *s, const char **end, uint64_t *out)
{
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	char *e;
	unsigned long long v = strtoull(s, &e, 10);
	if (errno == ERANGE)
		return -1;
	*out = v;
	*end = e;
	return 0;
}

static int cli_below(const struct cli_args *a, const char *name, const char *s, uint64_t lo)
{
	return cli_usage_error(a->cmd, "--%s: '%s' is below the least value, %" PRIu64, name, s,
			       lo);
}

int cli_opt_u64(const struct cli_args *a, const char *name, uint64_t lo, uint64_t *out)
{
	const char *s = cli_get(a, name), *end;
	uint64_t v;
	if (!s)
		return 0;
	if (cli_parse_u64(s, &end, &v) || *end)
		return cli_usage_error(a->cmd, "--%s: '%s' is not a whole number", name, s);
	if (v < lo)
		return cli_below(a, name, s, lo);
	*out = v;
	return 0;
}

int cli_opt_bytes(const struct cli_args *a, const char *name, uint64_t lo, uint64_t *out)
{
	const char *s = cli_get(a, name), *end;
	if (!s)
		return 0;
	uint64_t v;
	if (cli_parse_u64(s, &end, &v))
		goto bad;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: break;
	}
	if (shift) {
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "B"))
			end += strlen(end);
	} else if (!strcmp(end, "B")) {
		end++;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		goto bad;
	if ((v << shift) < lo)
		return cli_below(a, name, s, lo);
	*out = v << shift;
	return 0;
bad:
	return cli_usage_error(a->cmd, "--%s: '%s' is not a byte count (e.g. 4096, 64K, 1M, 2G)",
			       name, s);
}

int cli_opt_int(const struct cli_args *a, const char *name, int lo, int hi, int *out)
{
	const char *s = cli_get(a, name), *end;
	if (!s)
		return 0;
	uint64_t v;
	if (cli_parse_u64(s, &end, &v) || *end || v < (uint64_t)lo || v > (uint64_t)hi)
		return cli_usage_error(a->cmd, "--%s: '%s' is not a number from %d to %d", name, s,
				       lo, hi);
	*out = (int)v;
	return 0;
}

int cli_opt_rows(const struct cli_args *a, const char *name, struct cli_rows *out)
{
	const char *s = cli_get(a, name), *end;
	*out = (struct cli_rows){ .text = s };
	if (!s)
		return 0;
	const char *colon = strchr(s, ':');
	if (!colon) {
		if (cli_parse_u64(s, &end, &out->a) || *end || out->a == UINT64_MAX)
			goto bad;
		out->b = out->a + 1;
		out->has_a = out->has_b = 1;
		return 0;
	}
	if (colon != s) {
		if (cli_parse_u64(s, &end, &out->a) || end != colon)
			goto bad;
		out->has_a = 1;
	}
	if (colon[1]) {
		if (cli_parse_u64(colon + 1, &end, &out->b) || *end)
			goto bad;
		out->has_b = 1;
	}
	if (out->has_a && out->has_b && out->a > out->b)
		return cli_usage_error(a->cmd, "--%s %s: the range ends before it starts", name, s);
	return 0;
bad:
	return cli_usage_error(a->cmd, "--%s: '%s' is not a row range (A:B, A:, :B or N)", name, s);
}

int cli_rows_resolve(const struct cli_rows *r, uint64_t nrows, const char *what, uint64_t *a,
		     uint64_t *b)
{
	*a = r->has_a ? r->a : 0;
	*b = r->has_b ? r->b : nrows;
	if (*a > nrows || *b > nrows || *a > *b)
		return cli_error("--rows %s is out of range: %s has %" PRIu64 " rows", r->text,
				 what, nrows);
	return 0;
}

/* ---- names, store, readers ---- */

int cli_ref_parse(const struct cli_cmd *cmd, const char *arg, struct cli_ref *out)
{
	const char *at = strchr(arg, '@');
	*out = (struct cli_ref){ 0 };
	if (at == arg || (at && !at[1]) || !*arg)
		return cli_usage_error(cmd, "'%s' is not DATASET or DATASET@VERSION", arg);
	if (at) {
		out->dataset = cli_xasprintf("%.*s", (int)(at - arg), arg);
		out->version = cli_xstrdup(at + 1);
	} else {
		out->dataset = cli_xstrdup(arg);
	}
	return 0;
}

void cli_ref_free(struct cli_ref *r)
{
	free(r->dataset);
	free(r->version);
	*r = (struct cli_ref){ 0 };
}

mt_store *cli_store_open(const struct cli_ctx *ctx, const char *url, int create)
{
	mt_store *s = NULL;
	mt_error err = { 0 };
	mt_store_opts o = ctx->store_opts;
	o.create = create;
	if (mt_store_open_opts(url, &o, &s, &err)) {
		cli_fail(&err);
		return NULL;
	}
	return s;
}

mt_store *cli_store(struct cli_ctx *ctx)
{
	if (!ctx->store)
		ctx->store = cli_store_open(ctx, ctx->store_url, ctx->store_opts.create);
	return ctx->store;
}

mt_reader *cli_reader(struct cli_ctx *ctx, const struct cli_ref *ref)
{
	mt_store *s = cli_store(ctx);
	if (!s)
		return NULL;
	mt_reader *r;
	mt_error err = { 0 };
	if (mt_reader_open(s, ref->dataset, ref->version, &r, &err)) {
		cli_fail(&err);
		return NULL;
	}
	return r;
}

int cli_attr_index(mt_reader *r, const char *name)
{
	int i = mt_reader_attr_index(r, name);
	if (i >= 0)
		return i;
	const mt_version_info *vi = mt_reader_info(r);
	char names[512] = "";
	size_t len = 0;
	for (size_t k = 0; k < mt_reader_nattrs(r) && len < sizeof names; k++) {
		int n = snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "",
				 mt_reader_attr(r, k)->name);
		len += n > 0 ? (size_t)n : 0;
	}
	cli_error("%s@%s has no attribute '%s' (it has: %s)", vi->dataset, vi->version, name,
		  names);
	return -1;
}

/* ---- reading rows in batches ---- */

/* Ragged rows: lengths are fetched this many rows at a time, so a version of a
 * billion rows needs no billion-entry array. */
#define CLI_LENGTH_WINDOW 65536

/* One batch read on a thread of its own, so the next batch is fetched and
 * decompressed while the caller writes out the current one. */
struct prefetch {
	mt_reader *r;
	size_t attr;
	uint64_t first, n;
	void *buf;
	size_t bytes;
	mt_error err;
	int rc;
};

static void *prefetch_run(void *arg)
{
	struct prefetch *p = arg;
	p->rc = mt_reader_read(p->r, p->attr, p->first, p->first + p->n, p->buf, p->bytes, &p->err);
	return NULL;
}

static int cli_read_fixed(mt_reader *r, size_t attr, uint64_t a, uint64_t b, cli_rows_fn fn,
			  void *ud)
{
	const mt_attr *at = mt_reader_attr(r, attr);
	uint64_t row_bytes = mt_attr_items(at) * mt_dtype_size(at->dtype);
	uint64_t batch = row_bytes ? CLI_BATCH_BYTES / row_bytes : b - a;
	if (batch == 0)
		batch = 1;
	size_t cap = (size_t)((b - a < batch ? b - a : batch) * row_bytes);
	struct prefetch p[2] = {{r, attr, a, 0, cli_xmalloc(cap), 0, {0}, 0},
				{r, attr, a, 0, cli_xmalloc(cap), 0, {0}, 0}};
	p[0].n = b - a < batch ? b - a : batch;
	p[0].bytes = (size_t)(p[0].n * row_bytes);
	prefetch_run(&p[0]);
	int rc = 0;
	for (int cur = 0; !rc && p[cur].n; cur ^= 1) {
		struct prefetch *now = &p[cur], *next = &p[cur ^ 1];
		if (now->rc) {
			rc = cli_fail(&now->err);
			break;
		}
		next->first = now->first + now->n;
		next->n = b - next->first < batch ? b - next->first : batch;
		next->bytes = (size_t)(next->n * row_bytes);
		pthread_t t;
		int threaded = next->n && pthread_create(&t, NULL, prefetch_run, next) == 0;
		rc = fn(ud, now->first, now->n, now->buf, now->bytes, NULL);
		if (threaded)
			pthread_join(t, NULL);
		else if (next->n)
			prefetch_run(next);
		now->n = 0;
	}
	free(p[0].buf);
	free(p[1].buf);
	return rc;
}

/* A window of row lengths at a time, then groups of rows of about CLI_BATCH_BYTES. */
static int cli_read_ragged(mt_reader *r, size_t attr, uint64_t a, uint64_t b, cli_rows_fn fn,
			   void *ud)
{
	const mt_attr *at = mt_reader_attr(r, attr);
	uint64_t item_bytes = mt_attr_items(at) * mt_dtype_size(at->dtype);
	uint64_t *lens = cli_xcalloc(CLI_LENGTH_WINDOW, sizeof *lens);
	void *buf = NULL;
	size_t cap = 0;
	mt_error err = { 0 };
	int rc = 0;
	for (uint64_t s = a; !rc && s < b; s += CLI_LENGTH_WINDOW) {
		uint64_t e = b - s < CLI_LENGTH_WINDOW ? b : s + CLI_LENGTH_WINDOW;
		if (mt_reader_ragged_lengths(r, attr, s, e, lens, NULL, &err)) {
			rc = cli_fail(&err);
			break;
		}
		for (uint64_t g0 = s, g1; !rc && g0 < e; g0 = g1) {
			uint64_t bytes = 0;
			for (g1 = g0; g1 < e && (g1 == g0 || bytes < CLI_BATCH_BYTES); g1++)
				bytes += lens[g1 - s] * item_bytes;
			if (bytes > cap) {
				buf = cli_xreallocarray(buf, (size_t)bytes, 1);
				cap = (size_t)bytes;
			}
			if (mt_reader_read(r, attr, g0, g1, buf, (size_t)bytes, &err))
				rc = cli_fail(&err);
			else
				rc = fn(ud, g0, g1 - g0, buf, (size_t)bytes, lens + (g0 - s));
		}
	}
	free(lens);
	free(buf);
	return rc;
}

int cli_read_rows(mt_reader *r, size_t attr, uint64_t a, uint64_t b, cli_rows_fn fn, void *ud)
{
	if (mt_reader_attr(r, attr)->ragged)
		return cli_read_ragged(r, attr, a, b, fn, ud);
	return cli_read_fixed(r, attr, a, b, fn, ud);
}

int cli_npy_create(const char *path, mt_dtype dtype, int rank, const uint64_t *shape,
		   mt_npy_writer **out, mt_error *err)
{
	if (!strcmp(path, "-"))
		return mt_npy_create_fd(STDOUT_FILENO, "standard output", dtype, rank, shape, out,
					err);
	return mt_npy_create(path, dtype, rank, shape, out, err);
}

const char *cli_human_bytes(uint64_t n, char *buf, size_t cap)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (n < 1024) {
		snprintf(buf, cap, "%" PRIu64 " B", n);
		return buf;
	}
	double v = (double)n / 1024;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof units / sizeof *units) {
		v /= 1024;
		u++;
	}
	snprintf(buf, cap, "%.1f %s", v, units[u]);
	return buf;
}

const char *cli_shape_str(const mt_attr *a, char *buf, size_t cap)
{
	/* NumPy's spelling: "()", "(28,)", "(28, 28)"; a ragged row's item count is "*". */
	char dims[(MT_MAX_RANK + 1) * 24] = "";
	size_t len = 0;
	if (a->ragged)
		len += (size_t)snprintf(dims, sizeof dims, "*");
	for (int i = 0; i < a->rank && i < MT_MAX_RANK; i++)
		len += (size_t)snprintf(dims + len, sizeof dims - len, "%s%" PRIu64,
					len ? ", " : "", a->shape[i]);
	int ndims = a->rank + (a->ragged ? 1 : 0);
	snprintf(buf, cap, "(%s%s)", dims, ndims == 1 ? "," : "");
	return buf;
}
