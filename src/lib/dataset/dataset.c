/* dataset.c — datasets and versions in a store: listing, ordering, loading manifests, deleting, garbage collection. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include "dataset.h"
#include "lock.h"
#include "pool.h"
#include "protect.h"

#define VERSIONS_DIR "/versions/"
/* A head holds a manifest up to this size; a bigger one is read by name
 * (its transfer, not a round trip, is then what an open waits for). */
#define HEAD_MAX (1u << 20)
#define MANIFEST_EXT ".json"
#define TOMBSTONE_EXT ".removed"

char *mti_now_rfc3339(void)
{
	struct timeval tv;
	struct tm tm;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	char s[40];
	strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
	return mti_asprintf("%s.%03dZ", s, (int)(tv.tv_usec / 1000));
}

char *mti_created_after(const char *prev)
{
	char *now = mti_now_rfc3339();
	if (!now || !prev || strcmp(now, prev) > 0)
		return now;
	/* The clock is behind the parent's (another machine's, or the same
	 * millisecond): one millisecond after it keeps "latest" the child. */
	struct tm tm = {0};
	int ms = 0;
	if (sscanf(prev, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
		return now;
	free(now);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm) + (ms + 1) / 1000;
	gmtime_r(&t, &tm);
	char s[40];
	strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
	return mti_asprintf("%s.%03dZ", s, (ms + 1) % 1000);
}

/* A growable list of strings (mti_strv_push). */
struct strv {
	char **v;
	size_t n;
};

static int strv_push(struct strv *l, const char *s, size_t len)
{
	return mti_strv_push(&l->v, &l->n, s, len);
}

struct dataset_list {
	mt_store *s;
	struct strv l;
	int with_manifest; /* only datasets that have a version */
	mt_error *err;
};

/* 1 at the first manifest: tombstones alone are no version. */
static int first_manifest(void *ud, const mt_obj *o)
{
	size_t len = strlen(o->key), ext = strlen(MANIFEST_EXT);
	return len > ext && !strcmp(o->key + len - ext, MANIFEST_EXT);
}

/* One entry per dataset directory ("datasets/<name>/"), not per object. */
static int collect_dataset(void *ud, const mt_obj *o)
{
	struct dataset_list *dl = ud;
	char *n;
	int rc = mti_prefix_child(o, "datasets/", &n);
	if (rc || !n)
		return rc;
	size_t len = strlen(n) + 1;
	rc = mt_name_check(n, "dataset", NULL);
	if (!rc && dl->with_manifest) {
		char *versions = mti_asprintf("datasets/%s/versions/", n);
		rc = versions ? mti_store_list_all(dl->s, versions, first_manifest, NULL, dl->err)
			      : MT_ENOMEM;
		free(versions);
		/* 1: it has a manifest; 0: none, skip it. */
		rc = rc == 1 ? 0 : rc == 0 ? 1 : rc;
	}
	if (!rc)
		rc = strv_push(&dl->l, n, len - 1);
	free(n);
	return rc == 1 || rc == MT_EINVAL ? 0 : rc;
}

static int list_datasets(mt_store *s, int with_manifest, struct strv *out, mt_error *err)
{
	struct dataset_list dl = {s, {0}, with_manifest, err};
	int rc = mti_store_list_prefixes(s, "datasets/", collect_dataset, &dl, err);
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "listing datasets: out of memory");
	if (rc) {
		mt_strv_free(dl.l.v, dl.l.n);
		return rc;
	}
	*out = dl.l;
	return 0;
}

static int store_datasets(mt_store *s, int with_manifest, char ***names, size_t *n,
			  mt_error *err)
{
	struct strv l = {0};
	int rc = list_datasets(s, with_manifest, &l, err);
	if (rc)
		return rc;
	*names = l.v;
	*n = l.n;
	return 0;
}

int mt_store_datasets(mt_store *s, char ***names, size_t *n, mt_error *err)
{
	return store_datasets(s, 1, names, n, err);
}

int mt_store_dataset_dirs(mt_store *s, char ***names, size_t *n, mt_error *err)
{
	return store_datasets(s, 0, names, n, err);
}

struct version_list {
	struct strv l;       /* versions: manifests with a name readers resolve */
	struct strv removed; /* tombstones: names of removed versions */
	struct strv stray;   /* keys of manifests with a name no reader resolves */
	struct strv marks;   /* order markers: "<version>.at.<stamp>" */
	size_t prefix_len;
	/* With want_objs: each manifest of l as listed (size and digest,
	 * key NULL), objs[i] that of l.v[i]; a head is checked against it. */
	int want_objs;
	mt_obj *objs;
	size_t nobjs, objs_cap;
};

/* A name readers resolve: valid, and not the word that means "newest" (an
 * older matorage wrote versions/latest.json; resolving it recursed). */
static int readable_version(const char *name)
{
	return !mt_name_check(name, "version", NULL) && strcasecmp(name, "latest") != 0;
}

static int ends_with(const char *s, size_t len, const char *ext)
{
	size_t n = strlen(ext);
	return len > n && !strcmp(s + len - n, ext);
}

/* Order markers (doc/FORMAT.md, "Order markers"): an empty object
 * versions/<version>.at.<YYYYMMDDTHHMMSSmmmZ> written before the manifest's
 * create says when the version was created, so the order of versions (and
 * so the latest) comes from one listing instead of a read of every
 * manifest.  A marker is a hint: one whose version has no manifest is
 * ignored, a version without exactly one marker has its manifest read, and
 * the manifest of the latest is checked against its marker. */
#define MARK_SEP ".at."
#define STAMP_LEN 19 /* 20261122T180000123Z */

/* created ("2026-11-22T18:00:00.123Z") as a stamp; 0, or -1 when created
 * is not in that form (such a version gets no marker). */
static int stamp_of(const char *created, char stamp[STAMP_LEN + 1])
{
	int v[7];
	char z = 0;
	if (strlen(created) != 24 ||
	    sscanf(created, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &v[0], &v[1], &v[2], &v[3], &v[4],
		   &v[5], &v[6], &z) != 8 || z != 'Z')
		return -1;
	snprintf(stamp, STAMP_LEN + 1, "%04d%02d%02dT%02d%02d%02d%03dZ", v[0], v[1], v[2], v[3],
		 v[4], v[5], v[6]);
	return 0;
}

/* The created time a stamp stands for; -1 when it is not a stamp. */
static int created_of(const char *stamp, char created[25])
{
	size_t n = strlen(stamp);
	if (n != STAMP_LEN || stamp[8] != 'T' || stamp[18] != 'Z' ||
	    strspn(stamp, "0123456789") != 8 || strspn(stamp + 9, "0123456789") != 9)
		return -1;
	snprintf(created, 25, "%.4s-%.2s-%.2sT%.2s:%.2s:%.2s.%.3sZ", stamp, stamp + 4, stamp + 6,
		 stamp + 9, stamp + 11, stamp + 13, stamp + 15);
	return 0;
}

static char *mark_key(const char *dataset, const char *version, const char *created)
{
	char stamp[STAMP_LEN + 1];
	if (stamp_of(created, stamp))
		return NULL;
	return mti_asprintf("datasets/%s" VERSIONS_DIR "%s" MARK_SEP "%s", dataset, version,
			    stamp);
}

