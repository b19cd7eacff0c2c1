/* writer.c — build a new version: rows buffered into shards, shards built and uploaded on a background thread, manifest last. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "dataset.h"
#include "lock.h"
#include "opts.h"

#define DEFAULT_SHARD_BYTES (64ull << 20)
#define DEFAULT_CHUNK_BYTES (1ull << 20)
#define DEFAULT_LEVEL 3
/* mt_writer_opts as the first matorage.h with a size field declared it. */
#define WRITER_OPTS_FIRST MT_OPTS_SIZE_UPTO(mt_writer_opts, nrecipe_args)
/* Sealed shards waiting for an upload thread, and the number of upload
 * threads: memory stays near (QUEUE_MAX + UPLOADERS + 1) shards while
 * appends, compression and the store's I/O overlap. */
#define QUEUE_MAX 1
#define UPLOADERS 2
#define SPARE_MAX (UPLOADERS + QUEUE_MAX)
/* Commits that lose the race for the next name (or find the latest moved
 * on under an append) try again, this many times. */
#define VERSION_RETRIES 64

enum { W_OPEN, W_COMMITTING, W_DONE, W_FAILED, W_ABORTED };

/* The rows of one shard, laid out per attribute. */
struct pending {
	size_t slot; /* its place in shards[] */
	uint64_t rows;
	uint64_t bytes;
	mt_buf *vals;
	mt_buf *offs; /* ragged attributes: rows+1 item offsets */
	struct pending *next;
};

struct mt_writer {
	mt_store *store;
	char *dataset, *version, *parent, *author, *description;
	char **tags;
	size_t ntags;
	mt_attr *attrs;
	size_t nattrs;
	uint64_t shard_bytes, shard_rows, chunk_bytes;
	int level, threads;
	mt_progress_fn progress;
	void *progress_ud;
	void *recipe;
	size_t recipe_len;
	char recipe_sha[65];
	char **recipe_args;
	size_t nrecipe_args;
	char *salvage_from;          /* a salvage's damaged version, or NULL */
	uint64_t (*salvage_lost)[2]; /* and the rows of it that are lost */
	size_t nsalvage_lost;
	char *stage_id;       /* staging a part instead of committing; NULL: not */
	uint64_t stage_part, stage_parts;
	mti_attach_set attach;  /* files attached by this writer */
	mt_mattach *pattach;    /* the parent's attachments (an append keeps them) */
	size_t npattach;
	mt_source *sources;   /* what it was built from; strings in source_strs */
	char **source_strs;   /* 3 a source: dataset, version, store ("" for this one) */
	size_t nsources;

	/* Held for a whole append (and commit), so one call's rows stay
	 * together even while it waits for the upload queue. */
	pthread_mutex_t append_lock;
	pthread_mutex_t lock; /* guards everything below; shared with the uploader */
	pthread_cond_t cond;
	struct pending *cur;
	struct pending *qhead, *qtail;
	struct pending *spare; /* emptied buffers kept for the next shard */
	size_t nspare;
	size_t qlen;
	int state;
	int stop;
	mt_error failure;
	mt_mshard *shards; /* in row order; first_row set at commit */
	size_t nshards, cap;
	size_t parent_shards; /* the first ones, taken from the parent */
	uint64_t parent_rows, parent_raw;
	char *parent_created;
	int auto_parent;      /* appending to whatever is latest at commit */
	mt_dlock *dlock;      /* pins what the manifest will name, against gc */
	uint64_t rows;     /* rows in queued and uploaded shards, the parent's included */
	uint64_t raw_bytes;
	uint64_t new_bytes; /* uncompressed bytes uploaded by this writer */
	pthread_t uploaders[UPLOADERS];
	int nthreads;
	/* A compaction (mt_compact): the version whose rows it repacks, and what
	 * the writer itself holds (its first compact_n shards) before the rows
	 * later versions appended to that one are carried over at commit. */
	mt_manifest *compact_base;
	/* Format 2: the fragments of the version it continues and that
	 * version's format.  The first nbfrags (bfrags) are named again unread,
	 * by the hashes in its root: they hold the new version's first
	 * base_shards shards and base_rows rows, which shards[] leaves out
	 * (shards[i] is the version's shard base_shards + i).  pfrags: the
	 * rest, whose shards start shards[], reused at the cut when repeated. */
	mt_mfrag *bfrags, *pfrags;
	size_t nbfrags, npfrags;
	size_t base_shards;
	uint64_t base_rows;
	int parent_format;
	int compact_set;
	size_t compact_n;
	uint64_t compact_rows, compact_raw, tail_rows;
};

void mt_writer_opts_init_size(mt_writer_opts *o, size_t size)
{
	const mt_writer_opts d = { .shard_bytes = DEFAULT_SHARD_BYTES,
				   .chunk_bytes = DEFAULT_CHUNK_BYTES, .level = DEFAULT_LEVEL };
	mti_opts_init(o, size, &d, sizeof d);
}

static void pending_free(struct pending *p, size_t nattrs)
{
	if (!p)
		return;
	for (size_t i = 0; i < nattrs; i++) {
		mti_buf_free(&p->vals[i]);
		mti_buf_free(&p->offs[i]);
	}
	free(p->vals);
	free(p->offs);
	free(p);
}

/* Keep an uploaded shard's buffers for a later one: fresh multi-MiB
 * allocations come from mmap, and faulting their pages in again costs more
 * than the copy that fills them.  Called with w->lock held. */
static void pending_release(mt_writer *w, struct pending *p)
{
	if (!p)
		return;
	if (w->nspare >= SPARE_MAX) {
		pending_free(p, w->nattrs);
		return;
	}
	for (size_t i = 0; i < w->nattrs; i++) {
		p->vals[i].len = 0;
		/* Ragged offsets keep their leading 0. */
		p->offs[i].len = p->offs[i].len ? 8 : 0;
	}
	p->rows = p->bytes = 0;
	p->slot = 0;
	p->next = w->spare;
	w->spare = p;
	w->nspare++;
}

/* Reserve what a shard of fixed-size rows will hold, so filling it never
 * copies the buffers again as they grow.  Called with w->lock held. */
static struct pending *pending_new(mt_writer *w)
{
	if (w->spare) {
		struct pending *s = w->spare;
		w->spare = s->next;
		w->nspare--;
		s->next = NULL;
		return s;
	}
	struct pending *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->vals = calloc(w->nattrs, sizeof *p->vals);
	p->offs = calloc(w->nattrs, sizeof *p->offs);
	if (!p->vals || !p->offs) {
		pending_free(p, w->nattrs);
		return NULL;
	}
	uint64_t row_bytes = 0;
	for (size_t i = 0; i < w->nattrs; i++)
		row_bytes += w->attrs[i].ragged ? 8 : mt_attr_items(&w->attrs[i]) *
							  mt_dtype_size(w->attrs[i].dtype);
	uint64_t rows = (w->shard_bytes + row_bytes - 1) / row_bytes;
	if (w->shard_rows && w->shard_rows < rows)
		rows = w->shard_rows;
	/* Never more than a default shard up front (a huge shard size may never be
	 * filled); the buffers grow past it as rows come. */
	uint64_t most = DEFAULT_SHARD_BYTES / row_bytes;
	if (rows > most)
		rows = most ? most : 1;
	uint8_t zero[8] = {0};
	for (size_t i = 0; i < w->nattrs; i++) {
		const mt_attr *a = &w->attrs[i];
		int rc = a->ragged ? mti_buf_append(&p->offs[i], zero, 8)
				   : mti_buf_reserve(&p->vals[i], (size_t)(rows * mt_attr_items(a) *
									mt_dtype_size(a->dtype)));
		if (rc) {
			pending_free(p, w->nattrs);
			return NULL;
		}
	}
	return p;
}

