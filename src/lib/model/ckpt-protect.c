/* ckpt-protect.c — Reed–Solomon parity over a checkpoint's tensors (doc/FORMAT.md, "Models", "Protection of checkpoints"): the record, protecting, and rebuilding one tensor's raw bytes from the rest of its group. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "codec.h"
#include "dataset.h"
#include "format.h"
#include "protect.h"

#define CODE "rs-gf256-cauchy"

char *mti_ckpt_key_protect(const char *name, const char *version)
{
	return mti_asprintf("models/%s/protect/%s.json", name, version);
}

char *mti_ckpt_key_parity(const char *name, const char *sha256)
{
	return mti_asprintf("models/%s/parity/%s", name, sha256);
}

/* ---- the record ----------------------------------------------------------- */

static json_t *rec_group(const mti_pgroup *g, int m)
{
	json_t *mem = json_array(), *par = json_array();
	for (size_t j = 0; mem && j < g->nmembers; j++)
		json_array_append_new(mem, json_pack("{s:s, s:I}", "sha256", g->members[j].sha256,
						     "bytes", (json_int_t)g->members[j].bytes));
	for (int r = 0; par && r < m; r++)
		json_array_append_new(par, json_pack("{s:s, s:I}", "sha256", g->parity[r].sha256,
						     "bytes", (json_int_t)g->parity[r].bytes));
	return json_pack("{s:I, s:o, s:o}", "stripe", (json_int_t)g->stripe, "members", mem,
			 "parity", par);
}

static int rec_encode(const mti_prec *p, char **json, mt_error *err)
{
	json_t *groups = json_array(), *matrix = json_array();
	for (size_t g = 0; groups && g < p->ngroups; g++)
		json_array_append_new(groups, rec_group(&p->groups[g], p->m));
	for (int r = 0; matrix && r < p->m; r++) {
		json_t *row = json_array();
		for (int j = 0; row && j < p->k; j++)
			json_array_append_new(row, json_integer(p->matrix[r * p->k + j]));
		json_array_append_new(matrix, row);
	}
	json_t *root = json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:i, s:o, s:o, s:s%}", "format",
				 MT_FORMAT_VERSION, "model", p->dataset, "version", p->version,
				 "created", p->created, "code", CODE, "k", p->k, "m", p->m, "matrix",
				 matrix, "groups", groups, "manifest", p->manifest, p->manifest_len);
	*json = root ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(root);
	if (!*json || mti_json_seal(json))
		return mti_err(err, MT_ENOMEM, "protection record of model %s@%s: out of memory",
			      p->dataset, p->version);
	return 0;
}

