/* upgrade.c — format-2 manifests written: fragments before their root, and an existing version's manifest rewritten in format 2 (doc/FORMAT.md, "Manifest format 2"). */
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "lock.h"

int mti_put_fragments(mt_store *s, mt_dlock *l, const char *dataset, mt_manifest *m,
		      size_t base, mt_error *err)
{
	char **keys = calloc(m->nfrags + 1, sizeof *keys), **texts = calloc(m->nfrags + 1,
									      sizeof *texts);
	int rc = keys && texts ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	size_t nfresh = 0;
	for (size_t i = 0; !rc && i < m->nfrags; i++) {
		mt_mfrag *f = &m->frags[i];
		if (f->fresh)
			rc = mti_fragment_encode(dataset, m->shards + (f->first_shard - base),
						 f->nshards, f, &texts[i], err);
		if (!rc && !(keys[i] = mti_key_fragment(dataset, f->sha256)))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	if (!rc && m->nfrags)
		rc = mti_dlock_pin_keys(l, (const char *const *)keys, m->nfrags, err);
	if (!rc)
		rc = mti_dlock_wait_gc(l, err);
	for (size_t i = 0; !rc && i < m->nfrags; i++)
		if (texts[i]) {
			rc = mti_store_put(s, keys[i], texts[i], strlen(texts[i]), 0, err);
			/* texts[] is done with: it lists the keys to make durable. */
			free(texts[i]);
			texts[i] = NULL;
			texts[nfresh++] = keys[i];
		}
	if (!rc && nfresh)
		rc = s->ops->sync(s, (const char *const *)texts, nfresh, err);
	for (size_t i = 0; texts && i < nfresh; i++)
		texts[i] = NULL; /* owned by keys[] */
	mt_strv_free(keys, keys ? m->nfrags : 0);
	mt_strv_free(texts, texts ? m->nfrags : 0);
	return rc;
}

/* m (format 1, loaded whole) as a root and fragments cut from its first
 * shard, written under the lock l; the root replaces the manifest at once. */
static int upgrade_write(mt_store *s, mt_dlock *l, mt_manifest *m, mt_error *err)
{
	char *json = NULL, *key = mti_key_manifest(m->dataset, m->version);
	m->format = 2;
	int rc = key ? mti_manifest_cut(m, NULL, 0, mti_fragment_shards(), err)
		     : mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mti_put_fragments(s, l, m->dataset, m, 0, err);
	if (!rc)
		rc = mti_manifest_encode(m, &json, err);
	if (!rc)
		rc = mti_dlock_check(l, err);
	/* Not exclusive: the one object replaced (a rename on a local store,
	 * one PUT on S3), so a reader finds the old text or the new, whole. */
	if (!rc)
		rc = mti_store_put(s, key, json, strlen(json), 0, err);
	free(json);
	free(key);
	return rc;
}

int mti_dataset_upgrade(mt_store *s, const char *dataset, const char *version, int *changed,
			mt_error *err)
{
	*changed = 0;
	mt_manifest *m = NULL;
	mt_dlock *lock = NULL;
	/* As a writer: its fragments are pinned until the root names them, and
	 * no gc deletes the version's shards meanwhile (doc/FORMAT.md). */
	int rc = mti_dlock_open(s, dataset, MT_LOCK_WRITE, &lock, err);
	if (!rc)
		rc = mti_dlock_pin_version(lock, version, err);
	if (!rc)
		rc = mti_dlock_wait_gc(lock, err);
	if (!rc)
		rc = mti_dataset_load(s, dataset, version, &m, NULL, err);
	if (!rc && m->format == 1 && !(rc = upgrade_write(s, lock, m, err)))
		*changed = 1;
	mti_dlock_close(lock);
	mti_manifest_free(m);
	return rc;
}
