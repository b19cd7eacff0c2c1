/* cmd-search.c — `matorage search`: full-text search of the catalog over names, descriptions, tags and attribute names, and over models' checkpoints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct cli_option search_options[] = {
	{ NULL, 0, NULL, NULL },
};

static int search_row(void *ud, const mt_catalog_row *row)
{
	size_t *n = ud;
	/* remote, dataset, version, tags, match */
	printf("%s\t%s@%s\t%s\t%s\n", row->cols[0], row->cols[1], row->cols[2],
	       row->cols[3] && row->cols[3][0] ? row->cols[3] : "-",
	       row->cols[4] ? row->cols[4] : "");
	(*n)++;
	return 0;
}

static int search_model_row(void *ud, const mt_catalog_row *row)
{
	size_t *n = ud;
	/* remote, model, checkpoint, tags, match: named as other commands take it */
	printf("%s\tmodel:%s@%s\t%s\t%s\n", row->cols[0], row->cols[1], row->cols[2],
	       row->cols[3] && row->cols[3][0] ? row->cols[3] : "-",
	       row->cols[4] ? row->cols[4] : "");
	(*n)++;
	return 0;
}

static int search_lists(mt_catalog *c, const char *text, size_t *n, mt_error *err)
{
	int rc = mt_catalog_list(c, MT_CAT_SEARCH, 0, text, search_row, n, err);
	return rc ? rc : mt_catalog_list(c, MT_CAT_SEARCH_MODELS, 0, text, search_model_row, n, err);
}

static int search_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	size_t len = 0;
	for (int i = 0; i < a->argc; i++)
		len += strlen(a->argv[i]) + 1;
	char *text = app_xmalloc(len + 1);
	text[0] = '\0';
	for (int i = 0; i < a->argc; i++) {
		if (i)
			strcat(text, " ");
		strcat(text, a->argv[i]);
	}
	mt_catalog *c = NULL;
	mt_error err = { 0 };
	size_t n = 0;
	int rc = CLI_OK;
	/* A search reads: no catalog yet is an empty one, and none is made. */
	int open = cli_catalog_open(0, &c, &err);
	int lrc = open ? 0 : search_lists(c, text, &n, &err);
	/* A catalog found damaged only now: a new, empty one (it says so). */
	if (lrc && lrc != MT_EINVAL && cli_catalog_heal(&c))
		lrc = search_lists(c, text, &n, &err);
	if ((open && open != MT_ENOTFOUND) || lrc)
		rc = err.code == MT_EINVAL ? cli_usage_error(a->cmd, "%s", err.message)
					   : cli_fail(&err);
	/* Nothing found is a result, not a failure; say so where people look. */
	else if (n == 0)
		fprintf(stderr, "matorage: search: nothing matches '%s' (run 'matorage sync' if the "
				"catalog is behind)\n", text);
	mt_catalog_close(c);
	free(text);
	return rc;
}

const struct cli_cmd cli_cmd_search = {
	"search", "WORD [WORD ...]", search_options, search_exec,
	"Search the catalog: versions whose names, description, tags or attributes match every "
	"WORD, then model checkpoints (model:NAME@vN) whose model, description, tags or tensor "
	"keys do",
	1, -1,
};
