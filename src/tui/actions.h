/* actions.h — what the browser's action files share: the catalog row a job works on. */
#ifndef MT_TUI_ACTIONS_H
#define MT_TUI_ACTIONS_H

#include "tui.h"

/* What a job works on: a catalog row located when the key was pressed. */
struct target {
	mt_catalog_ref ref;
	char *text;  /* typed input: tags, description, destination remote */
	uint64_t found, bytes; /* gc: objects found and their bytes */
	uint64_t shards_ok, shards_bad;
	char health[400]; /* verify: sound, repairable from what, or what is lost */
	int stale; /* the bucket is no longer where its remote points */
	unsigned view; /* gc: the preview to update once the deletion ends */
	int64_t grace; /* gc: the grace period in seconds (-1: the default) */
	uint64_t kept; /* gc: unreferenced objects younger than the grace */
};

/* The row `id` of catalog level `level` (NULL, status set, when it is gone). */
struct target *tui_target_new(struct tui *t, int level, int64_t id);
/* Frees a target; a job's free_arg. */
void tui_target_free(void *arg);
/* Ask where to copy the version tg names (copy.c); takes tg. */
void tui_copy_ask(struct tui *t, struct target *tg);

#endif
