/* test-catalog-chain.c — shard lists shared along append chains: a chain's answers (shard lists, counts, shared shards, health, removals) equal those of the same versions unchained; the upgrade from schema 7; recording one written version reads that version alone; lists longer than a sync's batch of rows. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "format.h"
#include "tap-store.h"
#include "tap.h"

static char root[256], dbpath[300];
static mt_store *store;

static const mt_attr attrs[] = {
	{"x", MT_INT64, 0, {0}, 0},
};

/* Five rows base..base+4 (shards of 2 rows: three per version), a new
 * version or an append to the latest. */
static char written[64]; /* the version put wrote */

static int put(const char *ds, int append, int64_t base, mt_error *err)
{
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.append = append;
	o.shard_rows = 2;
	mt_writer *w;
	int rc = mt_writer_open(store, ds, append ? NULL : attrs, 1, &o, &w, err);
	if (rc)
		return rc;
	int64_t x[5];
	for (int i = 0; i < 5; i++)
		x[i] = base + i;
	const void *data[1] = {x};
	rc = mt_writer_append(w, 5, data, NULL, err);
	if (!rc)
		rc = mt_writer_commit(w, written, sizeof written, err);
	mt_writer_close(w);
	return rc;
}

/* Dataset `flat`: chain@version's manifest with no parent (so its shards
 * are never chained), beside a copy of the shard objects it names. */
static int unchain(const char *version)
{
	char path[512], dst[512];
	snprintf(path, sizeof path, "%s/datasets/chain/versions/%s.json", root, version);
	size_t len;
	char *json = tap_read_file(path, &len);
	mt_manifest *m = NULL;
	mt_error err = {0};
	if (!json || mti_manifest_decode(json, len, path, &m, &err))
		return -1;
	free(json);
	free(m->parent);
	free(m->dataset);
	m->parent = strdup("");
	m->dataset = strdup("flat");
	int rc = mti_manifest_encode(m, &json, &err);
	for (size_t i = 0; !rc && i < m->nshards; i++) {
		snprintf(path, sizeof path, "%s/datasets/chain/shards/%s.h5", root, m->shards[i].sha256);
		snprintf(dst, sizeof dst, "%s/datasets/flat/shards/%s.h5", root, m->shards[i].sha256);
		char *sh = tap_read_file(path, &len);
		rc = sh ? tap_write_file(dst, sh, len) : -1;
		free(sh);
	}
	snprintf(path, sizeof path, "%s/datasets/flat/versions/%s.json", root, version);
	if (!rc)
		rc = tap_write_file(path, json, strlen(json));
	free(json);
	mti_manifest_free(m);
	return rc;
}

/* Rows of a listing as "col|col ..." lines, from column `from` on. */
struct collect {
	char text[16384];
	size_t n, from;
	int64_t last_id;
};

static int collect_row(void *ud, const mt_catalog_row *row)
{
	struct collect *c = ud;
	size_t len = strlen(c->text);
	for (size_t i = c->from; i < row->ncols && len < sizeof c->text; i++)
		len += (size_t)snprintf(c->text + len, sizeof c->text - len, "%s%s",
					i > c->from ? "|" : "", row->cols[i] ? row->cols[i] : "NULL");
	if (len < sizeof c->text)
		snprintf(c->text + len, sizeof c->text - len, "\n");
	c->n++;
	c->last_id = row->id;
	return 0;
}

static struct collect list(mt_catalog *c, int level, int64_t parent, size_t from)
{
	struct collect col = {.from = from};
	mt_error err = {0};
	if (mt_catalog_list(c, level, parent, NULL, collect_row, &col, &err))
		snprintf(col.text, sizeof col.text, "error %d: %s", err.code, err.message);
	return col;
}

/* The catalog's id of version ds@name (-1: none). */
static int64_t version_id(mt_catalog *c, const char *ds, const char *name)
{
	(void)c;
	sqlite3 *db;
	int64_t id = -1;
	if (sqlite3_open(dbpath, &db) == SQLITE_OK) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(db, "SELECT v.id FROM versions v JOIN datasets d ON"
				       " d.id = v.dataset_id WHERE d.name = ?1 AND v.name = ?2",
				       -1, &q, NULL) == SQLITE_OK) {
			sqlite3_bind_text(q, 1, ds, -1, SQLITE_STATIC);
			sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
			if (sqlite3_step(q) == SQLITE_ROW)
				id = sqlite3_column_int64(q, 0);
			sqlite3_finalize(q);
		}
	}
	sqlite3_close(db);
	return id;
}

