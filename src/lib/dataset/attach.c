/* attach.c — files attached to a version: the writer's set, the merge with the parent's, reading one back, and attach as a commit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "reader.h"

/* Where name sits in the sorted entries a[0..n), or would be inserted. */
static size_t attach_find(const mt_mattach *a, size_t n, const char *name, int *found)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(a[mid].name, name);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

static int attach_check(const char *dataset, const char *name, size_t len, mt_error *err)
{
	mt_error e = {0};
	if (mt_name_check(name, "attachment", &e))
		return mti_err(err, MT_EINVAL, "dataset %s: %s (an attachment is named like a file "
			      "in one directory: no '/', no '..')", dataset, e.message);
	if ((uint64_t)len > MT_ATTACHMENT_MAX_BYTES)
		return mti_err(err, MT_EINVAL, "dataset %s: attachment %s is %zu bytes, over the "
			      "cap of %llu", dataset, name, len,
			      (unsigned long long)MT_ATTACHMENT_MAX_BYTES);
	return 0;
}

int mti_attach_add(mti_attach_set *s, const char *dataset, const char *name, const void *data,
		   size_t len, mt_error *err)
{
	int rc = attach_check(dataset, name, len, err);
	if (rc)
		return rc;
	int found;
	size_t at = attach_find(s->a, s->n, name, &found);
	if (!found && s->n >= MT_ATTACHMENTS_MAX)
		return mti_err(err, MT_EINVAL, "dataset %s: attachment %s: a version holds at most "
			      "%u attachments", dataset, name, MT_ATTACHMENTS_MAX);
	mt_mattach e = {0};
	snprintf(e.name, sizeof e.name, "%s", name);
	e.bytes = len;
	void *copy = malloc(len ? len : 1);
	if (!copy)
		return mti_err(err, MT_ENOMEM, "attachment %s: out of memory", name);
	if (len)
		memcpy(copy, data, len);
	rc = mti_sha256_hex(copy, len, e.sha256, err);
	if (rc) {
		free(copy);
		return rc;
	}
	if (found) {
		free(s->data[at]);
		s->a[at] = e;
		s->data[at] = copy;
		return 0;
	}
	mt_mattach *na = realloc(s->a, (s->n + 1) * sizeof *na);
	if (na)
		s->a = na;
	void **nd = na ? realloc(s->data, (s->n + 1) * sizeof *nd) : NULL;
	if (nd)
		s->data = nd;
	if (!na || !nd) {
		free(copy);
		return mti_err(err, MT_ENOMEM, "attachment %s: out of memory", name);
	}
	memmove(s->a + at + 1, s->a + at, (s->n - at) * sizeof *s->a);
	memmove(s->data + at + 1, s->data + at, (s->n - at) * sizeof *s->data);
	s->a[at] = e;
	s->data[at] = copy;
	s->n++;
	return 0;
}

void mti_attach_free(mti_attach_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->data[i]);
	free(s->data);
	free(s->a);
	mt_strv_free(s->drop, s->ndrop);
	*s = (mti_attach_set){0};
}

static int attach_dropped(const mti_attach_set *own, const char *name)
{
	for (size_t i = 0; i < own->ndrop; i++)
		if (!strcmp(own->drop[i], name))
			return 1;
	return 0;
}

/* "a, b, c" of the names of a[0..n), or "none", into buf. */
static void attach_names(const mt_mattach *a, size_t n, char *buf, size_t cap)
{
	size_t off = 0;
	snprintf(buf, cap, "none");
	for (size_t i = 0; i < n && off < cap; i++) {
		int w = snprintf(buf + off, cap - off, "%s%s", i ? ", " : "", a[i].name);
		off += w > 0 ? (size_t)w : 0;
	}
}

/* Named after the version it continues, with what that version holds. */
static int attach_not_held(const mt_mattach *base, size_t nbase, const char *dataset,
			   const char *version, const char *name, mt_error *err)
{
	char names[512];
	attach_names(base, nbase, names, sizeof names);
	return mti_err(err, MT_ENOTFOUND, "%s@%s has no attachment '%s' to remove (it has: %s)",
		      dataset, version ? version : "latest", name, names);
}

