/* test-catalog.c — the SQLite catalog: sync (incremental, deletions, damage), lists and filters, search, metadata edits, jobs, models with their checkpoints and tensors, upgrades from schema 1, refusal of newer schemas. */
#include <pthread.h>
#include <pwd.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "store.h"
#include "tap.h"

static char root[256], dbpath[300];
static mt_store *store;

static const mt_attr attrs[] = {
	{"pixels", MT_UINT8, 2, {2, 2}, 0},
	{"label", MT_INT64, 0, {0}, 0},
};

static int put(const char *ds, const char *desc, const char *tag, int append, mt_error *err)
{
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.description = desc;
	o.tags = &tag;
	o.ntags = tag ? 1 : 0;
	o.append = append;
	o.shard_rows = 2;
	mt_writer *w;
	int rc = mt_writer_open(store, ds, append ? NULL : attrs, 2, &o, &w, err);
	if (rc)
		return rc;
	uint8_t px[5 * 4];
	int64_t lab[5];
	for (int i = 0; i < 5; i++) {
		lab[i] = i;
		memset(px + 4 * i, i, 4);
	}
	const void *data[2] = {px, lab};
	rc = mt_writer_append(w, 5, data, NULL, err);
	if (!rc)
		rc = mt_writer_commit(w, NULL, 0, err);
	mt_writer_close(w);
	return rc;
}

/* Rows of a listing joined as "col0|col1 ..." lines (the first `ncols` columns);
 * a column without a value reads NULL. */
struct collect {
	char text[8192];
	size_t n, ncols;
	int64_t last_id;
};

static int collect_row(void *ud, const mt_catalog_row *row)
{
	struct collect *c = ud;
	size_t len = strlen(c->text);
	for (size_t i = 0; i < c->ncols && i < row->ncols; i++)
		len += (size_t)snprintf(c->text + len, sizeof c->text - len, "%s%s", i ? "|" : "",
					row->cols[i] ? row->cols[i] : "NULL");
	snprintf(c->text + len, sizeof c->text - len, "\n");
	c->n++;
	c->last_id = row->id;
	return 0;
}

static struct collect list(mt_catalog *c, int level, int64_t parent, const char *filter,
			   size_t ncols, mt_error *err)
{
	struct collect col = {.ncols = ncols};
	if (mt_catalog_list(c, level, parent, filter, collect_row, &col, err))
		snprintf(col.text, sizeof col.text, "error %d: %s", err->code, err->message);
	return col;
}

static int64_t only_id(mt_catalog *c, int level, int64_t parent, const char *filter)
{
	mt_error err = {0};
	struct collect col = list(c, level, parent, filter, 1, &err);
	return col.n == 1 ? col.last_id : -1;
}

