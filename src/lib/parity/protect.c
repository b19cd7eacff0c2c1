/* protect.c — Reed–Solomon parity over a version's shards: the protection record, the code (ISA-L), and rebuilding a member's byte span from its group. */
#include <isa-l/erasure_code.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "pool.h"
#include "protect.h"

#define PR_CODE "rs-gf256-cauchy"
/* Bytes each encoding job codes at once: large enough that ISA-L runs at
 * full speed, small enough that every thread gets work. */
#define PR_JOB_MIN (256u << 10)
#define PR_JOB_MAX (1u << 30)

char *mti_key_parity(const char *dataset, const char *sha256)
{
	return mti_asprintf("datasets/%s/parity/%s", dataset, sha256);
}

char *mti_key_protect(const char *dataset, const char *version)
{
	return mti_asprintf("datasets/%s/protect/%s.json", dataset, version);
}

/* ---- the code ------------------------------------------------------------ */

void mti_parity_matrix(int k, int m, uint8_t *out)
{
	/* ISA-L builds the whole (k + m) x k generator; its first k rows are
	 * the identity. */
	uint8_t full[(MTI_PARITY_MAX_K + MTI_PARITY_MAX_M) * MTI_PARITY_MAX_K];
	gf_gen_cauchy1_matrix(full, k + m, k);
	memcpy(out, full + (size_t)k * (size_t)k, (size_t)m * (size_t)k);
}

static int pr_km_ok(int k, int m)
{
	return k >= 1 && k <= MTI_PARITY_MAX_K && m >= 1 && m <= MTI_PARITY_MAX_M;
}

struct pr_encode {
	int nd, rows;
	uint8_t *tables;
	const uint8_t *const *in;
	uint8_t *const *out;
	size_t len, piece;
};

static int pr_encode_job(void *ud, size_t i)
{
	struct pr_encode *e = ud;
	size_t off = i * e->piece;
	size_t n = e->len - off < e->piece ? e->len - off : e->piece;
	uint8_t *in[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M], *out[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M];
	for (int j = 0; j < e->nd; j++)
		in[j] = (uint8_t *)(uintptr_t)e->in[j] + off;
	for (int r = 0; r < e->rows; r++)
		out[r] = e->out[r] + off;
	ec_encode_data((int)n, e->nd, e->rows, e->tables, in, out);
	return 0;
}

/* out[r] = sum over j < nd of coef[r * nd + j] * in[j], for r < rows, on
 * `threads` threads each coding its own byte range. */
static int pr_apply(int nd, int rows, const uint8_t *coef, const uint8_t *const *in, size_t len,
		    uint8_t *const *out, int threads, mt_error *err)
{
	if (!len || !rows)
		return 0;
	uint8_t *tables = malloc((size_t)32 * (size_t)nd * (size_t)rows);
	if (!tables)
		return mti_err(err, MT_ENOMEM, "parity: out of memory");
	ec_init_tables(nd, rows, (uint8_t *)(uintptr_t)coef, tables);
	if (threads < 1)
		threads = 1;
	size_t piece = (len + (size_t)threads - 1) / (size_t)threads;
	piece = (piece + 63) & ~(size_t)63;
	piece = piece < PR_JOB_MIN ? PR_JOB_MIN : piece > PR_JOB_MAX ? PR_JOB_MAX : piece;
	struct pr_encode e = {nd, rows, tables, in, out, len, piece};
	size_t jobs = (len + piece - 1) / piece;
	mti_parallel_for(threads, jobs, pr_encode_job, &e);
	free(tables);
	return 0;
}

int mti_parity_encode(int k, int m, const uint8_t *matrix, size_t nd, const uint8_t *const *data,
		      size_t len, uint8_t *const *parity, int threads, mt_error *err)
{
	if (!pr_km_ok(k, m) || nd < 1 || nd > (size_t)k)
		return mti_err(err, MT_EINVAL, "parity: %zu members do not fit a %d+%d code", nd,
			      k, m);
	/* Members past nd are zeros: coding only the first nd columns gives
	 * the same parity without reading zeros. */
	uint8_t coef[MTI_PARITY_MAX_M * MTI_PARITY_MAX_K];
	for (int r = 0; r < m; r++)
		memcpy(coef + (size_t)r * nd, matrix + (size_t)r * (size_t)k, nd);
	return pr_apply((int)nd, m, coef, data, len, parity, threads, err);
}

/* The nd rows (members first, then parity) decoding reads: every had
 * member below nd, then the first had parity rows; *n gets how many. */
