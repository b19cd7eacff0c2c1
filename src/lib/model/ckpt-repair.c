/* ckpt-repair.c — repair of a model's checkpoints: each tensor object checked against its name, a damaged or missing one taken from another store holding it or rebuilt from the checkpoint's parity, a lost manifest from another store or the protection record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "codec.h"
#include "protect.h"

struct mrep {
	mt_store *s;
	const char *name;
	mt_repair_opts o;
	mt_repair_stats *st;
	mt_store **src; /* o.sources, then the remotes (owned from nown on) */
	size_t nsrc, nown;
	/* The protection records of the model's other checkpoints, loaded the
	 * first time a tensor's own checkpoint's parity cannot rebuild it: a
	 * tensor object is every checkpoint's that names it. */
	mti_prec **recs;
	size_t nrecs;
	int recs_loaded;
};

static void mrep_report(struct mrep *r, const char *version, const char *key, int kind,
			int state, const char *source, uint64_t nread, size_t number,
			const char *problem)
{
	r->st->objects++;
	r->st->damaged += state != MT_REPAIR_SOUND;
	r->st->rebuilt += state == MT_REPAIR_REBUILT;
	r->st->unrepairable += state == MT_REPAIR_UNREPAIRABLE;
	r->st->bytes_read += nread;
	if (!r->o.report)
		return;
	mt_repair_report rep = {.dataset = r->name, .version = version, .key = key, .kind = kind,
				.state = state, .source = source, .bytes_read = nread,
				.number = number, .problem = problem};
	r->o.report(r->o.report_ud, &rep);
}

static int mrep_sources(struct mrep *r, mt_error *err)
{
	size_t cap = r->o.nsources + 1;
	mt_remote *rm = NULL;
	size_t nrm = 0;
	mt_error e = {0};
	if (r->o.use_remotes && mt_remotes_list(&rm, &nrm, &e) == 0)
		cap += nrm;
	if (!(r->src = calloc(cap, sizeof *r->src))) {
		mt_remotes_free(rm, nrm);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < r->o.nsources; i++)
		r->src[r->nsrc++] = r->o.sources[i];
	r->nown = r->nsrc;
	for (size_t i = 0; i < nrm; i++) {
		mt_store_opts so;
		mt_store_opts_init(&so);
		so.create = 0;
		mt_store *st = NULL;
		if (mt_store_open_opts(rm[i].name, &so, &st, &e) == 0)
			r->src[r->nsrc++] = st;
	}
	mt_remotes_free(rm, nrm);
	return 0;
}

/* Object key holds bytes whose content hashes to sha256 (a tensor: the
 * zstd frame's content; else the bytes themselves): 0, else why in *why. */
static int object_sound(mt_store *s, const char *key, const char *sha256, uint64_t bytes,
			int tensor, void **obj, size_t *olen, uint64_t *nread, char **why)
{
	void *z = NULL, *raw = tensor ? malloc(bytes ? (size_t)bytes : 1) : NULL;
	size_t zlen = 0;
	mt_error e = {0};
	char got[MT_SHA256_HEX];
	int rc = tensor && !raw ? MT_ENOMEM : mti_store_get(s, key, 0, UINT64_MAX, &z, &zlen, &e);
	if (!rc)
		*nread += zlen;
	if (!rc && tensor)
		rc = mti_zstd_decompress(z, zlen, raw, (size_t)bytes, &e);
	if (!rc)
		rc = mti_sha256_hex(tensor ? raw : z, tensor ? (size_t)bytes : zlen, got, &e);
	if (!rc && strcmp(got, sha256))
		rc = mti_err(&e, MT_ECORRUPT, "its bytes hash to %s", got);
	if (why)
		*why = rc == MT_ENOTFOUND ? mti_strdup("missing") : rc ? mti_strdup(e.message) : NULL;
	free(raw);
	if (!rc && obj) {
		*obj = z;
		*olen = zlen;
	} else {
		free(z);
	}
	return rc;
}

/* The object from another store holding the same sound bytes: 0 with its
 * bytes and the store's URL. */
static int from_sources(struct mrep *r, const char *key, const char *sha, uint64_t bytes,
			void **obj, size_t *olen, const char **source, uint64_t *nread)
{
	for (size_t i = 0; i < r->nsrc; i++)
		if (!object_sound(r->src[i], key, sha, bytes, 1, obj, olen, nread, NULL)) {
			*source = mt_store_url(r->src[i]);
			return 0;
		}
	return -1;
}