/* Record a failure once; later ones are consequences. */
static void fail_locked(mt_writer *w, const mt_error *e)
{
	if (w->state == W_OPEN || w->state == W_COMMITTING) {
		w->state = W_FAILED;
		w->failure = *e;
	}
	pthread_cond_broadcast(&w->cond);
}

static int push_shard_locked(mt_writer *w, const mt_mshard *sh)
{
	if (w->nshards == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		mt_mshard *n = realloc(w->shards, cap * sizeof *n);
		if (!n)
			return MT_ENOMEM;
		w->shards = n;
		w->cap = cap;
	}
	w->shards[w->nshards++] = *sh;
	return 0;
}

/* Store an object under its content hash (a shard, a recipe): pinned
 * against gc, then written or, when an identical object is there, reused
 * rather than sent again.  Both only once no gc that may have missed the
 * pin is running (doc/FORMAT.md, "Writers and gc").  An object already
 * there is reused only when it holds these very bytes: one damaged in
 * place keeps its name, and putting the same data again is how it gets
 * mended.  The size comes first (a HEAD); at the same size the bytes are
 * compared, which on the file store is a local read and on S3 the ETag
 * (see mti_store_holds). */
static int writer_put_object(mt_writer *w, const char *key, const void *data, size_t len,
			     int flags, mt_error *err)
{
	int rc = mti_dlock_pin_keys(w->dlock, &key, 1, err);
	if (!rc)
		rc = mti_dlock_wait_gc(w->dlock, err);
	if (rc)
		return rc;
	uint64_t have = 0;
	mt_error ignored;
	if (mti_store_head(w->store, key, &have, NULL, &ignored) == 0 && have == len &&
	    mti_store_holds(w->store, key, data, len, &ignored) == 1)
		return 0;
	return mti_store_put(w->store, key, data, len, flags, err);
}

/* Build one shard's HDF5 image into img (which holds the previous one,
 * whose buffer is reused) and upload it under its content hash; an
 * identical shard already stored is not sent again. */
static int build_and_upload(mt_writer *w, const struct pending *p, mt_shard_image *img,
			    mt_mshard *sh, uint64_t *raw, mt_error *err)
{
	mt_shard_col *cols = calloc(w->nattrs, sizeof *cols);
	if (!cols)
		return mti_err(err, MT_ENOMEM, "dataset %s: out of memory", w->dataset);
	for (size_t i = 0; i < w->nattrs; i++) {
		cols[i].data = p->vals[i].data;
		cols[i].offsets = (const uint64_t *)p->offs[i].data;
	}
	int rc = mti_shard_build(w->dataset, w->attrs, w->nattrs, p->rows, cols, w->chunk_bytes,
				w->level, w->threads, img, err);
	free(cols);
	if (rc)
		return rc;
	char *key = mti_key_shard(w->dataset, img->sha256);
	if (!key)
		return mti_err(err, MT_ENOMEM, "dataset %s: out of memory", w->dataset);
	rc = writer_put_object(w, key, img->image.data, img->image.len, MT_PUT_NOSYNC, err);
	if (!rc) {
		memcpy(sh->sha256, img->sha256, sizeof sh->sha256);
		sh->bytes = img->image.len;
		sh->rows = p->rows;
		sh->index_offset = img->index_offset;
		sh->index_bytes = img->index_bytes;
		sh->has_index_xxh3 = 1;
		sh->index_xxh3 = img->index_xxh3;
		*raw = img->raw_bytes;
	}
	free(key);
	return rc;
}

static void *uploader(void *arg)
{
	mt_writer *w = arg;
	mt_shard_image img = {0}; /* the last image, its buffer reused by the next */
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->qhead && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		struct pending *p = w->qhead;
		if (!p)
			break;
		w->qhead = p->next;
		if (!w->qhead)
			w->qtail = NULL;
		w->qlen--;
		pthread_cond_broadcast(&w->cond);
		if (w->state != W_OPEN && w->state != W_COMMITTING) {
			/* Failed or aborted: drop what is queued. */
			pending_release(w, p);
			continue;
		}
		pthread_mutex_unlock(&w->lock);
		mt_mshard sh = {0};
		uint64_t raw = 0;
		mt_error e = {0};
		int rc = build_and_upload(w, p, &img, &sh, &raw, &e);
		pthread_mutex_lock(&w->lock);
		if (!rc) {
			w->shards[p->slot] = sh;
			w->raw_bytes += raw;
			w->new_bytes += p->bytes;
			uint64_t done = w->new_bytes;
			pthread_mutex_unlock(&w->lock);
			int cancel = w->progress && w->progress(w->progress_ud, done, 0);
			pthread_mutex_lock(&w->lock);
			if (cancel)
				rc = mti_err(&e, MT_ECANCELED, "dataset %s: canceled", w->dataset);
		}
		if (rc)
			fail_locked(w, &e);
		pending_release(w, p);
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	mti_shard_image_free(&img);
	return NULL;
}

static int enqueue_locked(mt_writer *w, struct pending *p)
{
	while (w->qlen >= QUEUE_MAX && (w->state == W_OPEN || w->state == W_COMMITTING))
		pthread_cond_wait(&w->cond, &w->lock);
	if (w->state != W_OPEN && w->state != W_COMMITTING) {
		pending_release(w, p);
		return MT_ESTATE;
	}
	/* Reserve the shard's place now: uploads may finish out of order. */
	mt_mshard none = {0};
	if (push_shard_locked(w, &none)) {
		pending_release(w, p);
		fail_locked(w, &(mt_error){MT_ENOMEM, "out of memory"});
		return MT_ENOMEM;
	}
	p->slot = w->nshards - 1;
	w->rows += p->rows;
	if (w->qtail)
		w->qtail->next = p;
	else
		w->qhead = p;
	w->qtail = p;
	w->qlen++;
	pthread_cond_broadcast(&w->cond);
	return 0;
}

static int attrs_equal(const mt_attr *a, const mt_attr *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(a[i].name, b[i].name) || a[i].dtype != b[i].dtype ||
		    a[i].rank != b[i].rank || !a[i].ragged != !b[i].ragged)
			return 0;
		for (int d = 0; d < a[i].rank; d++)
			if (a[i].shape[d] != b[i].shape[d])
				return 0;
	}
	return 1;
}

static int dup_strings(char ***out, const char *const *in, size_t n)
{
	*out = calloc(n ? n : 1, sizeof **out);
	if (!*out)
		return MT_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!((*out)[i] = mti_strdup(in[i] ? in[i] : "")))
			return MT_ENOMEM;
	return 0;
}

/* Keep the recipe and its hash; arguments must be KEY=VALUE with unique keys,
 * as the manifest holds them in a JSON object. */
static int writer_take_recipe(mt_writer *w, const mt_writer_opts *o, mt_error *err)
{
	for (size_t i = 0; i < o->nrecipe_args; i++) {
		const char *kv = o->recipe_args[i], *eq = kv ? strchr(kv, '=') : NULL;
		if (!eq || eq == kv)
			return mti_err(err, MT_EINVAL, "recipe argument '%s' is not KEY=VALUE",
				      kv ? kv : "(null)");
		for (size_t j = 0; j < i; j++)
			if (!strncmp(o->recipe_args[j], kv, (size_t)(eq - kv) + 1))
				return mti_err(err, MT_EINVAL, "recipe argument %.*s is given "
					      "twice", (int)(eq - kv), kv);
	}
	if (!(w->recipe = malloc(o->recipe_len ? o->recipe_len : 1)) ||
	    dup_strings(&w->recipe_args, o->recipe_args, o->nrecipe_args))
		return mti_err(err, MT_ENOMEM, "out of memory");
	w->nrecipe_args = o->nrecipe_args;
	memcpy(w->recipe, o->recipe, o->recipe_len);
	w->recipe_len = o->recipe_len;
	return mti_sha256_hex(w->recipe, w->recipe_len, w->recipe_sha, err);
}