static int64_t count_sql(const char *sql)
{
	sqlite3 *db;
	int64_t n = -1;
	if (sqlite3_open(dbpath, &db) == SQLITE_OK) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK) {
			if (sqlite3_step(q) == SQLITE_ROW)
				n = sqlite3_column_int64(q, 0);
			sqlite3_finalize(q);
		}
	}
	sqlite3_close(db);
	return n;
}

#define ROWS_OF(ds)                                                                        \
	"SELECT count(*) FROM shards s JOIN shard_lists l ON l.id = s.list_id JOIN datasets d" \
	" ON d.id = l.dataset_id WHERE d.name = '" ds "'"

/* One field of a version's field rows ("" when none). */
static void field(mt_catalog *c, int64_t vid, const char *name, char *out, size_t cap)
{
	struct collect f = list(c, MT_CAT_VERSION, vid, 0);
	char key[64];
	snprintf(key, sizeof key, "%s|", name);
	const char *p = strstr(f.text, key);
	*out = '\0';
	if (p && (p == f.text || p[-1] == '\n'))
		snprintf(out, cap, "%.*s", (int)strcspn(p + strlen(key), "\n"), p + strlen(key));
}

/* Shard references of version ds@v in the store matched one for one with
 * references of its parent (named in p) to the same object (by sha256), as
 * the catalog counts them; -1 when the parent is gone. */
static int64_t shared_in_store(const char *ds, const char *v, char *p, size_t cap)
{
	mt_reader *rv, *rp;
	mt_error err = {0};
	if (mt_reader_open(store, ds, v, &rv, &err))
		return -2;
	snprintf(p, cap, "%s", mt_reader_info(rv)->parent);
	if (mt_reader_open(store, ds, p, &rp, &err)) {
		mt_reader_close(rv);
		return -1;
	}
	int64_t n = 0;
	char *used = calloc(mt_reader_info(rp)->nshards + 1, 1);
	for (size_t i = 0; i < mt_reader_info(rv)->nshards; i++) {
		mt_shard_info a, b;
		mt_reader_shard(rv, i, &a);
		for (size_t j = 0; j < mt_reader_info(rp)->nshards; j++) {
			mt_reader_shard(rp, j, &b);
			if (!used[j] && !strcmp(a.sha256, b.sha256)) {
				used[j] = 1;
				n++;
				break;
			}
		}
	}
	free(used);
	mt_reader_close(rv);
	mt_reader_close(rp);
	return n;
}

/* Every version chain@vK and flat@vK gives the same shard list, shard
 * count, verification summary; the chain's "shared" count is what the
 * manifests say. */
static void compare(mt_catalog *c, const char *when, int first, int last)
{
	int same_lists = 1, same_fields = 1, shared_ok = 1;
	for (int k = first; k <= last; k++) {
		char v[16], p[64];
		snprintf(v, sizeof v, "v%d", k);
		int64_t a = version_id(c, "chain", v), b = version_id(c, "flat", v);
		if (a < 0 && b < 0)
			continue;
		struct collect la = list(c, MT_CAT_SHARDS, a, 0), lb = list(c, MT_CAT_SHARDS, b, 0);
		if (a < 0 || b < 0 || strcmp(la.text, lb.text) || !la.n) {
			same_lists = 0;
			tap_diag("%s: chain@%s:\n%s flat@%s:\n%s", when, v, la.text, v, lb.text);
		}
		const char *names[] = {"shards", "rows", "verified"};
		for (size_t i = 0; i < 3; i++) {
			char fa[256], fb[256];
			field(c, a, names[i], fa, sizeof fa);
			field(c, b, names[i], fb, sizeof fb);
			if (strcmp(fa, fb)) {
				same_fields = 0;
				tap_diag("%s: %s of %s: '%s' vs '%s'", when, names[i], v, fa, fb);
			}
		}
		if (k > 1) {
			/* What a version shared with its parent, kept for when the
			 * parent is removed. */
			static int64_t known[16];
			char fa[256], want[256], gone[128];
			field(c, a, "shared", fa, sizeof fa);
			int64_t n = shared_in_store("chain", v, p, sizeof p);
			char total[32];
			field(c, a, "shards", total, sizeof total);
			if (n >= 0)
				known[k] = n;
			snprintf(want, sizeof want, "%lld of %s shards with %s%s", (long long)known[k],
				 total, p,
				 n < 0 ? " (removed; it still holds them)"
				 : !strcmp(total, "") || n != atoll(total) ? "" : " (all)");
			snprintf(gone, sizeof gone, "%s was removed", p);
			if (strcmp(fa, want) && !(n < 0 && !strcmp(fa, gone))) {
				shared_ok = 0;
				tap_diag("%s: shared of chain@%s: '%s', want '%s'", when, v, fa, want);
			}
		}
	}
	tap_ok(same_lists, "%s: each version's shard list (index, sha256, rows, bytes, checks) is"
	       " the unchained version's", when);
	tap_ok(same_fields, "%s: shard counts, rows and verification summaries are the unchained"
	       " version's", when);
	tap_ok(shared_ok, "%s: shards shared with the parent are counted as the manifests say",
	       when);
}

