/* test-catalog-frag.c — the sync of a format-2 append reads only the fragments it does not share with its parent as the catalog holds it, and records the same shard rows and checks as a full read of every fragment; a version whose differing fragment is damaged is still recorded, damaged, with the fragment's health, read again at each sync until the fragment is back; a shared one is caught by a reader. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "store.h"
#include "tap-count.h"
#include "tap-store.h"
#include "tap.h"

#define FRAG_SHARDS 4
#define BASE_ROWS 40 /* one-row shards: ten fragments */

static mt_store *store;
static char root[256];

/* n one-row shards of x = base.., a new version or an append to parent
 * (NULL: the latest). */
static int put(uint64_t n, int64_t base, int append, const char *parent)
{
	static const mt_attr attrs[] = {{"x", MT_INT64, 0, {0}, 0}};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.append = append;
	o.parent = parent;
	o.shard_rows = 1;
	int64_t *x = malloc(n * sizeof *x);
	for (uint64_t i = 0; i < n; i++)
		x[i] = base + (int64_t)i;
	const void *data[1] = {x};
	mt_writer *w = NULL;
	mt_error err = {0};
	int rc = mt_writer_open(store, "fr", append ? NULL : attrs, 1, &o, &w, &err) ||
		 mt_writer_append(w, n, data, NULL, &err) || mt_writer_commit(w, NULL, 0, &err);
	if (rc)
		tap_diag("put: %s", err.message);
	mt_writer_close(w);
	free(x);
	return rc ? -1 : 0;
}

/* Fragments of fr@v that fr@p's root does not name alike at the same place
 * (all of them with p NULL). */
static int differing(const char *v, const char *p)
{
	mt_reader *a = NULL, *b = NULL;
	mt_error err = {0};
	if (mt_reader_open_lazy(store, "fr", v, &a, &err) ||
	    (p && mt_reader_open_lazy(store, "fr", p, &b, &err))) {
		mt_reader_close(a);
		return -1;
	}
	int n = 0;
	for (size_t i = 0; i < mt_reader_nfragments(a); i++)
		n += !mt_reader_fragment_same(a, i, b, i);
	mt_reader_close(a);
	mt_reader_close(b);
	return n;
}

/* Sync the store into catalog db; the fragment gets it cost (-1: failed). */
static int sync_into(const char *db, int flags, int *rc_out, mt_error *err)
{
	mt_catalog *c = NULL;
	char path[512];
	snprintf(path, sizeof path, "%s/%s", root, db);
	int rc = mt_catalog_open(path, &c, err);
	tap_reads_reset();
	if (!rc)
		rc = mt_catalog_sync(c, "here", store, NULL, flags, NULL, NULL, NULL, err);
	mt_catalog_close(c);
	if (rc_out)
		*rc_out = rc;
	else if (rc)
		tap_diag("sync into %s: %s", db, err->message);
	return rc && !rc_out ? -1 : tap_reads();
}

/* Every version's shard rows, in order, with their chain digests and last
 * checks (times left out), as text: what a read of the shards recorded. */
static char *dump(const char *db)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", root, db);
	sqlite3 *h;
	sqlite3_stmt *q;
	size_t cap = 1 << 20, len = 0;
	char *out = calloc(1, cap);
	if (sqlite3_open(path, &h) != SQLITE_OK ||
	    sqlite3_prepare_v2(h, "SELECT v.name, v.nshards, s.idx, s.sha256, s.bytes, s.rows,"
			       " s.first_row, hex(s.chain), coalesce(s.verified, ''),"
			       " coalesce(s.health, ''), coalesce(s.health_note, '') FROM versions v"
			       " JOIN shards s ON s.list_id = v.shard_list AND s.idx < v.nshards"
			       " ORDER BY v.name, s.idx", -1, &q, NULL) != SQLITE_OK) {
		snprintf(out, cap, "error: %s", sqlite3_errmsg(h));
		sqlite3_close(h);
		return out;
	}
	while (sqlite3_step(q) == SQLITE_ROW && len < cap - 512) {
		for (int i = 0; i < 11; i++)
			len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? "|" : "",
						(const char *)sqlite3_column_text(q, i));
		out[len++] = '\n';
	}
	sqlite3_finalize(q);
	sqlite3_close(h);
	return out;
}