static int rec_sha(json_t *v)
{
	const char *s = json_string_value(v);
	if (!s || strlen(s) != 64)
		return 0;
	for (const char *c = s; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return 0;
	return 1;
}

/* An entry {sha256, bytes} of a group. */
static int rec_entry(json_t *o, char sha[65], uint64_t *bytes)
{
	json_t *b = json_object_get(o, "bytes");
	if (!rec_sha(json_object_get(o, "sha256")) || !json_is_integer(b) ||
	    json_integer_value(b) < 0)
		return -1;
	memcpy(sha, json_string_value(json_object_get(o, "sha256")), 65);
	*bytes = (uint64_t)json_integer_value(b);
	return 0;
}

static int rec_group_decode(mti_prec *p, json_t *o, mti_pgroup *g, size_t *next)
{
	json_t *mem = json_object_get(o, "members"), *par = json_object_get(o, "parity");
	json_t *st = json_object_get(o, "stripe");
	size_t n = json_array_size(mem);
	if (!json_is_integer(st) || n < 1 || n > (size_t)p->k ||
	    json_array_size(par) != (size_t)p->m)
		return -1;
	g->stripe = (uint64_t)json_integer_value(st);
	g->members = calloc(n, sizeof *g->members);
	g->parity = calloc((size_t)p->m, sizeof *g->parity);
	if (!g->members || !g->parity)
		return MT_ENOMEM;
	uint64_t longest = 0;
	for (size_t j = 0; j < n; j++, g->nmembers++) {
		if (rec_entry(json_array_get(mem, j), g->members[j].sha256, &g->members[j].bytes))
			return -1;
		g->members[j].shard = (*next)++;
		longest = g->members[j].bytes > longest ? g->members[j].bytes : longest;
	}
	for (int r = 0; r < p->m; r++)
		if (rec_entry(json_array_get(par, (size_t)r), g->parity[r].sha256,
			      &g->parity[r].bytes) || g->parity[r].bytes != g->stripe)
			return -1;
	return longest == g->stripe ? 0 : -1;
}

static int rec_root(mti_prec *p, json_t *root)
{
	json_t *k = json_object_get(root, "k"), *m = json_object_get(root, "m");
	json_t *man = json_object_get(root, "manifest"), *groups = json_object_get(root, "groups");
	const char *code = json_string_value(json_object_get(root, "code"));
	if (!json_is_integer(k) || !json_is_integer(m) || !json_is_string(man) ||
	    !json_is_array(groups) || !code || strcmp(code, CODE))
		return -1;
	p->k = (int)json_integer_value(k);
	p->m = (int)json_integer_value(m);
	if (p->k < 1 || p->k > MTI_PARITY_MAX_K || p->m < 1 || p->m > MTI_PARITY_MAX_M)
		return -1;
	const char *model = json_string_value(json_object_get(root, "model"));
	const char *ver = json_string_value(json_object_get(root, "version"));
	const char *created = json_string_value(json_object_get(root, "created"));
	p->manifest_len = json_string_length(man);
	p->dataset = model ? mti_strdup(model) : NULL;
	p->version = ver ? mti_strdup(ver) : NULL;
	p->created = created ? mti_strdup(created) : NULL;
	p->manifest = malloc(p->manifest_len + 1);
	p->matrix = malloc((size_t)(p->k * p->m));
	size_t ng = json_array_size(groups), next = 0;
	p->groups = calloc(ng ? ng : 1, sizeof *p->groups);
	if (!p->dataset || !p->version || !p->created || !p->manifest || !p->matrix || !p->groups)
		return model && ver && created ? MT_ENOMEM : -1;
	memcpy(p->manifest, json_string_value(man), p->manifest_len + 1);
	mti_parity_matrix(p->k, p->m, p->matrix);
	json_t *mx = json_object_get(root, "matrix");
	for (int r = 0; r < p->m; r++)
		for (int j = 0; j < p->k; j++)
			if (json_integer_value(json_array_get(json_array_get(mx, (size_t)r),
							      (size_t)j)) != p->matrix[r * p->k + j])
				return -1;
	for (size_t g = 0; g < ng; g++) {
		p->ngroups++;
		int rc = rec_group_decode(p, json_array_get(groups, g), &p->groups[g], &next);
		if (rc)
			return rc;
	}
	return 0;
}

/* Load name@version's record: MT_ENOTFOUND when the checkpoint is not
 * protected; MT_ECORRUPT (naming the key) when the record is damaged. */
int mti_ckpt_prec_load(mt_store *s, const char *name, const char *version, mti_prec **out,
		       mt_error *err)
{
	*out = NULL;
	char *key = mti_ckpt_key_protect(name, version);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	void *data = NULL;
	size_t len = 0;
	int rc = mti_store_get_max(s, key, MT_MANIFEST_MAX_BYTES, &data, &len, err);
	if (rc == MT_ENOTFOUND)
		rc = mti_err(err, rc, "model %s@%s is not protected (no %s)", name, version, key);
	json_t *root = rc ? NULL : json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	mti_prec *p = root ? calloc(1, sizeof *p) : NULL;
	if (!rc && root && !p)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc && root)
		rc = mti_json_check_sum(data, len,
					json_string_value(json_object_get(root, "checksum")), key,
					err);
	int drc = rc || !root ? 0 : rec_root(p, root);
	if (!rc && (!root || drc < 0 || strcmp(p->dataset, name) || strcmp(p->version, version)))
		rc = mti_err(err, MT_ECORRUPT, "%s: not a sound protection record of %s@%s", key,
			    name, version);
	else if (!rc && drc)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	json_decref(root);
	free(data);
	free(key);
	if (rc)
		mti_prec_free(p);
	else
		*out = p;
	return rc;
}