/* A store URL as lineage keeps it: without any user:password@ (the
 * credentials of a store never go in a manifest). */
static char *source_url(const char *url)
{
	size_t off, len;
	if (!mti_url_userinfo(url, &off, &len))
		return mti_strdup(url);
	return mti_asprintf("%.*s%s", (int)off, url, url + off + len);
}

/* Keep the sources, the written store's own recorded as "". */
static int writer_take_sources(mt_writer *w, const mt_writer_opts *o, mt_error *err)
{
	size_t n = o->nsources;
	if (!(w->sources = calloc(n ? n : 1, sizeof *w->sources)) ||
	    !(w->source_strs = calloc(3 * n + 1, sizeof *w->source_strs)))
		return mti_err(err, MT_ENOMEM, "out of memory");
	const char *own = mt_store_url(w->store);
	for (size_t i = 0; i < n; i++) {
		const mt_source *src = &o->sources[i];
		if (!src->dataset || !src->version || mt_name_check(src->dataset, "dataset", err) ||
		    mt_name_check(src->version, "version", err))
			return mti_err(err, MT_EINVAL, "source %zu: needs a dataset and a version "
				      "(%s)", i, err && err->message[0] ? err->message : "none");
		const char *url = src->store && strcmp(src->store, own) ? src->store : "";
		char **f = &w->source_strs[3 * i];
		if (!(f[0] = mti_strdup(src->dataset)) || !(f[1] = mti_strdup(src->version)) ||
		    !(f[2] = source_url(url)))
			return mti_err(err, MT_ENOMEM, "out of memory");
		w->sources[i] = (mt_source){ f[0], f[1], f[2] };
		w->nsources++;
	}
	return 0;
}

/* Read the parent's manifest (name NULL: the latest), pinned against gc
 * first: the new version reuses its shards, and a gc must not collect them
 * should the parent be removed before the new manifest names them.  A
 * format-2 root is read alone: writer_take_shards reads the fragments it
 * needs. */
static int writer_load_parent(mt_writer *w, const char *name, mt_manifest **pm, mt_error *err)
{
	for (int attempt = 0;; attempt++) {
		char *latest = NULL, **v;
		size_t n;
		int rc = name ? 0 : mt_store_versions(w->store, w->dataset, &v, &n, err);
		if (rc)
			return rc;
		if (!name) {
			latest = mti_strdup(v[n - 1]);
			mt_strv_free(v, n);
			if (!latest)
				return mti_err(err, MT_ENOMEM, "out of memory");
		}
		const char *version = name ? name : latest;
		rc = mti_dlock_pin_version(w->dlock, version, err);
		if (!rc)
			rc = mti_dlock_wait_gc(w->dlock, err);
		if (!rc)
			rc = mti_dataset_open(w->store, w->dataset, version, MTI_OPEN_LAZY, pm, NULL,
					      err);
		free(latest);
		if (rc && w->parent) {
			/* Keep the version this writer builds on now pinned. */
			mt_error e = {0};
			if (mti_dlock_pin_version(w->dlock, w->parent, &e) || mti_dlock_wait_gc(w->dlock, &e))
				return mti_err_copy(err, &e);
		}
		/* The latest was removed between listing and reading: look again. */
		if (rc != MT_ENOTFOUND || name || attempt >= VERSION_RETRIES)
			return rc;
	}
}

/* $MATORAGE_MANIFEST_FORMAT when 1 or 2, else 0. */
static int forced_format(void)
{
	const char *v = getenv("MATORAGE_MANIFEST_FORMAT");
	return v && (!strcmp(v, "1") || !strcmp(v, "2")) ? *v - '0' : 0;
}

static mt_mfrag *frags_dup(const mt_mfrag *f, size_t n)
{
	mt_mfrag *v = malloc((n ? n : 1) * sizeof *v);
	if (v && n)
		memcpy(v, f, n * sizeof *v);
	return v;
}

/* Take the shards of pm (read lazily, its shards not yet in the writer) as
 * the first of w's.  Of a format-2 pm every fragment but the last is kept
 * unread, named again by its hash: an append holds those shards at the
 * same place with the same rows, so the fragment's bytes are the same
 * (doc/FORMAT.md, "Sharing"), and the pinned parent keeps it from gc until
 * the new root names it.  Only the last one is read: new shards may join
 * it.  Every fragment is read when the new version is to be format 1. */
static int writer_take_shards(mt_writer *w, mt_manifest *pm, mt_error *err)
{
	size_t keep = pm->format == 2 && pm->nfrags && forced_format() != 1 ? pm->nfrags - 1 : 0;
	size_t from = keep ? pm->frags[keep].first_shard : 0;
	int rc = mti_manifest_load_frags(pm, keep, pm->nfrags, mti_store_get_fn, w->store, err);
	if (rc)
		return rc;
	mt_mfrag *b = frags_dup(pm->frags, keep), *p = frags_dup(pm->frags + keep,
								  pm->nfrags - keep);
	if (!b || !p) {
		free(b);
		free(p);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	free(w->bfrags);
	free(w->pfrags);
	w->bfrags = b;
	w->nbfrags = keep;
	w->pfrags = p;
	w->npfrags = pm->nfrags - keep;
	w->parent_format = pm->format;
	w->base_shards = from;
	w->base_rows = keep ? pm->frags[keep].first_row : 0;
	w->nshards = 0;
	for (size_t i = from; i < pm->nshards; i++)
		if (push_shard_locked(w, &pm->shards[i]))
			return mti_err(err, MT_ENOMEM, "out of memory");
	w->parent_shards = w->nshards;
	return 0;
}

/* An append keeps what is attached to the version it continues. */
static int writer_set_pattach(mt_writer *w, const mt_manifest *pm)
{
	size_t n = pm->nattachments;
	mt_mattach *a = n ? malloc(n * sizeof *a) : NULL;
	if (n && !a)
		return MT_ENOMEM;
	if (n)
		memcpy(a, pm->attachments, n * sizeof *a);
	free(w->pattach);
	w->pattach = a;
	w->npattach = n;
	return 0;
}

static int writer_set_parent(mt_writer *w, const mt_manifest *pm)
{
	char *parent = mti_strdup(pm->version), *created = mti_strdup(pm->created);
	if (!parent || !created) {
		free(parent);
		free(created);
		return MT_ENOMEM;
	}
	free(w->parent);
	free(w->parent_created);
	w->parent = parent;
	w->parent_created = created;
	return 0;
}

/* 1 when the dataset has a version, 0 when it has none (never made, or
 * every version removed), or an error. */
static int writer_dataset_has_versions(mt_writer *w, mt_error *err)
{
	char **v = NULL;
	size_t n = 0;
	mt_error e = {0};
	int rc = mt_store_versions(w->store, w->dataset, &v, &n, &e);
	mt_strv_free(v, n);
	if (rc == MT_ENOTFOUND)
		return 0;
	return rc ? mti_err_copy(err, &e) : n > 0;
}

/* Start from the parent version: its attributes, shards and rows.  An
 * append to the latest of a dataset with no version yet, given its
 * attributes, starts empty: independent writers need no first version made
 * apart, and the commit continues whatever another one committed first. */
static int writer_take_parent(mt_writer *w, const mt_attr *attrs, size_t nattrs,
			      const mt_writer_opts *o, mt_error *err)
{
	if (o->append && !o->parent && attrs && nattrs) {
		int has = writer_dataset_has_versions(w, err);
		if (has < 0)
			return has;
		if (!has) {
			w->auto_parent = 1;
			return 0;
		}
	}
	mt_manifest *pm = NULL;
	int rc = writer_load_parent(w, o->parent, &pm, err);
	if (rc)
		return mti_err_prefix(err, "parent of the new version: ");
	if (writer_set_parent(w, pm))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	w->auto_parent = o->append && !o->parent;
	if (!rc && o->append) {
		if (attrs && (nattrs != pm->nattrs || !attrs_equal(attrs, pm->attrs, nattrs)))
			rc = mti_err(err, MT_EINVAL,
				    "%s@%s: appended attributes differ from the parent's",
				    w->dataset, pm->version);
		if (!rc)
			rc = writer_take_shards(w, pm, err);
		w->rows = w->parent_rows = pm->rows;
		w->raw_bytes = w->parent_raw = pm->raw_bytes;
		if (!rc && writer_set_pattach(w, pm))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
		if (!rc && !attrs) {
			w->attrs = pm->attrs;
			w->nattrs = pm->nattrs;
			pm->attrs = NULL;
			pm->nattrs = 0;
		}
	}
	mti_manifest_free(pm);
	return rc;
}

/* A name given by the caller must be free: not a version, never removed. */
static int writer_check_name(mt_writer *w, mt_error *err)
{
	char *key = mti_key_manifest(w->dataset, w->version);
	mt_error e;
	int rc = key ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc && mti_store_head(w->store, key, NULL, NULL, &e) == 0)
		rc = mti_err(err, MT_EEXIST, "%s@%s already exists", w->dataset, w->version);
	free(key);
	return rc ? rc : mti_dataset_removed(w->store, w->dataset, w->version, err);
}

