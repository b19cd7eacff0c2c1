/* test-loader-lazy.c — a loader over a format-2 version plans from the root alone, reads a fragment when a window needs it, delivers the rows of the same version in format 1, and names a swapped fragment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matorage.h"
#include "store.h"
#include "tap-count.h"
#include "tap-store.h"
#include "tap.h"

#define V1_ROWS 600 /* shards of 7 */
#define V2_ROWS 97  /* appended in shards of 5: a fragment of two or three runs */
#define ROWS (V1_ROWS + V2_ROWS)
#define FRAG_SHARDS "8"

static mt_store *store;
static char root[512];

/* x (int64) = row number, r (ragged uint8) = row % 5 items of row & 0xff. */
static int write_rows(uint64_t first, uint64_t n, uint64_t shard_rows, int append)
{
	mt_attr attrs[2] = {{.name = "x", .dtype = MT_INT64, .rank = 0},
			    {.name = "r", .dtype = MT_UINT8, .rank = 0, .ragged = 1}};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = shard_rows;
	o.chunk_bytes = 64;
	o.append = append;
	int64_t *x = malloc(n * sizeof *x);
	uint8_t *r = malloc(n * 4 + 1);
	uint64_t *len = malloc(n * sizeof *len);
	size_t k = 0;
	for (uint64_t i = 0; i < n; i++) {
		x[i] = (int64_t)(first + i);
		len[i] = (first + i) % 5;
		for (uint64_t j = 0; j < len[i]; j++)
			r[k++] = (uint8_t)((first + i) & 0xff);
	}
	const void *data[2] = {x, r};
	const uint64_t *lens[2] = {NULL, len};
	mt_writer *w = NULL;
	mt_error err = {0};
	int rc = mt_writer_open(store, "lz", attrs, 2, &o, &w, &err) ||
		 mt_writer_append(w, n, data, lens, &err) || mt_writer_commit(w, NULL, 0, &err);
	if (rc)
		tap_diag("writer: %s", err.message);
	mt_writer_close(w);
	free(x);
	free(r);
	free(len);
	return rc ? -1 : 0;
}

/* What one loader delivered: row ids in order, whether every value matched
 * its row, the error that ended it (0: the epoch ran out), and how many
 * fragment gets its open and the whole run cost. */
typedef struct run {
	uint64_t rows[ROWS + 64];
	size_t n;
	int bad;
	int rc;
	char msg[512];
	int open_gets, gets;
} run;

static void check_batch(const mt_batch *b, run *out)
{
	const int64_t *x = b->cols[0].data;
	const uint64_t *off = b->cols[1].offsets;
	const uint8_t *v = b->cols[1].data;
	for (size_t i = 0; i < b->rows && out->n < ROWS + 64; i++) {
		uint64_t id = b->row_ids[i];
		out->rows[out->n++] = id;
		out->bad += x[i] != (int64_t)id || off[i + 1] - off[i] != id % 5;
		for (uint64_t j = off[i]; j < off[i + 1]; j++)
			out->bad += v[j] != (uint8_t)(id & 0xff);
	}
}

/* One epoch of one rank (at most max batches), or the error that stops it. */
static void load(const mt_loader_opts *base, unsigned rank, size_t max, run *out)
{
	memset(out, 0, sizeof *out);
	mt_loader_opts o = *base;
	o.rank = rank;
	/* No window read until the first batch: open_gets is the open's alone. */
	o.defer_windows = 1;
	mt_loader *l = NULL;
	mt_error err = {0};
	tap_reads_reset();
	out->rc = mt_loader_open(store, "lz", NULL, &o, &l, &err);
	out->open_gets = tap_reads();
	const mt_batch *b = NULL;
	for (size_t k = 0; !out->rc && k < max; k++) {
		if ((out->rc = mt_loader_next(l, &b, &err)) || !b)
			break;
		check_batch(b, out);
	}
	mt_loader_close(l);
	out->gets = tap_reads();
	if (out->rc)
		snprintf(out->msg, sizeof out->msg, "%s", err.message);
}