static void test_chain(void)
{
	mt_error err = {0};
	mt_catalog *c;
	mt_catalog_sync_stats st;
	char path[512];
	/* v2 appends the same rows as v1 (identical shard objects: shared by
	 * content beyond the prefix), the others new rows. */
	int ok = !put("chain", 0, 0, &err) && !put("chain", 1, 0, &err);
	for (int k = 3; ok && k <= 8; k++)
		ok = !put("chain", 1, 100 * k, &err);
	tap_ok(ok, "chain@v1..v8 written, each appending 3 shards: %s", err.message);
	snprintf(path, sizeof path, "%s/datasets/flat", root);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/datasets/flat/versions", root);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/datasets/flat/shards", root);
	mkdir(path, 0755);
	ok = 1;
	for (int k = 1; ok && k <= 8; k++) {
		char v[16];
		snprintf(v, sizeof v, "v%d", k);
		ok = !unchain(v);
	}
	tap_ok(ok, "flat@v1..v8: the same manifests without parents");

	TAP_CALL(mt_catalog_open(dbpath, &c, &err), &err, "a catalog opens");
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, 0, NULL, NULL, &st, &err), &err,
		 "the first sync");
	tap_ok(count_sql(ROWS_OF("chain")) == 24, "the chain keeps one row per shard of its"
	       " longest version (24), not one per version and shard (108): %lld",
	       (long long)count_sql(ROWS_OF("chain")));
	tap_ok(count_sql(ROWS_OF("flat")) == 108, "the unchained versions keep a row per version"
	       " and shard (108): %lld", (long long)count_sql(ROWS_OF("flat")));
	compare(c, "after the first sync", 1, 8);

	/* Health by content: a shard of v1 verified, one of v3 damaged, in both. */
	mt_reader *r;
	mt_shard_info s0, s7;
	TAP_CALL(mt_reader_open(store, "chain", "v3", &r, &err), &err, "chain@v3 opens");
	mt_reader_shard(r, 0, &s0);
	mt_reader_shard(r, 7, &s7);
	const char *url = mt_store_url(store);
	const char *ds[] = {"chain", "flat"};
	ok = 1;
	for (int i = 0; i < 2; i++)
		ok = ok && !mt_catalog_shard_verified(c, url, ds[i], s0.sha256, 0, NULL, &err) &&
		     !mt_catalog_shard_health(c, url, ds[i], s7.sha256, MT_HEALTH_DAMAGED,
					      "bytes differ", &err);
	mt_reader_close(r);
	tap_ok(ok, "a shard verified sound and another found damaged, in both datasets");
	compare(c, "after checks", 1, 8);

	/* Locate a shared row through the version that lists it. */
	int64_t v5 = version_id(c, "chain", "v5");
	struct collect l5 = list(c, MT_CAT_SHARDS, v5, 0);
	mt_catalog_ref ref;
	TAP_CALL(mt_catalog_locate(c, MT_CAT_SHARDS, l5.last_id, &ref, &err), &err,
		 "the last shard of chain@v5 is located");
	tap_ok(ref.version && !strcmp(ref.version, "v5") && ref.shard == 14,
	       "as shard 14 of v5: %s %lld", ref.version ? ref.version : "-", (long long)ref.shard);
	mt_catalog_ref_free(&ref);
	struct collect f = list(c, MT_CAT_SHARD, l5.last_id, 0);
	tap_ok(strstr(f.text, "version|chain@v5\n") && strstr(f.text, "shard|14\n"),
	       "its fields name chain@v5, shard 14");

	/* Removals: the tip and a middle version. */
	ok = 1;
	for (int i = 0; i < 2; i++)
		ok = ok && !mt_store_delete_version(store, ds[i], "v8", &err) &&
		     !mt_store_delete_version(store, ds[i], "v4", &err);
	tap_ok(ok, "v8 and v4 deleted from both");
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, 0, NULL, NULL, &st, &err), &err,
		 "a sync after the removals");
	tap_ok(count_sql(ROWS_OF("chain")) == 21, "the rows past the longest version left are"
	       " dropped (21): %lld", (long long)count_sql(ROWS_OF("chain")));
	compare(c, "after removing the tip and a middle version", 1, 8);
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, MT_CATALOG_FULL, NULL, NULL, &st, &err),
		 &err, "a full sync reads every manifest again");
	compare(c, "after a full sync", 1, 8);

	/* A write recorded alone: one manifest read, and the next sync finds
	 * nothing new. */
	TAP_CALL(put("chain", 1, 900, &err), &err, "chain@v9 appended");
	tap_ok(!strcmp(written, "v9"), "named v9: %s", written);
	TAP_CALL(unchain("v9"), &err, "flat@v9 too");
	TAP_CALL(mt_catalog_sync_version(c, "local", store, "chain", "v9", &st, &err), &err,
		 "chain@v9 recorded alone");
	tap_ok(st.versions_read == 1 && st.versions == 1,
	       "one manifest read, of the one version: %llu read of %llu",
	       (unsigned long long)st.versions_read, (unsigned long long)st.versions);
	struct collect d = list(c, MT_CAT_DATASETS, 1, 0);
	tap_ok(strstr(d.text, "chain|7|v9|") != NULL, "the dataset's count and latest follow:\n%s",
	       d.text);
	TAP_CALL(mt_catalog_sync_version(c, "local", store, "flat", "v9", &st, &err), &err,
		 "flat@v9 recorded alone");
	compare(c, "after recording single versions", 1, 9);
	TAP_CALL(mt_catalog_sync(c, "local", store, "chain", 0, NULL, NULL, &st, &err), &err,
		 "a sync of the dataset after it");
	tap_ok(st.versions_read == 0 && st.versions == 7,
	       "finds every version recorded as listed: %llu read of %llu",
	       (unsigned long long)st.versions_read, (unsigned long long)st.versions);
	TAP_CALL(mt_catalog_sync_version(c, "local", store, "chain", "v404", &st, &err), &err,
		 "a version the store does not list falls back to the dataset's sync");
	tap_ok(st.versions == 7 && st.versions_read == 0, "which lists the dataset: %llu",
	       (unsigned long long)st.versions);
	mt_catalog_close(c);
}

