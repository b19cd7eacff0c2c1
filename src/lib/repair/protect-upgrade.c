/* protect-upgrade.c — `matorage upgrade` of a version: its manifest rewritten in format 2 (dataset/upgrade.c), and a protection record, which embeds the manifest's text, written again for the root and its fragments. */
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "protect.h"

/* The k+m of dataset@version's record, 0+0 when it has none.  A record
 * whose embedded manifest is no longer the version's (an upgrade cut short
 * before its record was written again) still says its k+m; one that does
 * not decode cannot be carried: MT_ECORRUPT, and nothing is written. */
static int upgrade_parity(mt_store *s, const char *dataset, const char *version, int *k, int *m,
			  const char *left, mt_error *err)
{
	*k = *m = 0;
	mti_prec *p = NULL;
	mt_error e = {0};
	int rc = mti_prec_load(s, dataset, version, &p, &e);
	if (rc == MT_ENOTFOUND)
		return 0;
	if (rc == MT_ECORRUPT || rc == MT_EFORMAT) {
		char *key = mti_key_protect(dataset, version);
		void *data = NULL;
		size_t len = 0;
		mt_error e2 = {0};
		if (!key)
			return mti_err(err, MT_ENOMEM, "out of memory");
		if (!mti_store_get_max(s, key, MT_MANIFEST_MAX_BYTES, &data, &len, &e2) &&
		    !mti_prec_decode(data, len, key, &p, &e2) && !strcmp(p->dataset, dataset) &&
		    !strcmp(p->version, version))
			rc = 0;
		free(data);
		free(key);
	}
	if (rc == MT_ECORRUPT || rc == MT_EFORMAT)
		rc = mti_err(err, rc, "%s@%s is protected, but %s; %s (matorage repair %s@%s "
			    "brings a sound record back, or matorage protect writes a new one)",
			    dataset, version, e.message, left, dataset, version);
	else if (rc)
		rc = mti_err_copy(err, &e);
	if (!rc) {
		*k = p->k;
		*m = p->m;
	}
	mti_prec_free(p);
	return rc;
}

int mt_store_upgrade(mt_store *s, const char *dataset, const char *version, int *changed,
		     mt_error *err)
{
	*changed = 0;
	mt_manifest *m = NULL;
	char *name = NULL;
	int latest = !version || !*version || !strcmp(version, "latest");
	int rc = latest ? mti_dataset_load(s, dataset, NULL, &m, NULL, err)
			: mt_name_check(dataset, "dataset", err);
	if (!rc && !latest)
		rc = mt_name_check(version, "version", err);
	if (!rc && !(name = mti_strdup(latest ? m->version : version)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	mti_manifest_free(m);
	int k = 0, pm = 0;
	if (!rc)
		rc = upgrade_parity(s, dataset, name, &k, &pm, "nothing was upgraded", err);
	if (!rc)
		rc = mti_dataset_upgrade(s, dataset, name, changed, err);
	/* The record is read again once the root is written: a protect that
	 * read the format-1 text and wrote its record after the read above is
	 * seen here (a protect reads the manifest again after its record, so
	 * of the two one sees the other's write, and writes the record for the
	 * root).  None there before and none now: nothing to carry. */
	if (!rc)
		rc = upgrade_parity(s, dataset, name, &k, &pm, *changed ? "upgraded to manifest "
				    "format 2, its record not written again" : "its record not "
				    "written again", err);
	/* The record is written again for the root and its fragments; the
	 * shards' groups are the old record's (the same shards, in the same
	 * order), so only the fragments are coded.  A second upgrade mends a
	 * record an interrupted first one left behind. */
	if (!rc && k) {
		mt_protect_opts o;
		mt_protect_opts_init(&o);
		o.k = k;
		o.m = pm;
		rc = mt_protect(s, dataset, name, &o, err);
		if (rc)
			mti_err_prefix(err, "%s@%s: %s, but its protection record was not written "
				       "again (matorage protect %s@%s --parity %d+%d does it): ", dataset,
				       name, *changed ? "upgraded to manifest format 2" : "format 2",
				       dataset, name, k, pm);
	}
	free(name);
	return rc;
}
