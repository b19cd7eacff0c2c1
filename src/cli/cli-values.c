/* cli-values.c — option values checked strictly: whole numbers, byte counts, row ranges, DATASET@VERSION. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Decimal digits only: strtoull alone would take "-1", " 7" and "0x10".  0, or -1
 * when s is not such a number (its callers turn that into a usage error). */
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

int cli_ref_parse(const struct cli_cmd *cmd, const char *arg, struct cli_ref *out)
{
	const char *at = strchr(arg, '@');
	*out = (struct cli_ref){ 0 };
	if (at == arg || (at && !at[1]) || !*arg)
		return cli_usage_error(cmd, "'%s' is not DATASET or DATASET@VERSION", arg);
	if (at) {
		out->dataset = app_xasprintf("%.*s", (int)(at - arg), arg);
		out->version = app_xstrdup(at + 1);
	} else {
		out->dataset = app_xstrdup(arg);
	}
	return 0;
}

void cli_ref_free(struct cli_ref *r)
{
	free(r->dataset);
	free(r->version);
	*r = (struct cli_ref){ 0 };
}