/* n one-row shards of rows base..base+n-1 into dataset "long", a new
 * version or an append to the latest. */
static int put_long(int append, int64_t base, int n, mt_error *err)
{
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.append = append;
	o.shard_rows = 1;
	mt_writer *w;
	int rc = mt_writer_open(store, "long", append ? NULL : attrs, 1, &o, &w, err);
	if (rc)
		return rc;
	int64_t *x = malloc((size_t)n * sizeof *x);
	for (int i = 0; x && i < n; i++)
		x[i] = base + i;
	const void *data[1] = {x};
	rc = x ? mt_writer_append(w, (uint64_t)n, data, NULL, err) : MT_ENOMEM;
	if (!rc)
		rc = mt_writer_commit(w, written, sizeof written, err);
	mt_writer_close(w);
	free(x);
	return rc;
}

/* How many of ds@v's shards the catalog's rows give as its manifest does
 * (index, sha256, bytes, rows, first row), and as checked (verified_at
 * set); -1 when they cannot be read. */
static int64_t long_rows(const char *ds, const char *v, int64_t *checked)
{
	mt_reader *r;
	mt_error err = {0};
	sqlite3 *db;
	sqlite3_stmt *q = NULL;
	int64_t n = -1;
	*checked = 0;
	if (mt_reader_open(store, ds, v, &r, &err))
		return -1;
	if (sqlite3_open(dbpath, &db) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT s.idx, s.sha256, s.bytes, s.rows, s.first_row,"
			       " s.verified_at <> '' FROM shards s JOIN versions v ON"
			       " v.shard_list = s.list_id JOIN datasets d ON d.id = v.dataset_id"
			       " WHERE d.name = ?2 AND v.name = ?1 AND s.idx < v.nshards"
			       " ORDER BY s.idx", -1, &q, NULL) == SQLITE_OK) {
		sqlite3_bind_text(q, 1, v, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 2, ds, -1, SQLITE_STATIC);
		n = 0;
		while (sqlite3_step(q) == SQLITE_ROW) {
			mt_shard_info sh;
			if (mt_reader_shard(r, (size_t)n, &sh) || sqlite3_column_int64(q, 0) != n ||
			    strcmp((const char *)sqlite3_column_text(q, 1), sh.sha256) ||
			    sqlite3_column_int64(q, 2) != (int64_t)sh.bytes ||
			    sqlite3_column_int64(q, 3) != (int64_t)sh.rows ||
			    sqlite3_column_int64(q, 4) != (int64_t)sh.first_row)
				break;
			*checked += sqlite3_column_int64(q, 5);
			n++;
		}
	}
	sqlite3_finalize(q);
	sqlite3_close(db);
	mt_reader_close(r);
	return n;
}

