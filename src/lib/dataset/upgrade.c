/* upgrade.c — format-2 manifests written: fragments before their root, and an existing version's manifest rewritten in format 2 (doc/FORMAT.md, "Manifest format 2"). */
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "lock.h"
#include "protect.h"

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

/* MT_EUNSUPPORTED when dataset@version has a protection record: it embeds
 * the manifest's text, which the upgrade would change. */
static int upgrade_unprotected(mt_store *s, const char *dataset, const char *version,
			       mt_error *err)
{
	char *key = mti_key_protect(dataset, version);
	mt_error e = {0};
	int rc = key ? mti_store_head(s, key, NULL, NULL, &e) : MT_ENOMEM;
	free(key);
	if (rc == MT_ENOMEM)
		return mti_err(err, rc, "out of memory");
	if (rc == 0)
		return mti_err(err, MT_EUNSUPPORTED, "%s@%s is protected: its protection record "
			      "embeds the format-1 manifest, so it is left as it is", dataset,
			      version);
	return rc == MT_ENOTFOUND ? 0 : mti_err_copy(err, &e);
}

int mt_store_upgrade(mt_store *s, const char *dataset, const char *version, int *changed,
		     mt_error *err)
{
	*changed = 0;
	mt_manifest *m = NULL;
	mt_dlock *lock = NULL;
	char *name = NULL;
	int latest = !version || !*version || !strcmp(version, "latest");
	int rc = latest ? mti_dataset_load(s, dataset, NULL, &m, NULL, err)
			: mt_name_check(dataset, "dataset", err);
	if (!rc && !(name = mti_strdup(latest ? m->version : version)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	mti_manifest_free(m);
	m = NULL;
	/* As a writer: its fragments are pinned until the root names them, and
	 * no gc deletes the version's shards meanwhile (doc/FORMAT.md). */
	if (!rc)
		rc = mti_dlock_open(s, dataset, MT_LOCK_WRITE, &lock, err);
	if (!rc)
		rc = mti_dlock_pin_version(lock, name, err);
	if (!rc)
		rc = mti_dlock_wait_gc(lock, err);
	if (!rc)
		rc = mti_dataset_load(s, dataset, name, &m, NULL, err);
	if (!rc && m->format == 1 && !(rc = upgrade_unprotected(s, dataset, name, err)) &&
	    !(rc = upgrade_write(s, lock, m, err)))
		*changed = 1;
	mti_dlock_close(lock);
	mti_manifest_free(m);
	free(name);
	return rc;
}
