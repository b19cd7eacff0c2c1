/* reader.c — read rows of a version straight from shard chunks (no HDF5): chunk index, ranged reads, xxh3, zstd. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "dataset.h"
#include "pool.h"

struct mt_reader {
	mt_store *store;
	mt_manifest *m;
	char *json;
	char **keys;          /* shard object keys */
	const char **tags;
	mt_version_info info;
	pthread_mutex_t lock; /* guards ix */
	mt_index **ix;        /* chunk index per shard, loaded on first use */
	int threads;
};

int mt_reader_open(mt_store *s, const char *dataset, const char *version, mt_reader **out,
		   mt_error *err)
{
	*out = NULL;
	mt_reader *r = calloc(1, sizeof *r);
	if (!r)
		return mti_err(err, MT_ENOMEM, "out of memory");
	pthread_mutex_init(&r->lock, NULL);
	r->store = s;
	r->threads = mti_ncpus();
	int rc = mti_dataset_load(s, dataset, version, &r->m, &r->json, err);
	if (!rc)
		rc = mti_dataset_load_meta(s, r->m, err);
	if (rc) {
		mt_reader_close(r);
		return rc;
	}
	mt_manifest *m = r->m;
	r->keys = calloc(m->nshards ? m->nshards : 1, sizeof *r->keys);
	r->ix = calloc(m->nshards ? m->nshards : 1, sizeof *r->ix);
	r->tags = calloc(m->ntags ? m->ntags : 1, sizeof *r->tags);
	if (!r->keys || !r->ix || !r->tags)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < m->nshards; i++)
		if (!(r->keys[i] = mti_key_shard(m->dataset, m->shards[i].sha256)))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (rc) {
		mt_reader_close(r);
		return rc;
	}
	uint64_t stored = 0;
	for (size_t i = 0; i < m->nshards; i++)
		stored += m->shards[i].bytes;
	for (size_t i = 0; i < m->ntags; i++)
		r->tags[i] = m->tags[i];
	r->info = (mt_version_info){
		.dataset = m->dataset, .version = m->version, .parent = m->parent,
		.author = m->author, .description = m->description, .created = m->created,
		.tags = r->tags, .ntags = m->ntags, .rows = m->rows, .nshards = m->nshards,
		.stored_bytes = stored, .raw_bytes = m->raw_bytes, .level = m->level,
		.recipe = m->recipe, .recipe_args = (const char *const *)m->recipe_args,
		.nrecipe_args = m->nrecipe_args,
	};
	*out = r;
	return 0;
}

void mti_reader_set_threads(mt_reader *r, int threads)
{
	r->threads = threads > 0 ? threads : mti_ncpus();
}

void mt_reader_close(mt_reader *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->m && i < r->m->nshards; i++) {
		if (r->keys)
			free(r->keys[i]);
		if (r->ix)
			mti_index_free(r->ix[i]);
	}
	free(r->keys);
	free(r->ix);
	free(r->tags);
	free(r->json);
	mti_manifest_free(r->m);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

const mt_version_info *mt_reader_info(const mt_reader *r)
{
	return &r->info;
}

size_t mt_reader_nattrs(const mt_reader *r)
{
	return r->m->nattrs;
}

const mt_attr *mt_reader_attr(const mt_reader *r, size_t i)
{
	return i < r->m->nattrs ? &r->m->attrs[i] : NULL;
}

int mt_reader_attr_index(const mt_reader *r, const char *name)
{
	for (size_t i = 0; i < r->m->nattrs; i++)
		if (strcmp(r->m->attrs[i].name, name) == 0)
			return (int)i;
	return MT_ENOTFOUND;
}

int mt_reader_shard(const mt_reader *r, size_t i, mt_shard_info *out)
{
	if (i >= r->m->nshards)
		return MT_ERANGE;
	const mt_mshard *s = &r->m->shards[i];
	*out = (mt_shard_info){s->sha256, r->keys[i], s->bytes, s->rows, s->first_row};
	return 0;
}

const char *mt_reader_manifest(const mt_reader *r)
{
	return r->json;
}