/* A version of more shard rows than the catalog holds, and more than
 * SHARD_REINDEX_MIN (10,000): written without the index by sha256, which
 * is made again after them.  big@v1 names long@v1's 150 objects over and
 * over (a sync reads no shard object), 12,000 entries. */
static void test_big_list(mt_catalog *c, const char *sha70)
{
	char path[512];
	mt_error err = {0};
	mt_catalog_sync_stats st;
	size_t len;
	snprintf(path, sizeof path, "%s/datasets/long/versions/v1.json", root);
	char *json = tap_read_file(path, &len);
	mt_manifest *m = NULL;
	int ok = json && !mti_manifest_decode(json, len, path, &m, &err) && m->nshards == 150;
	free(json);
	json = NULL;
	mt_mshard *sh = ok ? calloc(12000, sizeof *sh) : NULL;
	for (size_t i = 0; sh && i < 12000; i++) {
		sh[i] = m->shards[i % 150];
		sh[i].first_row = i;
	}
	if (sh) {
		free(m->shards);
		m->shards = sh;
		m->nshards = 12000;
		m->rows = 12000;
		m->raw_bytes = 8 * 12000;
		free(m->dataset);
		m->dataset = strdup("big");
	}
	ok = sh && !mti_manifest_encode(m, &json, &err);
	snprintf(path, sizeof path, "%s/datasets/big", root);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/datasets/big/versions", root);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/datasets/big/versions/v1.json", root);
	ok = ok && !tap_write_file(path, json, strlen(json));
	free(json);
	mti_manifest_free(m);
	tap_ok(ok, "big@v1: 12,000 entries naming long@v1's 150 objects");
	TAP_CALL(mt_catalog_sync(c, "local", store, "big", 0, NULL, NULL, &st, &err), &err,
		 "big synced");
	int64_t checked, n = long_rows("big", "v1", &checked);
	tap_ok(n == 12000 && checked == 80, "its 12,000 rows are the manifest's, and the 80 naming"
	       " long@v1's shard 70 checked: %lld, %lld", (long long)n, (long long)checked);
	tap_ok(count_sql("SELECT count(*) FROM sqlite_master WHERE name = 'shards_sha' AND"
			 " sql = 'CREATE INDEX shards_sha ON shards(sha256)'") == 1 &&
	       count_sql("SELECT integrity_check = 'ok' FROM pragma_integrity_check") == 1,
	       "the index by sha256 is there again, as the schema makes it, and the catalog whole");
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM shards INDEXED BY shards_sha WHERE"
		 " sha256 = '%s'", sha70);
	tap_ok(count_sql(sql) == 82, "it finds the 82 rows of that object (80 and long's 2): %lld",
	       (long long)count_sql(sql));
}

/* Lists longer than the sync's batch of rows (several batches and a
 * shorter last one): every row as the manifest gives it, and a check
 * recorded before a version is synced taken by its rows of the same
 * object, in a later batch than the checked row. */