/* ---- rows of a group ------------------------------------------------------------ */

/* Row i of group g (member or parity) into a buffer of the group's stripe,
 * checked against its sha256: 0, or nonzero when it is missing or wrong. */
static int row_read(mt_store *s, const mti_prec *p, const mti_pgroup *g, int i, uint8_t *buf,
		    uint64_t *nread)
{
	int member = i < (int)g->nmembers;
	const char *sha = member ? g->members[i].sha256 : g->parity[i - p->k].sha256;
	uint64_t bytes = member ? g->members[i].bytes : g->parity[i - p->k].bytes;
	char *key = member ? mti_ckpt_key_tensor(p->dataset, sha) : mti_ckpt_key_parity(p->dataset, sha);
	void *z = NULL;
	size_t zlen = 0;
	mt_error e = {0};
	int rc = key ? mti_store_get(s, key, 0, UINT64_MAX, &z, &zlen, &e) : MT_ENOMEM;
	memset(buf, 0, (size_t)g->stripe);
	if (!rc && nread)
		*nread += zlen;
	if (!rc && member)
		rc = mti_zstd_decompress(z, zlen, buf, (size_t)bytes, &e);
	else if (!rc && zlen == bytes)
		memcpy(buf, z, zlen);
	else if (!rc)
		rc = MT_ECORRUPT;
	char got[MT_SHA256_HEX];
	if (!rc)
		rc = mti_sha256_hex(buf, (size_t)bytes, got, &e);
	if (!rc && strcmp(got, sha))
		rc = MT_ECORRUPT;
	free(z);
	free(key);
	return rc;
}

int mti_ckpt_rebuild(mt_store *s, const mti_prec *p, const char *sha256, void *out,
		     uint64_t *nread, mt_error *err)
{
	const mti_pgroup *g = NULL;
	size_t target = 0;
	for (size_t gi = 0; gi < p->ngroups && !g; gi++)
		for (size_t j = 0; j < p->groups[gi].nmembers && !g; j++)
			if (!strcmp(p->groups[gi].members[j].sha256, sha256)) {
				g = &p->groups[gi];
				target = j;
			}
	if (!g)
		return mti_err(err, MT_ENOTFOUND, "model %s@%s: tensor %.12s... is in no group of "
			      "its protection record", p->dataset, p->version, sha256);
	int n = p->k + p->m, rc = 0;
	uint8_t *rows[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M] = {0};
	unsigned char have[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M] = {0};
	size_t had = 0, want = target;
	uint8_t *tbuf = malloc(g->stripe ? (size_t)g->stripe : 1);
	for (int i = 0; tbuf && i < n && had < g->nmembers; i++) {
		if ((i < p->k && (size_t)i >= g->nmembers) || (size_t)i == target)
			continue;
		if (!(rows[i] = malloc(g->stripe ? (size_t)g->stripe : 1))) {
			rc = MT_ENOMEM;
			break;
		}
		if (row_read(s, p, g, i, rows[i], nread) == 0) {
			have[i] = 1;
			had++;
		}
	}
	if (!tbuf || rc)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	else if (had < g->nmembers)
		rc = mti_err(err, MT_ECORRUPT, "model %s@%s: tensor %.12s...: %zu of the %zu rows "
			    "its group needs are sound: more is damaged than parity makes up",
			    p->dataset, p->version, sha256, had, g->nmembers);
	rows[target] = tbuf;
	if (!rc)
		rc = mti_parity_decode(p->k, p->m, p->matrix, g->nmembers, have, rows,
				       (size_t)g->stripe, &want, 1, err);
	char got[MT_SHA256_HEX];
	if (!rc)
		rc = mti_sha256_hex(tbuf, (size_t)g->members[target].bytes, got, err);
	if (!rc && strcmp(got, sha256))
		rc = mti_err(err, MT_ECORRUPT, "model %s@%s: tensor %.12s...: parity gives bytes "
			    "hashing to %.12s...", p->dataset, p->version, sha256, got);
	if (!rc)
		memcpy(out, tbuf, (size_t)g->members[target].bytes);
	for (int i = 0; i < n; i++)
		if (rows[i] != tbuf)
			free(rows[i]);
	free(tbuf);
	return rc;
}