/* The raw bytes from the checkpoint's parity, as a zstd frame. */
static int from_parity(struct mrep *r, const mti_prec *p, const char *sha, uint64_t bytes,
		       void **obj, size_t *olen, uint64_t *nread)
{
	void *raw = malloc(bytes ? (size_t)bytes : 1);
	mt_error e = {0};
	int rc = raw && p ? mti_ckpt_rebuild(r->s, p, sha, raw, nread, &e) : -1;
	if (!rc)
		rc = mti_zstd_compress(raw, (size_t)bytes, 3, obj, olen, &e);
	free(raw);
	return rc;
}

/* Load the records of every protected checkpoint of the model (once). */
static void mrep_records(struct mrep *r)
{
	if (r->recs_loaded)
		return;
	r->recs_loaded = 1;
	char **v = NULL;
	size_t n = 0;
	mt_error e = {0};
	if (mt_ckpt_list(r->s, r->name, &v, &n, &e) || !(r->recs = calloc(n ? n : 1, sizeof *r->recs))) {
		mt_strv_free(v, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (!mti_ckpt_prec_load(r->s, r->name, v[i], &r->recs[r->nrecs], &e))
			r->nrecs++;
	mt_strv_free(v, n);
}

/* The tensor from the parity of another protected checkpoint naming it:
 * 0 with "parity of vN" in buf. */
static int from_other_parity(struct mrep *r, const mti_prec *own, const char *sha,
			     uint64_t bytes, void **obj, size_t *olen, char *buf, size_t cap,
			     uint64_t *nread)
{
	mrep_records(r);
	for (size_t i = 0; i < r->nrecs; i++) {
		const mti_prec *p = r->recs[i];
		if (own && !strcmp(p->version, own->version))
			continue;
		if (!from_parity(r, p, sha, bytes, obj, olen, nread)) {
			snprintf(buf, cap, "parity of %s", p->version);
			return 0;
		}
	}
	return -1;
}

/* Check one tensor object, and bring it back when it is damaged. */
static int repair_tensor(struct mrep *r, const char *version, const mti_prec *p,
			 const mt_ckpt_tensor_info *t, size_t number, mt_error *err)
{
	char *key = mti_ckpt_key_tensor(r->name, t->sha256), *why = NULL;
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	uint64_t nread = 0;
	int rc = object_sound(r->s, key, t->sha256, t->bytes, 1, NULL, NULL, &nread, &why);
	if (rc == MT_ENOMEM) {
		free(key);
		return mti_err(err, rc, "out of memory");
	}
	if (!rc) {
		mrep_report(r, version, key, MT_REPAIR_TENSOR, MT_REPAIR_SOUND, NULL, nread, number,
			    NULL);
		free(key);
		return 0;
	}
	void *obj = NULL;
	size_t olen = 0;
	const char *source = NULL;
	char other[160];
	if (!from_sources(r, key, t->sha256, t->bytes, &obj, &olen, &source, &nread))
		rc = 0;
	else if (!(rc = from_parity(r, p, t->sha256, t->bytes, &obj, &olen, &nread)))
		source = "parity";
	else if (!(rc = from_other_parity(r, p, t->sha256, t->bytes, &obj, &olen, other,
					  sizeof other, &nread)))
		source = other;
	int state = rc ? MT_REPAIR_UNREPAIRABLE : r->o.dry_run ? MT_REPAIR_REPAIRABLE : MT_REPAIR_REBUILT;
	int wrc = 0;
	if (state == MT_REPAIR_REBUILT) {
		/* A whole-object replace: the name holds the damaged or the right bytes. */
		mt_error e = {0};
		wrc = mti_store_put(r->s, key, obj, olen, 0, &e);
		if (!wrc && object_sound(r->s, key, t->sha256, t->bytes, 1, NULL, NULL, &nread, NULL))
			wrc = mti_err(&e, MT_EIO, "%s: not what was written", key);
		if (wrc)
			mti_err_copy(err, &e);
	}
	if (!wrc)
		mrep_report(r, version, key, MT_REPAIR_TENSOR, state, source, nread, number, why);
	free(obj);
	free(why);
	free(key);
	return wrc;
}

/* A lost checkpoint manifest back from another store or the record, created
 * exclusively; 0 once there is a sound one to open. */
static int repair_manifest(struct mrep *r, const char *version, const mti_prec *p, mt_error *err)
{
	char *key = mti_ckpt_key_manifest(r->name, version);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	uint64_t nread = 0;
	const char *source = NULL;
	void *data = NULL;
	size_t len = 0;
	mt_ckpt *c = NULL;
	for (size_t i = 0; !source && i < r->nsrc; i++) {
		mt_error e = {0};
		if (!mti_store_get_max(r->src[i], key, MT_MANIFEST_MAX_BYTES, &data, &len, &e) &&
		    !mti_ckpt_decode(data, len, r->name, version, key, &c, &e))
			source = mt_store_url(r->src[i]);
		nread += len;
		mt_ckpt_close(c);
		c = NULL;
		if (!source) {
			free(data);
			data = NULL;
		}
	}
	if (!source && p && (data = malloc(p->manifest_len + 1))) {
		memcpy(data, p->manifest, p->manifest_len);
		len = p->manifest_len;
		source = "protection record";
	}
	int state = !source ? MT_REPAIR_UNREPAIRABLE : r->o.dry_run ? MT_REPAIR_REPAIRABLE
								     : MT_REPAIR_REBUILT;
	int rc = 0;
	if (state == MT_REPAIR_REBUILT)
		rc = mti_store_put(r->s, key, data, len, MT_PUT_EXCLUSIVE, err);
	if (!rc)
		mrep_report(r, version, key, MT_REPAIR_MANIFEST, state, source, nread, 0, "missing");
	free(data);
	free(key);
	return rc ? rc : state == MT_REPAIR_UNREPAIRABLE ? MT_ENOTFOUND : 0;
}

/* Check every parity object of the checkpoint's record (after its tensors:
 * parity is coded again from them), each reported with its group's number;
 * a damaged one comes back from the group's sound tensors. */
static int repair_parity(struct mrep *r, const char *version, const mti_prec *p, mt_error *err)
{
	int rc = 0;
	for (size_t gi = 0; !rc && gi < p->ngroups; gi++) {
		int state[MTI_PARITY_MAX_M];
		char *why[MTI_PARITY_MAX_M] = {0};
		uint64_t nread = 0;
		rc = mti_ckpt_parity_check(r->s, p, gi, !r->o.dry_run, state, why, &nread, err);
		for (int j = 0; !rc && j < p->m; j++) {
			char *key = mti_ckpt_key_parity(r->name, p->groups[gi].parity[j].sha256);
			if (!key) {
				rc = mti_err(err, MT_ENOMEM, "out of memory");
				break;
			}
			mrep_report(r, version, key, MT_REPAIR_PARITY, state[j],
				    state[j] == MT_REPAIR_SOUND || state[j] == MT_REPAIR_UNREPAIRABLE
					    ? NULL : "the checkpoint's tensors",
				    j ? 0 : nread, gi, why[j]);
			free(key);
		}
		for (int j = 0; j < p->m; j++)
			free(why[j]);
	}
	return rc;
}

static int repair_version(struct mrep *r, const char *version, mt_error *err)
{
	mti_prec *p = NULL;
	mt_error e = {0};
	int prc = mti_ckpt_prec_load(r->s, r->name, version, &p, &e);
	if (prc && prc != MT_ENOTFOUND && prc != MT_ECORRUPT) {
		mti_err_copy(err, &e);
		return prc;
	}
	char *spec = mti_asprintf("%s@%s", r->name, version);
	mt_ckpt *c = NULL;
	int rc = spec ? mt_ckpt_open(r->s, spec, &c, &e) : MT_ENOMEM;
	if (rc == MT_ENOTFOUND) {
		rc = repair_manifest(r, version, p, err);
		if (!rc && r->o.dry_run && p)
			rc = mti_ckpt_decode(p->manifest, p->manifest_len, r->name, version,
					     "protection record", &c, err);
		else if (!rc && !r->o.dry_run)
			rc = mt_ckpt_open(r->s, spec, &c, err);
		else if (rc == MT_ENOTFOUND)
			rc = MT_ECORRUPT; /* reported unrepairable: the next version */
	} else if (rc) {
		mti_err_copy(err, &e);
	}
	size_t *seen = NULL, nseen = 0, nt = c ? mt_ckpt_ntensors(c) : 0;
	if (c && !(seen = calloc(nt ? nt : 1, sizeof *seen)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < nt; i++) {
		mt_ckpt_tensor_info t, u;
		mt_ckpt_tensor(c, i, &t, NULL);
		int dup = 0;
		for (size_t j = 0; j < nseen && !dup; j++) {
			mt_ckpt_tensor(c, seen[j], &u, NULL);
			dup = !strcmp(u.sha256, t.sha256);
		}
		if (!dup) {
			seen[nseen++] = i;
			rc = repair_tensor(r, version, p, &t, i, err);
		}
	}
	if (!rc && p && c)
		rc = repair_parity(r, version, p, err);
	free(seen);
	mt_ckpt_close(c);
	mti_prec_free(p);
	free(spec);
	return rc;
}

/* The checkpoints: `version`, or every one with a manifest or a record. */
static int mrep_versions(struct mrep *r, const char *version, char ***v, size_t *n,
			 mt_error *err)
{
	*v = NULL;
	*n = 0;
	if (version && *version && strcmp(version, "latest"))
		return mti_strv_push(v, n, version, strlen(version))
			       ? mti_err(err, MT_ENOMEM, "out of memory") : 0;
	int rc = mt_ckpt_list(r->s, r->name, v, n, err);
	if (rc == MT_ENOTFOUND)
		rc = 0;
	if (!rc && version && *n) { /* latest: the newest alone */
		char *last = (*v)[*n - 1];
		(*v)[*n - 1] = NULL;
		mt_strv_free(*v, *n);
		*v = NULL;
		*n = 0;
		rc = mti_strv_push(v, n, last, strlen(last)) ? MT_ENOMEM : 0;
		free(last);
	}
	if (!rc && !*n)
		rc = mti_err(err, MT_ENOTFOUND, "model %s: no checkpoints in %s", r->name,
			    mt_store_url(r->s));
	return rc;
}

/* r's statistics cleared and its options taken from o (any size of the
 * struct, as mt_repair_opts is versioned), once its model's name passes. */
static int mrep_start(struct mrep *r, const mt_repair_opts *o, mt_error *err)
{
	memset(r->st, 0, sizeof *r->st);
	mt_repair_opts_init(&r->o);
	if (o)
		memcpy(&r->o, o, o->size < sizeof r->o ? o->size : sizeof r->o);
	r->o.size = sizeof r->o;
	return mt_name_check(r->name, "model", err);
}

/* The other stores and protection records r opened. */
static void mrep_end(struct mrep *r)
{
	for (size_t i = r->nown; i < r->nsrc; i++)
		mt_store_close(r->src[i]);
	free(r->src);
	for (size_t i = 0; i < r->nrecs; i++)
		mti_prec_free(r->recs[i]);
	free(r->recs);
}

int mt_ckpt_repair(mt_store *s, const char *name, const char *version, const mt_repair_opts *o,
		   mt_repair_stats *stats, mt_error *err)
{
	mt_repair_stats local = {0};
	struct mrep r = {.s = s, .name = name, .st = stats ? stats : &local};
	int rc = mrep_start(&r, o, err);
	char **v = NULL;
	size_t n = 0;
	if (!rc)
		rc = mrep_sources(&r, err);
	if (!rc)
		rc = mrep_versions(&r, version, &v, &n, err);
	int worst = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		int vrc = repair_version(&r, v[i], err);
		if (vrc == MT_ECORRUPT)
			worst = vrc;
		else
			rc = vrc;
	}
	if (!rc && r.st->unrepairable)
		rc = mti_err(err, MT_ECORRUPT, "model %s: %llu object(s) could not be rebuilt", name,
			    (unsigned long long)r.st->unrepairable);
	mt_strv_free(v, n);
	mrep_end(&r);
	return rc ? rc : worst;
}

int mt_ckpt_check_protection(mt_store *s, const char *name, const char *version,
			     const mt_repair_opts *o, mt_repair_stats *stats, mt_error *err)
{
	mt_repair_stats local = {0};
	struct mrep r = {.s = s, .name = name, .st = stats ? stats : &local};
	int rc = mrep_start(&r, o, err);
	r.o.dry_run = 1;
	char **v = NULL;
	size_t n = 0;
	if (!rc)
		rc = mrep_versions(&r, version, &v, &n, err);
	mt_error first = {0};
	for (size_t i = 0; !rc && i < n; i++) {
		mti_prec *p = NULL;
		mt_error e = {0};
		int prc = mti_ckpt_prec_load(s, name, v[i], &p, &e);
		if (prc == MT_ECORRUPT) {
			char *key = mti_ckpt_key_protect(name, v[i]);
			mrep_report(&r, v[i], key, MT_REPAIR_RECORD, MT_REPAIR_UNREPAIRABLE, NULL, 0, 0,
				    e.message);
			if (!first.code)
				first = e;
			free(key);
		} else if (prc && prc != MT_ENOTFOUND) {
			rc = mti_err_copy(err, &e);
		}
		uint64_t bad = r.st->damaged;
		if (!prc)
			rc = repair_parity(&r, v[i], p, err);
		if (!rc && !first.code && r.st->damaged > bad)
			mti_err(&first, MT_ECORRUPT, "model %s@%s: %llu parity object(s) damaged or "
				"missing", name, v[i], (unsigned long long)(r.st->damaged - bad));
		mti_prec_free(p);
	}
	mt_strv_free(v, n);
	mrep_end(&r);
	if (!rc && first.code)
		rc = mti_err_copy(err, &first);
	return rc;
}