int mti_attach_drop(mti_attach_set *s, const mt_mattach *base, size_t nbase,
		    const char *dataset, const char *version, const char *name, mt_error *err)
{
	int own, inbase;
	size_t at = attach_find(s->a, s->n, name ? name : "", &own);
	attach_find(base, nbase, name ? name : "", &inbase);
	if (!name || (!own && (!inbase || attach_dropped(s, name))))
		return attach_not_held(base, nbase, dataset, version, name ? name : "", err);
	if (own) {
		free(s->data[at]);
		memmove(s->a + at, s->a + at + 1, (s->n - at - 1) * sizeof *s->a);
		memmove(s->data + at, s->data + at + 1, (s->n - at - 1) * sizeof *s->data);
		s->n--;
	}
	if (!inbase || attach_dropped(s, name))
		return 0;
	char **nd = realloc(s->drop, (s->ndrop + 1) * sizeof *nd);
	char *copy = nd ? strdup(name) : NULL;
	if (nd)
		s->drop = nd;
	if (!copy)
		return mti_err(err, MT_ENOMEM, "attachment %s: out of memory", name);
	s->drop[s->ndrop++] = copy;
	return 0;
}

int mti_attach_merge(const mt_mattach *base, size_t nbase, const mti_attach_set *own,
		     const char *dataset, mt_mattach **out, size_t *n, mt_error *err)
{
	*out = NULL;
	*n = 0;
	if (!nbase && !own->n)
		return 0;
	mt_mattach *v = malloc((nbase + own->n) * sizeof *v);
	if (!v)
		return mti_err(err, MT_ENOMEM, "out of memory");
	size_t i = 0, j = 0, k = 0;
	while (i < nbase || j < own->n) {
		int c = i == nbase ? 1 : j == own->n ? -1 : strcmp(base[i].name, own->a[j].name);
		if (c < 0 && attach_dropped(own, base[i].name)) {
			i++;
		} else if (c < 0) {
			v[k++] = base[i++];
		} else {
			v[k++] = own->a[j++];
			i += c == 0;
		}
	}
	if (k > MT_ATTACHMENTS_MAX) {
		free(v);
		return mti_err(err, MT_EINVAL, "dataset %s: %zu attachments; a version holds at "
			      "most %u", dataset, k, MT_ATTACHMENTS_MAX);
	}
	if (!k) { /* every one the parent had was removed */
		free(v);
		v = NULL;
	}
	*out = v;
	*n = k;
	return 0;
}

/* ---- reading ------------------------------------------------------------ */

size_t mt_reader_nattachments(const mt_reader *r)
{
	return r->m->nattachments;
}

int mt_reader_attachment_info(const mt_reader *r, size_t i, mt_attachment_info *out)
{
	if (i >= r->m->nattachments)
		return MT_ERANGE;
	const mt_mattach *a = &r->m->attachments[i];
	*out = (mt_attachment_info){a->name, a->sha256, a->bytes};
	return 0;
}

int mt_reader_attachment(mt_reader *r, const char *name, void **data, size_t *len,
			 mt_error *err)
{
	*data = NULL;
	*len = 0;
	const mt_manifest *m = r->m;
	int found = 0;
	size_t i = name ? attach_find(m->attachments, m->nattachments, name, &found) : 0;
	if (!found) {
		char names[512];
		attach_names(m->attachments, m->nattachments, names, sizeof names);
		return mti_err(err, MT_ENOTFOUND, "%s@%s has no attachment '%s' (it has: %s)",
			      m->dataset, m->version, name ? name : "", names);
	}
	const mt_mattach *a = &m->attachments[i];
	char *key = mti_key_attachment(m->dataset, a->sha256);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	void *buf = NULL;
	size_t got = 0;
	char sha[MT_SHA256_HEX];
	/* A longer object is refused before it is read, not cut short. */
	int rc = mti_store_get_max(r->store, key, a->bytes, &buf, &got, err);
	if (rc == MT_ECORRUPT)
		mti_err_prefix(err, "attachment %s of %s@%s (%llu bytes): ", a->name, m->dataset,
			       m->version, (unsigned long long)a->bytes);
	if (!rc && got != a->bytes)
		rc = mti_err(err, MT_ECORRUPT, "%s: attachment %s of %s@%s is %zu bytes, the "
			    "manifest says %llu", key, a->name, m->dataset, m->version, got,
			    (unsigned long long)a->bytes);
	if (!rc)
		rc = mti_sha256_hex(buf, got, sha, err);
	if (!rc && strcmp(sha, a->sha256) != 0)
		rc = mti_err(err, MT_ECORRUPT, "%s: attachment %s of %s@%s has sha256 %s, the "
			    "manifest says %s", key, a->name, m->dataset, m->version, sha, a->sha256);
	char *text = rc ? NULL : realloc(buf, got + 1);
	if (!rc && !text)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (rc) {
		free(buf);
	} else {
		text[got] = 0;
		*data = text;
		*len = got;
	}
	free(key);
	return rc;
}