int mt_reader_recipe(mt_reader *r, char **script, size_t *len, mt_error *err)
{
	*script = NULL;
	*len = 0;
	const mt_manifest *m = r->m;
	if (!m->recipe[0])
		return mti_err(err, MT_ENOTFOUND, "%s@%s has no recipe", m->dataset, m->version);
	char *key = mti_key_recipe(m->dataset, m->recipe);
	if (!key)
		return mti_err(err, MT_ENOMEM, "out of memory");
	void *data = NULL;
	size_t got = 0;
	char sha[MT_SHA256_HEX];
	int rc = mti_store_get(r->store, key, 0, UINT64_MAX, &data, &got, err);
	if (!rc)
		rc = mti_sha256_hex(data, got, sha, err);
	if (!rc && strcmp(sha, m->recipe) != 0)
		rc = mti_err(err, MT_ECORRUPT, "%s: sha256 is %s, the manifest of %s@%s says %s",
			    key, sha, m->dataset, m->version, m->recipe);
	char *text = rc ? NULL : realloc(data, got + 1);
	if (!rc && !text)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (rc) {
		free(data);
	} else {
		text[got] = 0;
		*script = text;
		*len = got;
	}
	free(key);
	return rc;
}

/* Read and decode the chunk index of shard i, checked against the manifest
 * (mti_index_decode_shard). */
static int fetch_index(mt_reader *r, size_t i, mt_index **ix, mt_error *err)
{
	const mt_mshard *s = &r->m->shards[i];
	char *what = mti_asprintf("%s@%s: shard %zu: %s", r->m->dataset, r->m->version, i,
				 r->keys[i]);
	if (!what)
		return mti_err(err, MT_ENOMEM, "out of memory");
	void *data = NULL;
	size_t got = 0;
	int rc = mti_store_get(r->store, r->keys[i], s->index_offset, s->index_bytes, &data, &got,
			      err);
	if (!rc)
		rc = mti_index_decode_shard(data, got, s->bytes, r->m, i, what, ix, err);
	/* As for chunks: damage in transit goes away on a second read. */
	if (rc == MT_ECORRUPT || rc == MT_ERANGE) {
		free(data);
		data = NULL;
		rc = mti_store_get(r->store, r->keys[i], s->index_offset, s->index_bytes, &data,
				  &got, err);
		if (!rc)
			rc = mti_index_decode_shard(data, got, s->bytes, r->m, i, what, ix, err);
	}
	/* A short object (or one a cache cannot hold): the store said which. */
	if (rc == MT_ERANGE)
		mti_err_prefix(err, "%s@%s: shard %zu: ", r->m->dataset, r->m->version, i);
	else if (rc == MT_ENOTFOUND)
		mti_err(err, rc, "%s@%s: shard %zu (%s) is missing", r->m->dataset, r->m->version, i,
		       r->keys[i]);
	free(data);
	free(what);
	return rc;
}

/* The chunk index of shard i: one ranged read, cached for the reader's life. */
static int shard_index(mt_reader *r, size_t i, const mt_index **out, mt_error *err)
{
	pthread_mutex_lock(&r->lock);
	mt_index *ix = r->ix[i];
	pthread_mutex_unlock(&r->lock);
	if (!ix) {
		int rc = fetch_index(r, i, &ix, err);
		if (rc)
			return rc;
		pthread_mutex_lock(&r->lock);
		if (r->ix[i]) {
			mti_index_free(ix); /* another thread won the race */
			ix = r->ix[i];
		} else {
			r->ix[i] = ix;
		}
		pthread_mutex_unlock(&r->lock);
	}
	*out = ix;
	return 0;
}

/* Shard holding row `row` (binary search over first_row). */
static size_t shard_of(const mt_manifest *m, uint64_t row)
{
	size_t lo = 0, hi = m->nshards;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->shards[mid].first_row <= row)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* One chunk to fetch: units [u0, u1) of it land at dst. */
struct job {
	size_t shard;
	const mt_index_entry *e;
	size_t chunk;
	uint64_t u0, u1;
	uint8_t *dst;
};

struct jobs {
	mt_reader *r;
	struct job *v;
	size_t n, cap;
	mt_error *errs;
};

static int jobs_add(struct jobs *js, const struct job *j)
{
	if (js->n == js->cap) {
		size_t cap = js->cap ? js->cap * 2 : 64;
		struct job *v = realloc(js->v, cap * sizeof *v);
		if (!v)
			return MT_ENOMEM;
		js->v = v;
		js->cap = cap;
	}
	js->v[js->n++] = *j;
	return 0;
}

