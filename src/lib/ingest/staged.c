/* staged.c — staged parts (datasets/<d>/staged/<id>/<k>.json) merged into one version by one manifest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "util.h"

#define STAGED_DIR "/staged/"

/* A sorted list of strings, each kept once. */
struct ids {
	char **v;
	size_t n;
};

static int ids_add(struct ids *l, const char *s, size_t len)
{
	for (size_t i = 0; i < l->n; i++)
		if (strlen(l->v[i]) == len && !strncmp(l->v[i], s, len))
			return 0;
	char **v = realloc(l->v, (l->n + 1) * sizeof *v);
	if (!v)
		return MT_ENOMEM;
	l->v = v;
	if (!(l->v[l->n] = strndup(s, len)))
		return MT_ENOMEM;
	l->n++;
	return 0;
}

/* staged/<id>/<k>.json: the id. */
static int collect_id(void *ud, const mt_obj *o)
{
	const char *p = strstr(o->key, STAGED_DIR);
	if (!p)
		return 0;
	p += strlen(STAGED_DIR);
	const char *slash = strchr(p, '/');
	return slash ? ids_add(ud, p, (size_t)(slash - p)) : 0;
}

int mt_staged_list(mt_store *s, const char *dataset, char ***ids, size_t *n, mt_error *err)
{
	*ids = NULL;
	*n = 0;
	int rc = mt_name_check(dataset, "dataset", err);
	char *prefix = rc ? NULL : mti_asprintf("datasets/%s" STAGED_DIR, dataset);
	struct ids l = {0};
	if (!rc && !prefix)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_store_list_all(s, prefix, collect_id, &l, err);
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "out of memory");
	free(prefix);
	if (rc) {
		mt_strv_free(l.v, l.n);
		return rc;
	}
	if (l.n)
		qsort(l.v, l.n, sizeof *l.v, mti_strp_cmp);
	*ids = l.v;
	*n = l.n;
	return 0;
}

/* The part records of one staging, by number. */
struct staging {
	const char *dataset, *id;
	struct ids keys;
	mt_manifest **parts; /* [k - 1] */
	uint64_t n;
};

static int collect_key(void *ud, const mt_obj *o)
{
	size_t len = strlen(o->key);
	return len > 5 && !strcmp(o->key + len - 5, ".json") ? ids_add(ud, o->key, len) : 0;
}

static int attrs_same(const mt_manifest *a, const mt_manifest *b)
{
	if (a->nattrs != b->nattrs)
		return 0;
	for (size_t i = 0; i < a->nattrs; i++) {
		const mt_attr *x = &a->attrs[i], *y = &b->attrs[i];
		if (strcmp(x->name, y->name) || x->dtype != y->dtype || x->rank != y->rank ||
		    x->ragged != y->ragged ||
		    memcmp(x->shape, y->shape, (size_t)x->rank * sizeof *x->shape))
			return 0;
	}
	return 1;
}

/* Read one part record and put it in its place; its number and count must
 * agree with its key and with the other parts. */