static void test_sync_and_lists(void)
{
	mt_error err = {0};
	mt_catalog *c;
	mt_catalog_sync_stats st;
	struct stat sb;
	char dir[sizeof dbpath];
	snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(dbpath, '/') - dbpath), dbpath);
	tap_ok(mt_catalog_open_existing(dbpath, &c, &err) == MT_ENOTFOUND && !c &&
		       strstr(err.message, dbpath) && stat(dir, &sb) != 0,
	       "a reader's open of a missing catalog is MT_ENOTFOUND and makes nothing: %s",
	       err.message);
	err = (mt_error){0};
	TAP_CALL(mt_catalog_open(dbpath, &c, &err), &err, "a new catalog opens");
	sqlite3 *db;
	sqlite3_open(dbpath, &db);
	sqlite3_stmt *q;
	sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &q, NULL);
	sqlite3_step(q);
	tap_ok(!strcmp((const char *)sqlite3_column_text(q, 0), "wal"), "the catalog is in WAL mode");
	sqlite3_finalize(q);
	sqlite3_close(db);

	TAP_CALL(put("digits", "hand-written digits", "mnist", 0, &err), &err, "digits@v1 written");
	TAP_CALL(put("digits", "more digits", NULL, 1, &err), &err, "digits@v2 appended");
	TAP_CALL(put("speech", "spoken words", "audio", 0, &err), &err, "speech@v1 written");
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, 0, NULL, NULL, &st, &err), &err,
		 "first sync");
	tap_ok(st.datasets == 2 && st.versions == 3 && st.versions_read == 3,
	       "first sync reads every manifest (%llu datasets, %llu read)",
	       (unsigned long long)st.datasets, (unsigned long long)st.versions_read);
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, 0, NULL, NULL, &st, &err), &err,
		 "second sync");
	tap_ok(st.versions == 3 && st.versions_read == 0, "a second sync reads no manifest");

	int64_t remote = only_id(c, MT_CAT_REMOTES, 0, NULL);
	struct collect r = list(c, MT_CAT_REMOTES, 0, NULL, 3, &err);
	tap_ok(remote > 0 && strstr(r.text, "local|file://") && strstr(r.text, "|1\n"),
	       "the default store is remote 'local', online (flag 1)");
	int64_t bucket = only_id(c, MT_CAT_BUCKETS, remote, NULL);
	tap_ok(bucket > 0, "it has one bucket");
	struct collect d = list(c, MT_CAT_DATASETS, bucket, NULL, 4, &err);
	tap_ok(!strcmp(d.text, "digits|2|v2|10\nspeech|1|v1|5\n"),
	       "datasets list with versions, latest and its rows");
	if (strcmp(d.text, "digits|2|v2|10\nspeech|1|v1|5\n"))
		tap_diag("got: %s", d.text);
	d = list(c, MT_CAT_DATASETS, bucket, "AUDIO", 1, &err);
	tap_ok(!strcmp(d.text, "speech\n"), "the filter matches tags, ignoring case");
	d = list(c, MT_CAT_DATASETS, bucket, "100%", 1, &err);
	tap_ok(d.n == 0 && !err.code, "a filter's %% is a literal character");
	if (d.n || err.code)
		tap_diag("got %zu rows, error %d: %s", d.n, err.code, err.message);
	int64_t digits = only_id(c, MT_CAT_DATASETS, bucket, "digits");
	struct collect v = list(c, MT_CAT_VERSIONS, digits, NULL, 1, &err);
	tap_ok(!strcmp(v.text, "v1\nv2\n"), "versions oldest first");
	int64_t v2 = only_id(c, MT_CAT_VERSIONS, digits, "v2");
	struct collect f = list(c, MT_CAT_VERSION, v2, NULL, 2, &err);
	tap_ok(strstr(f.text, "parent|v1\n") && strstr(f.text, "lineage|v2 < v1\n") &&
		       strstr(f.text, "rows|10\n") && strstr(f.text, "ratio|"),
	       "version details carry parent, lineage, rows, ratio");
	int64_t v1 = only_id(c, MT_CAT_VERSIONS, digits, "v1");
	struct collect f1 = list(c, MT_CAT_VERSION, v1, NULL, 2, &err);
	tap_ok(strstr(f1.text, "parent|NULL\n") && strstr(f1.text, "verified|NULL\n"),
	       "a first version never verified: no value, not a placeholder");
	struct collect sh = list(c, MT_CAT_SHARDS, v2, NULL, 4, &err);
	tap_ok(sh.n == 6, "v2 lists its shards (v1's three reused, three new): %zu", sh.n);
	struct collect at = list(c, MT_CAT_ATTRS, v2, NULL, 3, &err);
	tap_ok(!strcmp(at.text, "pixels|uint8|(2, 2)\nlabel|int64|()\n"),
	       "attributes with dtype and shape");

	/* Locating a shard gives what opening it needs. */
	mt_catalog_ref ref;
	TAP_CALL(mt_catalog_locate(c, MT_CAT_SHARDS, sh.last_id, &ref, &err), &err,
		 "a shard row is located");
	tap_ok(!strcmp(ref.remote, "local") && !strcmp(ref.dataset, "digits") &&
		       !strcmp(ref.version, "v2") && ref.shard == 5 && strlen(ref.sha256) == 64,
	       "its remote, dataset, version, index and sha256");
	TAP_CALL(mt_catalog_shard_verified(c, ref.url, "digits", ref.sha256, 0, NULL, &err), &err,
		 "a verification is recorded");
	f = list(c, MT_CAT_SHARD, sh.last_id, NULL, 2, &err);
	tap_ok(strstr(f.text, "verified|ok at ") != NULL, "the shard shows it");
	mt_catalog_ref_free(&ref);
	tap_ok(mt_catalog_locate(c, MT_CAT_SHARDS, 999999, &ref, &err) == MT_ENOTFOUND,
	       "locating a row that is gone is MT_ENOTFOUND");

	/* Search. */
	struct collect s = list(c, MT_CAT_SEARCH, 0, "dig", 3, &err);
	tap_ok(s.n == 2, "search by name prefix finds both versions of digits");
	s = list(c, MT_CAT_SEARCH, 0, "pix", 3, &err);
	tap_ok(s.n == 3, "search finds attribute names");
	s = list(c, MT_CAT_SEARCH, 0, "spoken audio", 3, &err);
	tap_ok(!strcmp(s.text, "local|speech|v1\n"), "every word must match");
	err = (mt_error){0};
	s = list(c, MT_CAT_SEARCH, 0, "\"AND* NEAR(", 3, &err);
	tap_ok(s.n == 0 && !err.code, "query syntax in the text is searched for, not obeyed");
	tap_ok(mt_catalog_list(c, MT_CAT_SEARCH, 0, "   ", collect_row, &s, &err) == MT_EINVAL,
	       "an empty query is MT_EINVAL");
	tap_ok(mt_catalog_list(c, 99, 0, NULL, collect_row, &s, &err) == MT_EINVAL,
	       "an unknown list is MT_EINVAL");

	/* Statistics are kept per version and attribute, survive a metadata
	 * edit (the version is the same) and go with the version. */
	const char *url = mt_store_url(store);
	char *json = NULL, *when = NULL;
	tap_ok(mt_catalog_stats_get(c, url, "speech", "v1", "x", &json, &when, &err) ==
		       MT_ENOTFOUND && !json,
	       "no statistics are kept before any are recorded");
	TAP_CALL(mt_catalog_stats_put(c, url, "speech", "v1", "x", "{\"n\":1}", &err), &err,
		 "statistics of speech@v1 x are recorded");
	TAP_CALL(mt_catalog_stats_put(c, url, "speech", "v1", "x", "{\"n\":2}", &err), &err,
		 "and recorded again");
	TAP_CALL(mt_catalog_stats_get(c, url, "speech", "v1", "x", &json, &when, &err), &err,
		 "they are read back");
	tap_ok(json && !strcmp(json, "{\"n\":2}") && when && strlen(when) == 20,
	       "the last ones, with when they were computed (%s)", when ? when : "");
	free(json);
	free(when);
	tap_ok(mt_catalog_stats_put(c, url, "speech", "v9", "x", "{}", &err) == MT_ENOTFOUND,
	       "a version the catalog does not list is MT_ENOTFOUND: %s", err.message);

	/* Edits, deletions and damage reach the catalog through sync. */
	const char *tags[] = {"golden", "mnist"};
	TAP_CALL(mt_store_set_metadata(store, "digits", "v1", "curated", tags, 2, &err), &err,
		 "digits@v1 gets a new description and tags");
	TAP_CALL(mt_catalog_sync(c, "local", store, "digits", 0, NULL, NULL, &st, &err), &err,
		 "sync of one dataset");
	tap_ok(st.versions_read == 1, "only the edited version is read again");
	s = list(c, MT_CAT_SEARCH, 0, "golden", 3, &err);
	tap_ok(!strcmp(s.text, "local|digits|v1\n"), "the new tag is searchable");
	TAP_CALL(mt_store_delete_version(store, "speech", "v1", &err), &err, "speech@v1 deleted");
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, 0, NULL, NULL, &st, &err), &err,
		 "sync after the deletion");
	d = list(c, MT_CAT_DATASETS, bucket, NULL, 3, &err);
	tap_ok(!strcmp(d.text, "digits|2|v2\nspeech|0|\n") && st.versions_removed == 1,
	       "a dataset with no version left stays listed, with no versions, while its shards remain: %s",
	       d.text);
	d = list(c, MT_CAT_DATASETS, bucket, "leftover", 1, &err);
	tap_ok(!strcmp(d.text, "speech\n"), "its description says shards are left for gc");
	TAP_CALL(mt_store_gc(store, "speech", 0, 0, NULL, NULL, NULL, NULL, &err), &err,
		 "gc collects its shards");
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, 0, NULL, NULL, &st, &err), &err,
		 "sync after gc");
	d = list(c, MT_CAT_DATASETS, bucket, NULL, 1, &err);
	tap_ok(!strcmp(d.text, "digits\n"), "the deleted dataset is gone from the catalog");
	s = list(c, MT_CAT_SEARCH, 0, "spoken", 3, &err);
	tap_ok(s.n == 0, "and from the search index");
	json = NULL;
	tap_ok(mt_catalog_stats_get(c, url, "speech", "v1", "x", &json, NULL, &err) ==
		       MT_ENOTFOUND && !json,
	       "and its statistics with it");
	char *bad = mti_asprintf("%s/datasets/digits/versions/v9.json", root);
	FILE *fp = fopen(bad, "w");
	fputs("{not json", fp);
	fclose(fp);
	tap_ok(mt_catalog_sync(c, "local", store, NULL, 0, NULL, NULL, &st, &err) == MT_EFORMAT &&
		       strstr(err.message, "v9.json"),
	       "a damaged manifest fails the sync naming it: %s", err.message);
	v = list(c, MT_CAT_VERSIONS, digits, NULL, 1, &err);
	tap_ok(!strcmp(v.text, "v1\nv2\n"), "the sound versions stay listed");
	r = list(c, MT_CAT_REMOTES, 0, NULL, 6, &err);
	tap_ok(strstr(r.text, "|1|") && strstr(r.text, "v9.json"),
	       "the remote stays online, with the error shown");
	unlink(bad);
	free(bad);

	/* Jobs. */
	int64_t job;
	TAP_CALL(mt_catalog_job_begin(c, "verify", "local:digits@v2", &job, &err), &err,
		 "a job begins");
	mt_catalog_job_result(c, job, "shard 0", 0, NULL, &err);
	mt_catalog_job_result(c, job, "shard 1", MT_ECORRUPT, "sha256 mismatch", &err);
	TAP_CALL(mt_catalog_job_end(c, job, MT_ECORRUPT, "1 damaged shard", &err), &err,
		 "and ends");
	struct collect j = list(c, MT_CAT_JOBS, 0, NULL, 6, &err);
	tap_ok(strstr(j.text, "|verify|local:digits@v2|") && strstr(j.text, "|1 damaged shard"),
	       "the job is listed with its result");
	j = list(c, MT_CAT_JOB, job, NULL, 2, &err);
	tap_ok(!strcmp(j.text, "shard 0|ok\nshard 1|sha256 mismatch\n"), "with its items");
	TAP_CALL(mt_catalog_set_offline(c, "far", "s3://far/away", "connection refused", &err),
		 &err, "a remote is marked offline");
	r = list(c, MT_CAT_REMOTES, 0, "far", 3, &err);
	tap_ok(!strcmp(r.text, "far|s3://far/away|0\n"), "it is listed offline (flag 0)");
	mt_catalog_close(c);
	TAP_CALL(mt_catalog_open_existing(dbpath, &c, &err), &err,
		 "an existing catalog opens for a reader");
	mt_catalog_close(c);

	/* The catalog is a cache: without its file, a sync rebuilds it. */
	unlink(dbpath);
	TAP_CALL(mt_catalog_open(dbpath, &c, &err), &err, "a deleted catalog is recreated");
	mt_catalog_sync(c, "local", store, NULL, 0, NULL, NULL, &st, &err);
	remote = only_id(c, MT_CAT_REMOTES, 0, NULL);
	bucket = only_id(c, MT_CAT_BUCKETS, remote, NULL);
	d = list(c, MT_CAT_DATASETS, bucket, NULL, 4, &err);
	s = list(c, MT_CAT_SEARCH, 0, "golden", 3, &err);
	tap_ok(!strcmp(d.text, "digits|2|v2|10\n") && s.n == 1,
	       "sync rebuilds it, edited tags included");
	mt_catalog_close(c);
}