/* Queue the chunks holding units [u0, u1) of entry e of a shard. */
int mt_reader_chunks(mt_reader *r, size_t shard, void (*fn)(void *ud, const mt_chunk_info *c),
		     void *ud, mt_error *err)
{
	if (shard >= r->m->nshards)
		return mti_err(err, MT_ERANGE, "%s@%s: no shard %zu (it has %zu)", r->m->dataset,
			      r->m->version, shard, r->m->nshards);
	const mt_index *ix;
	int rc = shard_index(r, shard, &ix, err);
	for (size_t a = 0; !rc && a < ix->n; a++) {
		const mt_index_entry *e = &ix->e[a];
		for (size_t k = 0; k < e->nchunks; k++) {
			const mt_chunk *ch = &e->chunks[k];
			mt_chunk_info ci = { e->name, mt_dtype_name(e->dtype), ch->offset, ch->size,
					     ch->first, ch->count, e->unit_bytes };
			fn(ud, &ci);
		}
	}
	return rc;
}

static int plan_units(struct jobs *js, size_t shard, const mt_index_entry *e, uint64_t u0,
		      uint64_t u1, uint8_t *dst)
{
	if (u0 >= u1)
		return 0;
	size_t c0 = (size_t)(u0 / e->chunk_units), c1 = (size_t)((u1 - 1) / e->chunk_units);
	for (size_t c = c0; c <= c1 && c < e->nchunks; c++) {
		const mt_chunk *k = &e->chunks[c];
		uint64_t a = u0 > k->first ? u0 : k->first;
		uint64_t b = u1 < k->first + k->count ? u1 : k->first + k->count;
		struct job j = {shard, e, c, a, b, dst + (a - u0) * e->unit_bytes};
		if (jobs_add(js, &j))
			return MT_ENOMEM;
	}
	return 0;
}

static const char *unit_word(const mt_index_entry *e)
{
	return strstr(e->name, "/values") ? "items" : strstr(e->name, "/offsets") ? "offsets"
										  : "rows";
}

static int run_job(void *ud, size_t i)
{
	struct jobs *js = ud;
	const struct job *j = &js->v[i];
	mt_reader *r = js->r;
	const mt_chunk *k = &j->e->chunks[j->chunk];
	mt_error *err = &js->errs[i];
	const char *key = r->keys[j->shard];
	uint8_t *z = malloc(k->size ? k->size : 1);
	size_t full = (size_t)(j->e->chunk_units * j->e->unit_bytes);
	int whole = j->u0 == k->first && j->u1 == k->first + k->count && k->count == j->e->chunk_units;
	uint8_t *plain = whole ? j->dst : malloc(full);
	int rc = 0;
	if (!z || !plain)
		rc = mti_err(err, MT_ENOMEM, "%s: out of memory", key);
	if (!rc)
		rc = mti_store_read(r->store, key, k->offset, z, k->size, err);
	if (rc == MT_ENOTFOUND || rc == MT_ERANGE)
		rc = mti_err(err, rc == MT_ENOTFOUND ? rc : MT_ECORRUPT, "%s@%s: shard %zu (%s) is %s",
			    r->m->dataset, r->m->version, j->shard, key,
			    rc == MT_ENOTFOUND ? "missing" : "cut short");
	/* A bad checksum may have come in transit rather than be in the
	 * object: one more read tells. */
	int bad = !rc && mti_xxh3(z, k->size) != k->xxh3;
	if (bad && !(rc = mti_store_read(r->store, key, k->offset, z, k->size, err)))
		bad = mti_xxh3(z, k->size) != k->xxh3;
	if (!rc && bad) {
		/* Rows are named as the user counts them; items and offsets
		 * only exist inside the shard. */
		int rows = strcmp(unit_word(j->e), "rows") == 0;
		uint64_t base = rows ? r->m->shards[j->shard].first_row : 0;
		rc = mti_err(err, MT_ECORRUPT,
			    "%s@%s: shard %zu (%s): %s chunk %zu (%s %llu..%llu%s) fails its "
			    "checksum, read twice", r->m->dataset, r->m->version, j->shard, key, j->e->name,
			    j->chunk, unit_word(j->e), (unsigned long long)(base + k->first),
			    (unsigned long long)(base + k->first + k->count - 1),
			    rows ? "" : " of the shard");
	}
	if (!rc && mti_zstd_decompress(z, k->size, plain, full, err))
		rc = mti_err_prefix(err, "%s@%s: shard %zu (%s): %s chunk %zu: ", r->m->dataset,
				   r->m->version, j->shard, key, j->e->name, j->chunk);
	if (!rc && !whole)
		memcpy(j->dst, plain + (j->u0 - k->first) * j->e->unit_bytes,
		       (size_t)((j->u1 - j->u0) * j->e->unit_bytes));
	free(z);
	if (!whole)
		free(plain);
	return rc;
}