static int staging_take(struct staging *st, mt_store *s, const char *key, mt_error *err)
{
	void *data = NULL;
	size_t len = 0;
	mt_manifest *m = NULL;
	int rc = mti_store_get_max(s, key, MT_MANIFEST_MAX_BYTES, &data, &len, err);
	if (!rc)
		rc = mti_manifest_decode(data, len, key, &m, err);
	free(data);
	if (!rc && (!m->part_id || strcmp(m->part_id, st->id) || strcmp(m->dataset, st->dataset)))
		rc = mti_err(err, MT_ECORRUPT, "%s: not a part record of %s staging %s", key,
			    st->dataset, st->id);
	if (!rc && st->n && m->part_n != st->n)
		rc = mti_err(err, MT_ECORRUPT, "%s: part %llu of %llu, but another part says %llu "
			    "parts", key, (unsigned long long)m->part_k,
			    (unsigned long long)m->part_n, (unsigned long long)st->n);
	if (!rc && !st->n) {
		st->n = m->part_n;
		if (!(st->parts = calloc((size_t)st->n, sizeof *st->parts)))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	if (!rc && st->parts[m->part_k - 1])
		rc = mti_err(err, MT_ECORRUPT, "%s: part %llu is recorded twice", key,
			    (unsigned long long)m->part_k);
	if (!rc && m->part_k > 1 && st->parts[0] && !attrs_same(st->parts[0], m))
		rc = mti_err(err, MT_EINVAL, "%s: part %llu has other attributes than part 1", key,
			    (unsigned long long)m->part_k);
	if (!rc) {
		st->parts[m->part_k - 1] = m;
		m = NULL;
	}
	mti_manifest_free(m);
	return rc;
}

/* Every declared part must be there: the missing ones are named. */
static int staging_check(struct staging *st, mt_error *err)
{
	char missing[512] = "";
	size_t len = 0, nmissing = 0;
	for (uint64_t k = 0; k < st->n; k++)
		if (!st->parts[k] && ++nmissing && len < sizeof missing - 32)
			len += (size_t)snprintf(missing + len, sizeof missing - len, "%s%llu",
						len ? ", " : "", (unsigned long long)k + 1);
	if (nmissing)
		return mti_err(err, MT_ENOTFOUND, "%s staging %s: part%s %s of %llu %s missing; "
			      "nothing was committed", st->dataset, st->id, nmissing > 1 ? "s" : "",
			      missing, (unsigned long long)st->n, nmissing > 1 ? "are" : "is");
	for (uint64_t k = 1; k < st->n; k++)
		if (!attrs_same(st->parts[0], st->parts[k]))
			return mti_err(err, MT_EINVAL, "%s staging %s: part %llu has other attributes "
				      "than part 1", st->dataset, st->id, (unsigned long long)k + 1);
	return 0;
}

static int staging_load(struct staging *st, mt_store *s, mt_error *err)
{
	char *prefix = mti_asprintf("datasets/%s" STAGED_DIR "%s/", st->dataset, st->id);
	int rc = prefix ? mti_store_list_all(s, prefix, collect_key, &st->keys, err) : MT_ENOMEM;
	free(prefix);
	if (rc == MT_ENOMEM)
		return mti_err(err, rc, "out of memory");
	if (!rc && !st->keys.n)
		rc = mti_err(err, MT_ENOTFOUND, "%s: no staged parts under the id %s", st->dataset,
			    st->id);
	for (size_t i = 0; !rc && i < st->keys.n; i++)
		rc = staging_take(st, s, st->keys.v[i], err);
	return rc ? rc : staging_check(st, err);
}

static void staging_free(struct staging *st)
{
	for (uint64_t k = 0; st->parts && k < st->n; k++)
		mti_manifest_free(st->parts[k]);
	free(st->parts);
	mt_strv_free(st->keys.v, st->keys.n);
}

/* The only staging there is, when the caller names none. */
static int staging_pick(mt_store *s, const char *dataset, char **id, mt_error *err)
{
	char **ids;
	size_t n;
	int rc = mt_staged_list(s, dataset, &ids, &n, err);
	if (!rc && n == 0)
		rc = mti_err(err, MT_ENOTFOUND, "%s: no staged parts", dataset);
	if (!rc && n > 1)
		rc = mti_err(err, MT_EINVAL, "%s: %zu stagings (%s, %s%s): name one", dataset, n,
			    ids[0], ids[1], n > 2 ? ", ..." : "");
	if (!rc && !(*id = mti_strdup(ids[0])))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	mt_strv_free(ids, n);
	return rc;
}

/* One writer on top of the latest version (or making v1), the parts' shards
 * in part order, one commit. */
static int staging_commit_once(mt_store *s, struct staging *st, const mt_writer_opts *o,
			       int fresh, char *version, size_t cap, mt_error *err)
{
	mt_writer_opts wo;
	mt_writer_opts_init(&wo);
	/* What the caller does not say, part 1 does (the recipe set them alike). */
	const mt_manifest *p1 = st->parts[0];
	wo.author = o && o->author ? o->author : p1->author;
	wo.description = o && o->description ? o->description : p1->description;
	wo.tags = o && o->ntags ? o->tags : (const char *const *)p1->tags;
	wo.ntags = o && o->ntags ? o->ntags : p1->ntags;
	wo.append = !fresh;
	wo.version = fresh ? "v1" : NULL;
	mt_writer *w = NULL;
	int rc = mt_writer_open(s, st->dataset, st->parts[0]->attrs, st->parts[0]->nattrs, &wo,
				&w, err);
	for (uint64_t k = 0; !rc && k < st->n; k++)
		rc = mti_writer_adopt(w, st->parts[k], err);
	if (!rc)
		rc = mt_writer_commit(w, version, cap, err);
	mt_writer_close(w);
	return rc;
}

int mt_staged_commit(mt_store *s, const char *dataset, const char *id, const mt_writer_opts *o,
		     char *version, size_t cap, mt_error *err)
{
	char *picked = NULL;
	int rc = mt_name_check(dataset, "dataset", err);
	if (!rc && id)
		rc = mt_name_check(id, "staging id", err);
	if (!rc && !id && !(rc = staging_pick(s, dataset, &picked, err)))
		id = picked;
	struct staging st = {.dataset = dataset, .id = id};
	if (!rc)
		rc = staging_load(&st, s, err);
	/* A dataset nobody wrote yet gets v1; losing that race to another
	 * writer means appending to its version instead. */
	char **v = NULL;
	size_t nv = 0;
	mt_error ve = {0};
	int fresh = !rc && mt_store_versions(s, dataset, &v, &nv, &ve) == MT_ENOTFOUND;
	mt_strv_free(v, nv);
	for (int attempt = 0; !rc && attempt < 2; attempt++) {
		rc = staging_commit_once(s, &st, o, fresh, version, cap, err);
		if (!(rc == MT_EEXIST && fresh))
			break;
		fresh = 0;
		rc = 0;
	}
	/* Committed: the part records are spent (gc would remove them anyway). */
	if (!rc) {
		mt_error e = {0};
		mti_store_del(s, (const char *const *)st.keys.v, st.keys.n, &e);
	}
	staging_free(&st);
	free(picked);
	return rc;
}