static int writer_check_args(const char *dataset, const mt_attr *attrs, size_t nattrs,
			     const mt_writer_opts *o, mt_error *err)
{
	int rc = mt_name_check(dataset, "dataset", err);
	if (!rc && o->version)
		rc = mti_version_name_check(o->version, err);
	if (!rc && o->parent)
		rc = mt_name_check(o->parent, "version", err);
	if (!rc && attrs)
		rc = mti_attrs_check(attrs, nattrs, err);
	if (!rc && (attrs ? nattrs == 0 : !o->append))
		rc = mti_err(err, MT_EINVAL, "dataset %s: a new version needs attributes", dataset);
	if (!rc && o->stage_id)
		rc = mt_name_check(o->stage_id, "staging id", err);
	if (!rc && o->stage_id && (o->stage_part < 1 || o->stage_part > o->stage_parts))
		rc = mti_err(err, MT_EINVAL, "dataset %s: part %llu of %llu: parts count from 1 to "
			    "their number", dataset, (unsigned long long)o->stage_part,
			    (unsigned long long)o->stage_parts);
	if (!rc && o->stage_id && (o->version || o->parent || o->append))
		rc = mti_err(err, MT_EINVAL, "dataset %s: a staged part is no version: it takes no "
			    "version, parent or append", dataset);
	if (!rc && (o->level < 0 || o->level > 22))
		rc = mti_err(err, MT_EINVAL, "zstd level %d is outside 1..22", o->level);
	return rc;
}

static int writer_take_opts(mt_writer *w, const char *dataset, const mt_writer_opts *o,
			    mt_error *err)
{
	w->shard_bytes = o->shard_bytes ? o->shard_bytes : DEFAULT_SHARD_BYTES;
	w->shard_rows = o->shard_rows;
	w->chunk_bytes = o->chunk_bytes ? o->chunk_bytes : DEFAULT_CHUNK_BYTES;
	w->level = o->level ? o->level : DEFAULT_LEVEL;
	w->threads = o->threads > 0 ? o->threads : mti_ncpus();
	w->progress = o->progress;
	w->progress_ud = o->progress_ud;
	w->ntags = o->ntags;
	w->stage_part = o->stage_part;
	w->stage_parts = o->stage_parts;
	if (!(w->dataset = mti_strdup(dataset)) || (o->version && !(w->version = mti_strdup(o->version))) ||
	    !(w->author = mti_strdup(o->author ? o->author : "")) ||
	    (o->stage_id && !(w->stage_id = mti_strdup(o->stage_id))) ||
	    !(w->description = mti_strdup(o->description ? o->description : "")) ||
	    dup_strings(&w->tags, o->tags, o->ntags))
		return mti_err(err, MT_ENOMEM, "out of memory");
	return 0;
}