/* The members of group g, each checked, into rows[0..nmembers) (a stripe
 * each, zero-padded): 0, else MT_ECORRUPT when one is not sound. */
static int members_read(mt_store *s, const mti_prec *p, const mti_pgroup *g, uint8_t **rows,
			uint64_t *nread, mt_error *err)
{
	for (size_t j = 0; j < g->nmembers; j++) {
		if (!(rows[j] = malloc(g->stripe ? (size_t)g->stripe : 1)))
			return mti_err(err, MT_ENOMEM, "out of memory");
		if (row_read(s, p, g, (int)j, rows[j], nread))
			return mti_err(err, MT_ECORRUPT, "model %s@%s: tensor %.12s... of parity group"
				      " %zu is not sound", p->dataset, p->version,
				      g->members[j].sha256, (size_t)(g - p->groups));
	}
	return 0;
}

/* Code group g's parity again from its members and write those of its
 * parity objects marked in bad (each read back against its sha256). */
static int parity_recode(mt_store *s, const mti_prec *p, const mti_pgroup *g, const int *bad,
			 uint64_t *nread, mt_error *err)
{
	uint8_t *data[MTI_PARITY_MAX_K] = {0}, *par[MTI_PARITY_MAX_M] = {0};
	size_t len = g->stripe ? (size_t)g->stripe : 1;
	int rc = members_read(s, p, g, data, nread, err);
	for (int r = 0; !rc && r < p->m; r++)
		if (!(par[r] = calloc(1, len)))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_parity_encode(p->k, p->m, p->matrix, g->nmembers,
				       (const uint8_t *const *)data, (size_t)g->stripe, par, 0, err);
	for (int r = 0; !rc && r < p->m; r++) {
		if (!bad[r])
			continue;
		char got[MT_SHA256_HEX];
		char *key = mti_ckpt_key_parity(p->dataset, g->parity[r].sha256);
		rc = key ? mti_sha256_hex(par[r], (size_t)g->stripe, got, err)
			 : mti_err(err, MT_ENOMEM, "out of memory");
		if (!rc && strcmp(got, g->parity[r].sha256))
			rc = mti_err(err, MT_ECORRUPT, "%s: its group codes to bytes hashing to "
				    "%.12s...", key, got);
		if (!rc)
			rc = mti_store_put(s, key, par[r], (size_t)g->stripe, 0, err);
		if (!rc && row_read(s, p, g, p->k + r, par[r], nread))
			rc = mti_err(err, MT_EIO, "%s: not what was written", key);
		free(key);
	}
	for (size_t j = 0; j < g->nmembers; j++)
		free(data[j]);
	for (int r = 0; r < p->m; r++)
		free(par[r]);
	return rc;
}