void mti_dataset_put_head(mt_store *s, const char *dataset, const char *json, size_t len)
{
	if (!s->ops->far || len > HEAD_MAX)
		return;
	char *key = mti_key_head(dataset);
	mt_error e = {0};
	/* A hint: a head that fails to land leaves an older one, which the
	 * listing tells from the newest. */
	if (key)
		mti_store_put(s, key, json, len, 0, &e);
	free(key);
}

/* The dataset's head into *data, or NULL: missing, unreadable or too big,
 * a head is none (it is only a hint). */
static void head_read(mt_store *s, const char *dataset, void **data, size_t *len)
{
	char *key = mti_key_head(dataset);
	mt_error e = {0};
	*data = NULL;
	if (key && !mti_store_get(s, key, 0, HEAD_MAX + 1, data, len, &e) && *len > HEAD_MAX) {
		free(*data);
		*data = NULL;
	}
	free(key);
}

/* The version the dataset's head copies, or NULL: no head, or one that is
 * no manifest (free it). */
static char *head_version(mt_store *s, const char *dataset)
{
	void *data = NULL;
	size_t len = 0;
	head_read(s, dataset, &data, &len);
	char *key = data ? mti_key_head(dataset) : NULL;
	mt_manifest *m = NULL;
	mt_error e = {0};
	char *version = key && !mti_manifest_decode(data, len, key, &m, &e)
		? mti_strdup(m->version) : NULL;
	mti_manifest_free(m);
	free(data);
	free(key);
	return version;
}

/* After dataset@version was removed: its head (if the head names it) goes
 * too, so the removed manifest's text is not kept in it. */
static void head_forget(mt_store *s, const char *dataset, const char *version)
{
	if (!s->ops->far)
		return;
	char *named = head_version(s, dataset);
	char *key = named && !strcmp(named, version) ? mti_key_head(dataset) : NULL;
	if (key) {
		const char *k = key;
		mt_error e = {0};
		mti_store_del(s, &k, 1, &e);
	}
	free(key);
	free(named);
}

int mti_dataset_mark(mt_store *s, const char *dataset, const char *version, const char *created,
		     mt_error *err)
{
	char stamp[STAMP_LEN + 1];
	if (stamp_of(created, stamp))
		return 0; /* not a time a marker can say: readers read the manifest */
	char *key = mark_key(dataset, version, created);
	int rc = key ? mti_store_put(s, key, "", 0, 0, err) : mti_err(err, MT_ENOMEM, "out of memory");
	free(key);
	return rc;
}

void mti_dataset_unmark(mt_store *s, const char *dataset, const char *version, const char *created)
{
	char *key = mark_key(dataset, version, created);
	mt_error e = {0};
	if (key) {
		const char *k = key;
		mti_store_del(s, &k, 1, &e);
	}
	free(key);
}

/* Whether name (below versions/) is a marker: the version's name ends at
 * the last MARK_SEP, and a stamp follows it. */
static int is_mark(const char *name, size_t len)
{
	char created[25];
	return len > STAMP_LEN + strlen(MARK_SEP) &&
	       !strncmp(name + len - STAMP_LEN - strlen(MARK_SEP), MARK_SEP, strlen(MARK_SEP)) &&
	       !created_of(name + len - STAMP_LEN, created);
}

/* objs[l.n - 1] for the manifest just added to l. */
static int listed_push(struct version_list *vl, const mt_obj *o)
{
	mt_obj *g = mti_grow(vl->objs, vl->nobjs, &vl->objs_cap, sizeof *g, 16);
	if (!g)
		return MT_ENOMEM;
	vl->objs = g;
	mt_obj *c = &g[vl->nobjs++];
	*c = (mt_obj){NULL, o->size, o->mtime, o->etag ? mti_strdup(o->etag) : NULL};
	return o->etag && !c->etag ? MT_ENOMEM : 0;
}

static int collect_version(void *ud, const mt_obj *o)
{
	struct version_list *vl = ud;
	const char *name = o->key + vl->prefix_len;
	size_t len = strlen(name);
	if (strchr(name, '/'))
		return 0;
	if (ends_with(name, len, TOMBSTONE_EXT))
		return strv_push(&vl->removed, name, len - strlen(TOMBSTONE_EXT));
	if (is_mark(name, len))
		return strv_push(&vl->marks, name, len);
	if (!ends_with(name, len, MANIFEST_EXT))
		return 0;
	char *n = strndup(name, len - strlen(MANIFEST_EXT));
	if (!n)
		return MT_ENOMEM;
	int readable = readable_version(n);
	int rc = readable ? strv_push(&vl->l, n, strlen(n))
			  : strv_push(&vl->stray, o->key, strlen(o->key));
	free(n);
	if (!rc && readable && vl->want_objs)
		rc = listed_push(vl, o);
	return rc;
}

static void version_list_free(struct version_list *vl)
{
	mt_strv_free(vl->l.v, vl->l.n);
	mt_strv_free(vl->removed.v, vl->removed.n);
	mt_strv_free(vl->stray.v, vl->stray.n);
	mt_strv_free(vl->marks.v, vl->marks.n);
	for (size_t i = 0; i < vl->nobjs; i++)
		free(vl->objs[i].etag);
	free(vl->objs);
	*vl = (struct version_list){0};
}

/* Manifests and tombstones of a dataset, in key order. */
static int version_scan(mt_store *s, const char *dataset, int want_objs, struct version_list *out,
			mt_error *err)
{
	*out = (struct version_list){.want_objs = want_objs};
	int rc = mt_name_check(dataset, "dataset", err);
	if (rc)
		return rc;
	char *prefix = mti_asprintf("datasets/%s" VERSIONS_DIR, dataset);
	if (!prefix)
		return mti_err(err, MT_ENOMEM, "out of memory");
	out->prefix_len = strlen(prefix);
	rc = mti_store_list_all(s, prefix, collect_version, out, err);
	free(prefix);
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "dataset %s: listing versions: out of memory", dataset);
	if (rc)
		version_list_free(out);
	return rc;
}

/* "v10" sorts after "v9": compare digit runs by value. */
static int natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			while (*a == '0')
				a++;
			while (*b == '0')
				b++;
			size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
			if (la != lb)
				return la < lb ? -1 : 1;
			int c = strncmp(a, b, la);
			if (c)
				return c;
			a += la;
			b += lb;
		} else {
			if (*a != *b)
				return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
			a++;
			b++;
		}
	}
	return *a ? 1 : *b ? -1 : 0;
}

/* A version's metadata object as read beside its manifest: data NULL and rc
 * MT_ENOTFOUND when it has none. */
struct meta_read {
	char *key;
	void *data;
	size_t len;
	int rc;
	mt_error err;
};

static void meta_read_free(struct meta_read *r)
{
	free(r->key);
	free(r->data);
	*r = (struct meta_read){0};
}

static int load_manifest(mt_store *s, const char *dataset, const char *version, mt_manifest **m,
			 char **json, mt_error *err);

/* The bytes of key, the manifest of dataset@version: decoded and checked
 * (its checksum, and that it names that version), and with json its text.
 * On failure *m stays NULL. */