static int exec_sql(const char *sql)
{
	sqlite3 *db;
	int rc = sqlite3_open(dbpath, &db);
	if (!rc)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

static void test_migration(void)
{
	mt_error err = {0};
	mt_catalog *c;
	unlink(dbpath);
	TAP_CALL(mti_catalog_open_schema(dbpath, 1, &c, &err), &err, "a schema-1 catalog is made");
	mt_catalog_close(c);
	/* What a matorage of schema 1 would have written. */
	int rc = exec_sql(
		"INSERT INTO remotes(name, url) VALUES('local', 'file:///old');"
		"INSERT INTO buckets(remote_id, url) VALUES(1, 'file:///old');"
		"INSERT INTO datasets(bucket_id, name) VALUES(1, 'legacy');"
		"INSERT INTO versions VALUES(1, 1, 'v1', '', '2020-01-01T00:00:00.000Z', 'ana',"
		" 'old data', 7, 1, 100, 300, 3, 10, 10, -1, -1);"
		"INSERT INTO tags VALUES(1, 'vintage');"
		"INSERT INTO attrs VALUES(1, 0, 'feature', 'float32', '(3,)', 0);"
		"INSERT INTO shards VALUES(1, 1, 0, '" /* 64 hex digits */
		"00000000000000000000000000000000000000000000000000000000000000ab', 100, 7, 0);");
	tap_ok(rc == SQLITE_OK, "schema-1 rows inserted");
	TAP_CALL(mt_catalog_open(dbpath, &c, &err), &err, "the schema-1 catalog opens");
	sqlite3 *db;
	sqlite3_open(dbpath, &db);
	sqlite3_stmt *q;
	sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL);
	sqlite3_step(q);
	tap_ok(sqlite3_column_int(q, 0) == MT_CATALOG_SCHEMA, "it was upgraded in place to %d",
	       MT_CATALOG_SCHEMA);
	sqlite3_finalize(q);
	sqlite3_close(db);
	struct collect d = list(c, MT_CAT_DATASETS, 1, NULL, 6, &err);
	tap_ok(!strcmp(d.text, "legacy|1|v1|7|100|vintage\n"),
	       "old datasets got their summaries");
	if (strcmp(d.text, "legacy|1|v1|7|100|vintage\n"))
		tap_diag("got: %s", d.text);
	struct collect s = list(c, MT_CAT_SEARCH, 0, "feature", 3, &err);
	tap_ok(!strcmp(s.text, "local|legacy|v1\n"), "and are in the new search index");
	struct collect sh = list(c, MT_CAT_SHARDS, 1, NULL, 6, &err);
	tap_ok(sh.n == 1 && strstr(sh.text, "|NULL\n"),
	       "old shards read as never verified (no value)");
	mt_catalog_close(c);

	exec_sql("PRAGMA user_version = 99");
	tap_ok(mt_catalog_open(dbpath, &c, &err) == MT_EFORMAT && strstr(err.message, "newer") &&
		       strstr(err.message, "sync"),
	       "a catalog from a newer matorage is refused, saying how to rebuild: %s",
	       err.message);
	FILE *fp = fopen(dbpath, "w");
	fputs("this is not a database, just text long enough to have a header page ...", fp);
	fclose(fp);
	/* The catalog is a cache: the file is moved aside and a new one made. */
	int orc = mt_catalog_open(dbpath, &c, &err);
	const char *moved = orc ? NULL : mt_catalog_moved_aside(c);
	char want[4096];
	snprintf(want, sizeof want, "%s.corrupt-", dbpath);
	tap_ok(!orc && moved && !strncmp(moved, want, strlen(want)) && access(moved, F_OK) == 0,
	       "a file that is not a catalog is moved aside for a new one: %s",
	       orc ? err.message : moved ? moved : "(not moved)");
	mt_catalog_close(c);
}