int mti_ckpt_parity_check(mt_store *s, const mti_prec *p, size_t gi, int fix, int *state,
			  char **why, uint64_t *nread, mt_error *err)
{
	const mti_pgroup *g = &p->groups[gi];
	uint8_t *buf = malloc(g->stripe ? (size_t)g->stripe : 1);
	int bad[MTI_PARITY_MAX_M] = {0}, nbad = 0;
	if (!buf)
		return mti_err(err, MT_ENOMEM, "out of memory");
	for (int r = 0; r < p->m; r++) {
		int rc = row_read(s, p, g, p->k + r, buf, nread);
		state[r] = rc ? MT_REPAIR_REPAIRABLE : MT_REPAIR_SOUND;
		why[r] = !rc ? NULL : mti_strdup(rc == MT_ENOTFOUND ? "missing"
					  : "its bytes do not hash to its name");
		nbad += bad[r] = rc != 0;
	}
	free(buf);
	if (!nbad)
		return 0;
	/* Parity is coded from the members: sound members rebuild it. */
	mt_error e = {0};
	int rc;
	if (fix) {
		rc = parity_recode(s, p, g, bad, nread, &e);
	} else {
		uint8_t *rows[MTI_PARITY_MAX_K] = {0};
		rc = members_read(s, p, g, rows, nread, &e);
		for (size_t j = 0; j < g->nmembers; j++)
			free(rows[j]);
	}
	if (rc == MT_ENOMEM || rc == MT_EIO)
		return mti_err_copy(err, &e);
	for (int r = 0; r < p->m; r++)
		if (bad[r])
			state[r] = rc ? MT_REPAIR_UNREPAIRABLE : fix ? MT_REPAIR_REBUILT
								   : MT_REPAIR_REPAIRABLE;
	return 0;
}

/* ---- protecting -------------------------------------------------------------- */

/* The checkpoint's tensor objects, once each, in manifest order. */
static int distinct(mt_ckpt *c, size_t **idx, size_t *n, mt_error *err)
{
	size_t nt = mt_ckpt_ntensors(c);
	*idx = calloc(nt ? nt : 1, sizeof **idx);
	*n = 0;
	if (!*idx)
		return mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; i < nt; i++) {
		mt_ckpt_tensor_info t, u;
		mt_ckpt_tensor(c, i, &t, NULL);
		int seen = 0;
		for (size_t j = 0; j < *n && !seen; j++) {
			mt_ckpt_tensor(c, (*idx)[j], &u, NULL);
			seen = !strcmp(u.sha256, t.sha256);
		}
		if (!seen)
			(*idx)[(*n)++] = i;
	}
	return 0;
}

/* Code group g (members idx[0..nm)) and write its parity objects. */
static int protect_group(mt_store *s, mt_ckpt *c, mti_prec *p, mti_pgroup *g, const size_t *idx,
			 size_t nm, mt_error *err)
{
	uint8_t *data[MTI_PARITY_MAX_K] = {0}, *par[MTI_PARITY_MAX_M] = {0};
	int rc = 0;
	g->nmembers = nm;
	g->members = calloc(nm, sizeof *g->members);
	g->parity = calloc((size_t)p->m, sizeof *g->parity);
	if (!g->members || !g->parity)
		return mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t j = 0; j < nm; j++) {
		mt_ckpt_tensor_info t;
		mt_ckpt_tensor(c, idx[j], &t, NULL);
		memcpy(g->members[j].sha256, t.sha256, 65);
		g->members[j].bytes = t.bytes;
		g->members[j].shard = idx[j];
		g->stripe = t.bytes > g->stripe ? t.bytes : g->stripe;
	}
	size_t len = g->stripe ? (size_t)g->stripe : 1;
	for (size_t j = 0; !rc && j < nm; j++) {
		mt_ckpt_tensor_info t;
		mt_ckpt_tensor(c, idx[j], &t, NULL);
		rc = (data[j] = calloc(1, len)) ? mt_ckpt_read(c, t.key, data[j], len, err)
						: mti_err(err, MT_ENOMEM, "out of memory");
	}
	for (int r = 0; !rc && r < p->m; r++)
		if (!(par[r] = calloc(1, len)))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_parity_encode(p->k, p->m, p->matrix, nm, (const uint8_t *const *)data,
				       (size_t)g->stripe, par, 0, err);
	for (int r = 0; !rc && r < p->m; r++) {
		g->parity[r].bytes = g->stripe;
		rc = mti_sha256_hex(par[r], (size_t)g->stripe, g->parity[r].sha256, err);
		char *key = rc ? NULL : mti_ckpt_key_parity(p->dataset, g->parity[r].sha256);
		if (!rc)
			rc = key ? mti_store_put(s, key, par[r], (size_t)g->stripe, 0, err)
				 : mti_err(err, MT_ENOMEM, "out of memory");
		free(key);
	}
	for (size_t j = 0; j < nm; j++)
		free(data[j]);
	for (int r = 0; r < p->m; r++)
		free(par[r]);
	return rc;
}