static int manifest_from_bytes(const void *data, size_t len, const char *key, const char *dataset,
			       const char *version, mt_manifest **m, char **json, mt_error *err)
{
	int rc = mti_manifest_decode(data, len, key, m, err);
	if (!rc && (strcmp((*m)->dataset, dataset) != 0 || strcmp((*m)->version, version) != 0))
		rc = mti_err(err, MT_ECORRUPT, "%s: names %s@%s, not %s@%s", key, (*m)->dataset,
			    (*m)->version, dataset, version);
	if (!rc && json && !(*json = strndup(data, len)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (rc) {
		mti_manifest_free(*m);
		*m = NULL;
	}
	return rc;
}

/* The two reads of load_named: job 0 the manifest, job 1 the metadata object. */
struct named_load {
	mt_store *s;
	const char *dataset, *version;
	mt_manifest **m;
	char **json;
	mt_error *err;
	struct meta_read *meta;
	int rc;
};

/* dataset@version's metadata object into r (see struct meta_read). */
static void meta_load(mt_store *s, const char *dataset, const char *version, struct meta_read *r)
{
	meta_read_free(r);
	if (!(r->key = mti_key_meta(dataset, version)))
		r->rc = mti_err(&r->err, MT_ENOMEM, "out of memory");
	else
		r->rc = mti_store_get_max(s, r->key, MT_META_MAX_BYTES, &r->data, &r->len, &r->err);
}

static int named_load_job(void *ud, size_t i)
{
	struct named_load *j = ud;
	if (i == 0)
		j->rc = load_manifest(j->s, j->dataset, j->version, j->m, j->json, j->err);
	else
		meta_load(j->s, j->dataset, j->version, j->meta);
	return 0;
}

/* dataset@version's manifest, and with meta its metadata object too: the
 * two requests go out at once, since on a store far away each costs a
 * round trip and neither needs the other. */
static int load_named(mt_store *s, const char *dataset, const char *version, mt_manifest **m,
		      char **json, struct meta_read *meta, mt_error *err)
{
	if (!meta)
		return load_manifest(s, dataset, version, m, json, err);
	meta_read_free(meta);
	struct named_load j = {s, dataset, version, m, json, err, meta, 0};
	mti_parallel_for(2, 2, named_load_job, &j);
	return j.rc;
}

struct dated {
	char *name;
	char *created;
	int marked; /* created comes from the version's marker */
	size_t li;  /* its place in the listing (version_list.l) */
};

static int dated_cmp(const void *x, const void *y)
{
	const struct dated *a = x, *b = y;
	int c = strcmp(a->created, b->created);
	return c ? c : natural_cmp(a->name, b->name);
}

static void dated_free(struct dated *d, size_t n)
{
	for (size_t i = 0; d && i < n; i++) {
		free(d[i].name);
		free(d[i].created);
	}
	free(d);
}

/* A version's marker as the listing gave it: the name is the key's start. */
struct mark {
	const char *key;
	size_t vlen;
};

static int mark_cmp(const void *x, const void *y)
{
	const struct mark *a = x, *b = y;
	size_t n = a->vlen < b->vlen ? a->vlen : b->vlen;
	int c = strncmp(a->key, b->key, n);
	return c ? c : a->vlen < b->vlen ? -1 : a->vlen > b->vlen;
}

/* The creation time the markers give `name`, into created: 0, or -1 unless
 * exactly one marker names it (none: an older writer or another tool made
 * it; two: a create that lost its race left its marker). */
static int mark_find(const struct mark *m, size_t n, const char *name, char created[25])
{
	struct mark k = {name, strlen(name)};
	const struct mark *hit = n ? bsearch(&k, m, n, sizeof *m, mark_cmp) : NULL;
	if (!hit || (hit > m && !mark_cmp(hit - 1, hit)) || (hit + 1 < m + n && !mark_cmp(hit + 1, hit)))
		return -1;
	return created_of(hit->key + hit->vlen + strlen(MARK_SEP), created);
}

/* d[i] for version `name`: its created time from its marker when use_marks
 * and it has one, else from its manifest.  1: the manifest went between
 * the listing and the read (not a version now). */
static int dated_fill(mt_store *s, const char *dataset, const char *name, const struct mark *m,
		      size_t nm, struct dated *d, mt_error *err)
{
	char created[25];
	if (m && !mark_find(m, nm, name, created)) {
		d->marked = 1;
		d->created = mti_strdup(created);
	} else {
		mt_manifest *man = NULL;
		mt_error e = {0};
		int rc = mti_dataset_load(s, dataset, name, &man, NULL, &e);
		if (rc == MT_ENOTFOUND)
			return 1;
		if (rc)
			return mti_err_copy(err, &e);
		d->created = mti_strdup(man->created);
		mti_manifest_free(man);
	}
	if (!d->created || !(d->name = mti_strdup(name)))
		return mti_err(err, MT_ENOMEM, "out of memory");
	return 0;
}

/* The newest version's manifest as read to confirm its marker, kept for a
 * caller that wants the latest anyway: on S3 that saves a GET.  On a store
 * far away the head object (doc/FORMAT.md, "Head") is read alongside the
 * listing, and when it holds the very bytes listed for the newest manifest
 * it serves as that manifest: the latest in one round trip. */
struct newest {
	mt_manifest *m;
	char *json;
	struct meta_read *meta; /* when not NULL, the version's metadata object read alongside */
	int want_head;          /* read the head with the listing (once) */
	void *head;             /* what was read of it, NULL: none */
	size_t head_len;
	mt_obj listed;          /* the newest manifest as listed (key NULL) */
};

static void newest_free(struct newest *k)
{
	mti_manifest_free(k->m);
	free(k->json);
	free(k->head);
	free(k->listed.etag);
}

/* The listing of version_scan and the head object, requested at once. */
struct head_scan {
	mt_store *s;
	const char *dataset;
	struct version_list *vl;
	struct newest *keep;
	mt_error *err;
	int rc;
};

static int head_scan_job(void *ud, size_t i)
{
	struct head_scan *j = ud;
	if (i == 0) {
		j->rc = version_scan(j->s, j->dataset, 1, j->vl, j->err);
		return 0;
	}
	head_read(j->s, j->dataset, &j->keep->head, &j->keep->head_len);
	return 0;
}

static int scan_with_head(mt_store *s, const char *dataset, struct version_list *vl,
			  struct newest *keep, mt_error *err)
{
	keep->want_head = 0;
	struct head_scan j = {s, dataset, vl, keep, err, 0};
	mti_parallel_for(2, 2, head_scan_job, &j);
	return j.rc;
}

/* Versions oldest first: the manifests' creation times decide, names
 * break ties.  With use_marks, the order markers say them where they can,
 * and only the manifests of unmarked versions are read. */
static int versions_dated(mt_store *s, const char *dataset, int use_marks, struct newest *keep,
			  struct dated **out, size_t *n, mt_error *err)
{
	struct version_list vl;
	int rc = keep && keep->want_head ? scan_with_head(s, dataset, &vl, keep, err)
					 : version_scan(s, dataset, 0, &vl, err);
	if (rc)
		return rc;
	struct dated *d = calloc(vl.l.n ? vl.l.n : 1, sizeof *d);
	struct mark *m = use_marks ? calloc(vl.marks.n ? vl.marks.n : 1, sizeof *m) : NULL;
	if (!d || (use_marks && !m))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && use_marks && i < vl.marks.n; i++)
		m[i] = (struct mark){vl.marks.v[i],
				     strlen(vl.marks.v[i]) - STAMP_LEN - strlen(MARK_SEP)};
	if (m)
		qsort(m, vl.marks.n, sizeof *m, mark_cmp);
	size_t kept = 0;
	for (size_t i = 0; !rc && i < vl.l.n; i++) {
		rc = dated_fill(s, dataset, vl.l.v[i], m, vl.marks.n, &d[kept], err);
		d[kept].li = i;
		kept += rc == 0;
		rc = rc == 1 ? 0 : rc;
	}
	free(m);
	if (rc) {
		version_list_free(&vl);
		dated_free(d, kept + 1);
		return rc;
	}
	qsort(d, kept, sizeof *d, dated_cmp);
	/* The newest manifest as listed, for the head to be checked against. */
	if (kept && vl.nobjs == vl.l.n && keep) {
		free(keep->listed.etag);
		keep->listed = vl.objs[d[kept - 1].li];
		vl.objs[d[kept - 1].li].etag = NULL;
	}
	version_list_free(&vl);
	*out = d;
	*n = kept;
	return 0;
}

/* The head as dataset@version's manifest, when the listing says the manifest
 * holds exactly the head's bytes: 0 (with the metadata object read now when
 * keep asks for it), or 1 when the manifest must be read. */
static int head_load(mt_store *s, const char *dataset, const char *version, struct newest *keep,
		     mt_manifest **m, char **json)
{
	if (!keep->head || !mti_store_listed_holds(s, &keep->listed, keep->head, keep->head_len))
		return 1;
	char *key = mti_key_manifest(dataset, version);
	mt_error e = {0};
	/* A failure here is read again by name, which reports it. */
	int rc = key ? manifest_from_bytes(keep->head, keep->head_len, key, dataset, version, m,
					   json, &e)
		     : MT_ENOMEM;
	free(key);
	if (rc)
		return 1;
	if (keep->meta)
		meta_load(s, dataset, version, keep->meta);
	return 0;
}

/* Whether the newest of d, placed there by its marker, was created when the
 * marker says: 1 yes (or it has no marker), 0 no, or an error.  With keep,
 * a confirmed newest manifest goes there. */
static int newest_confirmed(mt_store *s, const char *dataset, const struct dated *d, size_t n,
			    struct newest *keep, mt_error *err)
{
	if (!n || !d[n - 1].marked)
		return 1;
	mt_manifest *m = NULL;
	char *json = NULL;
	mt_error e = {0};
	int rc = keep ? head_load(s, dataset, d[n - 1].name, keep, &m, &json) : 1;
	if (rc)
		rc = load_named(s, dataset, d[n - 1].name, &m, keep ? &json : NULL,
				keep ? keep->meta : NULL, &e);
	if (rc == MT_ENOTFOUND)
		return 0; /* gone since the listing: the next look finds the order */
	if (rc)
		return mti_err_copy(err, &e);
	rc = !strcmp(m->created, d[n - 1].created);
	if (rc && keep) {
		keep->m = m;
		keep->json = json;
		return rc;
	}
	mti_manifest_free(m);
	free(json);
	return rc;
}

/* Version names oldest first (see versions_dated).  The newest is checked
 * against its manifest: a marker that disagrees with it (edited, or a tool
 * that wrote it wrong) sends the order back to every manifest, so "latest"
 * never rests on a marker alone. */
static int versions_by_age(mt_store *s, const char *dataset, int use_marks, struct strv *out,
			   struct newest *keep, mt_error *err)
{
	struct dated *d;
	size_t n;
	int rc = versions_dated(s, dataset, use_marks, keep, &d, &n, err);
	if (rc)
		return rc;
	int ok = use_marks ? newest_confirmed(s, dataset, d, n, keep, err) : 1;
	if (ok != 1) {
		dated_free(d, n);
		return ok < 0 ? ok : versions_by_age(s, dataset, 0, out, keep, err);
	}
	out->v = calloc(n ? n : 1, sizeof *out->v);
	if (!out->v) {
		dated_free(d, n);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		out->v[i] = d[i].name;
		d[i].name = NULL;
	}
	out->n = n;
	dated_free(d, n);
	return 0;
}

int mt_store_versions(mt_store *s, const char *dataset, char ***versions, size_t *n,
		      mt_error *err)
{
	struct strv l = {0};
	int rc = versions_by_age(s, dataset, 1, &l, NULL, err);
	if (rc)
		return rc;
	if (l.n == 0) {
		free(l.v);
		return mti_err(err, MT_ENOTFOUND, "dataset %s: no such dataset in %s", dataset,
			      mt_store_url(s));
	}
	*versions = l.v;
	*n = l.n;
	return 0;
}

/* The latest version: its manifest as read to confirm the order, or read now. */
static int load_latest(mt_store *s, const char *dataset, mt_manifest **m, char **json,
		       struct meta_read *meta, mt_error *err)
{
	struct strv l = {0};
	struct newest kept = {.meta = meta, .want_head = s->ops->far};
	int rc = versions_by_age(s, dataset, 1, &l, &kept, err);
	if (!rc && l.n == 0)
		rc = mti_err(err, MT_ENOTFOUND, "dataset %s: no such dataset in %s", dataset,
			     mt_store_url(s));
	if (!rc && kept.m && !strcmp(kept.m->version, l.v[l.n - 1])) {
		*m = kept.m;
		kept.m = NULL;
		if (json) {
			*json = kept.json;
			kept.json = NULL;
		}
	} else if (!rc) {
		rc = load_named(s, dataset, l.v[l.n - 1], m, json, meta, err);
	}
	newest_free(&kept);
	mt_strv_free(l.v, l.n);
	return rc;
}

/* Every fragment of a format-2 *m, which is freed (with *json) when one
 * cannot be loaded. */
static int load_frags(mt_store *s, mt_manifest **m, char **json, mt_error *err)
{
	int rc = mti_manifest_load_frags(*m, 0, (*m)->nfrags, mti_store_get_fn, s, err);
	if (rc) {
		mti_manifest_free(*m);
		*m = NULL;
		if (json) {
			free(*json);
			*json = NULL;
		}
	}
	return rc;
}

int mti_dataset_load(mt_store *s, const char *dataset, const char *version, mt_manifest **m,
		    char **json, mt_error *err)
{
	*m = NULL;
	if (json)
		*json = NULL;
	int rc = mt_name_check(dataset, "dataset", err);
	if (rc)
		return rc;
	if (!version || !*version || strcmp(version, "latest") == 0)
		rc = load_latest(s, dataset, m, json, NULL, err);
	else
		rc = load_named(s, dataset, version, m, json, NULL, err);
	if (!rc)
		rc = load_frags(s, m, json, err);
	return rc;
}

/* dataset@version's manifest (load_named without its metadata object). */
static int load_manifest(mt_store *s, const char *dataset, const char *version, mt_manifest **m,
			 char **json, mt_error *err)
{
	*m = NULL;
	if (json)
		*json = NULL;
	int rc = mt_name_check(version, "version", err);
	if (rc)
		return rc;
	char *key = mti_key_manifest(dataset, version);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	void *data = NULL;
	size_t len = 0;
	rc = mti_store_get_max(s, key, MT_MANIFEST_MAX_BYTES, &data, &len, err);
	if (rc == MT_ENOTFOUND)
		rc = mti_err(err, rc, "%s@%s: no such version in %s", dataset, version,
			    mt_store_url(s));
	if (!rc)
		rc = manifest_from_bytes(data, len, key, dataset, version, m, json, err);
	free(data);
	free(key);
	return rc;
}

int mti_dataset_open(mt_store *s, const char *dataset, const char *version, int with_meta,
		    mt_manifest **m, char **json, mt_error *err)
{
	*m = NULL;
	if (json)
		*json = NULL;
	struct meta_read meta = {0}, *mp = with_meta & MTI_OPEN_META ? &meta : NULL;
	int rc = mt_name_check(dataset, "dataset", err);
	if (!rc && (!version || !*version || strcmp(version, "latest") == 0))
		rc = load_latest(s, dataset, m, json, mp, err);
	else if (!rc)
		rc = load_named(s, dataset, version, m, json, mp, err);
	/* No metadata object is the usual case, not an error. */
	if (!rc && meta.rc && meta.rc != MT_ENOTFOUND)
		rc = mti_err_copy(err, &meta.err);
	else if (!rc && meta.data)
		rc = mti_meta_apply(*m, meta.data, meta.len, meta.key, err);
	if (!rc && !(with_meta & MTI_OPEN_LAZY))
		rc = mti_manifest_load_frags(*m, 0, (*m)->nfrags, mti_store_get_fn, s, err);
	meta_read_free(&meta);
	if (rc) {
		mti_manifest_free(*m);
		*m = NULL;
		if (json) {
			free(*json);
			*json = NULL;
		}
	}
	return rc;
}

int mt_store_set_metadata(mt_store *s, const char *dataset, const char *version,
			  const char *description, const char *const *tags, size_t ntags,
			  mt_error *err)
{
	if (!description || (ntags && !tags))
		return mti_err(err, MT_EINVAL, "%s@%s: metadata needs a description and tags",
			      dataset, version);
	for (size_t i = 0; i < ntags; i++)
		if (!tags[i] || !tags[i][0])
			return mti_err(err, MT_EINVAL, "%s@%s: tag %zu is empty", dataset,
				      version, i + 1);
	/* Only an existing version gets metadata: the manifest says so. */
	mt_manifest *m = NULL;
	int rc = mti_dataset_load(s, dataset, version, &m, NULL, err);
	if (rc)
		return rc;
	char *now = mti_now_rfc3339(), *json = NULL, *key = mti_key_meta(dataset, version);
	if (!now || !key)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_meta_encode(m, now, description, tags, ntags, &json, err);
	/* A gc that listed the manifests before this version existed must not
	 * take its new metadata object for garbage. */
	mt_dlock *lock = NULL;
	if (!rc)
		rc = mti_dlock_open(s, dataset, MT_LOCK_WRITE, &lock, err);
	if (!rc)
		rc = mti_dlock_pin_keys(lock, (const char *const *)&key, 1, err);
	if (!rc)
		rc = mti_dlock_wait_gc(lock, err);
	if (!rc)
		rc = mti_store_put(s, key, json, strlen(json), 0, err);
	mti_dlock_close(lock);
	free(json);
	free(key);
	free(now);
	mti_manifest_free(m);
	return rc;
}

/* The next automatic name after every name used: versions, stray
 * manifests and tombstones alike, so a removed name is never reused. */
static int next_auto_name(const struct version_list *vl, char **out, mt_error *err)
{
	uint64_t max = 0, k;
	const struct strv *lists[] = {&vl->l, &vl->removed};
	for (size_t j = 0; j < 2; j++)
		for (size_t i = 0; i < lists[j]->n; i++)
			if (mti_version_auto_number(lists[j]->v[i], &k) && k > max)
				max = k;
	if (max >= MT_VERSION_MAX)
		return mti_err(err, MT_ERANGE, "no automatic version name is left after v%llu",
			      (unsigned long long)max);
	*out = mti_asprintf("v%llu", (unsigned long long)(max + 1));
	return *out ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
}

int mti_dataset_next_version(mt_store *s, const char *dataset, char **out, mt_error *err)
{
	struct version_list vl;
	int rc = version_scan(s, dataset, 0, &vl, err);
	if (rc)
		return rc;
	rc = next_auto_name(&vl, out, err);
	version_list_free(&vl);
	return rc;
}

static char *tombstone_key(const char *dataset, const char *version)
{
	return mti_asprintf("datasets/%s" VERSIONS_DIR "%s" TOMBSTONE_EXT, dataset, version);
}

int mti_dataset_removed(mt_store *s, const char *dataset, const char *version, mt_error *err)
{
	char *key = tombstone_key(dataset, version);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	mt_error e = {0};
	int rc = mti_store_head(s, key, NULL, NULL, &e);
	free(key);
	if (rc == MT_ENOTFOUND)
		return 0;
	if (rc)
		return mti_err_copy(err, &e);
	return mti_err(err, MT_EEXIST, "%s@%s was removed from %s; a removed version's name is "
		      "never used again (choose another name)", dataset, version, mt_store_url(s));
}

/* The tombstone goes before the manifest goes: at every moment the name is
 * taken by one or the other, so automatic numbering never hands it out. */
static int write_tombstone(mt_store *s, const char *dataset, const char *version, mt_error *err)
{
	char *key = tombstone_key(dataset, version), *now = mti_now_rfc3339();
	char *body = key && now ? mti_asprintf("{\"format\":1,\"dataset\":\"%s\",\"version\":"
					      "\"%s\",\"removed\":\"%s\"}", dataset, version, now)
				: NULL;
	int rc = body ? mti_store_put(s, key, body, strlen(body), 0, err)
		      : mti_err(err, MT_ENOMEM, "out of memory");
	free(body);
	free(now);
	free(key);
	return rc;
}

struct unmark {
	struct strv keys;
	size_t prefix_len;
};

static int collect_unmark(void *ud, const mt_obj *o)
{
	struct unmark *u = ud;
	const char *stamp = o->key + u->prefix_len;
	char created[25];
	return created_of(stamp, created) ? 0 : strv_push(&u->keys, o->key, strlen(o->key));
}

/* The order markers of a version whose manifest went: nothing orders it now. */
static int unmark_all(mt_store *s, const char *dataset, const char *version, mt_error *err)
{
	struct unmark u = {0};
	char *prefix = mti_asprintf("datasets/%s" VERSIONS_DIR "%s" MARK_SEP, dataset, version);
	if (!prefix)
		return mti_err(err, MT_ENOMEM, "out of memory");
	u.prefix_len = strlen(prefix);
	int rc = mti_store_list_all(s, prefix, collect_unmark, &u, err);
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "out of memory");
	if (!rc && u.keys.n)
		rc = mti_store_del(s, (const char *const *)u.keys.v, u.keys.n, err);
	mt_strv_free(u.keys.v, u.keys.n);
	free(prefix);
	return rc;
}