static int run_jobs(struct jobs *js, mt_error *err)
{
	int rc = 0;
	if (js->n) {
		js->errs = calloc(js->n, sizeof *js->errs);
		if (!js->errs)
			return mti_err(err, MT_ENOMEM, "out of memory");
		rc = mti_parallel_for(js->r->threads, js->n, run_job, js);
		for (size_t i = 0; rc && i < js->n; i++)
			if (js->errs[i].code) {
				rc = mti_err_copy(err, &js->errs[i]);
				break;
			}
	}
	free(js->errs);
	free(js->v);
	*js = (struct jobs){.r = js->r};
	return rc;
}

static int check_range(const mt_reader *r, size_t attr, uint64_t a, uint64_t b, mt_error *err)
{
	if (attr >= r->m->nattrs)
		return mti_err(err, MT_EINVAL, "%s@%s: no attribute #%zu", r->m->dataset,
			      r->m->version, attr);
	if (a > b || b > r->m->rows)
		return mti_err(err, MT_ERANGE, "%s@%s: rows %llu:%llu are outside 0:%llu",
			      r->m->dataset, r->m->version, (unsigned long long)a,
			      (unsigned long long)b, (unsigned long long)r->m->rows);
	return 0;
}

static int entry_of(mt_reader *r, size_t shard, const char *attr, const char *sub,
		    const mt_index_entry **e, mt_error *err)
{
	const mt_index *ix;
	int rc = shard_index(r, shard, &ix, err);
	if (rc)
		return rc;
	char name[300];
	snprintf(name, sizeof name, "%s%s", attr, sub);
	*e = mti_index_find(ix, name);
	if (!*e)
		return mti_err(err, MT_ECORRUPT, "%s: chunk index has no dataset '%s'",
			      r->keys[shard], name);
	return 0;
}

/* The per-shard ragged offsets for rows [a, b): offs receives b-a+1
 * values per shard piece, relative to the shard. */
static int ragged_offsets(mt_reader *r, size_t attr, uint64_t a, uint64_t b, uint64_t *offs,
			  mt_error *err)
{
	struct jobs js = {.r = r};
	const char *name = r->m->attrs[attr].name;
	int rc = 0;
	uint64_t *dst = offs;
	for (size_t s = shard_of(r->m, a); !rc && a < b && s < r->m->nshards; s++) {
		const mt_mshard *sh = &r->m->shards[s];
		uint64_t la = a > sh->first_row ? a - sh->first_row : 0;
		uint64_t lb = b - sh->first_row < sh->rows ? b - sh->first_row : sh->rows;
		if (sh->first_row >= b)
			break;
		const mt_index_entry *e;
		rc = entry_of(r, s, name, "/offsets", &e, err);
		if (!rc && plan_units(&js, s, e, la, lb + 1, (uint8_t *)dst))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
		dst += lb - la + 1;
	}
	if (rc) {
		free(js.v);
		return rc;
	}
	return run_jobs(&js, err);
}

/* Pieces of [a, b) per shard, in order: how many rows of the range each covers. */
static size_t count_pieces(const mt_manifest *m, uint64_t a, uint64_t b)
{
	if (a >= b)
		return 0;
	return shard_of(m, b - 1) - shard_of(m, a) + 1;
}