/* Several handles (as several processes would be) make one new catalog and write
 * to it at once: none may find it locked or half made. */
struct writer_arg {
	const char *path;
	int rc;
	mt_error err;
};

static void *conc_writer(void *p)
{
	struct writer_arg *a = p;
	mt_catalog *c = NULL;
	mt_catalog_sync_stats st;
	a->rc = mt_catalog_open(a->path, &c, &a->err);
	for (int i = 0; !a->rc && i < 3; i++)
		a->rc = mt_catalog_sync(c, "local", store, NULL, MT_CATALOG_FULL, NULL, NULL, &st,
					&a->err);
	mt_catalog_close(c);
	return NULL;
}

static void test_concurrent_writers(void)
{
	enum { N = 8 };
	char path[sizeof dbpath + 16];
	snprintf(path, sizeof path, "%.*s/conc.db", (int)(strrchr(dbpath, '/') - dbpath), dbpath);
	pthread_t t[N];
	struct writer_arg a[N];
	for (int i = 0; i < N; i++) {
		a[i] = (struct writer_arg){.path = path};
		pthread_create(&t[i], NULL, conc_writer, &a[i]);
	}
	int bad = -1;
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		if (a[i].rc && bad < 0)
			bad = i;
	}
	tap_ok(bad < 0, "%d handles make one new catalog and sync into it at once, none "
	       "finding it busy%s%s", N, bad < 0 ? "" : ": ", bad < 0 ? "" : a[bad].err.message);
}

/* The default catalog: $MATORAGE_CATALOG, else catalog.db in the data
 * directory, found without HOME too (the same resolver as the default
 * store's).  A reader opening it creates nothing. */
static void test_default_path(void)
{
	mt_error err = {0};
	mt_catalog *c = NULL;
	char path[400];
	struct stat sb;
	snprintf(path, sizeof path, "%s/env/dir/catalog.db", root);
	setenv("MATORAGE_CATALOG", path, 1);
	int rc = mt_catalog_open(NULL, &c, &err);
	tap_ok(rc == 0 && !strcmp(mt_catalog_path(c), path) && stat(path, &sb) == 0,
	       "MATORAGE_CATALOG names the catalog, made with its directories: %s",
	       rc ? err.message : path);
	mt_catalog_close(c);
	c = NULL;
	unsetenv("MATORAGE_CATALOG");
	char *xdg = getenv("XDG_DATA_HOME") ? strdup(getenv("XDG_DATA_HOME")) : NULL;
	char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	unsetenv("XDG_DATA_HOME");
	unsetenv("HOME");
	const struct passwd *pw = getpwuid(getuid());
	char want[600];
	snprintf(want, sizeof want, "%s/.local/share/matorage/catalog.db",
		 pw && pw->pw_dir ? pw->pw_dir : "?");
	/* Whatever the real home holds (nothing, a catalog, one from another
	 * matorage), the path is what this checks: an error must name it. */
	rc = mt_catalog_open_existing(NULL, &c, &err);
	tap_ok((rc == 0 && !strcmp(mt_catalog_path(c), want)) ||
		       (rc != 0 && strstr(err.message, want)),
	       "HOME unset: the catalog is looked for in the password database's home: %s",
	       rc ? err.message : mt_catalog_path(c));
	mt_catalog_close(c);
	if (xdg)
		setenv("XDG_DATA_HOME", xdg, 1);
	if (home)
		setenv("HOME", home, 1);
	free(xdg);
	free(home);
}