int mt_store_delete_version(mt_store *s, const char *dataset, const char *version,
			    mt_error *err)
{
	int rc = mt_name_check(dataset, "dataset", err);
	if (!rc)
		rc = mt_name_check(version, "version", err);
	if (rc)
		return rc;
	char *key = mti_key_manifest(dataset, version);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	rc = mti_store_head(s, key, NULL, NULL, err);
	if (rc == MT_ENOTFOUND && !readable_version(version))
		rc = mti_err(err, rc, "%s@%s: '%s' names no version (the newest must be named to "
			    "be removed)", dataset, version, version);
	else if (rc == MT_ENOTFOUND)
		rc = mti_err(err, rc, "%s@%s: no such version in %s", dataset, version,
			    mt_store_url(s));
	/* A stray manifest under a name no reader resolves is removed as it
	 * is: no tombstone keeps a name nothing can take. */
	if (!rc && readable_version(version))
		rc = write_tombstone(s, dataset, version, err);
	/* The manifest goes before its metadata: a failure after it leaves only
	 * metadata of no version, which nothing reads. */
	if (!rc)
		rc = mti_store_del(s, (const char *const *)&key, 1, err);
	free(key);
	if (!rc)
		rc = unmark_all(s, dataset, version, err);
	if (rc)
		return rc;
	head_forget(s, dataset, version);
	/* The protection record goes last: while it is there without its
	 * manifest, the tombstone already says the version is gone. */
	char *keys[2] = {mti_key_meta(dataset, version), mti_key_protect(dataset, version)};
	rc = keys[0] && keys[1] ? mti_store_del(s, (const char *const *)keys, 2, err)
				: mti_err(err, MT_ENOMEM, "out of memory");
	free(keys[0]);
	free(keys[1]);
	return rc;
}