/* Record a verification and a health note of v1's shards 0 and 33 in db:
 * the rows a child shares carry them as a full read would. */
static int check_some(const char *db)
{
	mt_reader *r = NULL;
	mt_error err = {0};
	mt_catalog *c = NULL;
	char path[512];
	snprintf(path, sizeof path, "%s/%s", root, db);
	mt_shard_info a, b;
	int rc = mt_reader_open(store, "fr", "v1", &r, &err) || mt_reader_shard(r, 0, &a) ||
		 mt_reader_shard(r, 33, &b) || mt_catalog_open(path, &c, &err);
	mt_catalog_shard_check k[2] = {
		{.sha256 = rc ? "" : a.sha256, .verified = 1, .code = 0, .note = NULL},
		{.sha256 = rc ? "" : b.sha256, .verified = 0, .state = MT_HEALTH_DAMAGED,
		 .note = "bit rot"},
	};
	if (!rc)
		rc = mt_catalog_shards_checked(c, mt_store_url(store), "fr", k, 2, &err);
	if (rc)
		tap_diag("checks: %s", err.message);
	mt_catalog_close(c);
	mt_reader_close(r);
	return rc;
}

/* The path of fr@v's fragment i. */
static int fragment_path(const char *v, size_t i, char *out, size_t cap)
{
	mt_reader *r = NULL;
	mt_error err = {0};
	mt_fragment_info f;
	if (mt_reader_open_lazy(store, "fr", v, &r, &err) || mt_reader_fragment(r, i, &f)) {
		mt_reader_close(r);
		return -1;
	}
	snprintf(out, cap, "%s/datasets/fr/fragments/%s.json", root, f.sha256);
	mt_reader_close(r);
	return 0;
}

/* Flip one byte of a file in place. */
static int flip(const char *path, long at)
{
	FILE *f = fopen(path, "r+b");
	if (!f)
		return -1;
	int rc = fseek(f, at, SEEK_SET);
	int ch = rc ? EOF : fgetc(f);
	if (ch == EOF || fseek(f, at, SEEK_SET) || fputc(ch == '1' ? '2' : '1', f) == EOF)
		rc = -1;
	return fclose(f) || rc ? -1 : 0;
}