/* A version's protection comes from its record when a sync sees the record
 * appear; checks are kept, the last one is the version's health; a shard's
 * health lasts through a sync that rewrites its version's rows. */
static void test_health(void)
{
	mt_error err = {0};
	mt_catalog *c;
	mt_catalog_sync_stats st;
	char *path = mti_asprintf("%s/../cat-health/catalog.db", root);
	TAP_CALL(put("health", "checked", NULL, 0, &err), &err, "health@v1 written");
	TAP_CALL(mt_catalog_open(path, &c, &err), &err, "a catalog for the checks");
	mt_catalog_sync(c, "local", store, "health", 0, NULL, NULL, &st, &err);
	int64_t remote = only_id(c, MT_CAT_REMOTES, 0, NULL);
	int64_t bucket = only_id(c, MT_CAT_BUCKETS, remote, NULL);
	int64_t ds = only_id(c, MT_CAT_DATASETS, bucket, "health");
	struct collect v = list(c, MT_CAT_VERSIONS, ds, NULL, 11, &err);
	tap_ok(strstr(v.text, "|NULL|NULL|NULL\n") != NULL,
	       "unprotected and never checked: no protection, overhead or health: %s", v.text);
	mt_protect_opts po;
	mt_protect_opts_init(&po);
	po.k = 2;
	po.m = 1;
	TAP_CALL(mt_protect(store, "health", "v1", &po, &err), &err, "health@v1 protected 2+1");
	mt_catalog_sync(c, "local", store, "health", 0, NULL, NULL, &st, &err);
	tap_ok(st.versions_read == 1, "a sync reads the version again when its record appears");
	v = list(c, MT_CAT_VERSIONS, ds, NULL, 11, &err);
	double overhead = 0;
	char *bar = strstr(v.text, "|2+1|");
	tap_ok(bar && sscanf(bar + 5, "%lf", &overhead) == 1 && overhead > 0.1,
	       "the versions list shows 2+1 and its overhead: %s", v.text);
	int64_t vid = v.last_id;

	mt_catalog_check k;
	mt_catalog_check_init(&k);
	k.kind = "verify";
	k.state = MT_HEALTH_REPAIRABLE;
	k.sources = "parity";
	k.objects = 5;
	k.damaged = 1;
	TAP_CALL(mt_catalog_version_checked(c, mt_store_url(store), "health", "v1", &k, &err), &err,
		 "a verify's result is recorded");
	v = list(c, MT_CAT_VERSIONS, ds, NULL, 11, &err);
	tap_ok(strstr(v.text, "|repairable\n") != NULL, "the version reads repairable: %s", v.text);
	struct collect f = list(c, MT_CAT_VERSION, vid, "", 2, &err);
	tap_ok(strstr(f.text, "health|repairable from parity\n") &&
		       strstr(f.text, "checked|verify at ") && strstr(f.text, "protection|2+1, "),
	       "its details say from what, which check, and the protection");
	struct collect sh = list(c, MT_CAT_SHARDS, vid, NULL, 2, &err);
	char sha[72];
	snprintf(sha, sizeof sha, "%s", strchr(sh.text, '|') + 1);
	sha[64] = '\0';
	TAP_CALL(mt_catalog_shard_health(c, mt_store_url(store), "health", sha,
					 MT_HEALTH_REPAIRABLE, "parity", &err),
		 &err, "a shard's health is recorded");
	mt_catalog_sync(c, "local", store, "health", MT_CATALOG_FULL, NULL, NULL, &st, &err);
	sh = list(c, MT_CAT_SHARDS, vid, NULL, 8, &err);
	tap_ok(strstr(sh.text, "|NULL|repairable|parity\n") != NULL,
	       "it lasts through a sync that rewrites the version's rows: %s", sh.text);
	mt_catalog_shard_health(c, mt_store_url(store), "health", sha, MT_HEALTH_REBUILT, "parity",
				&err);
	sh = list(c, MT_CAT_SHARDS, vid, NULL, 8, &err);
	tap_ok(strstr(sh.text, "|ok|rebuilt|parity\n") != NULL,
	       "a rebuilt shard reads verified sound too");
	/* Many results at once, in order: the last for a shard wins; a bad
	 * state fails the whole batch and leaves the shard as it was. */
	mt_catalog_shard_check many[] = {
		{ sha, 1, MT_ECORRUPT, 0, "checksum mismatch" },
		{ sha, 0, 0, MT_HEALTH_REPAIRABLE, "mirror" },
	};
	TAP_CALL(mt_catalog_shards_checked(c, mt_store_url(store), "health", many, 2, &err), &err,
		 "two results of one shard are recorded at once");
	sh = list(c, MT_CAT_SHARDS, vid, NULL, 8, &err);
	tap_ok(strstr(sh.text, "|checksum mismatch|repairable|mirror\n") != NULL,
	       "the verification, then the health after it: %s", sh.text);
	mt_catalog_shard_check bad[] = {
		{ sha, 0, 0, MT_HEALTH_REBUILT, "parity" },
		{ sha, 0, 0, 42, NULL },
	};
	tap_ok(mt_catalog_shards_checked(c, mt_store_url(store), "health", bad, 2, &err) ==
		       MT_EINVAL,
	       "a batch with an unknown state is MT_EINVAL");
	sh = list(c, MT_CAT_SHARDS, vid, NULL, 8, &err);
	tap_ok(strstr(sh.text, "|checksum mismatch|repairable|mirror\n") != NULL,
	       "and none of it is written: %s", sh.text);
	/* Each statement of a batch is prepared once and run again with the
	 * next result's values: the last two, with no note, leave none. */
	mt_catalog_shard_check again[] = {
		{ sha, 1, MT_ECORRUPT, 0, "bad sum" },
		{ sha, 0, 0, MT_HEALTH_UNREPAIRABLE, "no parity" },
		{ sha, 1, 0, 0, NULL },
		{ sha, 0, 0, MT_HEALTH_REPAIRABLE, NULL },
	};
	TAP_CALL(mt_catalog_shards_checked(c, mt_store_url(store), "health", again, 4, &err), &err,
		 "a batch of two verifications and two health states of one shard is recorded");
	sh = list(c, MT_CAT_SHARDS, vid, NULL, 8, &err);
	tap_ok(strstr(sh.text, "|ok|repairable|NULL") != NULL,
	       "each statement's second run has its own values, none of the first's: %s", sh.text);
	mt_catalog_shard_health(c, mt_store_url(store), "health", sha, MT_HEALTH_REBUILT, "parity",
				&err);
	k.kind = "repair";
	k.state = MT_HEALTH_SOUND;
	k.rebuilt = 1;
	TAP_CALL(mt_catalog_version_checked(c, mt_store_url(store), "health", "v1", &k, &err), &err,
		 "a repair's result is recorded");
	v = list(c, MT_CAT_VERSIONS, ds, NULL, 11, &err);
	f = list(c, MT_CAT_VERSION, vid, "", 2, &err);
	tap_ok(strstr(v.text, "|sound\n") && strstr(f.text, "repaired|") &&
		       strstr(f.text, ": 1 rebuilt from parity, 0 unrepairable"),
	       "the version is sound, and its last repair is shown");
	sqlite3 *db;
	sqlite3_open(path, &db);
	sqlite3_stmt *q;
	sqlite3_prepare_v2(db, "SELECT group_concat(kind || ':' || state, ' ') FROM checks", -1,
			   &q, NULL);
	sqlite3_step(q);
	const char *all = (const char *)sqlite3_column_text(q, 0);
	tap_ok(all && !strcmp(all, "verify:repairable repair:sound"), "every check is kept: %s",
	       all ? all : "none");
	sqlite3_finalize(q);
	sqlite3_close(db);
	tap_ok(mt_catalog_version_checked(c, mt_store_url(store), "health", "v7", &k, &err) ==
		       MT_ENOTFOUND,
	       "a check of a version the catalog lacks is MT_ENOTFOUND");
	k.state = 42;
	tap_ok(mt_catalog_version_checked(c, mt_store_url(store), "health", "v1", &k, &err) ==
		       MT_EINVAL,
	       "an unknown state is MT_EINVAL");
	mt_catalog_close(c);
	free(path);
}

