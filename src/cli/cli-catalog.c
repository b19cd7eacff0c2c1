/* cli-catalog.c — keeping the catalog current from the commands that write. */
#include <stdio.h>

#include "cli.h"

void cli_catalog_note(const char *name, mt_store *s, const char *dataset)
{
	mt_catalog *c = NULL;
	mt_error err = { 0 };
	/* The catalog is a cache: a write that succeeded stays a success, and
	 * the next sync catches up. */
	if (mt_catalog_open(NULL, &c, &err) ||
	    mt_catalog_sync(c, name, s, dataset, 0, NULL, NULL, NULL, &err)) {
		cli_progress_hide();
		fprintf(stderr, "matorage: warning: catalog not updated (run 'matorage sync'): %s\n",
			err.message);
	}
	mt_catalog_close(c);
}