/* The loader settings compared across formats: whole epochs of ranks. */
#define NCONF 4
static void conf(int c, mt_loader_opts *o)
{
	mt_loader_opts_init(o);
	o->attrs = NULL;
	o->batch_rows = 16;
	o->world = c == 0 ? 1 : 4;
	o->shuffle = c >= 2;
	o->seed = 7 + (uint64_t)c;
	o->epoch = (uint64_t)c;
	o->shuffle_rows = c == 3 ? 64 : 200; /* windows smaller than a fragment's rows */
	o->drop_last = c == 1;
}

static run before[NCONF][4];

static void load_all(run (*out)[4])
{
	for (int c = 0; c < NCONF; c++) {
		mt_loader_opts o;
		conf(c, &o);
		for (unsigned k = 0; k < o.world; k++)
			load(&o, k, 1000, &out[c][k]);
	}
}

/* The root's text, fragment k's file name (its sha256.json, in row order:
 * the k-th "sha256" after "fragments"). */
static char *frag_name(const char *rootjson, int k, char *name, size_t cap)
{
	const char *p = strstr(rootjson, "\"fragments\":");
	for (int i = 0; p && i <= k; i++)
		if ((p = strstr(p, "\"sha256\":\"")))
			p += 10;
	if (!p)
		return NULL;
	snprintf(name, cap, "%.64s.json", p);
	return name;
}

static void test_same_rows(int nfrags)
{
	run (*after)[4] = calloc(NCONF, sizeof *after);
	load_all(after);
	int same = 1, opens = 0, bad = 0, errs = 0, most = 0;
	for (int c = 0; c < NCONF; c++) {
		mt_loader_opts o;
		conf(c, &o);
		for (unsigned k = 0; k < o.world; k++) {
			const run *a = &before[c][k], *b = &after[c][k];
			same &= a->n == b->n && !memcmp(a->rows, b->rows, a->n * sizeof *a->rows);
			opens += b->open_gets;
			bad += a->bad + b->bad;
			errs += (a->rc != 0) + (b->rc != 0);
			most = b->gets > most ? b->gets : most;
			if (b->rc)
				tap_diag("conf %d rank %u: %s", c, k, b->msg);
		}
	}
	tap_ok(!errs && !bad, "every epoch of every rank ran, each row's values its own");
	tap_ok(same, "the upgraded version delivers every rank the very rows, in the very order");
	tap_ok(most > 0 && most <= nfrags && opens <= most,
	       "the epochs read fragments (at most %d of %d in one loader), each once", most,
	       nfrags);
	free(after);
}

/* Rank 1 of 8, unshuffled, one window for the whole version: its share,
 * rows 88 to 175, lies in fragments 1 to 3 (56 rows each), and it reads
 * those alone, plan included; with every other fragment gone it still
 * takes its whole epoch. */
static void test_one_rank(const char *rootjson)
{
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.batch_rows = 8;
	o.world = 8;
	run *r = calloc(1, sizeof *r);
	load(&o, 1, 1000, r);
	tap_ok(!r->rc && r->n == 88 && !r->bad && r->gets == 3 && r->rows[0] == 88,
	       "rank 1 of 8 reads 3 fragments (%d) for its epoch%s%s", r->gets, r->rc ? ": " : "",
	       r->msg);
	char name[80], path[1100], hidden[1200];
	int moved = 0;
	for (int k = 0; frag_name(rootjson, k, name, sizeof name); k++) {
		if (k >= 1 && k <= 3)
			continue;
		snprintf(path, sizeof path, "%s/datasets/lz/fragments/%s", root, name);
		snprintf(hidden, sizeof hidden, "%s.away", path);
		moved += rename(path, hidden) == 0;
	}
	load(&o, 1, 1000, r);
	tap_ok(moved >= 10 && !r->rc && r->n == 88 && !r->bad,
	       "with the %d other fragments gone, rank 1 still plans and takes its epoch%s%s",
	       moved, r->rc ? ": " : "", r->msg);
	load(&o, 0, 1000, r);
	tap_ok(r->rc == MT_ECORRUPT && strstr(r->msg, "missing") && strstr(r->msg, "rows 0 to 55"),
	       "rank 0 fails naming its missing fragment: %s", r->msg);
	for (int k = 0; frag_name(rootjson, k, name, sizeof name); k++) {
		snprintf(path, sizeof path, "%s/datasets/lz/fragments/%s", root, name);
		snprintf(hidden, sizeof hidden, "%s.away", path);
		rename(hidden, path);
	}
	free(r);
}