int mt_reader_ragged_lengths(mt_reader *r, size_t attr, uint64_t a, uint64_t b,
			     uint64_t *lengths, uint64_t *total, mt_error *err)
{
	int rc = check_range(r, attr, a, b, err);
	if (rc)
		return rc;
	if (!r->m->attrs[attr].ragged)
		return mti_err(err, MT_EINVAL, "%s@%s: attribute %s is not ragged", r->m->dataset,
			      r->m->version, r->m->attrs[attr].name);
	size_t pieces = count_pieces(r->m, a, b);
	uint64_t *offs = malloc(((b - a) + pieces + 1) * sizeof *offs);
	if (!offs)
		return mti_err(err, MT_ENOMEM, "out of memory");
	rc = ragged_offsets(r, attr, a, b, offs, err);
	uint64_t sum = 0, row = a;
	const uint64_t *o = offs;
	for (size_t s = shard_of(r->m, a); !rc && row < b; s++) {
		const mt_mshard *sh = &r->m->shards[s];
		uint64_t n = (b < sh->first_row + sh->rows ? b : sh->first_row + sh->rows) - row;
		for (uint64_t i = 0; i < n && !rc; i++) {
			if (o[i + 1] < o[i])
				rc = mti_err(err, MT_ECORRUPT, "%s: %s offsets decrease at row %llu",
					    r->keys[s], r->m->attrs[attr].name,
					    (unsigned long long)(row + i));
			else if (lengths)
				lengths[row - a + i] = o[i + 1] - o[i];
			sum += o[i + 1] - o[i];
		}
		o += n + 1;
		row += n;
	}
	free(offs);
	if (!rc && total)
		*total = sum;
	return rc;
}

int mt_reader_read(mt_reader *r, size_t attr, uint64_t a, uint64_t b, void *buf, size_t cap,
		   mt_error *err)
{
	int rc = check_range(r, attr, a, b, err);
	if (rc)
		return rc;
	const mt_attr *at = &r->m->attrs[attr];
	uint64_t unit = mt_attr_items(at) * mt_dtype_size(at->dtype);
	uint64_t *offs = NULL;
	uint64_t need = 0;
	if (at->ragged) {
		size_t pieces = count_pieces(r->m, a, b);
		offs = malloc(((b - a) + pieces + 1) * sizeof *offs);
		if (!offs)
			return mti_err(err, MT_ENOMEM, "out of memory");
		rc = ragged_offsets(r, attr, a, b, offs, err);
		const uint64_t *o = offs;
		for (uint64_t row = a; !rc && row < b;) {
			const mt_mshard *sh = &r->m->shards[shard_of(r->m, row)];
			uint64_t n = (b < sh->first_row + sh->rows ? b : sh->first_row + sh->rows) - row;
			if (o[n] < o[0])
				rc = mti_err(err, MT_ECORRUPT, "%s@%s: %s offsets decrease near row %llu",
					    r->m->dataset, r->m->version, at->name,
					    (unsigned long long)row);
			need += (o[n] - o[0]) * unit;
			o += n + 1;
			row += n;
		}
	} else {
		need = (b - a) * unit;
	}
	if (!rc && need > cap)
		rc = mti_err(err, MT_ERANGE, "%s@%s: %s rows %llu:%llu need %llu bytes, buffer "
			    "holds %zu", r->m->dataset, r->m->version, at->name,
			    (unsigned long long)a, (unsigned long long)b,
			    (unsigned long long)need, cap);
	struct jobs js = {.r = r};
	uint8_t *dst = buf;
	const uint64_t *o = offs;
	for (size_t s = shard_of(r->m, a); !rc && a < b && s < r->m->nshards; s++) {
		const mt_mshard *sh = &r->m->shards[s];
		if (sh->first_row >= b)
			break;
		uint64_t la = a > sh->first_row ? a - sh->first_row : 0;
		uint64_t lb = b - sh->first_row < sh->rows ? b - sh->first_row : sh->rows;
		const mt_index_entry *e;
		rc = entry_of(r, s, at->name, at->ragged ? "/values" : "", &e, err);
		uint64_t u0 = at->ragged ? o[0] : la, u1 = at->ragged ? o[lb - la] : lb;
		if (!rc && (e->unit_bytes != unit || u1 > e->units))
			rc = mti_err(err, MT_ECORRUPT, "%s: '%s' does not match the manifest",
				    r->keys[s], e->name);
		if (!rc && plan_units(&js, s, e, u0, u1, dst))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
		dst += (u1 - u0) * unit;
		if (at->ragged)
			o += lb - la + 1;
	}
	free(offs);
	if (rc) {
		free(js.v);
		return rc;
	}
	return run_jobs(&js, err);
}