static void pr_pick(int k, int m, size_t nd, const unsigned char *have, int *pick, size_t *n)
{
	*n = 0;
	for (size_t j = 0; j < nd; j++)
		if (have[j])
			pick[(*n)++] = (int)j;
	for (int r = 0; r < m && *n < nd; r++)
		if (have[k + r])
			pick[(*n)++] = k + r;
}

/* Row i of the generator restricted to the first nd members. */
static void pr_gen_row(int k, const uint8_t *matrix, size_t nd, int i, uint8_t *row)
{
	if (i < k) {
		memset(row, 0, nd);
		row[i] = 1;
	} else {
		memcpy(row, matrix + (size_t)(i - k) * (size_t)k, nd);
	}
}

/* The coefficients giving row `want` from the picked rows, given inv, the
 * inverse of the picked rows' generator: a member is its row of inv, a
 * parity row is its generator row times inv. */
static void pr_want_coef(int k, const uint8_t *matrix, size_t nd, const uint8_t *inv, int want,
			 uint8_t *coef)
{
	if (want < k) {
		memcpy(coef, inv + (size_t)want * nd, nd);
		return;
	}
	const uint8_t *g = matrix + (size_t)(want - k) * (size_t)k;
	for (size_t c = 0; c < nd; c++) {
		uint8_t s = 0;
		for (size_t j = 0; j < nd; j++)
			s ^= gf_mul(g[j], inv[j * nd + c]);
		coef[c] = s;
	}
}

int mti_parity_decode(int k, int m, const uint8_t *matrix, size_t nd, const unsigned char *have,
		      uint8_t *const *rows, size_t len, const size_t *want, size_t nwant,
		      mt_error *err)
{
	if (!pr_km_ok(k, m) || nd < 1 || nd > (size_t)k || nwant > (size_t)(k + m))
		return mti_err(err, MT_EINVAL, "parity: %zu members do not fit a %d+%d code", nd,
			      k, m);
	int pick[MTI_PARITY_MAX_K];
	size_t n;
	pr_pick(k, m, nd, have, pick, &n);
	if (n < nd)
		return mti_err(err, MT_ECORRUPT, "parity: %zu of the %zu rows needed are left", n,
			      nd);
	uint8_t *gen = malloc(nd * nd * 2 + nd * (nwant ? nwant : 1));
	if (!gen)
		return mti_err(err, MT_ENOMEM, "parity: out of memory");
	uint8_t *inv = gen + nd * nd, *coef = inv + nd * nd;
	for (size_t i = 0; i < nd; i++)
		pr_gen_row(k, matrix, nd, pick[i], gen + i * nd);
	int rc = 0;
	if (gf_invert_matrix(gen, inv, (int)nd) != 0)
		rc = mti_err(err, MT_EINVAL, "parity: the %d+%d matrix is singular for these rows",
			    k, m);
	const uint8_t *in[MTI_PARITY_MAX_K];
	uint8_t *out[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M];
	size_t nout = 0;
	for (size_t i = 0; i < nd; i++)
		in[i] = rows[pick[i]];
	for (size_t w = 0; !rc && w < nwant; w++) {
		if (want[w] >= (size_t)(k + m) || have[want[w]]) {
			rc = mti_err(err, MT_EINVAL, "parity: row %zu is not one to rebuild", want[w]);
		} else if (want[w] < (size_t)k && want[w] >= nd) {
			memset(rows[want[w]], 0, len);
		} else {
			pr_want_coef(k, matrix, nd, inv, (int)want[w], coef + nout * nd);
			out[nout++] = rows[want[w]];
		}
	}
	if (!rc)
		rc = pr_apply((int)nd, (int)nout, coef, in, len, out, 1, err);
	free(gen);
	return rc;
}

/* ---- the record ----------------------------------------------------------- */

void mti_prec_free(mti_prec *p)
{
	if (!p)
		return;
	free(p->dataset);
	free(p->version);
	free(p->matrix);
	free(p->created);
	free(p->manifest);
	for (size_t g = 0; p->groups && g < p->ngroups; g++) {
		free(p->groups[g].members);
		free(p->groups[g].parity);
	}
	for (size_t g = 0; p->fgroups && g < p->nfgroups; g++) {
		free(p->fgroups[g].members);
		free(p->fgroups[g].parity);
	}
	free(p->groups);
	free(p->fgroups);
	free(p);
}

size_t mti_prec_nparity(const mti_prec *p)
{
	return (p->ngroups + p->nfgroups) * (size_t)p->m;
}