/* ---- garbage collection ------------------------------------------------- */

struct gc_state {
	mt_store *s;
	uint64_t grace;
	struct strv referenced; /* sorted keys versions use */
	struct strv doomed;
	const mt_pins *pins;
	int keep_parity; /* a record could not be read: every parity object stays */
	int64_t cutoff; /* objects at least this old may go (the store's clock) */
	int64_t now;    /* the store's clock when the pins were read */
	uint64_t nobjects, nbytes;
	mt_gc_fn fn;
	void *ud;
	const char *staged_dataset; /* gc_mark_staged's, for its callback */
	mt_error staged_err;
	const char *kind; /* the directory listed (gc_own_name), NULL: names checked by the caller */
	size_t kind_off;  /* where a listed key's name below it starts */
	mt_mfrag *seen;   /* fragments loaded for an earlier version, by mti_frag_cmp */
	size_t nseen;
};

/* Whether n bytes at p are lowercase hex digits (a sha256 name's). */
static int gc_hex(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	return 1;
}

/* Whether [p, p + n) is a name as dataset, version and staged ids are. */
static int gc_plain_name(const char *p, size_t n)
{
	if (n == 0 || n > 128 || p[0] == '.' || p[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)p[i]) && !strchr("._-", p[i]))
			return 0;
	return 1;
}