static void test_long_lists(void)
{
	mt_error err = {0};
	mt_catalog *c;
	mt_catalog_sync_stats st;
	int64_t checked;
	TAP_CALL(put_long(0, 0, 150, &err), &err, "long@v1: 150 one-row shards");
	/* A new catalog: no row checked, none to look up. */
	unlink(dbpath);
	TAP_CALL(mt_catalog_open(dbpath, &c, &err), &err, "a new catalog opens");
	TAP_CALL(mt_catalog_sync(c, "local", store, "long", 0, NULL, NULL, &st, &err), &err,
		 "long synced");
	int64_t n = long_rows("long", "v1", &checked);
	tap_ok(n == 150 && checked == 0, "its 150 rows are the manifest's, none checked: %lld, %lld",
	       (long long)n, (long long)checked);
	mt_reader *r;
	mt_shard_info s70;
	TAP_CALL(mt_reader_open(store, "long", "v1", &r, &err), &err, "long@v1 opens");
	mt_reader_shard(r, 70, &s70);
	char sha70[65];
	snprintf(sha70, sizeof sha70, "%s", s70.sha256);
	TAP_CALL(mt_catalog_shard_verified(c, mt_store_url(store), "long", sha70, 0, NULL, &err),
		 &err, "its shard 70 verified");
	mt_reader_close(r);
	/* Rows 0..99 again: shards 150..249 are the objects of shards 0..99. */
	TAP_CALL(put_long(1, 0, 100, &err), &err, "long@v2 appends 100 shards");
	TAP_CALL(mt_catalog_sync(c, "local", store, "long", 0, NULL, NULL, &st, &err), &err,
		 "long synced again");
	n = long_rows("long", "v2", &checked);
	tap_ok(n == 250 && checked == 2, "v2's 250 rows are the manifest's, and its shards 70 and"
	       " 220 (one object) checked: %lld, %lld", (long long)n, (long long)checked);
	TAP_CALL(mt_catalog_sync(c, "local", store, "long", MT_CATALOG_FULL, NULL, NULL, &st, &err),
		 &err, "a full sync");
	n = long_rows("long", "v2", &checked);
	tap_ok(n == 250 && checked == 2, "after it, the same: %lld, %lld", (long long)n,
	       (long long)checked);
	test_big_list(c, sha70);
	mt_catalog_close(c);
}

/* A schema-7 catalog (rows per version and shard) upgraded in place keeps
 * its answers; its versions are read again at the next sync. */
/* Line i (from 0) of a listing's text, its first column (up to '|'). */
static void line_col(const char *text, int i, char *out, size_t cap)
{
	const char *p = text;
	while (i-- > 0 && p && (p = strchr(p, '\n')))
		p++;
	*out = '\0';
	if (p && *p)
		snprintf(out, cap, "%.*s", (int)strcspn(p, "|\n"), p);
}

/* The health column of dataset hv in the datasets list of bucket. */
static void dataset_health(mt_catalog *c, int64_t bucket, char *out, size_t cap)
{
	struct collect dl = list(c, MT_CAT_DATASETS, bucket, 0);
	const char *p = strstr(dl.text, "hv|");
	while (p && p != dl.text && p[-1] != '\n')
		p = strstr(p + 1, "hv|");
	size_t len = p ? strcspn(p, "\n") : 0;
	const char *bar = p ? p + len : NULL;
	while (bar && bar > p && bar[-1] != '|')
		bar--;
	snprintf(out, cap, "%.*s", bar ? (int)(p + len - bar) : 0, bar ? bar : "");
}

/* Health kept per shard object: damage a check of hv@v3 found in the shard
 * all three versions list shows on v1 and v2 (never checked since), and on
 * the dataset, from one query of each list, with the partial index
 * shards_bad; a repair through v3 clears it for all three. */