/* ---- attach and detach as a commit ------------------------------------------ */

/* An append writer of dataset@version (NULL or "latest": the latest) that
 * keeps its shards and rows, with o's version, author, description, tags. */
static int attach_writer(mt_store *s, const char *dataset, const char *version,
			 const mt_writer_opts *o, mt_writer **w, mt_error *err)
{
	mt_writer_opts wo;
	mt_writer_opts_init(&wo);
	if (o) {
		wo.version = o->version;
		wo.author = o->author;
		wo.description = o->description;
		wo.tags = o->tags;
		wo.ntags = o->ntags;
	}
	wo.append = 1;
	/* A named version is a deliberate parent; the latest is followed. */
	wo.parent = version && *version && strcmp(version, "latest") ? version : NULL;
	wo.threads = 1;
	return mt_writer_open(s, dataset, NULL, 0, &wo, w, err);
}

/* Each of names[0..n) once; a duplicate is an error naming it. */
static int attach_unique(const char *dataset, const char *const *names, size_t n,
			 mt_error *err)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (names[i] && names[j] && !strcmp(names[i], names[j]))
				return mti_err(err, MT_EINVAL, "dataset %s: attachment %s is given "
					      "twice; nothing was committed", dataset, names[i]);
	return 0;
}

int mt_dataset_attach(mt_store *s, const char *dataset, const char *version,
		      const char *const *names, const void *const *data, const size_t *lens,
		      size_t n, const mt_writer_opts *o, char *out, size_t cap, mt_error *err)
{
	if (n == 0)
		return mti_err(err, MT_EINVAL, "dataset %s: nothing to attach", dataset);
	/* Every name and size before anything is read or written. */
	for (size_t i = 0; i < n; i++) {
		int rc = attach_check(dataset, names[i], lens[i], err);
		if (rc)
			return rc;
	}
	int rc = attach_unique(dataset, names, n, err);
	mt_writer *w = NULL;
	if (!rc)
		rc = attach_writer(s, dataset, version, o, &w, err);
	for (size_t i = 0; !rc && i < n; i++)
		rc = mt_writer_attach(w, names[i], data[i], lens[i], err);
	if (!rc)
		rc = mt_writer_commit(w, out, cap, err);
	mt_writer_close(w);
	return rc;
}

int mt_dataset_detach(mt_store *s, const char *dataset, const char *version,
		      const char *const *names, size_t n, const mt_writer_opts *o, char *out,
		      size_t cap, mt_error *err)
{
	if (n == 0)
		return mti_err(err, MT_EINVAL, "dataset %s: no attachment named to remove", dataset);
	int rc = attach_unique(dataset, names, n, err);
	mt_writer *w = NULL;
	if (!rc)
		rc = attach_writer(s, dataset, version, o, &w, err);
	/* Every name is checked before the commit: one the version lacks
	 * commits nothing. */
	for (size_t i = 0; !rc && i < n; i++)
		rc = mt_writer_detach(w, names[i], err);
	if (rc && w && err) {
		size_t len = strlen(err->message);
		snprintf(err->message + len, sizeof err->message - len, "; nothing was committed");
	}
	if (!rc)
		rc = mt_writer_commit(w, out, cap, err);
	mt_writer_close(w);
	return rc;
}