static void test_appends(void)
{
	mt_error err = {0};
	/* v1: ten fragments; then each append of one row. */
	tap_ok(!put(BASE_ROWS, 0, 0, NULL), "v1: %d one-row shards", BASE_ROWS);
	int all1 = differing("v1", NULL);
	tap_ok(all1 == BASE_ROWS / FRAG_SHARDS, "v1 is format 2 in %d fragments", all1);
	tap_ok(sync_into("inc.db", 0, NULL, &err) == all1 &&
	       sync_into("full.db", MT_CATALOG_FULL, NULL, &err) == all1 &&
	       sync_into("fresh.db", 0, NULL, &err) == all1,
	       "a first sync into each of three catalogs reads all of v1's fragments");
	tap_ok(!check_some("inc.db") && !check_some("full.db") && !check_some("fresh.db"),
	       "checks of v1's shards recorded in each before its children are synced");

	tap_ok(!put(1, 1000, 1, NULL), "v2: an append of one row");
	int d2 = differing("v2", "v1");
	int got = sync_into("inc.db", 0, NULL, &err);
	tap_ok(d2 >= 1 && d2 <= 2 && got == d2,
	       "the sync of v2 reads only the %d fragment(s) it does not share with v1 (%d read)", d2,
	       got);

	tap_ok(!put(1, 2000, 1, NULL), "v3: an append to v2");
	tap_ok(!put(2, 3000, 1, "v2"), "v4: an append to v2 beside v3 (its list cannot extend v2's)");
	int d3 = differing("v3", "v2"), d4 = differing("v4", "v2");
	got = sync_into("inc.db", 0, NULL, &err);
	tap_ok(got == d3 + d4, "the sync of v3 and v4 reads their %d differing fragments (%d read)",
	       d3 + d4, got);

	/* The same store read whole: a full sync reads every fragment of every version. */
	int every = differing("v1", NULL) + differing("v2", NULL) + differing("v3", NULL) +
		    differing("v4", NULL);
	got = sync_into("full.db", MT_CATALOG_FULL, NULL, &err);
	tap_ok(got == every, "a full sync reads all %d fragments (%d read)", every, got);
	got = sync_into("fresh.db", 0, NULL, &err);
	tap_ok(got == d2 + d3 + d4,
	       "one sync of v2, v3 and v4 after v1 reads their %d differing fragments (%d read)",
	       d2 + d3 + d4, got);

	char *inc = dump("inc.db"), *full = dump("full.db"), *fresh = dump("fresh.db");
	size_t lines = 0;
	for (const char *p = full; *p; p++)
		lines += *p == '\n';
	tap_ok(lines == 4 * BASE_ROWS + 1 + 2 + 3, "the full read recorded %zu shard rows", lines);
	tap_ok(strstr(full, "|bit rot\n") != NULL, "the full read carries v1's checks to its children");
	tap_ok(!strcmp(inc, full), "synced append by append: the same shard rows and checks");
	tap_ok(!strcmp(fresh, full), "synced at once: the same shard rows and checks");
	if (strcmp(inc, full))
		tap_diag("incremental:\n%s\nfull:\n%s", inc, full);
	free(inc);
	free(full);
	free(fresh);
}

/* The first column of the first row of sql in db, as text ("" for none). */
static char *query(const char *db, const char *sql)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", root, db);
	sqlite3 *h;
	sqlite3_stmt *q;
	char *out = NULL;
	if (sqlite3_open(path, &h) == SQLITE_OK &&
	    sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK) {
		if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
			out = strdup((const char *)sqlite3_column_text(q, 0));
		sqlite3_finalize(q);
	} else {
		tap_diag("query: %s", sqlite3_errmsg(h));
	}
	sqlite3_close(h);
	return out ? out : strdup("");
}

struct vhealth {
	const char *name;
	char *health;
};

static int vhealth_fn(void *ud, const mt_catalog_row *row)
{
	struct vhealth *v = ud;
	if (row->cols[0] && !strcmp(row->cols[0], v->name))
		v->health = strdup(row->cols[10] ? row->cols[10] : "(none)");
	return 0;
}

/* Version fr@name's health as the catalog's versions list gives it. */
static char *version_health(const char *db, const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", root, db);
	char *ds = query(db, "SELECT id FROM datasets WHERE name = 'fr'");
	mt_catalog *c = NULL;
	mt_error err = {0};
	struct vhealth v = {name, NULL};
	if (!mt_catalog_open(path, &c, &err))
		mt_catalog_list(c, MT_CAT_VERSIONS, strtoll(ds, NULL, 10), NULL, vhealth_fn, &v, &err);
	mt_catalog_close(c);
	free(ds);
	return v.health ? v.health : strdup("(not listed)");
}

static int read_file(const char *path, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	*out = NULL;
	if (!f)
		return -1;
	*out = malloc(1 << 20);
	*len = *out ? fread(*out, 1, 1 << 20, f) : 0;
	return fclose(f) || !*out ? -1 : 0;
}

static int write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = fwrite(data, 1, len, f);
	return fclose(f) || n != len ? -1 : 0;
}