int main(void)
{
	setenv("MATORAGE_FRAGMENT_SHARDS", FRAG_SHARDS, 1);
	setenv("MATORAGE_MANIFEST_FORMAT", "1", 1);
	if (tap_scratch_store("loader-lazy", root, sizeof root, &store) ||
	    write_rows(0, V1_ROWS, 7, 0) || write_rows(V1_ROWS, V2_ROWS, 5, 1))
		return tap_ok(0, "setup"), tap_done();
	unsetenv("MATORAGE_MANIFEST_FORMAT");
	/* Whole-object gets of fragments, from any of the loader's threads. */
	tap_watch_reads(store, "/fragments/", NULL);

	load_all(before);
	tap_ok(before[0][0].n == ROWS && !before[0][0].rc && !before[0][0].bad,
	       "format 1: one rank reads all %d rows%s%s", ROWS, before[0][0].rc ? ": " : "",
	       before[0][0].msg);

	/* A token taken over format 1, resumed over format 2 below. */
	mt_loader_opts o;
	conf(3, &o);
	mt_loader *l = NULL;
	mt_error err = {0};
	const mt_batch *b = NULL;
	int rc = mt_loader_open(store, "lz", NULL, &o, &l, &err);
	for (int k = 0; !rc && k < 5; k++)
		rc = mt_loader_next(l, &b, &err);
	char tok[512] = "";
	if (!rc)
		mt_loader_state(l, tok, sizeof tok);
	mt_loader_close(l);

	int changed = 0;
	TAP_CALL(mt_store_upgrade(store, "lz", "v2", &changed, &err), &err,
		 "upgrade lz@v2 to format 2 (fragments of " FRAG_SHARDS " shards)");
	char path[1024];
	snprintf(path, sizeof path, "%s/datasets/lz/versions/v2.json", root);
	size_t rlen = 0;
	char *rootjson = tap_read_file(path, &rlen);
	int nfrags = 0;
	for (const char *p = rootjson; p && (p = strstr(p, "\"layout\":")); p++)
		nfrags++;
	tap_ok(changed && rootjson && strstr(rootjson, "\"format\":2") && nfrags >= 10 &&
		       strstr(rootjson, "\"layout\":[[8,7]]") && strstr(rootjson, "\"layout\":[[5,7],[3,5]]"),
	       "the root gives each of its %d fragments' layout", nfrags);

	test_same_rows(nfrags);
	test_one_rank(rootjson);

	/* The token made over format 1 goes on over format 2 with the same rows. */
	mt_loader_opts r;
	mt_loader_opts_init(&r);
	r.batch_rows = 16;
	r.world = 4;
	r.resume = tok;
	r.defer_windows = 1;
	run *tail = calloc(1, sizeof *tail);
	tap_reads_reset();
	rc = mt_loader_open(store, "lz", NULL, &r, &l, &err);
	tail->open_gets = tap_reads();
	while (!rc && !(rc = mt_loader_next(l, &b, &err)) && b)
		check_batch(b, tail);
	mt_loader_close(l);
	const run *full = &before[3][0];
	tap_ok(*tok && !rc && !tail->bad && tail->open_gets == 0 && 5 * 16 + tail->n == full->n &&
		       !memcmp(full->rows + 5 * 16, tail->rows, tail->n * sizeof *tail->rows),
	       "a token made over format 1 resumes the format-2 version with the rest of the "
	       "epoch%s%s", rc ? ": " : "", rc ? err.message : "");
	free(tail);

	/* An older root: no layout, no checksum.  The plan reads every fragment. */
	char *old = malloc(rlen + 1), *q = old;
	for (const char *p = rootjson; *p;) {
		if (!strncmp(p, ",\"layout\":[", 11)) {
			p = strstr(p, "]]") + 2;
			continue;
		}
		if (!strncmp(p, ",\"checksum\":", 12)) {
			*q++ = '}';
			break;
		}
		*q++ = *p++;
	}
	*q = 0;
	tap_write_file(path, old, strlen(old));
	run *fb = calloc(1, sizeof *fb);
	mt_loader_opts_init(&o);
	o.batch_rows = 16;
	o.shuffle_rows = 64; /* windows of a few units: the epoch reads on after the first */
	load(&o, 0, 1000, fb);
	tap_ok(!fb->rc && fb->n == ROWS && !fb->bad && fb->open_gets == nfrags &&
		       !memcmp(fb->rows, before[0][0].rows, ROWS * sizeof *fb->rows),
	       "a root without layouts: the plan loads its %d fragments (%d), same rows%s%s",
	       nfrags, fb->open_gets, fb->rc ? ": " : "", fb->msg);

	/* A layout that adds up but is not the fragment's: refused when it is read. */
	tap_write_file(path, rootjson, rlen);
	char *lie = malloc(rlen + 64), *at = strstr(rootjson, "\"layout\":[[8,7]]");
	rc = -1;
	if (at) {
		sprintf(lie, "%.*s\"layout\":[[1,8],[6,7],[1,6]]%s", (int)(at - rootjson), rootjson,
			at + strlen("\"layout\":[[8,7]]"));
		char *sum = strstr(lie, ",\"checksum\":");
		strcpy(sum, "}");
		rc = tap_write_file(path, lie, strlen(lie));
	}
	load(&o, 0, 1000, fb);
	tap_ok(!rc && fb->rc == MT_EFORMAT && strstr(fb->msg, "manifest's layout says") &&
		       strstr(fb->msg, "lz@v2: fragment") && !fb->bad && fb->n == 0,
	       "a root whose layout is not its fragment's: the read fails naming it, no row "
	       "delivered (%d %zu %d): %s", rc, fb->n, fb->bad, fb->msg);
	tap_write_file(path, rootjson, rlen);

	/* Fragment 3 swapped for fragment 4's bytes: the open still reads
	 * nothing of it; the first window needing its rows fails naming it,
	 * and every row delivered before is its own. */
	char n3[80], n4[80], p3[1100], p4[1100];
	size_t l3 = 0, l4 = 0;
	char *keep = NULL, *other = NULL;
	if (frag_name(rootjson, 3, n3, sizeof n3) && frag_name(rootjson, 4, n4, sizeof n4)) {
		snprintf(p3, sizeof p3, "%s/datasets/lz/fragments/%s", root, n3);
		snprintf(p4, sizeof p4, "%s/datasets/lz/fragments/%s", root, n4);
		keep = tap_read_file(p3, &l3);
		other = tap_read_file(p4, &l4);
	}
	rc = keep && other ? tap_write_file(p3, other, l4) : -1;
	load(&o, 0, 1000, fb);
	tap_ok(!rc && fb->rc == MT_ECORRUPT && fb->open_gets == 0 && strstr(fb->msg, n3) &&
		       strstr(fb->msg, "lz@v2: fragment") && strstr(fb->msg, "swapped") &&
		       !fb->bad && fb->n > 0 && fb->n < ROWS,
	       "a swapped fragment read lazily fails the epoch naming it, after %zu sound rows: %s",
	       fb->n, fb->msg);
	if (keep)
		tap_write_file(p3, keep, l3);
	load(&o, 0, 1000, fb);
	tap_ok(!fb->rc && fb->n == ROWS && !fb->bad, "restored, the version reads again");

	free(fb);
	free(keep);
	free(other);
	free(lie);
	free(old);
	free(rootjson);
	tap_unwatch();
	mt_store_close(store);
	if (!getenv("KEEP")) tap_rm_tree(root);
	return tap_done();
}