/* Whether name (the key below datasets/<dataset>/<kind>/) has a form gc's
 * own writers give there (doc/FORMAT.md, "Object layout"): anything else in
 * those directories was put there by someone else, and gc leaves it. */
static int gc_own_name(const char *kind, const char *name)
{
	size_t n = strlen(name);
	const char *ext = !strcmp(kind, "shards") ? ".h5" : !strcmp(kind, "recipes") ? ".lua"
			  : !strcmp(kind, "parity") || !strcmp(kind, "attachments") ? ""
			  : !strcmp(kind, "fragments") ? ".json" : NULL;
	if (ext)
		return n == 64 + strlen(ext) && gc_hex(name, 64) && !strcmp(name + 64, ext);
	if (n <= strlen(MANIFEST_EXT) || !ends_with(name, n, MANIFEST_EXT))
		return 0;
	n -= strlen(MANIFEST_EXT);
	if (strcmp(kind, "staged"))
		return !memchr(name, '/', n) && gc_plain_name(name, n);
	/* staged/<id>/<k>.json */
	const char *slash = memchr(name, '/', n);
	if (!slash || !gc_plain_name(name, (size_t)(slash - name)))
		return 0;
	size_t kd = n - (size_t)(slash + 1 - name);
	return kd > 0 && kd <= 20 && strspn(slash + 1, "0123456789") == kd && slash[1] != '0';
}

static int gc_consider(void *ud, const mt_obj *o)
{
	struct gc_state *g = ud;
	const char *k = o->key;
	if (g->kind && !gc_own_name(g->kind, k + g->kind_off))
		return 0;
	if (!mti_gc_may_delete(o, g->referenced.v, g->referenced.n, g->cutoff, g->pins))
		return 0;
	g->nobjects++;
	g->nbytes += o->size;
	if (g->fn)
		g->fn(g->ud, o->key, o->size);
	return strv_push(&g->doomed, k, strlen(k));
}

/* Under versions/, only order markers are ever candidates. */
static int gc_consider_mark(void *ud, const mt_obj *o)
{
	const char *name = strrchr(o->key, '/');
	name = name ? name + 1 : o->key;
	return is_mark(name, strlen(name)) ? gc_consider(ud, o) : 0;
}

/* What one version uses: its fragments, attachments, shards, recipe,
 * edited metadata. */
static int gc_reference(struct gc_state *g, const mt_manifest *m, const char *name, mt_error *err)
{
	for (size_t k = 0; k < m->nfrags + m->nattachments; k++) {
		char *key = k < m->nfrags ? mti_key_fragment(m->dataset, m->frags[k].sha256)
			    : mti_key_attachment(m->dataset, m->attachments[k - m->nfrags].sha256);
		if (!key || strv_push(&g->referenced, key, strlen(key))) {
			free(key);
			return mti_err(err, MT_ENOMEM, "out of memory");
		}
		free(key);
	}
	size_t f = 0;
	for (size_t k = 0; k < m->nshards + 2; k++) {
		char *key;
		/* A fragment left unloaded was loaded for another version, whose
		 * shards are those it names. */
		while (f < m->nfrags && k >= m->frags[f].first_shard + m->frags[f].nshards)
			f++;
		if (k < m->nshards && f < m->nfrags && !m->frags[f].loaded) {
			k = m->frags[f].first_shard + m->frags[f].nshards - 1;
			continue;
		}
		if (k < m->nshards)
			key = mti_key_shard(m->dataset, m->shards[k].sha256);
		else if (k == m->nshards)
			key = mti_key_meta(m->dataset, name);
		else if (m->recipe[0])
			key = mti_key_recipe(m->dataset, m->recipe);
		else
			break;
		if (!key || strv_push(&g->referenced, key, strlen(key))) {
			free(key);
			return mti_err(err, MT_ENOMEM, "out of memory");
		}
		free(key);
	}
	return 0;
}

static int gc_frag_cmp(const void *a, const void *b)
{
	return mti_frag_cmp(a, b);
}

/* The fragments of m (opened lazily) that no version read before names as
 * m's root does: several versions share fragments, and a fragment's shards
 * are referenced once.  Each loaded one is checked as every load checks it;
 * one that fails makes gc refuse, as before. */
static int gc_load_unseen(struct gc_state *g, mt_manifest *m, mt_error *err)
{
	int rc = 0;
	size_t added = 0;
	for (size_t f = 0; !rc && f < m->nfrags; f++) {
		if (g->nseen && bsearch(&m->frags[f], g->seen, g->nseen, sizeof *g->seen, gc_frag_cmp))
			continue;
		size_t e = f + 1;
		while (e < m->nfrags &&
		       !(g->nseen && bsearch(&m->frags[e], g->seen, g->nseen, sizeof *g->seen,
					     gc_frag_cmp)))
			e++;
		rc = mti_manifest_load_frags(m, f, e, mti_store_get_fn, g->s, err);
		added += e - f;
		f = e;
	}
	mt_mfrag *v = rc || !added ? NULL : realloc(g->seen, (g->nseen + added) * sizeof *v);
	if (!rc && added && !v)
		return mti_err(err, MT_ENOMEM, "out of memory");
	if (!v)
		return rc;
	g->seen = v;
	for (size_t f = 0; f < m->nfrags; f++)
		if (m->frags[f].loaded)
			g->seen[g->nseen++] = m->frags[f];
	/* Sorted, for the look-ups of the versions after it. */
	qsort(g->seen, g->nseen, sizeof *g->seen, gc_frag_cmp);
	return 0;
}

/* A manifest under a name readers do not resolve still names shards
 * someone may want: keep them until it is removed. */