/* A checkpoint of model `name`: w (2 x 3 float32, always the same) and b
 * (3 int64, from `b0`), with meta. */
static int put_ckpt(const char *name, int64_t b0, const char *meta, mt_error *err)
{
	mt_ckpt_writer *w;
	int rc = mt_ckpt_writer_open(store, name, NULL, &w, err);
	if (rc)
		return rc;
	float wv[6] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f};
	int64_t bv[3] = {b0, b0 + 1, b0 + 2};
	uint64_t ws[2] = {2, 3}, bs[1] = {3};
	rc = mt_ckpt_add(w, "w", MT_FLOAT32, 2, ws, wv, sizeof wv, err);
	if (!rc)
		rc = mt_ckpt_add(w, "b", MT_INT64, 1, bs, bv, sizeof bv, err);
	if (!rc)
		rc = mt_ckpt_set_meta(w, meta, err);
	if (!rc)
		rc = mt_ckpt_commit(w, NULL, err);
	mt_ckpt_writer_close(w);
	return rc;
}

static int cancel_when_done(void *ud, uint64_t done, uint64_t total)
{
	return done == total;
}

/* The health column (the last) of each row of a level, as "a b". */
static void healths(mt_catalog *c, int level, int64_t parent, size_t ncols, char *out, size_t cap)
{
	mt_error err = {0};
	struct collect k = list(c, level, parent, NULL, ncols, &err);
	out[0] = '\0';
	for (char *line = k.text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = '\0';
		char *bar = strrchr(line, '|');
		size_t len = strlen(out);
		snprintf(out + len, cap - len, "%s%s", len ? " " : "", bar ? bar + 1 : line);
	}
}