int mt_writer_open(mt_store *s, const char *dataset, const mt_attr *attrs, size_t nattrs,
		   const mt_writer_opts *o, mt_writer **out, mt_error *err)
{
	*out = NULL;
	mt_writer_opts opts;
	int rc = MTI_OPTS_GET(opts, mt_writer_opts_init, o, WRITER_OPTS_FIRST, "mt_writer_opts",
			      err);
	o = &opts;
	if (!rc)
		rc = writer_check_args(dataset, attrs, nattrs, o, err);
	if (rc)
		return rc;
	mt_writer *w = calloc(1, sizeof *w);
	if (!w)
		return mti_err(err, MT_ENOMEM, "out of memory");
	pthread_mutex_init(&w->append_lock, NULL);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->store = s;
	rc = writer_take_opts(w, dataset, o, err);
	if (!rc && o->recipe)
		rc = writer_take_recipe(w, o, err);
	if (!rc && o->nsources)
		rc = writer_take_sources(w, o, err);
	/* Fail before uploading gigabytes, not at commit. */
	if (!rc && w->version)
		rc = writer_check_name(w, err);
	if (!rc)
		rc = mti_dlock_open(s, dataset, MT_LOCK_WRITE, &w->dlock, err);
	if (!rc && (o->append || o->parent))
		rc = writer_take_parent(w, attrs, nattrs, o, err);
	if (!rc && !w->parent && !(w->parent = mti_strdup("")))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc && !w->attrs) {
		w->nattrs = nattrs;
		if (mti_attrs_dup(attrs, nattrs, &w->attrs))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	for (int t = 0; !rc && t < UPLOADERS; t++) {
		if (pthread_create(&w->uploaders[t], NULL, uploader, w) == 0)
			w->nthreads++;
		else if (t == 0)
			rc = mti_err(err, MT_ENOMEM, "dataset %s: cannot start an upload thread",
				    dataset);
	}
	if (rc) {
		mt_writer_close(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* Rows [r, r+k) of the caller's batch that still fit in the open shard. */
static uint64_t rows_that_fit(const mt_writer *w, const struct pending *p, uint64_t r,
			      uint64_t nrows, const uint64_t *const *lengths, uint64_t fixed_row)
{
	uint64_t room = nrows - r;
	if (w->shard_rows && w->shard_rows - p->rows < room)
		room = w->shard_rows - p->rows;
	uint64_t bytes = p->bytes, k = 0;
	int ragged = 0;
	for (size_t i = 0; i < w->nattrs; i++)
		ragged |= w->attrs[i].ragged;
	if (!ragged) {
		uint64_t left = w->shard_bytes > bytes ? w->shard_bytes - bytes : 0;
		uint64_t fit = (left + fixed_row - 1) / fixed_row;
		return fit < 1 ? 1 : fit < room ? fit : room;
	}
	while (k < room && (k == 0 || bytes < w->shard_bytes)) {
		bytes += fixed_row;
		for (size_t i = 0; i < w->nattrs; i++)
			if (w->attrs[i].ragged)
				bytes += lengths[i][r + k] * mt_attr_items(&w->attrs[i]) *
					 mt_dtype_size(w->attrs[i].dtype);
		k++;
	}
	return k;
}

/* Copy rows [r, r+k) into the open shard.  src_items tracks, per ragged
 * attribute, the item where row r starts in the caller's buffer. */
static int copy_rows(mt_writer *w, struct pending *p, uint64_t r, uint64_t k,
		     const void *const *data, const uint64_t *const *lengths, uint64_t *src_items)
{
	for (size_t i = 0; i < w->nattrs; i++) {
		const mt_attr *a = &w->attrs[i];
		uint64_t unit = mt_attr_items(a) * mt_dtype_size(a->dtype);
		const uint8_t *src = data[i];
		if (!a->ragged) {
			if (mti_buf_append(&p->vals[i], src + r * unit, k * unit))
				return MT_ENOMEM;
			p->bytes += k * unit;
			continue;
		}
		uint64_t end = mti_get_u64(p->offs[i].data + p->offs[i].len - 8), items = 0;
		if (mti_buf_reserve(&p->offs[i], k * 8))
			return MT_ENOMEM;
		for (uint64_t j = 0; j < k; j++) {
			items += lengths[i][r + j];
			mti_put_u64(p->offs[i].data + p->offs[i].len, end + items);
			p->offs[i].len += 8;
		}
		if (mti_buf_append(&p->vals[i], src + src_items[i] * unit, items * unit))
			return MT_ENOMEM;
		src_items[i] += items;
		p->bytes += items * unit + k * 8;
	}
	p->rows += k;
	return 0;
}

static int check_batch(const mt_writer *w, uint64_t nrows, const void *const *data,
		       const uint64_t *const *lengths, uint64_t *fixed_row, mt_error *err)
{
	*fixed_row = 0;
	for (size_t i = 0; i < w->nattrs; i++) {
		const mt_attr *a = &w->attrs[i];
		uint64_t unit = mt_attr_items(a) * mt_dtype_size(a->dtype), total = 0, bytes;
		if (!data || (!data[i] && nrows))
			return mti_err(err, MT_EINVAL, "dataset %s: no data for attribute %s",
				      w->dataset, a->name);
		if (!a->ragged) {
			*fixed_row += unit;
			continue;
		}
		*fixed_row += 8;
		if (!lengths || (!lengths[i] && nrows))
			return mti_err(err, MT_EINVAL, "dataset %s: no row lengths for ragged "
				      "attribute %s", w->dataset, a->name);
		for (uint64_t r = 0; r < nrows; r++)
			if (!mti_add_ok(total, lengths[i][r], &total) || !mti_mul_ok(total, unit, &bytes))
				return mti_err(err, MT_ERANGE, "dataset %s: attribute %s: row "
					      "lengths overflow at row %llu", w->dataset, a->name,
					      (unsigned long long)r);
		int rc = mti_str_rows_check(w->dataset, a, nrows, data[i], lengths[i], err);
		if (rc)
			return rc;
	}
	return 0;
}

int mt_writer_append(mt_writer *w, uint64_t nrows, const void *const *data,
		     const uint64_t *const *lengths, mt_error *err)
{
	uint64_t fixed_row;
	int rc = check_batch(w, nrows, data, lengths, &fixed_row, err);
	if (rc)
		return rc;
	uint64_t *src_items = calloc(w->nattrs, sizeof *src_items);
	if (!src_items)
		return mti_err(err, MT_ENOMEM, "dataset %s: out of memory", w->dataset);
	mt_error e = {0};
	pthread_mutex_lock(&w->append_lock);
	pthread_mutex_lock(&w->lock);
	for (uint64_t r = 0; r < nrows && w->state == W_OPEN;) {
		if (!w->cur && !(w->cur = pending_new(w))) {
			mti_err(&e, MT_ENOMEM, "dataset %s: out of memory for a shard's buffers at "
			       "row %llu", w->dataset, (unsigned long long)(w->rows + r));
			fail_locked(w, &e);
			break;
		}
		uint64_t k = rows_that_fit(w, w->cur, r, nrows, lengths, fixed_row);
		if (copy_rows(w, w->cur, r, k, data, lengths, src_items)) {
			mti_err(&e, MT_ENOMEM, "dataset %s: out of memory buffering row %llu",
			       w->dataset, (unsigned long long)(w->rows + r));
			fail_locked(w, &e);
			break;
		}
		r += k;
		if ((w->shard_rows && w->cur->rows >= w->shard_rows) ||
		    w->cur->bytes >= w->shard_bytes) {
			struct pending *p = w->cur;
			w->cur = NULL;
			enqueue_locked(w, p);
		}
	}
	if (w->state == W_FAILED)
		rc = mti_err_copy(err, &w->failure);
	else if (w->state != W_OPEN)
		rc = mti_err(err, MT_ESTATE, "dataset %s: writer is not open", w->dataset);
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_unlock(&w->append_lock);
	free(src_items);
	return rc;
}

/* The new shards must be durable before the manifest that names them. */
static int sync_new_shards(mt_writer *w, mt_error *err)
{
	size_t n = w->nshards - w->parent_shards;
	char **keys = calloc(n ? n : 1, sizeof *keys);
	int rc = keys ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < n; i++)
		if (!(keys[i] = mti_key_shard(w->dataset, w->shards[w->parent_shards + i].sha256)))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc && n)
		rc = w->store->ops->sync(w->store, (const char *const *)keys, n, err);
	mt_strv_free(keys, n);
	return rc;
}

/* Content-addressed like shards: the same script is stored once. */
static int put_recipe(mt_writer *w, mt_error *err)
{
	if (!w->recipe)
		return 0;
	char *key = mti_key_recipe(w->dataset, w->recipe_sha);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	int rc = writer_put_object(w, key, w->recipe, w->recipe_len, 0, err);
	free(key);
	return rc;
}

/* Attached files, content-addressed like recipes, durable before the
 * manifest that names them. */
static int put_attachments(mt_writer *w, mt_error *err)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < w->attach.n; i++) {
		char *key = mti_key_attachment(w->dataset, w->attach.a[i].sha256);
		rc = key ? writer_put_object(w, key, w->attach.data[i], w->attach.a[i].bytes, 0, err)
			 : mti_err(err, MT_ENOMEM, "out of memory");
		if (rc && key)
			mti_err_prefix(err, "attachment %s: ", w->attach.a[i].name);
		free(key);
	}
	return rc;
}

int mt_writer_attach(mt_writer *w, const char *name, const void *data, size_t len,
		     mt_error *err)
{
	if (w->stage_id)
		return mti_err(err, MT_EINVAL, "dataset %s: a staged part takes no attachments "
			      "(attach them to the version it becomes)", w->dataset);
	pthread_mutex_lock(&w->append_lock);
	int rc = w->state == W_OPEN ? 0 : mti_err(err, MT_ESTATE, "dataset %s: writer is not "
						    "open", w->dataset);
	if (!rc)
		rc = mti_attach_add(&w->attach, w->dataset, name, data, len, err);
	pthread_mutex_unlock(&w->append_lock);
	return rc;
}