static int gc_reference_stray(struct gc_state *g, const char *dataset, const char *key,
			      mt_error *err)
{
	void *data = NULL;
	size_t len = 0;
	mt_manifest *m = NULL;
	int rc = mti_store_get_max(g->s, key, MT_MANIFEST_MAX_BYTES, &data, &len, err);
	if (!rc)
		rc = mti_manifest_decode(data, len, key, &m, err);
	free(data);
	if (!rc && strcmp(m->dataset, dataset) != 0)
		rc = mti_err(err, MT_ECORRUPT, "%s: names dataset %s", key, m->dataset);
	/* A stray root's fragments must load: their shards are kept too. */
	if (!rc)
		rc = mti_manifest_load_frags(m, 0, m->nfrags, mti_store_get_fn, g->s, err);
	if (!rc)
		rc = gc_reference(g, m, m->version, err);
	mti_manifest_free(m);
	return rc == MT_ENOTFOUND ? 0 : rc;
}

static int gc_push(struct gc_state *g, char *key, mt_error *err)
{
	int rc = key ? strv_push(&g->referenced, key, strlen(key)) : MT_ENOMEM;
	free(key);
	return rc ? mti_err(err, MT_ENOMEM, "out of memory") : 0;
}

/* A version's protection record and the parity objects it names; for a
 * version whose manifest is gone without a tombstone (`orphan`), what its
 * embedded manifest names too, so repair can bring the version back.  A
 * record that cannot be read keeps every parity object; an orphan's keeps
 * gc from running, as an unreadable manifest does. */
static int gc_reference_protection(struct gc_state *g, const char *dataset, const char *version,
				   int orphan, mt_error *err)
{
	mti_prec *p = NULL;
	mt_error e = {0};
	int rc = mti_prec_load(g->s, dataset, version, &p, &e);
	if (rc == MT_ENOTFOUND)
		return 0;
	if (rc && (orphan || rc == MT_ENOMEM))
		return mti_err_copy(err, &e);
	rc = gc_push(g, mti_key_protect(dataset, version), err);
	if (!p) {
		g->keep_parity = 1;
		return rc;
	}
	for (size_t i = 0; !rc && i < mti_prec_nparity(p); i++)
		rc = gc_push(g, mti_key_parity(dataset, mti_prec_parity(p, i)->sha256), err);
	mt_manifest *m = NULL;
	if (!rc && orphan && !(rc = mti_manifest_decode(p->manifest, p->manifest_len, version, &m,
							err)) &&
	    !(rc = mti_manifest_load_frags(m, 0, m->nfrags, mti_store_get_fn, g->s, err)))
		rc = gc_reference(g, m, version, err);
	mti_manifest_free(m);
	mti_prec_free(p);
	return rc;
}

static int gc_has(const struct strv *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], name))
			return 1;
	return 0;
}

static int gc_collect_record(void *ud, const mt_obj *o)
{
	struct strv *l = ud;
	const char *name = strrchr(o->key, '/') + 1;
	size_t len = strlen(name);
	return ends_with(name, len, MANIFEST_EXT)
		       ? strv_push(l, name, len - strlen(MANIFEST_EXT)) : 0;
}

/* The protection of every version that has a manifest, and of every version
 * whose manifest went without a tombstone saying it was removed. */
static int gc_mark_protection(struct gc_state *g, const char *dataset,
			      const struct version_list *vl, mt_error *err)
{
	struct strv recs = {0};
	char *prefix = mti_asprintf("datasets/%s/protect/", dataset);
	int rc = prefix ? mti_store_list_all(g->s, prefix, gc_collect_record, &recs, err)
			: MT_ENOMEM;
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "out of memory");
	for (size_t i = 0; !rc && i < recs.n; i++) {
		const char *v = recs.v[i];
		if (gc_has(&vl->l, v))
			rc = gc_reference_protection(g, dataset, v, 0, err);
		else if (!gc_has(&vl->removed, v) && !mt_name_check(v, "version", NULL))
			rc = gc_reference_protection(g, dataset, v, 1, err);
	}
	mt_strv_free(recs.v, recs.n);
	free(prefix);
	return rc;
}

/* The order markers of versions that have a manifest stay; one of no
 * version (its create lost, or its writer died before it) is garbage. */
static int gc_reference_marks(struct gc_state *g, const char *dataset, struct version_list *vl,
			      mt_error *err)
{
	if (vl->l.n)
		qsort(vl->l.v, vl->l.n, sizeof(char *), mti_strp_cmp);
	int rc = 0;
	for (size_t i = 0; !rc && i < vl->marks.n; i++) {
		const char *mk = vl->marks.v[i];
		char *v = strndup(mk, strlen(mk) - STAMP_LEN - strlen(MARK_SEP));
		if (!v)
			return mti_err(err, MT_ENOMEM, "out of memory");
		if (vl->l.n && bsearch(&v, vl->l.v, vl->l.n, sizeof(char *), mti_strp_cmp))
			rc = gc_push(g, mti_asprintf("datasets/%s" VERSIONS_DIR "%s", dataset, mk), err);
		free(v);
	}
	return rc;
}

/* A staged part younger than the grace keeps itself and its shards; an
 * older one is left a candidate (gc_dataset lists staged/ with the rest). */
static int gc_staged_one(void *ud, const mt_obj *o)
{
	struct gc_state *g = ud;
	if (o->mtime <= g->cutoff)
		return 0;
	mt_error e = {0};
	int rc = strv_push(&g->referenced, o->key, strlen(o->key)) ? MT_ENOMEM
		: gc_reference_stray(g, g->staged_dataset, o->key, &e);
	/* An unreadable young record: keep everything (refuse) rather than guess. */
	if (rc) {
		g->staged_err = e;
		if (!e.code)
			g->staged_err.code = rc;
	}
	return rc;
}

static int gc_mark_staged(struct gc_state *g, const char *dataset, mt_error *err)
{
	char *prefix = mti_asprintf("datasets/%s/staged/", dataset);
	if (!prefix)
		return mti_err(err, MT_ENOMEM, "out of memory");
	g->staged_dataset = dataset;
	g->staged_err = (mt_error){0};
	int rc = mti_store_list_all(g->s, prefix, gc_staged_one, g, err);
	free(prefix);
	if (rc && g->staged_err.code)
		rc = mti_err_copy(err, &g->staged_err);
	return rc;
}

/* The dataset's head stays while the version it copies is listed; one of a
 * removed version (an rm that died before head_forget), or of no version
 * at all, is a candidate like any other object. */
static int gc_reference_head(struct gc_state *g, const char *dataset, const struct version_list *vl,
			     mt_error *err)
{
	char *named = head_version(g->s, dataset);
	int keep = 0;
	for (size_t i = 0; named && !keep && i < vl->l.n; i++)
		keep = !strcmp(vl->l.v[i], named);
	free(named);
	return keep ? gc_push(g, mti_key_head(dataset), err) : 0;
}

/* The head is the one object directly under datasets/<d>/ a listing of its
 * key finds, with any longer key beside it (not ours) left alone. */
static int gc_consider_head(void *ud, const mt_obj *o)
{
	const char *name = strrchr(o->key, '/');
	return name && !strcmp(name, "/head.json") ? gc_consider(ud, o) : 0;
}

/* Everything a version of the dataset or a live writer uses.  Every manifest
 * must load: a shard of an unreadable manifest may still be needed, so gc
 * refuses rather than guesses. */