static int protect_groups(mt_store *s, mt_ckpt *c, mti_prec *p, mt_error *err)
{
	size_t *idx = NULL, n = 0;
	int rc = distinct(c, &idx, &n, err);
	size_t ng = (n + (size_t)p->k - 1) / (size_t)p->k;
	if (!rc && !(p->groups = calloc(ng ? ng : 1, sizeof *p->groups)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t g = 0; !rc && g < ng; g++) {
		size_t first = g * (size_t)p->k;
		size_t nm = n - first < (size_t)p->k ? n - first : (size_t)p->k;
		p->ngroups++;
		rc = protect_group(s, c, p, &p->groups[g], idx + first, nm, err);
	}
	free(idx);
	return rc;
}

int mt_ckpt_protect(mt_store *s, const char *spec, int k, int m, mt_error *err)
{
	if (k < 1 || k > MTI_PARITY_MAX_K || m < 1 || m > MTI_PARITY_MAX_M)
		return mti_err(err, MT_EINVAL, "parity %d+%d: K must be 1..%d and M 1..%d", k, m,
			      MTI_PARITY_MAX_K, MTI_PARITY_MAX_M);
	mt_ckpt *c = NULL;
	int rc = mt_ckpt_open(s, spec, &c, err);
	if (rc)
		return rc;
	const char *name = mt_ckpt_model(c), *version = mt_ckpt_version(c);
	mti_prec *old = NULL;
	mt_error e = {0};
	int orc = mti_ckpt_prec_load(s, name, version, &old, &e);
	if (!orc)
		rc = mti_err(err, MT_EEXIST, "model %s@%s is already protected with %d+%d parity",
			    name, version, old->k, old->m);
	mti_prec_free(old);
	mti_prec *p = rc ? NULL : calloc(1, sizeof *p);
	if (p) {
		p->k = k;
		p->m = m;
		p->dataset = mti_strdup(name);
		p->version = mti_strdup(version);
		p->created = mti_now_rfc3339();
		p->manifest = mti_strdup(mt_ckpt_manifest(c));
		p->manifest_len = p->manifest ? strlen(p->manifest) : 0;
		p->matrix = malloc((size_t)(k * m));
	}
	if (!rc && (!p || !p->dataset || !p->version || !p->created || !p->manifest || !p->matrix))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc) {
		mti_parity_matrix(k, m, p->matrix);
		rc = protect_groups(s, c, p, err);
	}
	char *json = NULL, *key = rc ? NULL : mti_ckpt_key_protect(name, version);
	if (!rc)
		rc = key ? rec_encode(p, &json, err) : mti_err(err, MT_ENOMEM, "out of memory");
	/* The record last, created once: the checkpoint is protected exactly when it exists. */
	if (!rc)
		rc = mti_store_put(s, key, json, strlen(json), MT_PUT_EXCLUSIVE, err);
	free(json);
	free(key);
	mti_prec_free(p);
	mt_ckpt_close(c);
	return rc;
}