int mt_writer_detach(mt_writer *w, const char *name, mt_error *err)
{
	if (w->stage_id)
		return mti_err(err, MT_EINVAL, "dataset %s: a staged part has no attachments to "
			      "remove", w->dataset);
	pthread_mutex_lock(&w->append_lock);
	int rc = w->state == W_OPEN ? 0 : mti_err(err, MT_ESTATE, "dataset %s: writer is not "
						    "open", w->dataset);
	if (!rc)
		rc = mti_attach_drop(&w->attach, w->pattach, w->npattach, w->dataset, w->parent,
				     name, err);
	pthread_mutex_unlock(&w->append_lock);
	return rc;
}

/* Continue `lm` instead of the parent: only the manifest changes, as the
 * new shards are content-addressed and stay where they are. */
static int writer_rebase(mt_writer *w, mt_manifest *lm, mt_error *err)
{
	if (lm->nattrs != w->nattrs || !attrs_equal(lm->attrs, w->attrs, w->nattrs))
		return mti_err(err, MT_ESTATE, "%s@%s, now the latest, has other attributes than "
			      "%s@%s, which this append continues; nothing was committed",
			      w->dataset, lm->version, w->dataset, w->parent);
	size_t fresh = w->nshards - w->parent_shards;
	mt_mshard *v = malloc((fresh ? fresh : 1) * sizeof *v);
	if (!v || writer_set_parent(w, lm) || writer_set_pattach(w, lm)) {
		free(v);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	if (fresh)
		memcpy(v, w->shards + w->parent_shards, fresh * sizeof *v);
	int rc = writer_take_shards(w, lm, err);
	for (size_t i = 0; !rc && i < fresh; i++)
		if (push_shard_locked(w, &v[i]))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	free(v);
	if (rc)
		return rc;
	w->rows = w->rows - w->parent_rows + lm->rows;
	w->raw_bytes = w->raw_bytes - w->parent_raw + lm->raw_bytes;
	w->parent_rows = lm->rows;
	w->parent_raw = lm->raw_bytes;
	return 0;
}

/* An append to the latest version checks, just before its commit, that
 * the latest is still its parent, and rebases onto the one that took its
 * place.  1: try again (the latest went while being read). */
static int writer_follow_latest(mt_writer *w, mt_error *err)
{
	char **v;
	size_t n;
	mt_error e = {0};
	int rc = mt_store_versions(w->store, w->dataset, &v, &n, &e);
	if (rc == MT_ENOTFOUND && !*w->parent)
		return 0; /* started empty, and still the first version */
	if (rc && rc != MT_ENOTFOUND)
		return mti_err_copy(err, &e);
	if (rc == MT_ENOTFOUND)
		return mti_err(err, MT_ESTATE, "%s@%s, which this append continues, was removed "
			      "while it ran, with every other version; nothing was committed",
			      w->dataset, w->parent);
	if (rc)
		return rc;
	int gone = 1;
	for (size_t i = 0; i < n; i++)
		gone &= strcmp(v[i], w->parent) != 0;
	char *latest = strcmp(v[n - 1], w->parent) ? mti_strdup(v[n - 1]) : NULL;
	int moved = strcmp(v[n - 1], w->parent) != 0;
	mt_strv_free(v, n);
	if (!moved)
		return 0;
	mt_manifest *lm = NULL;
	rc = latest ? writer_load_parent(w, latest, &lm, err) : mti_err(err, MT_ENOMEM, "out of "
									      "memory");
	free(latest);
	if (rc == MT_ENOTFOUND)
		return 1;
	/* Its parent removed, the latest is older: continuing that one would
	 * silently drop what the parent held. */
	if (!rc && gone && w->parent_created && strcmp(lm->created, w->parent_created) < 0)
		rc = mti_err(err, MT_ESTATE, "%s@%s, which this append continues, was removed "
			    "while it ran; nothing was committed", w->dataset, w->parent);
	if (!rc)
		rc = writer_rebase(w, lm, err);
	mti_manifest_free(lm);
	return rc;
}

/* A compaction's tail: the shards the latest version `lm` has after those of
 * the compacted one, which must be its prefix (an append chain), so the new
 * version holds every row of the latest, the compacted ones repacked. */
static int compact_take_tail(mt_writer *w, const mt_manifest *lm, mt_error *err)
{
	const mt_manifest *b = w->compact_base;
	int cont = lm->nshards >= b->nshards && lm->rows >= b->rows && lm->nattrs == w->nattrs &&
		   attrs_equal(lm->attrs, w->attrs, w->nattrs);
	for (size_t i = 0; cont && i < b->nshards; i++)
		cont = !strcmp(lm->shards[i].sha256, b->shards[i].sha256);
	if (!cont)
		return mti_err(err, MT_ESTATE, "%s@%s, now the latest, does not continue %s@%s "
			      "(it is no append to it); nothing was committed: compact %s@%s "
			      "instead", w->dataset, lm->version, w->dataset, b->version,
			      w->dataset, lm->version);
	w->nshards = w->compact_n;
	for (size_t i = b->nshards; i < lm->nshards; i++)
		if (push_shard_locked(w, &lm->shards[i]))
			return mti_err(err, MT_ENOMEM, "out of memory");
	/* Its shards are new from the first: no fragment of lm is its. */
	free(w->pfrags);
	free(w->bfrags);
	w->pfrags = w->bfrags = NULL;
	w->npfrags = w->nbfrags = w->base_shards = 0;
	w->base_rows = 0;
	w->parent_format = lm->format;
	w->tail_rows = lm->rows - b->rows;
	w->rows = w->compact_rows + w->tail_rows;
	w->raw_bytes = w->compact_raw + lm->raw_bytes - b->raw_bytes;
	return writer_set_parent(w, lm) ? mti_err(err, MT_ENOMEM, "out of memory") : 0;
}

/* A compaction commits on top of whatever is the latest when it commits,
 * carrying over what versions made since the compacted one appended, so it
 * never hides rows a concurrent writer committed.  1: try again (the
 * latest went while being read). */
static int writer_follow_compact(mt_writer *w, mt_error *err)
{
	if (!w->compact_set) {
		w->compact_n = w->nshards;
		w->compact_rows = w->rows;
		w->compact_raw = w->raw_bytes;
		w->compact_set = 1;
	}
	char **v;
	size_t n;
	int rc = mt_store_versions(w->store, w->dataset, &v, &n, err);
	if (rc == MT_ENOTFOUND)
		return mti_err(err, MT_ESTATE, "%s@%s was removed while it was compacted, with "
			      "every other version; nothing was committed", w->dataset,
			      w->compact_base->version);
	if (rc)
		return rc;
	char *latest = mti_strdup(v[n - 1]);
	mt_strv_free(v, n);
	if (!latest)
		return mti_err(err, MT_ENOMEM, "out of memory");
	mt_manifest *lm = NULL;
	rc = writer_load_parent(w, latest, &lm, err);
	free(latest);
	if (rc == MT_ENOTFOUND)
		return 1;
	if (!rc)
		rc = mti_manifest_load_frags(lm, 0, lm->nfrags, mti_store_get_fn, w->store, err);
	if (!rc)
		rc = compact_take_tail(w, lm, err);
	mti_manifest_free(lm);
	return rc;
}

int mti_writer_set_compact(mt_writer *w, mt_manifest *base)
{
	if (w->compact_base || w->auto_parent || w->stage_id)
		return MT_ESTATE;
	w->compact_base = base;
	return 0;
}

uint64_t mti_writer_buffered(mt_writer *w)
{
	pthread_mutex_lock(&w->lock);
	uint64_t n = w->cur ? w->cur->rows : 0;
	pthread_mutex_unlock(&w->lock);
	return n;
}

int mti_writer_reuse(mt_writer *w, const mt_mshard *sh, uint64_t raw, mt_error *err)
{
	int rc = 0;
	pthread_mutex_lock(&w->append_lock);
	pthread_mutex_lock(&w->lock);
	if (w->state == W_FAILED)
		rc = mti_err_copy(err, &w->failure);
	else if (w->state != W_OPEN)
		rc = mti_err(err, MT_ESTATE, "dataset %s: writer is not open", w->dataset);
	else if (w->cur && w->cur->rows)
		rc = mti_err(err, MT_ESTATE, "dataset %s: a shard is reused only between shards, "
			    "and rows are buffered", w->dataset);
	else if (push_shard_locked(w, sh))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc) {
		w->rows += sh->rows;
		w->raw_bytes += raw;
	}
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_unlock(&w->append_lock);
	return rc;
}

