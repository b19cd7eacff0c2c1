/* cli-catalog.c — keeping the catalog current from the commands that write, and recording what checks found. */
#include <stdio.h>

#include "cli.h"

static void catalog_moved(const mt_catalog *c)
{
	const char *moved = mt_catalog_moved_aside(c);
	if (!moved)
		return;
	cli_progress_hide();
	fprintf(stderr, "matorage: warning: the catalog was damaged; it is a cache, so it was "
			"moved aside to %s and a new one started ('matorage sync' fills it)\n",
		moved);
}

int cli_catalog_open(int create, mt_catalog **c, mt_error *err)
{
	int rc = create ? mt_catalog_open(NULL, c, err) : mt_catalog_open_existing(NULL, c, err);
	if (!rc)
		catalog_moved(*c);
	return rc;
}

int cli_catalog_heal(mt_catalog **c)
{
	mt_error err = { 0 };
	int rc = mt_catalog_heal(c, &err);
	if (rc == 1)
		catalog_moved(*c);
	else if (rc)
		fprintf(stderr, "matorage: warning: %s\n", err.message);
	return rc == 1;
}

/* Sync dataset (NULL: every one) of s into c, once more on a new catalog
 * when this one turns out damaged. */
static int catalog_sync(mt_catalog **c, const char *name, mt_store *s, const char *dataset,
			mt_error *err)
{
	int rc = mt_catalog_sync(*c, name, s, dataset, 0, NULL, NULL, NULL, err);
	if (rc && cli_catalog_heal(c))
		rc = mt_catalog_sync(*c, name, s, dataset, 0, NULL, NULL, NULL, err);
	return rc;
}

void cli_catalog_note(const char *name, mt_store *s, const char *dataset)
{
	mt_catalog *c = NULL;
	mt_error err = { 0 };
	/* The catalog is a cache: a write that succeeded stays a success, and
	 * the next sync catches up. */
	if (cli_catalog_open(1, &c, &err) || catalog_sync(&c, name, s, dataset, &err)) {
		cli_progress_hide();
		fprintf(stderr, "matorage: warning: catalog not updated (run 'matorage sync'): %s\n",
			err.message);
	}
	mt_catalog_close(c);
}

void cli_catalog_note_versions(const char *name, mt_store *s, const char *dataset,
			       const char *const *versions, size_t n)
{
	mt_catalog *c = NULL;
	mt_error err = { 0 };
	/* Those versions alone: the cost after a write does not grow with the
	 * dataset's other versions (what else changed reaches the catalog with a
	 * sync). */
	int rc = cli_catalog_open(1, &c, &err);
	for (size_t i = 0; !rc && i < n; i++)
		rc = mt_catalog_sync_version(c, name, s, dataset, versions[i], NULL, &err);
	/* A catalog found damaged only now: a new one, and those versions again. */
	if (rc && cli_catalog_heal(&c)) {
		rc = 0;
		for (size_t i = 0; !rc && i < n; i++)
			rc = mt_catalog_sync_version(c, name, s, dataset, versions[i], NULL, &err);
	}
	if (rc) {
		cli_progress_hide();
		fprintf(stderr, "matorage: warning: catalog not updated (run 'matorage sync'): %s\n",
			err.message);
	}
	mt_catalog_close(c);
}

void cli_catalog_note_version(const char *name, mt_store *s, const char *dataset,
			      const char *version)
{
	cli_catalog_note_versions(name, s, dataset, &version, 1);
}

void cli_catalog_health(const char *name, mt_store *s, const char *dataset,
			struct app_health *h, int create)
{
	mt_catalog *c = NULL;
	mt_error err = { 0 };
	int rc = cli_catalog_open(create, &c, &err);
	if (rc == MT_ENOTFOUND && !create)
		return;
	/* A damaged manifest fails the sync, but the catalog still learns the
	 * rest, and what the check found. */
	int src = rc ? rc : catalog_sync(&c, name, s, dataset, &err);
	rc = c ? rc : MT_EIO;
	if (!rc)
		app_health_record(h, c, mt_store_url(s), dataset);
	if (src && src != MT_ECORRUPT && src != MT_EFORMAT) {
		cli_progress_hide();
		fprintf(stderr, "matorage: warning: catalog not updated (run 'matorage sync'): %s\n",
			err.message);
	}
	mt_catalog_close(c);
}