const mti_pparity *mti_prec_parity(const mti_prec *p, size_t i)
{
	size_t m = (size_t)p->m, g = i / m;
	return g < p->ngroups ? &p->groups[g].parity[i % m]
			      : &p->fgroups[g - p->ngroups].parity[i % m];
}

static json_t *pr_uint(uint64_t v)
{
	return v > INT64_MAX ? NULL : json_integer((json_int_t)v);
}

static json_t *pr_enc_matrix(const mti_prec *p)
{
	json_t *rows = json_array();
	for (int r = 0; rows && r < p->m; r++) {
		json_t *row = json_array();
		for (int j = 0; row && j < p->k; j++)
			if (json_array_append_new(row, json_integer(p->matrix[r * p->k + j])))
				break;
		if (json_array_size(row) != (size_t)p->k || json_array_append_new(rows, row)) {
			json_decref(rows);
			return NULL;
		}
	}
	return rows;
}

/* `member` names what a member is numbered in: "shard" or "fragment". */
static json_t *pr_enc_group(const mti_pgroup *g, int m, const char *member)
{
	json_t *mem = json_array(), *par = json_array();
	for (size_t i = 0; mem && i < g->nmembers; i++)
		if (json_array_append_new(mem, json_pack("{s:I, s:s, s:o}", member,
							 (json_int_t)g->members[i].shard, "sha256",
							 g->members[i].sha256, "bytes",
							 pr_uint(g->members[i].bytes))))
			break;
	for (int r = 0; par && r < m; r++)
		if (json_array_append_new(par, json_pack("{s:s, s:o}", "sha256", g->parity[r].sha256,
							 "bytes", pr_uint(g->parity[r].bytes))))
			break;
	if (json_array_size(mem) != g->nmembers || json_array_size(par) != (size_t)m) {
		json_decref(mem);
		json_decref(par);
		return NULL;
	}
	return json_pack("{s:o, s:o, s:o}", "stripe", pr_uint(g->stripe), "members", mem, "parity",
			 par);
}

static json_t *pr_enc_groups(const mti_pgroup *gs, size_t n, int m, const char *member)
{
	json_t *groups = json_array();
	for (size_t g = 0; groups && g < n; g++)
		if (json_array_append_new(groups, pr_enc_group(&gs[g], m, member))) {
			json_decref(groups);
			return NULL;
		}
	return groups;
}

int mti_prec_encode(const mti_prec *p, char **json, mt_error *err)
{
	*json = NULL;
	json_t *groups = pr_enc_groups(p->groups, p->ngroups, p->m, "shard");
	/* The order of the format's description (JSON_PRESERVE_ORDER). */
	json_t *root = groups ? json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:i, s:o, s:o}",
					  "format", p->format == 2 ? 2 : MT_FORMAT_VERSION,
					  "dataset", p->dataset, "version", p->version, "created",
					  p->created, "code", PR_CODE, "k", p->k, "m", p->m,
					  "matrix", pr_enc_matrix(p), "groups", groups)
			      : NULL;
	/* Format 2: the fragments' groups, after the shards'. */
	if (root && p->format == 2 &&
	    json_object_set_new(root, "fragment_groups",
				pr_enc_groups(p->fgroups, p->nfgroups, p->m, "fragment"))) {
		json_decref(root);
		root = NULL;
	}
	if (root && json_object_set_new(root, "manifest",
					json_stringn(p->manifest, p->manifest_len))) {
		json_decref(root);
		root = NULL;
	}
	if (root)
		*json = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!*json || mti_json_seal(json))
		return mti_err(err, MT_ENOMEM, "protection record of %s@%s: cannot encode it (out "
			      "of memory, or text that is not UTF-8)", p->dataset, p->version);
	return 0;
}

struct pr_dec {
	const char *what;
	mt_error *err;
	const mt_manifest *man; /* the embedded manifest, decoded */
	mti_prec *p;
	int frags;              /* decoding fragment groups */
	const char *groups;     /* their member's name, for errors */
};

static int pr_fail(struct pr_dec *d, const char *fmt, ...) MT_PRINTF(2, 3);
static int pr_fail(struct pr_dec *d, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return mti_err(d->err, MT_ECORRUPT, "%s: %s", d->what, msg);
}