void mti_writer_counts(const mt_writer *w, size_t *nshards, uint64_t *rows, uint64_t *tail_rows)
{
	*nshards = w->base_shards + w->nshards;
	*rows = w->rows;
	*tail_rows = w->tail_rows;
}

/* Jittered, growing pauses between commit attempts of writers racing for
 * the same name. */
static void commit_backoff(int attempt)
{
	unsigned cap_ms = attempt < 6 ? 10u << attempt : 500u;
	usleep((useconds_t)(1000u * (unsigned)(mti_random_u64() % cap_ms)));
}

/* The manifest format w writes (doc/FORMAT.md, "Manifest format 2"):
 * $MATORAGE_MANIFEST_FORMAT when 1 or 2; else 2 for more shards than one
 * fragment holds or an append to a format-2 version, 1 otherwise. */
static int writer_format(const mt_writer *w, size_t per)
{
	int f = forced_format();
	if (f)
		return f;
	return w->base_shards + w->nshards > per || w->parent_format == 2 ? 2 : 1;
}

/* Cut the version's shards into fragments: the kept ones of the version
 * it continues (bfrags), then shards[] cut by mti_manifest_cut against
 * the rest of that version's fragments. */
static int writer_cut(mt_writer *w, mt_manifest *m, size_t per, mt_error *err)
{
	mt_manifest t = {.dataset = m->dataset, .shards = w->shards, .nshards = w->nshards};
	int rc = mti_manifest_cut(&t, w->pfrags, w->npfrags, per, err);
	mt_mfrag *v = rc ? NULL : malloc((w->nbfrags + t.nfrags + 1) * sizeof *v);
	if (!rc && !v)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc) {
		if (w->nbfrags)
			memcpy(v, w->bfrags, w->nbfrags * sizeof *v);
		for (size_t i = 0; i < t.nfrags; i++) {
			v[w->nbfrags + i] = t.frags[i];
			v[w->nbfrags + i].first_shard += w->base_shards;
		}
		free(m->frags);
		m->frags = v;
		m->nfrags = w->nbfrags + t.nfrags;
	}
	free(t.frags);
	return rc;
}

/* The manifest of this attempt, under the name it tries. */
static int encode_manifest(mt_writer *w, char *name, char **json, char **created, mt_error *err)
{
	uint64_t row = w->base_rows;
	for (size_t i = 0; i < w->nshards; i++) {
		w->shards[i].first_row = row;
		row += w->shards[i].rows;
	}
	if (!strcmp(name, w->parent))
		return mti_err(err, MT_ESTATE, "%s@%s cannot be its own parent", w->dataset, name);
	mt_manifest m = {
		.format = MT_FORMAT_VERSION, .dataset = w->dataset, .version = name,
		.parent = w->parent, .author = w->author, .description = w->description,
		.tags = w->tags, .ntags = w->ntags, .rows = w->rows, .raw_bytes = w->raw_bytes,
		.level = w->level, .chunk_bytes = w->chunk_bytes, .attrs = w->attrs,
		.nattrs = w->nattrs, .shards = w->shards, .nshards = w->base_shards + w->nshards,
		.recipe_args = w->recipe_args, .nrecipe_args = w->nrecipe_args,
		.salvage_from = w->salvage_from, .salvage_lost = w->salvage_lost,
		.nsalvage_lost = w->nsalvage_lost,
		.sources = w->sources, .nsources = w->nsources,
	};
	memcpy(m.recipe, w->recipe ? w->recipe_sha : "", w->recipe ? sizeof m.recipe : 1);
	m.part_id = w->stage_id;
	m.part_k = w->stage_part;
	m.part_n = w->stage_parts;
	m.created = w->parent_created ? mti_created_after(w->parent_created) : mti_now_rfc3339();
	*created = m.created;
	int rc = m.created ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_attach_merge(w->pattach, w->npattach, &w->attach, w->dataset,
				      &m.attachments, &m.nattachments, err);
	size_t per = mti_fragment_shards();
	int f2 = !w->stage_id && writer_format(w, per) == 2;
	/* Shards left unread can only be named by fragments. */
	if (!rc && !f2 && w->base_shards)
		rc = mti_err(err, MT_ESTATE, "%s@%s: a format-1 manifest cannot name the "
			    "fragments of %s@%s", w->dataset, name, w->dataset, w->parent);
	if (!rc && f2) {
		m.format = 2;
		rc = writer_cut(w, &m, per, err);
		if (!rc)
			rc = mti_put_fragments(w->store, w->dlock, w->dataset, &m, w->base_shards,
					       err);
	}
	if (!rc)
		rc = mti_manifest_encode(&m, json, err);
	free(m.frags);
	free(m.attachments);
	return rc;
}

/* A create refused as taken may be our own: on S3 a request whose answer
 * was lost is sent again, and the repeat finds what the first one wrote.
 * The manifest carries its creation time to the millisecond, so the same
 * bytes are ours and not another writer's. */
static int is_our_manifest(mt_writer *w, const char *key, const char *json)
{
	mt_error e = {0};
	return mti_store_holds(w->store, key, json, strlen(json), &e) == 1;
}

/* One attempt at the commit point (doc/FORMAT.md, "Commits"): the name
 * first, then the parent, then the exclusive create.  An automatic name
 * is the next after every name listed, so a commit that lands after the
 * listing takes that same name and one of the two creates fails; one
 * that landed before it is seen by the look at the latest after it. */