static void test_damage(void)
{
	mt_error err = {0};
	/* v5's own last fragment (which v4 does not name) edited: the sync reads
	 * it and reports the version; v5 is not recorded. */
	tap_ok(!put(1, 5000, 1, "v4"), "v5: an append to v4");
	size_t nf = 0;
	mt_reader *r = NULL;
	if (!mt_reader_open_lazy(store, "fr", "v5", &r, &err))
		nf = mt_reader_nfragments(r);
	mt_reader_close(r);
	char path[512];
	char *orig = NULL;
	size_t olen = 0;
	tap_ok(nf > 0 && !fragment_path("v5", nf - 1, path, sizeof path) &&
	       !read_file(path, &orig, &olen) && !flip(path, 20),
	       "v5's last fragment edited in place");
	int rc = 0;
	sync_into("inc.db", 0, &rc, &err);
	tap_ok(rc == 0, "the sync succeeds: %s", rc ? err.message : "ok");
	char *inc = dump("inc.db");
	tap_ok(!strstr(inc, "v5|"), "v5 has no shard rows (its fragment cannot be read)");
	free(inc);
	char want[64], *got = query("inc.db", "SELECT group_concat(f.idx || ':' || f.health, ' ')"
				    " FROM fragments f JOIN versions v ON v.id = f.version_id WHERE"
				    " v.name = 'v5' AND f.health NOT IN ('', 'sound')");
	snprintf(want, sizeof want, "%zu:damaged", nf - 1);
	tap_ok(!strcmp(got, want), "v5 is recorded, its last fragment damaged, no other (%s)", got);
	free(got);
	/* (No shard rows: the damage is its fragment's, not v1's shard 33's.) */
	got = version_health("inc.db", "v5");
	tap_ok(!strcmp(got, "damaged"), "v5's health is damaged (%s)", got);
	free(got);
	int gets = sync_into("inc.db", 0, &rc, &err);
	tap_ok(rc == 0 && gets > 0, "the next sync reads v5 again (%d fragment reads)", gets);
	tap_ok(!write_file(path, orig, olen), "the fragment written back");
	free(orig);
	gets = sync_into("inc.db", 0, &rc, &err);
	inc = dump("inc.db");
	tap_ok(rc == 0 && strstr(inc, "v5|"), "the next sync records v5's shards");
	free(inc);
	got = query("inc.db", "SELECT count(*) || ' ' || sum(f.health = 'sound') FROM fragments f"
		    " JOIN versions v ON v.id = f.version_id WHERE v.name = 'v5'");
	snprintf(want, sizeof want, "%zu %zu", nf, nf);
	tap_ok(!strcmp(got, want), "and every fragment of v5 sound (%s of %zu)", got, nf);
	free(got);
	tap_ok(!fragment_path("v5", nf - 1, path, sizeof path) && !flip(path, 20),
	       "v5's last fragment edited again");

	/* A fragment v1 and v2 share edited: a reader of v2 (verify) names it. */
	tap_ok(!fragment_path("v2", 0, path, sizeof path) && !flip(path, 20),
	       "v1's first fragment, which v2 shares, edited in place");
	rc = mt_reader_open(store, "fr", "v2", &r, &err);
	mt_reader_close(r);
	tap_ok(rc == MT_ECORRUPT && strstr(err.message, "fragments/"),
	       "a reader of v2 names the edited fragment: %s", err.message);
}

int main(void)
{
	setenv("MATORAGE_FRAGMENT_SHARDS", "4", 1);
	setenv("MATORAGE_MANIFEST_FORMAT", "2", 1);
	if (tap_scratch_store("catfrag", root, sizeof root, &store))
		return 1;
	/* Fragment gets (whole objects, as a reader loads them). */
	tap_watch_reads(store, "/fragments/", NULL);
	test_appends();
	test_damage();
	tap_unwatch();
	mt_store_close(store);
	tap_rm_tree(root);
	return tap_done();
}
