/* reader-verify.c — verify of a version: every shard read whole and checked, the damaged chunks named. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "reader.h"

/* ---- verify ----------------------------------------------------------- */

/* Append "; <the chunks of ix that fail their checksum>" to msg, rows
 * counted as everywhere else: from the start of the dataset. */
static int damaged_chunks(const mt_reader *r, size_t i, const mt_index *ix, const uint8_t *data,
			  char *msg, size_t cap)
{
	int bad = 0;
	for (size_t k = 0; k < ix->n; k++) {
		const mt_index_entry *e = &ix->e[k];
		int rows = strcmp(mti_reader_unit_word(e), "rows") == 0;
		uint64_t base = rows ? r->m->shards[i].first_row : 0;
		for (size_t c = 0; c < e->nchunks; c++) {
			const mt_chunk *ch = &e->chunks[c];
			if (mti_xxh3(data + ch->offset, ch->size) == ch->xxh3)
				continue;
			size_t len = strlen(msg);
			snprintf(msg + len, cap - len, "%s%s chunk %zu (%s %llu..%llu%s) fails its "
				 "checksum", len ? "; " : "", e->name, c, mti_reader_unit_word(e),
				 (unsigned long long)(base + ch->first),
				 (unsigned long long)(base + ch->first + ch->count - 1),
				 rows ? "" : " of the shard");
			bad = 1;
		}
	}
	return bad;
}

/* Shard i read whole and checked by mti_shard_check, the one definition
 * of sound; a failure also names every chunk that fails its checksum when
 * the index still decodes: repair can salvage the rest. */
static int verify_shard(mt_reader *r, size_t i, char *msg, size_t cap)
{
	const mt_mshard *s = &r->m->shards[i];
	mt_error e = {0};
	void *data = NULL;
	size_t got = 0;
	uint64_t end;
	int rc = mti_store_get(r->store, r->keys[i], 0, UINT64_MAX, &data, &got, &e);
	if (rc == MT_ENOTFOUND)
		rc = mti_err(&e, rc, "shard object %s is missing", r->keys[i]);
	if (!rc)
		rc = mti_shard_check(data, got, r->m, i, r->keys[i], NULL, &e);
	mt_index *ix = NULL;
	if (rc == MT_ECORRUPT && got == s->bytes && mti_add_ok(s->index_offset, s->index_bytes, &end) &&
	    end <= got) {
		mt_error ie;
		mt_error be;
		int sha_only = !mti_shard_check_body(data, got, r->m, i, r->keys[i], NULL, &be);
		if (!mti_index_decode_shard((uint8_t *)data + s->index_offset, s->index_bytes, got,
					    r->m, i, r->keys[i], &ix, &ie) &&
		    damaged_chunks(r, i, ix, data, e.message, sizeof e.message))
			sha_only = 0;
		/* Index and every chunk intact: the reads are right, and the
		 * bytes that differ are HDF5's own, which the writer makes again. */
		if (sha_only) {
			size_t n = strlen(e.message);
			snprintf(e.message + n, sizeof e.message - n, "; HDF5 metadata damaged; data "
				 "intact; repair rebuilds it");
		}
		mti_index_free(ix);
	}
	free(data);
	snprintf(msg, cap, "%s", rc ? e.message : "ok");
	return rc;
}

/* ---- what a job's verifies learnt ------------------------------------ */

/* One shard object's result: the rows it was checked at, for a damaged
 * one, whose message names rows. */
struct memo_entry {
	char *key;
	int code;
	uint64_t first_row;
	char *msg; /* NULL when sound */
};

struct mt_verify_memo {
	pthread_mutex_t lock;
	struct memo_entry *e; /* open addressing, cap a power of two */
	size_t n, cap;
	uint64_t reads, bytes;
};

int mt_verify_memo_new(mt_verify_memo **out, mt_error *err)
{
	mt_verify_memo *m = calloc(1, sizeof *m);
	if (!m)
		return mti_err(err, MT_ENOMEM, "out of memory");
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return 0;
}

void mt_verify_memo_free(mt_verify_memo *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++) {
		free(m->e[i].key);
		free(m->e[i].msg);
	}
	free(m->e);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void mt_verify_memo_reads(mt_verify_memo *m, uint64_t *objects, uint64_t *bytes)
{
	pthread_mutex_lock(&m->lock);
	*objects = m->reads;
	*bytes = m->bytes;
	pthread_mutex_unlock(&m->lock);
}

/* key's slot in a table of cap (a power of two): its entry, or the empty
 * slot where it goes. */
static struct memo_entry *memo_slot(struct memo_entry *e, size_t cap, const char *key)
{
	size_t i = (size_t)mti_xxh3(key, strlen(key)) & (cap - 1);
	while (e[i].key && strcmp(e[i].key, key))
		i = (i + 1) & (cap - 1);
	return &e[i];
}

/* key's entry; with lock held.  NULL when there is none. */
static struct memo_entry *memo_find(mt_verify_memo *m, const char *key)
{
	if (!m->cap)
		return NULL;
	struct memo_entry *e = memo_slot(m->e, m->cap, key);
	return e->key ? e : NULL;
}