static int commit_once(mt_writer *w, char **name, mt_error *err)
{
	int rc = w->version ? mti_dataset_removed(w->store, w->dataset, w->version, err)
			    : mti_dataset_next_version(w->store, w->dataset, name, err);
	if (!rc && w->version && !(*name = mti_strdup(w->version)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc && w->auto_parent)
		rc = writer_follow_latest(w, err);
	else if (!rc && w->compact_base)
		rc = writer_follow_compact(w, err);
	/* The latest took the name listed a moment ago: list again. */
	if (!rc && !w->version && !strcmp(*name, w->parent))
		rc = 1;
	if (!rc)
		rc = mti_dlock_check(w->dlock, err);
	char *json = NULL, *created = NULL, *key = rc ? NULL : mti_key_manifest(w->dataset, *name);
	if (!rc && !key)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = encode_manifest(w, *name, &json, &created, err);
	/* The order marker before the create: every manifest this writes has one. */
	int marked = !rc && !(rc = mti_dataset_mark(w->store, w->dataset, *name, created, err));
	if (!rc)
		rc = mti_store_put(w->store, key, json, strlen(json), MT_PUT_EXCLUSIVE, err);
	if (rc == MT_EEXIST && is_our_manifest(w, key, json))
		rc = 0;
	if (rc && marked)
		mti_dataset_unmark(w->store, w->dataset, *name, created);
	if (!rc)
		mti_dataset_put_head(w->store, w->dataset, json, strlen(json));
	free(created);
	free(json);
	free(key);
	return rc;
}

static int write_manifest(mt_writer *w, char *version, size_t cap, mt_error *err)
{
	int rc = 0;
	for (int attempt = 0; attempt < VERSION_RETRIES; attempt++) {
		if (attempt)
			commit_backoff(attempt);
		char *name = NULL;
		rc = commit_once(w, &name, err);
		if (!rc && version && snprintf(version, cap, "%s", name) >= (int)cap)
			rc = mti_err(err, MT_ERANGE, "version name %s does not fit %zu bytes", name,
				    cap);
		if (rc == MT_EEXIST && w->version)
			rc = mti_err(err, rc, "%s@%s already exists", w->dataset, w->version);
		free(name);
		/* Another writer took the automatic name first, or the latest
		 * went while being read: look again. */
		if (!(rc == 1 || (rc == MT_EEXIST && !w->version)))
			return rc;
	}
	return mti_err(err, MT_EEXIST, "dataset %s: %d commits in a row lost the race for the "
		      "next version name; nothing was committed", w->dataset, VERSION_RETRIES);
}

/* A staged part: its record instead of a manifest, created once (a part
 * staged again under the same id and number is refused, unless it is this
 * very record sent again). */
static int write_part(mt_writer *w, char *version, size_t cap, mt_error *err)
{
	char name[64], *json = NULL, *created = NULL;
	snprintf(name, sizeof name, "part-%llu", (unsigned long long)w->stage_part);
	char *key = mti_key_staged(w->dataset, w->stage_id, w->stage_part);
	int rc = key ? mti_dlock_check(w->dlock, err) : mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = encode_manifest(w, name, &json, &created, err);
	if (!rc)
		rc = mti_store_put(w->store, key, json, strlen(json), MT_PUT_EXCLUSIVE, err);
	if (rc == MT_EEXIST && is_our_manifest(w, key, json))
		rc = 0;
	else if (rc == MT_EEXIST)
		rc = mti_err(err, rc, "%s: part %llu of staging %s is staged already", w->dataset,
			    (unsigned long long)w->stage_part, w->stage_id);
	if (!rc && version && snprintf(version, cap, "staged/%s/%llu", w->stage_id,
				       (unsigned long long)w->stage_part) >= (int)cap)
		rc = mti_err(err, MT_ERANGE, "staged part name does not fit %zu bytes", cap);
	free(created);
	free(json);
	free(key);
	return rc;
}

int mti_writer_adopt(mt_writer *w, const mt_manifest *part, mt_error *err)
{
	size_t n = part->nshards;
	char **keys = calloc(n ? n : 1, sizeof *keys);
	int rc = keys ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < n; i++)
		if (!(keys[i] = mti_key_shard(w->dataset, part->shards[i].sha256)))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	/* Pinned, then seen after any gc that may have missed the pin: the
	 * shards are there and stay until the manifest names them. */
	if (!rc && n)
		rc = mti_dlock_pin_keys(w->dlock, (const char *const *)keys, n, err);
	if (!rc)
		rc = mti_dlock_wait_gc(w->dlock, err);
	for (size_t i = 0; !rc && i < n; i++) {
		uint64_t size;
		rc = mti_store_head(w->store, keys[i], &size, NULL, err);
		if (!rc && size != part->shards[i].bytes)
			rc = mti_err(err, MT_ECORRUPT, "%s: %llu bytes, the part record says %llu",
				    keys[i], (unsigned long long)size,
				    (unsigned long long)part->shards[i].bytes);
	}
	mt_strv_free(keys, n);
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; !rc && i < n; i++)
		if (push_shard_locked(w, &part->shards[i]))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc) {
		w->rows += part->rows;
		w->raw_bytes += part->raw_bytes;
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}

static void join_uploaders(mt_writer *w)
{
	for (int t = 0; t < w->nthreads; t++)
		pthread_join(w->uploaders[t], NULL);
	w->nthreads = 0;
}

int mt_writer_commit(mt_writer *w, char *version, size_t cap, mt_error *err)
{
	pthread_mutex_lock(&w->append_lock);
	pthread_mutex_lock(&w->lock);
	if (w->state != W_OPEN) {
		int rc = w->state == W_FAILED ? mti_err_copy(err, &w->failure)
					      : mti_err(err, MT_ESTATE, "dataset %s: writer is "
						       "not open", w->dataset);
		pthread_mutex_unlock(&w->lock);
		pthread_mutex_unlock(&w->append_lock);
		return rc;
	}
	w->state = W_COMMITTING;
	int rc = 0;
	if (w->cur && w->cur->rows) {
		struct pending *p = w->cur;
		w->cur = NULL;
		rc = enqueue_locked(w, p);
	}
	w->stop = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_unlock(&w->append_lock);
	join_uploaders(w);
	if (w->state == W_FAILED)
		return mti_err_copy(err, &w->failure);
	if (rc)
		return mti_err(err, rc, "dataset %s: commit failed", w->dataset);
	rc = sync_new_shards(w, err);
	if (!rc)
		rc = put_recipe(w, err);
	if (!rc)
		rc = put_attachments(w, err);
	if (!rc)
		rc = w->stage_id ? write_part(w, version, cap, err)
				 : write_manifest(w, version, cap, err);
	/* Committed: the manifest (or part record) protects what the pins did. */
	if (!rc) {
		mti_dlock_close(w->dlock);
		w->dlock = NULL;
	}
	w->state = rc ? W_FAILED : W_DONE;
	if (rc && err)
		w->failure = *err;
	return rc;
}

int mti_writer_set_salvage(mt_writer *w, const char *from, const uint64_t (*lost)[2], size_t n,
			   mt_error *err)
{
	char *f = mti_strdup(from);
	uint64_t (*l)[2] = malloc((n ? n : 1) * sizeof *l);
	if (!f || !l) {
		free(f);
		free(l);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	if (n)
		memcpy(l, lost, n * sizeof *l);
	free(w->salvage_from);
	free(w->salvage_lost);
	w->salvage_from = f;
	w->salvage_lost = l;
	w->nsalvage_lost = n;
	return 0;
}

void mt_writer_abort(mt_writer *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	if (w->state != W_DONE)
		w->state = W_ABORTED;
	w->stop = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	join_uploaders(w);
}

void mt_writer_close(mt_writer *w)
{
	if (!w)
		return;
	mt_writer_abort(w);
	pending_free(w->cur, w->nattrs);
	for (struct pending *p = w->qhead, *n; p; p = n) {
		n = p->next;
		pending_free(p, w->nattrs);
	}
	for (struct pending *p = w->spare, *n; p; p = n) {
		n = p->next;
		pending_free(p, w->nattrs);
	}
	mti_dlock_close(w->dlock);
	mti_manifest_free(w->compact_base);
	free(w->pfrags);
	free(w->bfrags);
	mti_attach_free(&w->attach);
	free(w->pattach);
	mti_attrs_free(w->attrs, w->nattrs);
	mt_strv_free(w->tags, w->ntags);
	mt_strv_free(w->recipe_args, w->nrecipe_args);
	free(w->recipe);
	free(w->salvage_from);
	free(w->salvage_lost);
	free(w->stage_id);
	for (size_t i = 0; w->source_strs && w->source_strs[i]; i++)
		free(w->source_strs[i]);
	free(w->source_strs);
	free(w->sources);
	free(w->shards);
	free(w->dataset);
	free(w->version);
	free(w->parent);
	free(w->parent_created);
	free(w->author);
	free(w->description);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->append_lock);
	free(w);
}