/* Health is kept per model object: w is one object that v1 and v2 share. */
static void test_model_health(mt_catalog *c, int64_t bucket, int64_t model, int64_t ck2)
{
	mt_error err = {0};
	char h[256], m[64], w[80], b2[80], b1[80];
	struct collect t = list(c, MT_CAT_TENSORS, ck2, NULL, 7, &err);
	tap_ok(sscanf(t.text, "w|%*[^|]|%*[^|]|%*[^|]|%*[^|]|%64[0-9a-f]|%*s\nb|%*[^|]|%*[^|]|"
		      "%*[^|]|%*[^|]|%64[0-9a-f]", w + 8, b2 + 8) == 2, "the tensors' sha256");
	memcpy(w, "tensors/", 8);
	memcpy(b2, "tensors/", 8);
	healths(c, MT_CAT_CHECKPOINTS, model, 13, h, sizeof h);
	healths(c, MT_CAT_MODELS, bucket, 8, m, sizeof m);
	tap_ok(!strcmp(h, "NULL NULL") && !strcmp(m, "unverified"),
	       "never checked: no health, the model unverified (%s; %s)", h, m);
	mt_catalog_object_check k = {w, NULL, MT_HEALTH_DAMAGED, "flipped"};
	TAP_CALL(mt_catalog_model_checked(c, "nowhere", "net", &k, 1, &err) == MT_ENOTFOUND
			 ? 0 : -1, &err, "a model of no bucket in the catalog: MT_ENOTFOUND");
	TAP_CALL(mt_catalog_model_checked(c, mt_store_url(store), "net", &k, 1, &err), &err,
		 "w recorded damaged (as a check of v2 finds it)");
	healths(c, MT_CAT_CHECKPOINTS, model, 13, h, sizeof h);
	healths(c, MT_CAT_MODELS, bucket, 8, m, sizeof m);
	tap_ok(!strcmp(h, "damaged damaged") && !strcmp(m, "damaged"),
	       "both checkpoints naming w are damaged, and the model (%s; %s)", h, m);
	mt_catalog_object_check two[] = {{w, "", MT_HEALTH_REBUILT, "parity"},
					 {b2, NULL, MT_HEALTH_SOUND, NULL}};
	TAP_CALL(mt_catalog_model_checked(c, mt_store_url(store), "net", two, 2, &err), &err,
		 "w rebuilt and v2's b sound (a repair of v2)");
	healths(c, MT_CAT_CHECKPOINTS, model, 13, h, sizeof h);
	healths(c, MT_CAT_MODELS, bucket, 8, m, sizeof m);
	tap_ok(!strcmp(h, "unverified sound") && !strcmp(m, "unverified"),
	       "v2 sound; v1 still has an object never checked (%s; %s)", h, m);
	struct collect t1 = list(c, MT_CAT_CHECKPOINTS, model, NULL, 1, &err);
	int64_t ck1 = -1;
	struct collect one = {.ncols = 1};
	mt_catalog_list(c, MT_CAT_CHECKPOINTS, model, "v1", collect_row, &one, &err);
	ck1 = one.n == 1 ? one.last_id : -1;
	t = list(c, MT_CAT_TENSORS, ck1, NULL, 7, &err);
	char *bl = strstr(t.text, "\nb|");
	tap_ok(t1.n == 2 && bl && sscanf(bl, "\nb|%*[^|]|%*[^|]|%*[^|]|%*[^|]|%64[0-9a-f]", b1 + 8)
					 == 1, "v1's own b");
	memcpy(b1, "tensors/", 8);
	mt_catalog_object_check three[] = {{b1, NULL, MT_HEALTH_SOUND, NULL},
					   {"parity/00ff", "v1", MT_HEALTH_UNREPAIRABLE, "missing"}};
	TAP_CALL(mt_catalog_model_checked(c, mt_store_url(store), "net", three, 2, &err), &err,
		 "v1's b sound, a parity object of v1 lost");
	healths(c, MT_CAT_CHECKPOINTS, model, 13, h, sizeof h);
	healths(c, MT_CAT_MODELS, bucket, 8, m, sizeof m);
	tap_ok(!strcmp(h, "unrepairable sound") && !strcmp(m, "unrepairable"),
	       "a parity object is its checkpoint's alone (%s; %s)", h, m);
	three[1].state = MT_HEALTH_REBUILT;
	TAP_CALL(mt_catalog_model_checked(c, mt_store_url(store), "net", &three[1], 1, &err), &err,
		 "the parity object rebuilt");
	healths(c, MT_CAT_CHECKPOINTS, model, 13, h, sizeof h);
	healths(c, MT_CAT_MODELS, bucket, 8, m, sizeof m);
	tap_ok(!strcmp(h, "sound sound") && !strcmp(m, "sound"), "all sound (%s; %s)", h, m);
}