static int gc_mark(struct gc_state *g, const char *dataset, mt_error *err)
{
	struct version_list vl;
	int rc = version_scan(g->s, dataset, 0, &vl, err);
	for (size_t i = 0; !rc && i < vl.l.n + g->pins->nversions; i++) {
		int pinned = i >= vl.l.n;
		const char *name = pinned ? g->pins->versions[i - vl.l.n] : vl.l.v[i];
		mt_manifest *m = NULL;
		rc = mti_dataset_open(g->s, dataset, name, MTI_OPEN_LAZY, &m, NULL, err);
		if (!rc)
			rc = gc_load_unseen(g, m, err);
		/* Removed while a writer builds on it: which objects it named is
		 * lost with its manifest, and the writer may still name them. */
		if (rc == MT_ENOTFOUND && pinned)
			rc = mti_err(err, MT_ESTATE, "a writer (%s) builds on %s@%s, which was "
				    "removed meanwhile; nothing is deleted until it ends",
				    g->pins->writer ? g->pins->writer : "?", dataset, name);
		if (!rc)
			rc = gc_reference(g, m, name, err);
		mti_manifest_free(m);
	}
	for (size_t i = 0; !rc && i < vl.stray.n; i++)
		rc = gc_reference_stray(g, dataset, vl.stray.v[i], err);
	if (!rc)
		rc = gc_mark_protection(g, dataset, &vl, err);
	if (!rc)
		rc = gc_reference_marks(g, dataset, &vl, err);
	if (!rc)
		rc = gc_mark_staged(g, dataset, err);
	if (!rc)
		rc = gc_reference_head(g, dataset, &vl, err);
	version_list_free(&vl);
	if (rc)
		return mti_err_prefix(err, "gc refused: ");
	if (g->referenced.n)
		qsort(g->referenced.v, g->referenced.n, sizeof(char *), mti_strp_cmp);
	return 0;
}

/* Seconds an unfinished upload is kept at least (see gc_sweep). */
#define SWEEP_MIN_AGE 60

static int gc_sweep(struct gc_state *g, const char *dataset, int dry_run, mt_error *err)
{
	uint64_t n = 0, bytes = 0;
	char *dir = mti_asprintf("datasets/%s/", dataset);
	if (!dir)
		return mti_err(err, MT_ENOMEM, "out of memory");
	/* Never an upload younger than SWEEP_MIN_AGE, whatever the grace: a
	 * writer's lock is itself an upload until it is in place, and one
	 * begun as this gc read the pins is not among them (swept, its rename
	 * failed: "taking a lock: ... rename: No such file or directory"). */
	int64_t before = g->cutoff + 1;
	if (before > g->now - SWEEP_MIN_AGE)
		before = g->now - SWEEP_MIN_AGE;
	int rc = g->s->ops->sweep(g->s, dir, before, dry_run, &n, &bytes, err);
	free(dir);
	g->nobjects += n;
	g->nbytes += bytes;
	return rc;
}

/* One dataset, under a gc lock (doc/FORMAT.md, "Writers and gc"): the
 * lock first, then what live writers pin, then the manifests, then the
 * candidates.  A writer that pinned too late for this gc to see waits for
 * its lock to go before it trusts an object it found. */
static int gc_dataset(struct gc_state *g, const char *dataset, int dry_run, mt_error *err)
{
	mt_dlock *lock = NULL;
	mt_pins pins = {0};
	g->pins = &pins;
	int rc = dry_run ? 0 : mti_dlock_open(g->s, dataset, MT_LOCK_GC, &lock, err);
	if (!rc)
		rc = mti_dlock_pins(g->s, dataset, lock, &pins, err);
	/* Writers of this matorage never need the grace: they pin, or wait
	 * for this gc to end.  It is there for writers that do neither. */
	g->cutoff = pins.now - (int64_t)(g->grace > INT32_MAX ? INT32_MAX : g->grace);
	g->now = pins.now;
	if (!rc)
		rc = gc_mark(g, dataset, err);
	/* parity last: keep_parity leaves it out. */
	static const char *const kinds[] = {"shards", "fragments", "recipes", "attachments",
					    "meta", "staged", "protect", "parity"};
	size_t nkinds = sizeof kinds / sizeof kinds[0] - (g->keep_parity ? 1 : 0);
	for (size_t i = 0; !rc && i < nkinds; i++) {
		char *prefix = mti_asprintf("datasets/%s/%s/", dataset, kinds[i]);
		g->kind = kinds[i];
		g->kind_off = prefix ? strlen(prefix) : 0;
		if (!prefix)
			rc = mti_err(err, MT_ENOMEM, "out of memory");
		else
			rc = mti_store_list_all(g->s, prefix, gc_consider, g, err);
		g->kind = NULL;
		free(prefix);
		if (rc == MT_ENOMEM)
			rc = mti_err(err, rc, "out of memory");
	}
	char *vdir = rc ? NULL : mti_asprintf("datasets/%s" VERSIONS_DIR, dataset);
	if (!rc && !vdir)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_store_list_all(g->s, vdir, gc_consider_mark, g, err);
	free(vdir);
	char *head = rc ? NULL : mti_key_head(dataset);
	if (!rc && !head)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_store_list_all(g->s, head, gc_consider_head, g, err);
	free(head);
	if (!rc && !dry_run && g->doomed.n)
		rc = mti_store_del(g->s, (const char *const *)g->doomed.v, g->doomed.n, err);
	/* Uploads a crashed writer never finished are garbage as well; while a
	 * writer is live, its own may be among them. */
	if (!rc && !pins.writers)
		rc = gc_sweep(g, dataset, dry_run, err);
	if (!rc && !dry_run && pins.ndead)
		rc = mti_store_del(g->s, (const char *const *)pins.dead, pins.ndead, err);
	mti_dlock_close(lock);
	mti_pins_free(&pins);
	g->pins = NULL;
	mt_strv_free(g->referenced.v, g->referenced.n);
	mt_strv_free(g->doomed.v, g->doomed.n);
	g->referenced = (struct strv){0};
	g->doomed = (struct strv){0};
	g->keep_parity = 0;
	free(g->seen);
	g->seen = NULL;
	g->nseen = 0;
	return rc;
}

int mt_store_gc(mt_store *s, const char *dataset, int dry_run, uint64_t grace_seconds,
		mt_gc_fn fn, void *ud, uint64_t *nobjects, uint64_t *nbytes, mt_error *err)
{
	struct gc_state g = {.s = s, .grace = grace_seconds, .fn = fn, .ud = ud};
	int rc = 0, first = 0;
	if (dataset) {
		rc = gc_dataset(&g, dataset, dry_run, err);
	} else {
		/* Datasets whose every put crashed have shards but no manifest. */
		struct strv l = {0};
		rc = list_datasets(s, 0, &l, err);
		/* One dataset's refusal leaves the others to be collected. */
		mt_error e = {0};
		for (size_t i = 0; !rc && i < l.n; i++) {
			int r = gc_dataset(&g, l.v[i], dry_run, &e);
			if (r == MT_ESTATE || r == MT_ECORRUPT || r == MT_EFORMAT) {
				if (!first)
					first = mti_err_copy(err, &e);
			} else if (r) {
				rc = mti_err_copy(err, &e);
			}
		}
		mt_strv_free(l.v, l.n);
	}
	rc = rc ? rc : first;
	if (nobjects)
		*nobjects = g.nobjects;
	if (nbytes)
		*nbytes = g.nbytes;
	return rc;
}