/* Keep key's result (replacing one of other rows); with lock held.  A
 * result not kept for want of memory is only read again. */
static void memo_put(mt_verify_memo *m, const char *key, int code, uint64_t first_row,
		     const char *msg)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		struct memo_entry *e = calloc(cap, sizeof *e);
		if (!e)
			return;
		for (size_t i = 0; i < m->cap; i++)
			if (m->e[i].key)
				*memo_slot(e, cap, m->e[i].key) = m->e[i];
		free(m->e);
		m->e = e;
		m->cap = cap;
	}
	struct memo_entry *e = memo_slot(m->e, m->cap, key);
	char *k = e->key ? e->key : mti_strdup(key);
	char *text = code ? mti_strdup(msg) : NULL;
	if (!k || (code && !text)) {
		if (!e->key)
			free(k);
		free(text);
		return;
	}
	m->n += !e->key;
	free(e->msg);
	*e = (struct memo_entry){ k, code, first_row, text };
}

int mti_verify_memo_sound(mt_verify_memo *m, const char *key)
{
	if (!m)
		return 0;
	pthread_mutex_lock(&m->lock);
	const struct memo_entry *e = memo_find(m, key);
	int sound = e && !e->code;
	pthread_mutex_unlock(&m->lock);
	return sound;
}

/* Shard i's result: from memo when an earlier verify read its object (and,
 * when damaged, at the same rows), else read and kept there. */
static int verify_shard_memo(mt_reader *r, mt_verify_memo *memo, size_t i, char *msg,
			     size_t cap)
{
	uint64_t first_row = r->m->shards[i].first_row;
	if (!memo)
		return verify_shard(r, i, msg, cap);
	pthread_mutex_lock(&memo->lock);
	const struct memo_entry *e = memo_find(memo, r->keys[i]);
	int known = e && (!e->code || e->first_row == first_row);
	int rc = known ? e->code : 0;
	if (known)
		snprintf(msg, cap, "%s", e->code ? e->msg : "ok");
	pthread_mutex_unlock(&memo->lock);
	if (known)
		return rc;
	rc = verify_shard(r, i, msg, cap);
	/* A failure to read says nothing of the object. */
	int fatal = rc == MT_ENOMEM || rc == MT_EIO || rc == MT_ENET || rc == MT_EAUTH;
	pthread_mutex_lock(&memo->lock);
	memo->reads++;
	memo->bytes += r->m->shards[i].bytes;
	if (!fatal)
		memo_put(memo, r->keys[i], rc, first_row, msg);
	pthread_mutex_unlock(&memo->lock);
	return rc;
}

int mt_reader_verify_memo(mt_reader *r, mt_verify_memo *memo, mt_verify_fn fn, void *ud,
			  mt_progress_fn progress, void *progress_ud, mt_error *err)
{
	int bad = 0;
	uint64_t done = 0;
	char msg[512];
	size_t *first = NULL;
	char *sound = NULL;
	int frc = mti_reader_need_shards(r, 0, r->m->nshards, err);
	if (!frc)
		frc = mti_shard_firsts(r->m->shards, r->m->nshards, 1, &first, err);
	if (!frc && !(sound = calloc(r->m->nshards + 1, 1)))
		frc = mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !frc && i < r->m->nshards; i++) {
		/* An entry repeating one found sound is as sound: the object is
		 * read once (a failure is checked again, for its own rows). */
		int rc = sound[first[i]] ? 0 : verify_shard_memo(r, memo, i, msg, sizeof msg);
		if (rc == MT_ENOMEM || rc == MT_EIO || rc == MT_ENET || rc == MT_EAUTH) {
			frc = mti_err(err, rc, "%s", msg);
			break;
		}
		sound[i] = rc == 0;
		mt_shard_info info;
		mt_reader_shard(r, i, &info);
		if (fn)
			fn(ud, i, &info, rc, rc ? msg : NULL);
		if (rc && bad++ == 0)
			mti_err(err, MT_ECORRUPT, "%s@%s: shard %zu: %s", r->m->dataset,
			       r->m->version, i, msg);
		done += r->m->shards[i].bytes;
		if (progress && progress(progress_ud, done, r->info.stored_bytes))
			frc = mti_err(err, MT_ECANCELED, "verify of %s@%s canceled", r->m->dataset,
				     r->m->version);
	}
	free(first);
	free(sound);
	return frc ? frc : bad ? MT_ECORRUPT : 0;
}

int mt_reader_verify(mt_reader *r, mt_verify_fn fn, void *ud, mt_progress_fn progress,
		     void *progress_ud, mt_error *err)
{
	return mt_reader_verify_memo(r, NULL, fn, ud, progress, progress_ud, err);
}

int mti_version_sound(mt_store *s, const char *dataset, const char *version, const char *what,
		      mt_error *err)
{
	mt_reader *r = NULL;
	int rc = mt_reader_open(s, dataset, version, &r, err);
	if (!rc)
		rc = mt_reader_verify(r, NULL, NULL, NULL, NULL, err);
	if (rc == MT_ECORRUPT)
		mti_err_prefix(err, "%s refuses a version that is not sound (see matorage verify "
			       "and repair): ", what);
	mt_reader_close(r);
	return rc;
}