static void test_models(void)
{
	mt_error err = {0};
	mt_catalog *c;
	mt_catalog_sync_stats st;
	char path[sizeof dbpath + 16];
	snprintf(path, sizeof path, "%s.models", dbpath);
	TAP_CALL(mt_catalog_open(path, &c, &err), &err, "a catalog for models opens");
	TAP_CALL(put_ckpt("net", 7, "{\"step\":100,\"tags\":[\"nightly\"],\"description\":"
			  "\"first run\",\"metrics\":{\"loss\":0.5}}", &err), &err, "net@v1 written");
	TAP_CALL(put_ckpt("net", 70, "{\"step\":200,\"tags\":[\"nightly\",\"best\"]}", &err),
		 &err, "net@v2 written: w unchanged, b new");
	/* Asked to stop once the datasets are done: no model is read. */
	mt_error ec = {0};
	int rcc = mt_catalog_sync(c, "local", store, NULL, 0, cancel_when_done, NULL, &st, &ec);
	tap_ok(rcc == MT_ECANCELED && st.models == 0, "a cancel stops the sync before the models: %s",
	       ec.message);
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, 0, NULL, NULL, &st, &err), &err,
		 "sync with models");
	tap_ok(st.models == 1 && st.checkpoints == 2 && st.checkpoints_read == 2,
	       "the first sync reads both checkpoints (%llu models, %llu read)",
	       (unsigned long long)st.models, (unsigned long long)st.checkpoints_read);
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, 0, NULL, NULL, &st, &err), &err,
		 "second sync");
	tap_ok(st.checkpoints == 2 && st.checkpoints_read == 0,
	       "a second sync reads no checkpoint manifest");
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, MT_CATALOG_FULL, NULL, NULL, &st, &err),
		 &err, "a full sync");
	tap_ok(st.checkpoints_read == 2, "a full sync reads them again");

	int64_t remote = only_id(c, MT_CAT_REMOTES, 0, NULL);
	int64_t bucket = only_id(c, MT_CAT_BUCKETS, remote, NULL);
	struct collect m = list(c, MT_CAT_MODELS, bucket, NULL, 4, &err);
	tap_ok(!strcmp(m.text, "net|2|v2|200\n"), "models list: checkpoints, latest, its step: %s",
	       m.text);
	m = list(c, MT_CAT_MODELS, bucket, NULL, 7, &err);
	tap_ok(strstr(m.text, "|nightly best|\n") != NULL, "the model has its latest tags: %s",
	       m.text);
	int64_t model = only_id(c, MT_CAT_MODELS, bucket, "net");
	struct collect k = list(c, MT_CAT_CHECKPOINTS, model, NULL, 12, &err);
	char *v2 = strstr(k.text, "\nv2|");
	tap_ok(k.n == 2 && !strncmp(k.text, "v1|", 3) && v2, "checkpoints in order: %s", k.text);
	/* v1: 2 tensors of 48 raw bytes, every stored byte new; v2 adds only b. */
	unsigned long long raw1, st1, new1, raw2, st2, new2;
	int ok1 = sscanf(k.text, "v1|%*[^|]|100|2|%llu|%llu|%llu||loss=0.5|nightly|first run|",
			 &raw1, &st1, &new1) == 3;
	int ok2 = v2 && sscanf(v2 + 1, "v2|%*[^|]|200|2|%llu|%llu|%llu|v1||nightly best||", &raw2,
			       &st2, &new2) == 3;
	tap_ok(ok1 && raw1 == 48 && new1 == st1, "v1: step, 2 tensors, 48 bytes, all new, meta");
	tap_ok(ok2 && raw2 == 48 && new2 > 0 && new2 < st2,
	       "v2: its parent, only b's bytes new (%llu of %llu)", ok2 ? new2 : 0,
	       ok2 ? st2 : 0);
	int64_t ck2 = -1;
	struct collect all = {.ncols = 1};
	mt_catalog_list(c, MT_CAT_CHECKPOINTS, model, "v2", collect_row, &all, &err);
	ck2 = all.n == 1 ? all.last_id : -1;
	struct collect t = list(c, MT_CAT_TENSORS, ck2, NULL, 4, &err);
	tap_ok(!strcmp(t.text, "w|float32|(2, 3)|24\nb|int64|(3,)|24\n"),
	       "tensors: key, dtype, shape, bytes: %s", t.text);
	t = list(c, MT_CAT_TENSORS, ck2, NULL, 7, &err);
	tap_ok(strstr(t.text, "w|") && strstr(t.text, "|1\nb|") && strstr(t.text, "|0\n"),
	       "w is shared with the parent, b is new: %s", t.text);

	test_model_health(c, bucket, model, ck2);

	mt_catalog_ref ref;
	TAP_CALL(mt_catalog_locate(c, MT_CAT_CHECKPOINTS, ck2, &ref, &err), &err,
		 "a checkpoint is located");
	tap_ok(ref.model && !strcmp(ref.model, "net") && !strcmp(ref.version, "v2") &&
		       !ref.dataset && !strncmp(ref.url, "file://", 7),
	       "its place: the model and checkpoint, no dataset");
	mt_catalog_ref_free(&ref);

	struct collect f = list(c, MT_CAT_SEARCH_MODELS, 0, "nightly", 3, &err);
	tap_ok(f.n == 2 && strstr(f.text, "local|net|v1\n"), "search finds checkpoints by tag: %s",
	       f.text);
	f = list(c, MT_CAT_SEARCH_MODELS, 0, "bes", 3, &err);
	tap_ok(!strcmp(f.text, "local|net|v2\n"), "by a tag's prefix: %s", f.text);
	f = list(c, MT_CAT_SEARCH_MODELS, 0, "ne", 3, &err);
	tap_ok(f.n == 2, "and by the model's name");

	/* A damaged manifest of another model: reported, the sound ones still indexed. */
	char bad[sizeof root + 64];
	snprintf(bad, sizeof bad, "%s/models/bad/versions", root);
	char cmd[2 * sizeof bad + 64];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s' && echo '{' > '%s/v1.json'", bad, bad);
	tap_ok(system(cmd) == 0, "a damaged checkpoint manifest of model 'bad'");
	mt_error e1 = {0};
	int rc = mt_catalog_sync(c, "local", store, NULL, MT_CATALOG_FULL, NULL, NULL, &st, &e1);
	m = list(c, MT_CAT_MODELS, bucket, NULL, 2, &err);
	tap_ok((rc == MT_EFORMAT || rc == MT_ECORRUPT) && !strcmp(m.text, "net|2\n"),
	       "the sync reports it (%d: %s), and lists the sound model alone: %s", rc,
	       e1.message, m.text);
	snprintf(cmd, sizeof cmd, "rm -r '%s/models/bad'", root);
	tap_ok(system(cmd) == 0, "the damaged model removed");

	TAP_CALL(mt_ckpt_delete(store, "net", "v2", &err), &err, "net@v2 deleted");
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, MT_CATALOG_MODELS, NULL, NULL, &st,
				 &err), &err, "a sync of the models only");
	m = list(c, MT_CAT_MODELS, bucket, NULL, 4, &err);
	tap_ok(st.datasets == 0 && !strcmp(m.text, "net|1|v1|100\n"),
	       "the checkpoint is gone, the model's summary its v1's again: %s", m.text);
	t = list(c, MT_CAT_TENSORS, ck2, NULL, 1, &err);
	tap_ok(t.n == 0, "the gone checkpoint's tensors are dropped");
	TAP_CALL(mt_ckpt_delete(store, "net", "v1", &err), &err, "net@v1 deleted");
	TAP_CALL(mt_catalog_sync(c, "local", store, NULL, 0, NULL, NULL, &st, &err), &err,
		 "a sync after the last checkpoint went");
	m = list(c, MT_CAT_MODELS, bucket, NULL, 1, &err);
	f = list(c, MT_CAT_SEARCH_MODELS, 0, "nightly", 1, &err);
	tap_ok(m.n == 0 && f.n == 0, "a model without checkpoints is dropped, and unsearchable");
	mt_catalog_close(c);
}

int main(void)
{
	snprintf(root, sizeof root, "/tmp/mt-catalog-XXXXXX");
	if (!mkdtemp(root))
		return 1;
	snprintf(dbpath, sizeof dbpath, "%s/cat/catalog.db", root);
	mt_error err = {0};
	char *url = mti_asprintf("file://%s/store", root);
	if (mt_store_open(url, &store, &err)) {
		tap_diag("%s", err.message);
		return 1;
	}
	free(url);
	/* The store's own directory is root/store; bad manifests go there. */
	snprintf(root + strlen(root), sizeof root - strlen(root), "/store");
	test_sync_and_lists();
	test_concurrent_writers();
	test_migration();
	test_health();
	test_models();
	test_default_path();
	mt_store_close(store);
	root[strlen(root) - strlen("/store")] = '\0';
	tap_rm_tree(root);
	return tap_done();
}