static void test_shared_health(void)
{
	mt_error err = {0};
	mt_catalog *c;
	mt_catalog_sync_stats st;
	int ok = !put("hv", 0, 0, &err) && !put("hv", 1, 10, &err) && !put("hv", 1, 20, &err);
	tap_ok(ok, "hv@v1..v3, an append chain: %s", err.message);
	TAP_CALL(mt_catalog_open(dbpath, &c, &err), &err, "the catalog");
	mt_catalog_sync(c, "local", store, "hv", 0, NULL, NULL, &st, &err);
	const char *url = mt_store_url(store);
	int64_t v1 = version_id(c, "hv", "v1");
	int64_t ds = count_sql("SELECT id FROM datasets WHERE name = 'hv'");
	int64_t bucket = count_sql("SELECT bucket_id FROM datasets WHERE name = 'hv'");
	struct collect sh = list(c, MT_CAT_SHARDS, v1, 1);
	char sha[72];
	snprintf(sha, sizeof sha, "%.64s", sh.text);
	mt_catalog_check k;
	mt_catalog_check_init(&k);
	k.kind = "verify";
	k.state = MT_HEALTH_SOUND;
	TAP_CALL(mt_catalog_version_checked(c, url, "hv", "v1", &k, &err), &err,
		 "v1 verified sound");
	mt_catalog_shard_check bad[] = {
		{ sha, 1, MT_ECORRUPT, 0, "sha256 is 00" },
		{ sha, 0, 0, MT_HEALTH_UNREPAIRABLE, "sha256 is 00" },
	};
	TAP_CALL(mt_catalog_shards_checked(c, url, "hv", bad, 2, &err), &err,
		 "a check of v3 finds shard 0 lost");
	k.state = MT_HEALTH_UNREPAIRABLE;
	k.damaged = k.unrepairable = 1;
	TAP_CALL(mt_catalog_version_checked(c, url, "hv", "v3", &k, &err), &err,
		 "and records v3 unrepairable");
	char h1[32], h2[32], h3[32], d[32];
	struct collect vs = list(c, MT_CAT_VERSIONS, ds, 10);
	line_col(vs.text, 0, h1, sizeof h1);
	line_col(vs.text, 1, h2, sizeof h2);
	line_col(vs.text, 2, h3, sizeof h3);
	tap_ok(!strcmp(h1, "unrepairable") && !strcmp(h2, "unrepairable") &&
		       !strcmp(h3, "unrepairable"),
	       "v1 (checked sound before) and v2 (never checked) read unrepairable too: %s %s %s",
	       h1, h2, h3);
	char f[300];
	field(c, v1, "health", f, sizeof f);
	tap_ok(!strncmp(f, "unrepairable: 1 of its shards", 29),
	       "v1's details say how many of its shards a check of another version found: %s", f);
	dataset_health(c, bucket, d, sizeof d);
	tap_ok(!strcmp(d, "unrepairable"), "the dataset reads unrepairable: %s", d);
	char q[300];
	snprintf(q, sizeof q, "SELECT count(*) FROM shards INDEXED BY shards_bad WHERE health IN"
		 " ('damaged', 'unrepairable', 'repairable') AND sha256 = '%s'", sha);
	tap_ok(count_sql(q) == 1,
	       "shards_bad holds the one row of the damaged object (the chain's one list)");
	TAP_CALL(mt_catalog_shard_health(c, url, "hv", sha, MT_HEALTH_REBUILT, "parity", &err),
		 &err, "a repair through v3 rebuilds it");
	k.kind = "repair";
	k.state = MT_HEALTH_SOUND;
	k.rebuilt = 1;
	k.unrepairable = 0;
	TAP_CALL(mt_catalog_version_checked(c, url, "hv", "v3", &k, &err), &err,
		 "and records v3 sound");
	vs = list(c, MT_CAT_VERSIONS, ds, 10);
	line_col(vs.text, 0, h1, sizeof h1);
	line_col(vs.text, 1, h2, sizeof h2);
	line_col(vs.text, 2, h3, sizeof h3);
	tap_ok(!strcmp(h1, "sound") && !strcmp(h2, "NULL") && !strcmp(h3, "sound"),
	       "v1 is sound again and v2 unchecked, neither checked again: %s %s %s", h1, h2, h3);
	dataset_health(c, bucket, d, sizeof d);
	tap_ok(!strcmp(d, "unverified"),
	       "the dataset reads unverified (v2 never checked), no longer unrepairable: %s", d);
	mt_catalog_close(c);
}