static int pr_get_uint(json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int pr_is_sha(json_t *v)
{
	const char *s = json_string_value(v);
	if (!s || json_string_length(v) != 64)
		return 0;
	for (size_t i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int pr_dec_matrix(struct pr_dec *d, json_t *root)
{
	json_t *k = json_object_get(root, "k"), *m = json_object_get(root, "m");
	json_t *code = json_object_get(root, "code"), *mx = json_object_get(root, "matrix");
	if (!json_is_string(code) || strcmp(json_string_value(code), PR_CODE) != 0)
		return pr_fail(d, "code: expected \"%s\"", PR_CODE);
	if (!json_is_integer(k) || !json_is_integer(m) ||
	    !pr_km_ok((int)json_integer_value(k), (int)json_integer_value(m)) ||
	    json_integer_value(k) > MTI_PARITY_MAX_K || json_integer_value(m) > MTI_PARITY_MAX_M)
		return pr_fail(d, "k, m: expected 1 <= k <= %d and 1 <= m <= %d", MTI_PARITY_MAX_K,
			       MTI_PARITY_MAX_M);
	mti_prec *p = d->p;
	p->k = (int)json_integer_value(k);
	p->m = (int)json_integer_value(m);
	if (!(p->matrix = malloc((size_t)p->k * (size_t)p->m)))
		return mti_err(d->err, MT_ENOMEM, "%s: out of memory", d->what);
	mti_parity_matrix(p->k, p->m, p->matrix);
	int same = json_array_size(mx) == (size_t)p->m;
	for (int r = 0; same && r < p->m; r++) {
		json_t *row = json_array_get(mx, (size_t)r);
		same = json_array_size(row) == (size_t)p->k;
		for (int j = 0; same && j < p->k; j++) {
			json_t *v = json_array_get(row, (size_t)j);
			same = json_is_integer(v) &&
			       json_integer_value(v) == p->matrix[r * p->k + j];
		}
	}
	if (!same)
		return pr_fail(d, "matrix: is not the %d+%d Cauchy matrix of the format", p->k,
			       p->m);
	return 0;
}

/* The embedded manifest: its own checksum, and the version it names. */
static int pr_dec_manifest(struct pr_dec *d, json_t *root, mt_manifest **man)
{
	json_t *v = json_object_get(root, "manifest");
	if (!json_is_string(v))
		return pr_fail(d, "manifest: expected a string");
	mti_prec *p = d->p;
	p->manifest_len = json_string_length(v);
	if (!(p->manifest = malloc(p->manifest_len + 1)))
		return mti_err(d->err, MT_ENOMEM, "%s: out of memory", d->what);
	memcpy(p->manifest, json_string_value(v), p->manifest_len + 1);
	char *what = mti_asprintf("%s: manifest", d->what);
	int rc = what ? mti_manifest_decode(p->manifest, p->manifest_len, what, man, d->err)
		      : mti_err(d->err, MT_ENOMEM, "%s: out of memory", d->what);
	free(what);
	/* A manifest in a record is the record's content: damage is corruption. */
	if (rc && rc != MT_ENOMEM && d->err)
		d->err->code = MT_ECORRUPT;
	if (rc)
		return rc == MT_ENOMEM ? rc : MT_ECORRUPT;
	if (strcmp((*man)->dataset, p->dataset) || strcmp((*man)->version, p->version))
		return pr_fail(d, "manifest: names %s@%s, not %s@%s", (*man)->dataset,
			       (*man)->version, p->dataset, p->version);
	return 0;
}

/* One member: the next shard (fragment) of the manifest, as the manifest
 * has it.  A format-2 root does not list its shards: their members are
 * checked against the fragments later (mti_prec_check_shards). */
static int pr_dec_member(struct pr_dec *d, json_t *o, size_t g, size_t next, mti_pmember *mb)
{
	json_t *sha = json_object_get(o, "sha256");
	const char *what = d->frags ? "fragment" : "shard";
	size_t total = d->frags ? d->man->nfrags : d->man->nshards;
	uint64_t shard, bytes;
	if (pr_get_uint(json_object_get(o, what), &shard) ||
	    pr_get_uint(json_object_get(o, "bytes"), &bytes) || !pr_is_sha(sha))
		return pr_fail(d, "%s[%zu]: a member needs %s, sha256 and bytes", d->groups, g,
			       what);
	if (shard != next || next >= total)
		return pr_fail(d, "%s[%zu]: member %s %llu, expected %s %zu (groups are "
			       "consecutive runs of the manifest's %zu %ss)", d->groups, g, what,
			       (unsigned long long)shard, what, next, total, what);
	const char *want = d->frags ? d->man->frags[next].sha256
				    : d->man->nfrags ? NULL : d->man->shards[next].sha256;
	uint64_t wbytes = d->frags ? d->man->frags[next].bytes
				   : d->man->nfrags ? 0 : d->man->shards[next].bytes;
	if (want && (strcmp(json_string_value(sha), want) || bytes != wbytes))
		return pr_fail(d, "%s[%zu]: %s %zu is %.12s... of %llu bytes, the manifest "
			       "says %.12s... of %llu", d->groups, g, what, next,
			       json_string_value(sha), (unsigned long long)bytes, want,
			       (unsigned long long)wbytes);
	mb->shard = next;
	memcpy(mb->sha256, json_string_value(sha), 65);
	mb->bytes = bytes;
	return 0;
}

static int pr_dec_group(struct pr_dec *d, json_t *o, size_t g, size_t *next, mti_pgroup *pg)
{
	json_t *mem = json_object_get(o, "members"), *par = json_object_get(o, "parity");
	size_t n = json_array_size(mem);
	int m = d->p->m;
	if (pr_get_uint(json_object_get(o, "stripe"), &pg->stripe) || n < 1 ||
	    n > (size_t)d->p->k || json_array_size(par) != (size_t)m)
		return pr_fail(d, "%s[%zu]: expected a stripe, 1 to %d members and %d parity "
			       "objects", d->groups, g, d->p->k, m);
	if (!(pg->members = calloc(n, sizeof *pg->members)) ||
	    !(pg->parity = calloc((size_t)m, sizeof *pg->parity)))
		return mti_err(d->err, MT_ENOMEM, "%s: out of memory", d->what);
	uint64_t longest = 0;
	for (size_t i = 0; i < n; i++, pg->nmembers++) {
		int rc = pr_dec_member(d, json_array_get(mem, i), g, (*next)++, &pg->members[i]);
		if (rc)
			return rc;
		longest = pg->members[i].bytes > longest ? pg->members[i].bytes : longest;
	}
	if (pg->stripe != longest)
		return pr_fail(d, "%s[%zu].stripe: is %llu, the longest member has %llu bytes",
			       d->groups, g, (unsigned long long)pg->stripe,
			       (unsigned long long)longest);
	for (int r = 0; r < m; r++) {
		json_t *po = json_array_get(par, (size_t)r), *sha = json_object_get(po, "sha256");
		if (!pr_is_sha(sha) || pr_get_uint(json_object_get(po, "bytes"), &pg->parity[r].bytes) ||
		    pg->parity[r].bytes != pg->stripe)
			return pr_fail(d, "%s[%zu].parity[%d]: expected a sha256 and bytes equal "
				       "to the stripe", d->groups, g, r);
		memcpy(pg->parity[r].sha256, json_string_value(sha), 65);
	}
	return 0;
}

/* "groups" (frags 0) or "fragment_groups" (frags 1) into *out. */
static int pr_dec_groups(struct pr_dec *d, json_t *arr, int frags, mti_pgroup **out, size_t *nout)
{
	size_t n = json_array_size(arr), next = 0;
	d->frags = frags;
	d->groups = frags ? "fragment_groups" : "groups";
	if (!json_is_array(arr))
		return pr_fail(d, "%s: expected an array", d->groups);
	if (!(*out = calloc(n ? n : 1, sizeof **out)))
		return mti_err(d->err, MT_ENOMEM, "%s: out of memory", d->what);
	for (size_t g = 0; g < n; g++, (*nout)++) {
		int rc = pr_dec_group(d, json_array_get(arr, g), g, &next, &(*out)[g]);
		if (rc) {
			(*nout)++;
			return rc;
		}
	}
	size_t total = frags ? d->man->nfrags : d->man->nshards;
	if (next != total)
		return pr_fail(d, "%s: cover %zu of the manifest's %zu %ss", d->groups, next, total,
			       frags ? "fragment" : "shard");
	return 0;
}

static int pr_dec_str(struct pr_dec *d, json_t *root, const char *key, char **out)
{
	json_t *v = json_object_get(root, key);
	if (!json_is_string(v))
		return pr_fail(d, "%s: expected a string", key);
	if (!(*out = mti_strdup(json_string_value(v))))
		return mti_err(d->err, MT_ENOMEM, "%s: out of memory", d->what);
	return 0;
}

static int pr_dec_root(struct pr_dec *d, const char *json, size_t len, json_t *root)
{
	json_t *f = json_object_get(root, "format");
	if (!json_is_object(root) || !json_is_integer(f) || json_integer_value(f) < 1 ||
	    json_integer_value(f) > 2)
		return mti_err(d->err, MT_EFORMAT, "%s: expected a protection record of format %d "
			      "or 2", d->what, MT_FORMAT_VERSION);
	d->p->format = (int)json_integer_value(f);
	int rc = mti_json_check_sum(json, len, json_string_value(json_object_get(root, "checksum")),
				    d->what, d->err);
	mt_manifest *man = NULL;
	if (!rc)
		rc = pr_dec_str(d, root, "dataset", &d->p->dataset);
	if (!rc)
		rc = pr_dec_str(d, root, "version", &d->p->version);
	if (!rc)
		rc = pr_dec_str(d, root, "created", &d->p->created);
	if (!rc)
		rc = pr_dec_matrix(d, root);
	if (!rc)
		rc = pr_dec_manifest(d, root, &man);
	d->man = man;
	/* A record is of its manifest's format: format 2 adds the fragments. */
	if (!rc && man->format != d->p->format)
		rc = pr_fail(d, "format %d, but its manifest is format %d", d->p->format,
			     man->format);
	if (!rc)
		rc = pr_dec_groups(d, json_object_get(root, "groups"), 0, &d->p->groups,
				   &d->p->ngroups);
	if (!rc && d->p->format == 2)
		rc = pr_dec_groups(d, json_object_get(root, "fragment_groups"), 1, &d->p->fgroups,
				   &d->p->nfgroups);
	mti_manifest_free(man);
	return rc;
}

int mti_prec_decode(const char *json, size_t len, const char *what, mti_prec **out,
		    mt_error *err)
{
	*out = NULL;
	struct pr_dec d = {.what = what ? what : "protection record", .err = err};
	json_error_t je;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return mti_err(err, MT_ECORRUPT, "%s: invalid JSON at line %d, column %d: %s",
			      d.what, je.line, je.column, je.text);
	int rc = (d.p = calloc(1, sizeof *d.p)) ? pr_dec_root(&d, json, len, root)
						: mti_err(err, MT_ENOMEM, "%s: out of memory", d.what);
	json_decref(root);
	if (rc) {
		mti_prec_free(d.p);
		return rc;
	}
	*out = d.p;
	return 0;
}

/* A record that decodes is still not this version's when the version's
 * own manifest, sound and present, is other text.  A missing or damaged
 * manifest is what the record is there to restore. */
static int pr_check_manifest(mt_store *s, const mti_prec *p, const char *key, mt_error *err)
{
	char *mkey = mti_key_manifest(p->dataset, p->version);
	void *data = NULL;
	size_t len = 0;
	mt_error e = {0};
	if (!mkey)
		return mti_err(err, MT_ENOMEM, "out of memory");
	int rc = mti_store_get_max(s, mkey, MT_MANIFEST_MAX_BYTES, &data, &len, &e);
	mt_manifest *m = NULL;
	if (!rc && (len != p->manifest_len || memcmp(data, p->manifest, len) != 0) &&
	    mti_manifest_decode(data, len, mkey, &m, &e) == 0)
		rc = mti_err(err, MT_ECORRUPT, "%s: its manifest is not the one at %s", key, mkey);
	else if (rc == MT_ENOTFOUND || rc == MT_ECORRUPT || rc == 0)
		rc = 0;
	else
		rc = mti_err_copy(err, &e);
	mti_manifest_free(m);
	free(data);
	free(mkey);
	return rc;
}

int mti_prec_load(mt_store *s, const char *dataset, const char *version, mti_prec **out,
		  mt_error *err)
{
	*out = NULL;
	char *key = mti_key_protect(dataset, version);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	void *data = NULL;
	size_t len = 0;
	mt_error e = {0};
	int rc = mti_store_get_max(s, key, MT_MANIFEST_MAX_BYTES, &data, &len, &e);
	if (rc == MT_ENOTFOUND)
		rc = mti_err(err, rc, "%s@%s is not protected (no %s)", dataset, version, key);
	else if (rc)
		rc = mti_err_copy(err, &e);
	else
		rc = mti_prec_decode(data, len, key, out, err);
	if (!rc && (strcmp((*out)->dataset, dataset) || strcmp((*out)->version, version)))
		rc = mti_err(err, MT_ECORRUPT, "%s: names %s@%s", key, (*out)->dataset,
			    (*out)->version);
	if (!rc)
		rc = pr_check_manifest(s, *out, key, err);
	if (rc && rc != MT_ENOTFOUND) {
		mti_prec_free(*out);
		*out = NULL;
	}
	free(data);
	free(key);
	return rc;
}

int mti_prec_check_shards(const mti_prec *p, const mt_manifest *m, const char *what,
			  mt_error *err)
{
	for (size_t g = 0; g < p->ngroups; g++)
		for (size_t i = 0; i < p->groups[g].nmembers; i++) {
			const mti_pmember *mb = &p->groups[g].members[i];
			const mt_mshard *ms = mb->shard < m->nshards ? &m->shards[mb->shard] : NULL;
			/* A shard of a fragment not loaded is not known yet. */
			if (ms && m->nfrags && !m->frags[mti_manifest_frag_of_shard(m, mb->shard)].loaded)
				continue;
			if (!ms || strcmp(mb->sha256, ms->sha256) || mb->bytes != ms->bytes)
				return mti_err(err, MT_ECORRUPT, "%s: groups[%zu]: shard %zu is "
					      "%.12s... of %llu bytes, the manifest's fragments say "
					      "%.12s... of %llu", what, g, mb->shard, mb->sha256,
					      (unsigned long long)mb->bytes, ms ? ms->sha256 : "none",
					      (unsigned long long)(ms ? ms->bytes : 0));
		}
	return 0;
}

/* The group of gs[0..n) (consecutive runs, in order) holding member
 * number i. */
static const mti_pgroup *pr_find(const mti_pgroup *gs, size_t n, size_t i, size_t *member)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const mti_pgroup *g = &gs[mid];
		if (i < g->members[0].shard) {
			hi = mid;
		} else if (i >= g->members[0].shard + g->nmembers) {
			lo = mid + 1;
		} else {
			if (member)
				*member = i - g->members[0].shard;
			return g;
		}
	}
	return NULL;
}

const mti_pgroup *mti_prec_find(const mti_prec *p, size_t shard, size_t *member)
{
	return pr_find(p->groups, p->ngroups, shard, member);
}

/* ---- rebuilding a span ---------------------------------------------------- */

struct pr_span {
	mt_store *s;
	const mti_prec *p;
	const mti_pgroup *g;
	int frags; /* the members are fragments (fragments/<sha256>.json), not shards */
	uint64_t off;
	size_t len;
	uint8_t *buf[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M]; /* rows read, by row number */
	signed char state[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M]; /* 0 unread, 1 read, -1 bad */
	uint64_t *bytes_read;
	mt_error last; /* the last read that failed */
};

/* Read the span of row i (member or parity) into sp->buf[i]; bytes past
 * a member's end are zeros.  A row that cannot be read is marked bad. */
static int pr_span_read(struct pr_span *sp, int i)
{
	if (sp->state[i])
		return sp->state[i] > 0 ? 0 : -1;
	int k = sp->p->k;
	const char *sha = i < k ? sp->g->members[i].sha256 : sp->g->parity[i - k].sha256;
	uint64_t bytes = i < k ? sp->g->members[i].bytes : sp->g->parity[i - k].bytes;
	char *key = i >= k     ? mti_key_parity(sp->p->dataset, sha)
		    : sp->frags ? mti_key_fragment(sp->p->dataset, sha)
				: mti_key_shard(sp->p->dataset, sha);
	uint8_t *b = malloc(sp->len ? sp->len : 1);
	size_t n = sp->off >= bytes ? 0 : bytes - sp->off < sp->len ? (size_t)(bytes - sp->off)
								      : sp->len;
	int rc = key && b ? 0 : mti_err(&sp->last, MT_ENOMEM, "out of memory");
	if (!rc && n)
		rc = mti_store_read(sp->s, key, sp->off, b, n, &sp->last);
	if (!rc) {
		memset(b + n, 0, sp->len - n);
		if (sp->bytes_read)
			*sp->bytes_read += n;
		sp->buf[i] = b;
		b = NULL;
	}
	sp->state[i] = rc ? -1 : 1;
	free(b);
	free(key);
	return rc ? -1 : 0;
}

/* Decode the target from the rows in `use` (nd of them) into out. */
static int pr_span_decode(struct pr_span *sp, const int *use, size_t nd, size_t target,
			  void *out, mt_error *err)
{
	int k = sp->p->k, m = sp->p->m;
	unsigned char have[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M] = {0};
	uint8_t *rows[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M] = {0};
	for (size_t i = 0; i < nd; i++) {
		have[use[i]] = 1;
		rows[use[i]] = sp->buf[use[i]];
	}
	rows[target] = out;
	return mti_parity_decode(k, m, sp->p->matrix, nd, have, rows, sp->len, &target, 1, err);
}

/* Fill use[0..nd) with rows that read, other than `skip` and those in
 * use before `from`; 0 when there are enough. */
static int pr_span_choose(struct pr_span *sp, int *use, size_t nd, size_t from, int skip,
			  const unsigned char *avoid, size_t target)
{
	int rows = (int)sp->g->nmembers + sp->p->m;
	size_t n = from;
	for (int r = 0; r < rows && n < nd; r++) {
		int i = r < (int)sp->g->nmembers ? r : sp->p->k + (r - (int)sp->g->nmembers);
		int taken = (size_t)i == target || i == skip || (avoid && avoid[i]);
		for (size_t u = 0; !taken && u < n; u++)
			taken = use[u] == i;
		if (!taken && pr_span_read(sp, i) == 0)
			use[n++] = i;
	}
	return n == nd ? 0 : -1;
}

/* The first choice of rows, then, while the check rejects the result,
 * each chosen row left out in turn for the next rows that read. */
static int pr_span_try(struct pr_span *sp, size_t target, const unsigned char *avoid,
		       mti_rebuild_check check, void *ud, void *out, mt_error *err)
{
	size_t nd = sp->g->nmembers;
	int use[MTI_PARITY_MAX_K], alt[MTI_PARITY_MAX_K];
	if (pr_span_choose(sp, use, nd, 0, -1, avoid, target))
		return mti_err(err, MT_ECORRUPT, "%zu of the %zu rows needed are readable (%s)",
			      nd - 1, nd, sp->last.code ? sp->last.message : "the rest are bad");
	int rc = pr_span_decode(sp, use, nd, target, out, err);
	if (rc || !check || check(ud, out, sp->len) == 0)
		return rc;
	for (size_t leave = 0; leave < nd; leave++) {
		/* The rows after `leave` are chosen again among the others. */
		memcpy(alt, use, leave * sizeof *alt);
		if (pr_span_choose(sp, alt, nd, leave, use[leave], avoid, target))
			continue;
		if ((rc = pr_span_decode(sp, alt, nd, target, out, err)))
			return rc;
		if (check(ud, out, sp->len) == 0)
			return 0;
	}
	return mti_err(err, MT_ECORRUPT, "no choice of %zu rows of the group gives bytes that "
		      "pass the check: more members are damaged than parity can make up", nd);
}

/* Member `i` of p's shard groups (frags 0) or fragment groups (frags 1):
 * bytes [off, off + len) rebuilt from the rest of its group. */
static int pr_rebuild(mt_store *s, const mti_prec *p, int frags, size_t i, uint64_t off,
		      size_t len, const unsigned char *avoid, mti_rebuild_check check,
		      void *check_ud, void *out, uint64_t *bytes_read, mt_error *err)
{
	size_t target;
	const char *what = frags ? "fragment" : "shard";
	const mti_pgroup *g = frags ? pr_find(p->fgroups, p->nfgroups, i, &target)
				    : pr_find(p->groups, p->ngroups, i, &target);
	if (!g)
		return mti_err(err, MT_ENOTFOUND, "%s@%s: %s %zu is in no group of its protection "
			      "record", p->dataset, p->version, what, i);
	uint64_t end;
	if (!mti_add_ok(off, len, &end) || end > g->stripe)
		return mti_err(err, MT_ERANGE, "%s@%s: %s %zu: bytes %llu+%zu lie past the "
			      "group's stripe of %llu", p->dataset, p->version, what, i,
			      (unsigned long long)off, len, (unsigned long long)g->stripe);
	struct pr_span sp = {.s = s, .p = p, .g = g, .frags = frags, .off = off, .len = len,
			     .bytes_read = bytes_read};
	int rc = pr_span_try(&sp, target, avoid, check, check_ud, out, err);
	for (int r = 0; r < p->k + p->m; r++)
		free(sp.buf[r]);
	if (rc)
		mti_err_prefix(err, "%s@%s: %s %zu (%.12s...), bytes %llu+%zu: cannot rebuild "
			       "from parity: ", p->dataset, p->version, what, i,
			       g->members[target].sha256, (unsigned long long)off, len);
	return rc;
}

int mti_parity_rebuild_span(mt_store *s, const mti_prec *p, size_t shard, uint64_t off,
			    size_t len, const unsigned char *avoid, mti_rebuild_check check,
			    void *check_ud, void *out, uint64_t *bytes_read, mt_error *err)
{
	return pr_rebuild(s, p, 0, shard, off, len, avoid, check, check_ud, out, bytes_read, err);
}

int mti_parity_rebuild_fragment(mt_store *s, const mti_prec *p, size_t frag, size_t len,
				mti_rebuild_check check, void *check_ud, void *out,
				uint64_t *bytes_read, mt_error *err)
{
	return pr_rebuild(s, p, 1, frag, 0, len, NULL, check, check_ud, out, bytes_read, err);
}
