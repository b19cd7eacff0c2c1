/* loader-token.c — the resume token of a loader, written and read back. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader-token.h"

#define TOKEN_MAGIC "mtl1"

size_t mti_token_format(const mt_token *t, const mt_plan_share *last, char *buf, size_t cap)
{
	char head[512];
	int n = snprintf(head, sizeof head,
			 TOKEN_MAGIC " %s %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %" PRIu64
				     " %" PRIu64,
			 t->dataset, t->version, t->rows, t->seed, t->epoch, t->shuffle ? 1 : 0,
			 t->window_rows, t->unit_rows);
	size_t len = n > 0 ? (size_t)n : 0;
	if (buf && cap)
		snprintf(buf, cap, "%s", head);
	size_t nstages = t->nstages + (last ? 1 : 0);
	for (size_t s = 0; s < nstages; s++) {
		const mt_plan_share *st = s < t->nstages ? &t->stages[s] : last;
		char part[96];
		int k = snprintf(part, sizeof part, " %u:%" PRIu64 ":%d:%" PRIu64, st->world,
				 st->batch_rows, st->drop_last, st->batches_taken);
		if (buf && len < cap)
			snprintf(buf + len, cap - len, "%s", part);
		len += k > 0 ? (size_t)k : 0;
	}
	return len;
}

/* The stages after the header, up to the end of the text. */
static int token_stages(const char *p, mt_token *t, mt_error *err)
{
	size_t cap = 4;
	t->stages = malloc(cap * sizeof *t->stages);
	if (!t->stages)
		return mti_err(err, MT_ENOMEM, "out of memory");
	for (;;) {
		mt_plan_share st;
		int k = 0;
		if (sscanf(p, " %u:%" SCNu64 ":%d:%" SCNu64 "%n", &st.world, &st.batch_rows,
			   &st.drop_last, &st.batches_taken, &k) != 4)
			break;
		if (!st.world || !st.batch_rows)
			return mti_err(err, MT_EINVAL, "loader: resume token has a stage with no ranks "
				      "or batch rows");
		if (t->nstages == cap) {
			mt_plan_share *g = realloc(t->stages, 2 * cap * sizeof *g);
			if (!g)
				return mti_err(err, MT_ENOMEM, "out of memory");
			t->stages = g;
			cap *= 2;
		}
		t->stages[t->nstages++] = st;
		p += k;
	}
	while (*p == ' ' || *p == '\n')
		p++;
	if (*p || !t->nstages)
		return mti_err(err, MT_EINVAL, "loader: resume token is damaged near '%.20s'", p);
	return 0;
}

int mti_token_parse(const char *text, mt_token *t, mt_error *err)
{
	memset(t, 0, sizeof *t);
	char magic[8], ds[200], ver[200];
	int used = 0;
	if (sscanf(text, "%7s %199s %199s %" SCNu64 " %" SCNu64 " %" SCNu64 " %d %" SCNu64
			 " %" SCNu64 "%n",
		   magic, ds, ver, &t->rows, &t->seed, &t->epoch, &t->shuffle, &t->window_rows,
		   &t->unit_rows, &used) != 9 ||
	    strcmp(magic, TOKEN_MAGIC) || !t->window_rows || !t->unit_rows)
		return mti_err(err, MT_EINVAL, "loader: not a resume token: '%.60s'", text);
	int rc = token_stages(text + used, t, err);
	if (rc)
		return rc;
	size_t dlen = strlen(ds) + 1;
	if (!(t->names = malloc(dlen + strlen(ver) + 1)))
		return mti_err(err, MT_ENOMEM, "out of memory");
	memcpy(t->names, ds, dlen);
	strcpy(t->names + dlen, ver);
	t->dataset = t->names;
	t->version = t->names + dlen;
	return 0;
}

void mti_token_free(mt_token *t)
{
	free(t->names);
	free(t->stages);
	memset(t, 0, sizeof *t);
}