static void test_migration(void)
{
	mt_error err = {0};
	mt_catalog *c;
	unlink(dbpath);
	TAP_CALL(mti_catalog_open_schema(dbpath, 7, &c, &err), &err, "a schema-7 catalog is made");
	mt_catalog_close(c);
#define SHA(x) "'" x "00000000000000000000000000000000000000000000000000000000000000'"
	sqlite3 *db;
	int rc = sqlite3_open(dbpath, &db);
	if (!rc)
		rc = sqlite3_exec(db,
		"INSERT INTO remotes(name, url) VALUES('local', 'file:///old');"
		"INSERT INTO buckets(remote_id, url) VALUES(1, 'file:///old');"
		"INSERT INTO datasets(bucket_id, name) VALUES(1, 'old');"
		"INSERT INTO versions(id, dataset_id, name, parent, created, author, description,"
		" rows, nshards, stored_bytes, raw_bytes, level, manifest_size, manifest_mtime,"
		" meta_size, meta_mtime) VALUES"
		" (1, 1, 'v1', '', '2020-01-01T00:00:00.000Z', '', '', 4, 2, 20, 40, 3, 10, 10, -1, -1),"
		" (2, 1, 'v2', 'v1', '2020-01-02T00:00:00.000Z', '', '', 6, 3, 30, 60, 3, 10, 10, -1, -1);"
		"INSERT INTO shards(version_id, idx, sha256, bytes, rows, first_row, verified,"
		" verified_at, health, health_note, health_at) VALUES"
		" (1, 0, " SHA("aa") ", 10, 2, 0, 'ok', '2020-02-01', 'sound', '', '2020-02-01'),"
		" (1, 1, " SHA("bb") ", 10, 2, 2, '', '', '', '', ''),"
		" (2, 0, " SHA("aa") ", 10, 2, 0, 'ok', '2020-02-01', 'sound', '', '2020-02-01'),"
		" (2, 1, " SHA("bb") ", 10, 2, 2, '', '', '', '', ''),"
		" (2, 2, " SHA("cc") ", 10, 2, 4, 'bad sum', '2020-02-01', 'damaged', 'x',"
		" '2020-02-01');", NULL, NULL, NULL);
	sqlite3_close(db);
	tap_ok(rc == SQLITE_OK, "schema-7 rows of a two-version chain inserted");
	TAP_CALL(mt_catalog_open(dbpath, &c, &err), &err, "the schema-7 catalog opens");
	tap_ok(count_sql("PRAGMA user_version") == MT_CATALOG_SCHEMA, "upgraded to %d",
	       MT_CATALOG_SCHEMA);
	struct collect s1 = list(c, MT_CAT_SHARDS, 1, 0), s2 = list(c, MT_CAT_SHARDS, 2, 0);
	const char *want1 = "0|aa" "00000000000000000000000000000000000000000000000000000000000000"
			    "|0|2|10|ok|sound|NULL\n"
			    "1|bb" "00000000000000000000000000000000000000000000000000000000000000"
			    "|2|2|10|NULL|NULL|NULL\n";
	tap_ok(!strcmp(s1.text, want1), "v1's shards and their checks are as they were");
	if (strcmp(s1.text, want1))
		tap_diag("got:\n%s", s1.text);
	tap_ok(s2.n == 3 && !strncmp(s2.text, want1, strlen(want1)) &&
		       strstr(s2.text, "|bad sum|damaged|x\n"),
	       "v2's too:\n%s", s2.text);
	char f[256];
	field(c, 2, "shared", f, sizeof f);
	tap_ok(!strcmp(f, "2 of 3 shards with v1"), "v2 shares 2 of 3 shards with v1: %s", f);
	field(c, 2, "verified", f, sizeof f);
	tap_ok(!strcmp(f, "1 of 3 shards sound, 1 damaged"), "v2's verification: %s", f);
	struct collect vs = list(c, MT_CAT_VERSIONS, 1, 0);
	tap_ok(vs.n == 2 && strstr(vs.text, "v2|") && strstr(vs.text, "|2|0\n"),
	       "the versions list counts v2's shared shards:\n%s", vs.text);
	tap_ok(count_sql("SELECT count(*) FROM versions WHERE manifest_size = -1") == 2,
	       "its versions are read again at the next sync, which chains them");
	mt_catalog_close(c);
}

int main(void)
{
	if (tap_scratch_dir("catchain", root, sizeof root))
		return 1;
	snprintf(dbpath, sizeof dbpath, "%s/catalog.db", root);
	mt_error err = {0};
	char *url = mti_asprintf("file://%s/store", root);
	if (mt_store_open(url, &store, &err)) {
		tap_diag("%s", err.message);
		return 1;
	}
	free(url);
	snprintf(root + strlen(root), sizeof root - strlen(root), "/store");
	test_chain();
	test_shared_health();
	test_long_lists();
	test_migration();
	mt_store_close(store);
	root[strlen(root) - strlen("/store")] = '\0';
	tap_rm_tree(root);
	return tap_done();
}