/* ---- verify ----------------------------------------------------------- */

/* Append "; <the chunks of ix that fail their checksum>" to msg, rows
 * counted as everywhere else: from the start of the dataset. */
static int damaged_chunks(const mt_reader *r, size_t i, const mt_index *ix, const uint8_t *data,
			  char *msg, size_t cap)
{
	int bad = 0;
	for (size_t k = 0; k < ix->n; k++) {
		const mt_index_entry *e = &ix->e[k];
		int rows = strcmp(unit_word(e), "rows") == 0;
		uint64_t base = rows ? r->m->shards[i].first_row : 0;
		for (size_t c = 0; c < e->nchunks; c++) {
			const mt_chunk *ch = &e->chunks[c];
			if (mti_xxh3(data + ch->offset, ch->size) == ch->xxh3)
				continue;
			size_t len = strlen(msg);
			snprintf(msg + len, cap - len, "%s%s chunk %zu (%s %llu..%llu%s) fails its "
				 "checksum", len ? "; " : "", e->name, c, unit_word(e),
				 (unsigned long long)(base + ch->first),
				 (unsigned long long)(base + ch->first + ch->count - 1),
				 rows ? "" : " of the shard");
			bad = 1;
		}
	}
	return bad;
}

static int verify_shard(mt_reader *r, size_t i, char *msg, size_t cap)
{
	const mt_mshard *s = &r->m->shards[i];
	mt_error e = {0};
	void *data = NULL;
	size_t got = 0;
	char sha[MT_SHA256_HEX];
	int rc = mti_store_get(r->store, r->keys[i], 0, UINT64_MAX, &data, &got, &e);
	if (rc == MT_ENOTFOUND)
		rc = mti_err(&e, rc, "shard object %s is missing", r->keys[i]);
	if (!rc && got != s->bytes)
		rc = mti_err(&e, MT_ECORRUPT, "%s holds %zu bytes, the manifest says %llu",
			    r->keys[i], got, (unsigned long long)s->bytes);
	if (!rc)
		rc = mti_sha256_hex(data, got, sha, &e);
	if (!rc && strcmp(sha, s->sha256) != 0)
		rc = mti_err(&e, MT_ECORRUPT, "%s: sha256 is %s", r->keys[i], sha);
	/* The index must be the one the manifest names and agree with its
	 * attributes; then name the damaged chunks too: repair can salvage
	 * the rest. */
	mt_index *ix = NULL;
	if (rc != MT_ENOTFOUND && data && got >= s->index_offset + s->index_bytes) {
		mt_error ie;
		int irc = mti_index_decode_shard((uint8_t *)data + s->index_offset, s->index_bytes,
						got, r->m, i, r->keys[i], &ix, &ie);
		if (irc && !rc)
			rc = mti_err_copy(&e, &ie);
		if (ix && damaged_chunks(r, i, ix, data, e.message, sizeof e.message))
			rc = MT_ECORRUPT;
		mti_index_free(ix);
	}
	free(data);
	snprintf(msg, cap, "%s", rc ? e.message : "ok");
	return rc;
}

int mt_reader_verify(mt_reader *r, mt_verify_fn fn, void *ud, mt_progress_fn progress,
		     void *progress_ud, mt_error *err)
{
	int bad = 0;
	uint64_t done = 0;
	char msg[512];
	for (size_t i = 0; i < r->m->nshards; i++) {
		int rc = verify_shard(r, i, msg, sizeof msg);
		if (rc == MT_ENOMEM || rc == MT_EIO || rc == MT_ENET || rc == MT_EAUTH)
			return mti_err(err, rc, "%s", msg);
		mt_shard_info info;
		mt_reader_shard(r, i, &info);
		if (fn)
			fn(ud, i, &info, rc, rc ? msg : NULL);
		if (rc && bad++ == 0)
			mti_err(err, MT_ECORRUPT, "%s@%s: shard %zu: %s", r->m->dataset,
			       r->m->version, i, msg);
		done += r->m->shards[i].bytes;
		if (progress && progress(progress_ud, done, r->info.stored_bytes))
			return mti_err(err, MT_ECANCELED, "verify of %s@%s canceled", r->m->dataset,
				      r->m->version);
	}
	return bad ? MT_ECORRUPT : 0;
}
