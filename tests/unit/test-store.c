/* test-store.c — object store: URLs, default store, fs get/put/list/delete, uploads, threads. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pwd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include "s3-auth.h"
#include "store.h"
#include "tap.h"

static char tmp[256];   /* everything the test creates lives below */
static char root[300];  /* the store most cases use */
static mt_store *store;

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rm_tree(const char *path)
{
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		tap_diag("could not remove %s", path);
}

static int put_str(const char *key, const char *s, int flags, mt_error *err)
{
	return mti_store_put(store, key, s, strlen(s), flags, err);
}

/* The object's content as a string ("" when the get fails). */
static char *get_str(const char *key)
{
	void *data = NULL;
	size_t len = 0;
	mt_error err;
	char *s = calloc(1, 1);
	if (mti_store_get(store, key, 0, UINT64_MAX, &data, &len, &err) == 0) {
		free(s);
		s = calloc(1, len + 1);
		memcpy(s, data, len);
		free(data);
	}
	return s;
}

static int is_str(const char *key, const char *want)
{
	char *s = get_str(key);
	int ok = strcmp(s, want) == 0;
	free(s);
	return ok;
}

/* Files in a store directory whose name starts with prefix. */
static int count_files(const char *rel, const char *prefix)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *de; (de = readdir(d));)
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		     strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

/* ---- URLs ---------------------------------------------------------------- */

static void test_urls(void)
{
	mt_error err;
	mt_store *s;
	char url[400], want[400];

	snprintf(url, sizeof url, "file://%s//urls/./a/../b/", tmp);
	snprintf(want, sizeof want, "file://%s/urls/b", tmp);
	if (TAP_CALL(mt_store_open(url, &s, &err), &err,
		     "file:// URL opens (and creates) a store")) {
		tap_ok(strcmp(mt_store_url(s), want) == 0, "URL is canonical: %s", mt_store_url(s));
		mt_store_close(s);
	}

	char cwd[256];
	if (!getcwd(cwd, sizeof cwd) || chdir(tmp) != 0)
		tap_diag("chdir failed");
	snprintf(want, sizeof want, "file://%s/rel/store", tmp);
	if (TAP_CALL(mt_store_open("rel/store/", &s, &err), &err, "a relative path opens")) {
		tap_ok(strcmp(mt_store_url(s), want) == 0, "relative path made absolute: %s",
		       mt_store_url(s));
		mt_store_close(s);
	}
	if (chdir(cwd) != 0)
		tap_diag("chdir back failed");

	/* Opening an S3 store sends nothing yet; the URL is made canonical. */
	mt_store_opts so;
	mt_store_opts_init(&so);
	so.endpoint = "http://127.0.0.1:9";
	if (TAP_CALL(mt_store_open_opts("s3://bucket//prefix/", &so, &s, &err), &err,
		     "s3:// opens without a request")) {
		tap_ok(strcmp(mt_store_url(s), "s3://bucket/prefix") == 0, "s3 URL made canonical: %s",
		       mt_store_url(s));
		mt_store_close(s);
	}
	int rc = mt_store_open_opts("s3://b", &so, &s, &err);
	tap_ok(rc == MT_EINVAL && s == NULL && strstr(err.message, "BUCKET"),
	       "s3:// with a bad bucket name is refused: %s", err.message);
	so.endpoint = "ftp://127.0.0.1:9";
	rc = mt_store_open_opts("s3://bucket", &so, &s, &err);
	tap_ok(rc == MT_EINVAL && s == NULL && strstr(err.message, "ftp://"),
	       "an endpoint that is not http(s) is refused: %s", err.message);
	rc = mt_store_open("gs://b", &s, &err);
	tap_ok(rc == MT_EUNSUPPORTED && strstr(err.message, "'gs'"), "any unknown scheme too: %s",
	       err.message);
	rc = mt_store_open("file://relative/dir", &s, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "absolute"),
	       "file:// with a relative path is refused: %s", err.message);

	char file[400];
	snprintf(file, sizeof file, "%s/plainfile", tmp);
	FILE *f = fopen(file, "w");
	if (f)
		fclose(f);
	rc = mt_store_open(file, &s, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "not a directory"),
	       "a file is not a store: %s", err.message);
}

/* A reader opens without create: a missing directory is an error naming it and
 * nothing is made; the default store alone reads as empty before its first write. */
static void test_open_without_create(void)
{
	mt_error err;
	mt_store *s = NULL;
	mt_store_opts ro;
	mt_store_opts_init(&ro);
	char path[400], parent[400];
	struct stat sb;
	snprintf(parent, sizeof parent, "%s/ro", tmp);
	snprintf(path, sizeof path, "%s/ro/missing", tmp);
	int rc = mt_store_open_opts(path, &ro, &s, &err);
	tap_ok(rc == MT_ENOTFOUND && !s && strstr(err.message, "no store at") &&
		       strstr(err.message, path) && stat(parent, &sb) != 0,
	       "a missing directory is MT_ENOTFOUND and nothing is created: %s", err.message);

	char *saved[2] = {getenv("MATORAGE_STORE"), getenv("XDG_DATA_HOME")};
	for (int i = 0; i < 2; i++)
		saved[i] = saved[i] ? strdup(saved[i]) : NULL;
	unsetenv("MATORAGE_STORE");
	setenv("XDG_DATA_HOME", parent, 1);
	rc = mt_store_open_opts(NULL, &ro, &s, &err);
	int n = -1;
	if (!rc) {
		mt_list_page page = {0};
		if (s->ops->list(s, "datasets/", NULL, 0, &page, &err) == 0)
			n = (int)page.n;
		mti_list_page_free(&page);
	}
	tap_ok(rc == 0 && n == 0 && stat(parent, &sb) != 0,
	       "the default store opens empty before its first write, and creates nothing");
	mt_store_close(s);
	ro.create = 1;
	TAP_CALL(mt_store_open_opts(path, &ro, &s, &err), &err, "with create it opens");
	tap_ok(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode), "and makes the directory");
	mt_store_close(s);
	const char *names[2] = {"MATORAGE_STORE", "XDG_DATA_HOME"};
	for (int i = 0; i < 2; i++) {
		if (saved[i])
			setenv(names[i], saved[i], 1);
		else
			unsetenv(names[i]);
		free(saved[i]);
	}
}

/* Without HOME (a service, a container), ~ is the user's home directory in
 * the password database, for the data and the configuration directories
 * alike; the default store follows it.  Nothing is created. */
static void test_home_unset(void)
{
	mt_error err;
	char *config_home = getenv("XDG_CONFIG_HOME") ? strdup(getenv("XDG_CONFIG_HOME")) : NULL;
	unsetenv("MATORAGE_STORE");
	unsetenv("XDG_DATA_HOME");
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("HOME");
	const struct passwd *pw = getpwuid(getuid());
	if (!pw || !pw->pw_dir || pw->pw_dir[0] != '/') {
		tap_ok(1, "# SKIP user %u has no home directory in the password database",
		       (unsigned)getuid());
		free(config_home);
		return;
	}
	char want[600], *got = NULL;
	snprintf(want, sizeof want, "%s/.local/share/matorage/store", pw->pw_dir);
	int rc = mt_user_path(MT_DIR_DATA, "store", &got, &err);
	tap_ok(rc == 0 && got && !strcmp(got, want),
	       "HOME unset: the data directory is under the password database's home: %s",
	       got ? got : err.message);
	free(got);
	got = NULL;
	snprintf(want, sizeof want, "%s/.config/matorage/config.json", pw->pw_dir);
	rc = mt_user_path(MT_DIR_CONFIG, "config.json", &got, &err);
	tap_ok(rc == 0 && got && !strcmp(got, want),
	       "HOME unset: so is the configuration directory: %s", got ? got : err.message);
	free(got);
	got = NULL;
	/* The XDG rules ignore a relative variable; ~ is then the same home. */
	setenv("XDG_DATA_HOME", "relative", 1);
	snprintf(want, sizeof want, "%s/.local/share/matorage/catalog.db", pw->pw_dir);
	rc = mt_user_path(MT_DIR_DATA, "catalog.db", &got, &err);
	tap_ok(rc == 0 && got && !strcmp(got, want), "a relative XDG_DATA_HOME is ignored: %s",
	       got ? got : err.message);
	free(got);
	unsetenv("XDG_DATA_HOME");
	rc = mt_user_path(42, "x", &got, &err);
	tap_ok(rc == MT_EINVAL && !got, "an unknown directory kind is MT_EINVAL: %s", err.message);

	/* The AWS shared files follow the same home: a profile found nowhere names
	 * the files looked in. */
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	unsetenv("AWS_CONFIG_FILE");
	mt_s3_config c;
	rc = mti_s3_config_resolve("matorage-test-no-such-profile", NULL, NULL, &c, &err);
	snprintf(want, sizeof want, "%s/.aws/credentials nor %s/.aws/config", pw->pw_dir,
		 pw->pw_dir);
	tap_ok(rc == MT_ENOTFOUND && strstr(err.message, want),
	       "HOME unset: the AWS files are under that home too: %s",
	       rc ? err.message : "resolved");
	if (!rc)
		mti_s3_config_free(&c);

	mt_store_opts ro;
	mt_store_opts_init(&ro);
	mt_store *s = NULL;
	snprintf(want, sizeof want, "file://%s/.local/share/matorage/store", pw->pw_dir);
	rc = mt_store_open_opts(NULL, &ro, &s, &err);
	tap_ok(rc == 0 && !strcmp(mt_store_url(s), want),
	       "HOME unset: the default store is there too: %s", rc ? err.message : mt_store_url(s));
	mt_store_close(s);
	if (config_home)
		setenv("XDG_CONFIG_HOME", config_home, 1);
	free(config_home);
}

/* $MATORAGE_STORE, else $XDG_DATA_HOME/matorage/store, else ~/.local/share/... */
static void test_default_store(void)
{
	char *saved[3];
	const char *names[3] = {"MATORAGE_STORE", "XDG_DATA_HOME", "HOME"};
	for (int i = 0; i < 3; i++)
		saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
	mt_error err;
	mt_store *s = NULL;
	char val[400], want[400];
	struct stat sb;

	snprintf(val, sizeof val, "file://%s/env-store/", tmp);
	snprintf(want, sizeof want, "file://%s/env-store", tmp);
	setenv("MATORAGE_STORE", val, 1);
	setenv("XDG_DATA_HOME", "/nonexistent-xdg", 1);
	if (TAP_CALL(mt_store_open(NULL, &s, &err), &err, "default store from MATORAGE_STORE")) {
		tap_ok(strcmp(mt_store_url(s), want) == 0, "MATORAGE_STORE wins over XDG: %s",
		       mt_store_url(s));
		mt_store_close(s);
	}

	unsetenv("MATORAGE_STORE");
	snprintf(val, sizeof val, "%s/xdg", tmp);
	setenv("XDG_DATA_HOME", val, 1);
	snprintf(want, sizeof want, "file://%s/xdg/matorage/store", tmp);
	if (TAP_CALL(mt_store_open("", &s, &err), &err, "default store from XDG_DATA_HOME")) {
		tap_ok(strcmp(mt_store_url(s), want) == 0 && stat(want + 7, &sb) == 0 &&
		       S_ISDIR(sb.st_mode),
		       "$XDG_DATA_HOME/matorage/store is used and created: %s", mt_store_url(s));
		mt_store_close(s);
	}

	unsetenv("XDG_DATA_HOME");
	snprintf(val, sizeof val, "%s/home", tmp);
	setenv("HOME", val, 1);
	snprintf(want, sizeof want, "file://%s/home/.local/share/matorage/store", tmp);
	if (TAP_CALL(mt_store_open(NULL, &s, &err), &err, "default store from HOME")) {
		tap_ok(strcmp(mt_store_url(s), want) == 0 && stat(want + 7, &sb) == 0,
		       "XDG_DATA_HOME defaults to ~/.local/share: %s", mt_store_url(s));
		mt_store_close(s);
	}

	test_home_unset();
	for (int i = 0; i < 3; i++) {
		if (saved[i])
			setenv(names[i], saved[i], 1);
		else
			unsetenv(names[i]);
		free(saved[i]);
	}
}

/* ---- objects ------------------------------------------------------------- */

static void test_roundtrip(void)
{
	mt_error err;
	const char *key = "datasets/a/versions/v1.json";
	TAP_CALL(put_str(key, "hello, store", 0, &err), &err, "put creates parent directories");
	tap_ok(is_str(key, "hello, store"), "get returns what put stored");
	uint64_t size = 0;
	int64_t mtime = 0;
	TAP_CALL(mti_store_head(store, key, &size, &mtime, &err), &err, "head of a stored key");
	tap_ok(size == 12 && mtime > 1500000000, "head gives size %llu and mtime %lld",
	       (unsigned long long)size, (long long)mtime);
	/* The backend itself, not only the wrapper, takes NULL for either (copies ask
	 * whether a recipe exists that way). */
	TAP_CALL(store->ops->head(store, key, NULL, NULL, &err), &err,
		 "the backend's head with neither size nor mtime wanted");
	mt_store *cache = NULL;
	TAP_CALL(mti_store_cache_open(store, NULL, 1 << 20, &cache, &err), &err, "a cache view");
	TAP_CALL(cache ? cache->ops->head(cache, key, NULL, NULL, &err) : MT_ENOMEM, &err,
		 "its head with neither size nor mtime wanted");
	mt_store_close(cache);
	char buf[8];
	TAP_CALL(mti_store_read(store, key, 7, buf, 5, &err), &err, "read of 5 bytes at 7");
	tap_ok(memcmp(buf, "store", 5) == 0, "read fills the caller's buffer exactly");

	TAP_CALL(put_str(key, "replaced", 0, &err), &err, "a plain put over an existing key");
	tap_ok(is_str(key, "replaced"), "replaces it");
	tap_ok(count_files("datasets/a/versions", ".tmp.") == 0, "and leaves no temporary file");

	TAP_CALL(put_str("empty", "", 0, &err), &err, "an empty object can be put");
	void *data = NULL;
	size_t got = 99;
	TAP_CALL(mti_store_get(store, "empty", 0, UINT64_MAX, &data, &got, &err), &err,
		 "and read back");
	tap_ok(data && got == 0, "as 0 bytes");
	free(data);

	const char *keys[] = {key, "never-stored"};
	TAP_CALL(mti_store_del(store, keys, 2, &err), &err, "delete (a missing key is fine)");
	int rc = mti_store_head(store, key, NULL, NULL, &err);
	tap_ok(rc == MT_ENOTFOUND && strstr(err.message, key) &&
	       strstr(err.message, "No such file"),
	       "head after delete: not found, naming store and key: %s", err.message);
	rc = mti_store_get(store, key, 0, UINT64_MAX, &data, &got, &err);
	tap_ok(rc == MT_ENOTFOUND && strstr(err.message, mt_store_url(store)) &&
	       strstr(err.message, key), "get of a missing key: %s", err.message);
	TAP_CALL(put_str("datasets/a/keep", "k", 0, &err), &err, "an object in datasets/a");
	rc = mti_store_read(store, "datasets/a", 0, buf, 1, &err);
	tap_ok(rc == MT_ENOTFOUND, "a directory is not an object: %s", err.message);
	rc = mti_store_head(store, "datasets", NULL, NULL, &err);
	tap_ok(rc == MT_ENOTFOUND, "head of a directory: not found: %s", err.message);
}

/* Whether directory rel of the store exists. */
static int dir_exists(const char *rel)
{
	char path[sizeof root + 64];
	struct stat sb;
	snprintf(path, sizeof path, "%s/%s", root, rel);
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* A delete that empties a directory removes it, up to the top-level one: a
 * writer that gave up leaves no directory of its dataset. */
static void test_prune(void)
{
	mt_error err;
	const char *lock = "datasets/p/locks/w1", *shard = "datasets/p/shards/s1";
	TAP_CALL(put_str(lock, "l", 0, &err), &err, "a lock of dataset p");
	TAP_CALL(put_str(shard, "s", 0, &err), &err, "and a shard");
	TAP_CALL(mti_store_del(store, &lock, 1, &err), &err, "the lock deleted");
	tap_ok(!dir_exists("datasets/p/locks") && dir_exists("datasets/p/shards"),
	       "its emptied directory goes, the dataset's stays");
	TAP_CALL(mti_store_del(store, &shard, 1, &err), &err, "the shard deleted");
	tap_ok(!dir_exists("datasets/p") && dir_exists("datasets"),
	       "then the dataset's directory goes too, never the top-level one");
	TAP_CALL(put_str(shard, "again", 0, &err), &err, "a put there makes them again");
	tap_ok(is_str(shard, "again"), "and reads back");
	TAP_CALL(mti_store_del(store, &shard, 1, &err), &err, "deleted again");
	const char *top = "toplevel";
	TAP_CALL(put_str(top, "t", 0, &err), &err, "an object at the root");
	TAP_CALL(mti_store_del(store, &top, 1, &err), &err, "deleted: nothing above it to prune");
}

/* Two writers putting and deleting objects in one directory: each delete
 * that empties it removes it (and the dataset's directory above), under
 * the other's put.  Every put must land and read back. */
#define RACE_PUTS 500
static void *prune_worker(void *arg)
{
	long t = (long)arg;
	intptr_t failures = 0;
	for (int i = 0; i < RACE_PUTS; i++) {
		char key[64];
		snprintf(key, sizeof key, "datasets/race/shards/t%ld-%d", t, i);
		const char *k = key;
		mt_error err = {0};
		if (put_str(key, "x", 0, &err) || !is_str(key, "x")) {
			if (failures++ < 3)
				tap_diag("put %s: %s", key, err.message);
		}
		mti_store_del(store, &k, 1, &err);
	}
	return (void *)failures;
}

static void test_prune_race(void)
{
	pthread_t th[2];
	for (long t = 0; t < 2; t++)
		pthread_create(&th[t], NULL, prune_worker, (void *)t);
	intptr_t failures = 0;
	for (int t = 0; t < 2; t++) {
		void *r;
		pthread_join(th[t], &r);
		failures += (intptr_t)r;
	}
	tap_ok(failures == 0, "2 threads put and delete %d objects each in a directory the deletes "
	       "remove: %ld puts failed", RACE_PUTS, (long)failures);
}

static void test_ranges(void)
{
	mt_error err;
	const char *key = "ranges/obj";
	put_str(key, "0123456789", 0, &err);
	void *d = NULL;
	size_t got = 0;
	int rc;

	TAP_CALL(mti_store_get(store, key, 3, 4, &d, &got, &err), &err, "ranged get in the middle");
	tap_ok(got == 4 && memcmp(d, "3456", 4) == 0, "gives bytes 3..6");
	free(d);
	d = NULL;
	TAP_CALL(mti_store_get(store, key, 6, UINT64_MAX, &d, &got, &err), &err,
		 "ranged get to the end");
	tap_ok(got == 4 && memcmp(d, "6789", 4) == 0, "gives bytes 6..9");
	free(d);
	d = NULL;
	TAP_CALL(mti_store_get(store, key, 10, UINT64_MAX, &d, &got, &err), &err,
		 "get from exactly the end");
	tap_ok(got == 0, "gives nothing");
	free(d);
	d = NULL;
	TAP_CALL(mti_store_get(store, key, 8, 2, &d, &got, &err), &err,
		 "ranged get of the last bytes");
	free(d);
	d = NULL;

	rc = mti_store_get(store, key, 11, UINT64_MAX, &d, &got, &err);
	tap_ok(rc == MT_ERANGE && !d && strstr(err.message, key), "offset past the end: %s",
	       err.message);
	rc = mti_store_get(store, key, 8, 3, &d, &got, &err);
	tap_ok(rc == MT_ERANGE && !d, "a range running past the end: %s", err.message);
	rc = mti_store_get(store, key, UINT64_MAX - 1, 4, &d, &got, &err);
	tap_ok(rc == MT_ERANGE && !d, "an offset+len that overflows: %s", err.message);
	char buf[4];
	rc = mti_store_read(store, key, 8, buf, 3, &err);
	tap_ok(rc == MT_ERANGE && strstr(err.message, "past its end"),
	       "read past the end: %s", err.message);
	rc = mti_store_read(store, key, (uint64_t)1 << 63, buf, 1, &err);
	tap_ok(rc == MT_ERANGE, "read at an offset beyond off_t: %s", err.message);
}

static void test_exclusive(void)
{
	mt_error err;
	const char *key = "excl/v1.json";
	TAP_CALL(put_str(key, "first", MT_PUT_EXCLUSIVE, &err), &err, "exclusive put of a new key");
	int rc = put_str(key, "second", MT_PUT_EXCLUSIVE, &err);
	tap_ok(rc == MT_EEXIST && strstr(err.message, key), "a second exclusive put: %s",
	       err.message);
	tap_ok(is_str(key, "first"), "the first content survives");
	tap_ok(count_files("excl", "") == 1, "and no temporary file is left");

	mt_upload *u;
	TAP_CALL(store->ops->upload_open(store, key, MT_PUT_EXCLUSIVE, &u, &err), &err,
		 "exclusive upload over an existing key opens");
	store->ops->upload_write(u, "x", 1, &err);
	rc = store->ops->upload_commit(u, &err);
	tap_ok(rc == MT_EEXIST && is_str(key, "first") && count_files("excl", "") == 1,
	       "its commit fails with MT_EEXIST, cleanly: %s", err.message);
}

static void test_bad_keys(void)
{
	const char *bad[] = {"", "/etc/passwd", "a/../b", "..", "a//b", "a/", "a/./b", "./a",
			     "a/.", ".tmp.x", "d/.tmp.v1.json.1.2"};
	mt_error err;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		void *d = NULL;
		size_t got;
		int put = put_str(bad[i], "x", 0, &err);
		int get = mti_store_get(store, bad[i], 0, UINT64_MAX, &d, &got, &err);
		int head = mti_store_head(store, bad[i], NULL, NULL, &err);
		int del = mti_store_del(store, &bad[i], 1, &err);
		tap_ok(put == MT_EINVAL && get == MT_EINVAL && head == MT_EINVAL &&
		       del == MT_EINVAL && strstr(err.message, "invalid object key"),
		       "key '%s' is refused by put, get, head and delete: %s", bad[i], err.message);
	}
	char longkey[1100];
	memset(longkey, 'k', sizeof longkey - 1);
	longkey[sizeof longkey - 1] = '\0';
	tap_ok(put_str(longkey, "x", 0, &err) == MT_EINVAL, "a key over 1024 bytes is refused");
	tap_ok(put_str("ok/a..b", "x", 0, &err) == MT_EINVAL, "'..' anywhere is refused");
	tap_ok(put_str("ok/.hidden/x-y_z.1", "x", 0, &err) == 0,
	       "dots, dashes and hidden names are fine");
}

static void test_uploads(void)
{
	mt_error err;
	mt_upload *u;
	const char *key = "up/big.bin";
	TAP_CALL(store->ops->upload_open(store, key, 0, &u, &err), &err, "upload opens");
	TAP_CALL(store->ops->upload_write(u, "part one|", 9, &err), &err, "part 1");
	TAP_CALL(store->ops->upload_write(u, "part two|", 9, &err), &err, "part 2");
	TAP_CALL(store->ops->upload_write(u, "part three", 10, &err), &err, "part 3");
	tap_ok(mti_store_head(store, key, NULL, NULL, &err) == MT_ENOTFOUND,
	       "nothing is visible under the key before commit");
	mt_list_page page;
	store->ops->list(store, "up/", NULL, 0, &page, &err);
	tap_ok(page.n == 0, "nor in a listing (the temporary file is skipped)");
	mti_list_page_free(&page);
	TAP_CALL(store->ops->upload_commit(u, &err), &err, "commit");
	tap_ok(is_str(key, "part one|part two|part three"), "the parts arrive in order");

	TAP_CALL(store->ops->upload_open(store, "up/aborted", 0, &u, &err), &err,
		 "a second upload opens");
	store->ops->upload_write(u, "junk", 4, &err);
	tap_ok(count_files("up", ".tmp.") == 1, "its data sits in a temporary file");
	store->ops->upload_abort(u);
	tap_ok(mti_store_head(store, "up/aborted", NULL, NULL, &err) == MT_ENOTFOUND &&
	       count_files("up", "") == 1, "abort leaves nothing behind");
	store->ops->upload_abort(NULL);
}

/* ---- listing ------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct collect {
	char **keys;
	size_t n, stop_at;
};

static int collect(void *ud, const mt_obj *o)
{
	struct collect *c = ud;
	c->keys[c->n++] = strdup(o->key);
	return c->stop_at && c->n == c->stop_at ? 42 : 0;
}

#define NLIST 2500

static void test_list(void)
{
	mt_error err;
	/* Names chosen so that key order differs from a naive per-directory
	 * walk: "a-b" < "a/..." < "a0" < "a/" would be wrong. */
	static char *keys[NLIST];
	const char *tricky[] = {"L/a-b", "L/a/z", "L/a/b/c", "L/a0", "L/a.x", "L/b"};
	size_t nt = sizeof tricky / sizeof tricky[0];
	for (size_t i = 0; i < NLIST; i++) {
		char k[64];
		if (i < nt)
			snprintf(k, sizeof k, "%s", tricky[i]);
		else
			snprintf(k, sizeof k, "L/d%zu/k%04zu", i % 13, i);
		keys[i] = strdup(k);
		put_str(k, k, MT_PUT_NOSYNC, &err);
	}
	put_str("Lx/outside", "x", 0, &err);
	qsort(keys, NLIST, sizeof *keys, cmp_str);

	/* Clutter a listing must not show. */
	char p[600];
	snprintf(p, sizeof p, "%s/L/d3/.tmp.k0003.1.2.3", root);
	FILE *f = fopen(p, "w");
	if (f)
		fclose(f);
	snprintf(p, sizeof p, "%s/L/emptydir", root);
	mkdir(p, 0777);
	snprintf(p, sizeof p, "%s/L/d3/link", root);
	if (symlink("k0003", p) != 0)
		tap_diag("symlink failed");

	size_t seen = 0, pages = 0, sizes[4] = {0};
	int sorted = 1, match = 1, tokens = 1;
	char *token = NULL;
	int rc = 0;
	do {
		mt_list_page page;
		rc = store->ops->list(store, "L/", token, 1000, &page, &err);
		if (rc)
			break;
		if (pages < 4)
			sizes[pages] = page.n;
		pages++;
		for (size_t i = 0; i < page.n; i++, seen++) {
			if (seen >= NLIST || strcmp(page.objs[i].key, keys[seen]) != 0)
				match = 0;
			if (i && strcmp(page.objs[i - 1].key, page.objs[i].key) >= 0)
				sorted = 0;
			if (page.objs[i].size != strlen(page.objs[i].key))
				match = 0;
		}
		if (page.next && strcmp(page.next, page.objs[page.n - 1].key) != 0)
			tokens = 0;
		free(token);
		token = page.next;
		page.next = NULL;
		mti_list_page_free(&page);
	} while (token && pages < 10);
	free(token);
	tap_ok(rc == 0, "listing 2500 keys in pages of 1000: %s", rc ? err.message : "ok");
	tap_ok(pages == 3 && sizes[0] == 1000 && sizes[1] == 1000 && sizes[2] == 500,
	       "three pages: %zu, %zu, %zu", sizes[0], sizes[1], sizes[2]);
	tap_ok(sorted && tokens, "each page sorted, each token the last key of its page");
	tap_ok(match && seen == NLIST,
	       "every key exactly once, in byte order, with its size; no temp files, "
	       "directories or links (%zu seen)", seen);

	struct collect c = {calloc(NLIST + 10, sizeof(char *)), 0, 0};
	TAP_CALL(mti_store_list_all(store, "L/", collect, &c, &err), &err,
		 "list_all pages through everything");
	tap_ok(c.n == NLIST, "list_all saw %zu keys", c.n);
	for (size_t i = 0; i < c.n; i++)
		free(c.keys[i]);
	c.n = 0;
	c.stop_at = 1500;
	rc = mti_store_list_all(store, "L/", collect, &c, &err);
	tap_ok(rc == 42 && c.n == 1500, "list_all stops when the callback says so (rc %d)", rc);
	for (size_t i = 0; i < c.n; i++)
		free(c.keys[i]);

	/* A prefix is a string prefix of keys, not a directory. */
	c.n = 0;
	c.stop_at = 0;
	mti_store_list_all(store, "L/d1", collect, &c, &err);
	size_t want = 0;
	for (size_t i = 0; i < NLIST; i++)
		want += strncmp(keys[i], "L/d1", 4) == 0;
	int prefixed = c.n == want;
	for (size_t i = 0; i < c.n; i++) {
		prefixed &= strncmp(c.keys[i], "L/d1", 4) == 0;
		free(c.keys[i]);
	}
	tap_ok(prefixed && want > 0 && c.n > NLIST / 13,
	       "prefix \"L/d1\" matches L/d1/, L/d10/, L/d11/, L/d12/ (%zu keys)", want);
	c.n = 0;
	mti_store_list_all(store, "L/a", collect, &c, &err);
	tap_ok(c.n == 5 && !strcmp(c.keys[0], "L/a-b") && !strcmp(c.keys[1], "L/a.x") &&
	       !strcmp(c.keys[2], "L/a/b/c") && !strcmp(c.keys[3], "L/a/z") &&
	       !strcmp(c.keys[4], "L/a0"),
	       "prefix \"L/a\": a-b, a.x, a/b/c, a/z, a0 in that order");
	for (size_t i = 0; i < c.n; i++)
		free(c.keys[i]);

	mt_list_page page;
	rc = store->ops->list(store, "nothing/here/", NULL, 0, &page, &err);
	tap_ok(rc == 0 && page.n == 0 && !page.next, "a missing prefix is an empty listing");
	mti_list_page_free(&page);
	rc = store->ops->list(store, "L/", "L/d9/k9999", 0, &page, &err);
	tap_ok(rc == 0 && page.n == 0 && !page.next, "a token after the last key: empty page");
	mti_list_page_free(&page);

	/* list_prefixes: one entry per directory, S3 CommonPrefixes-like. */
	rc = store->ops->list_prefixes(store, "L/", NULL, 5, &page, &err);
	tap_ok(rc == 0 && page.n == 5 && !strcmp(page.objs[0].key, "L/a/") &&
	       !strcmp(page.objs[1].key, "L/d0/") && !strcmp(page.objs[2].key, "L/d1/") &&
	       !strcmp(page.objs[3].key, "L/d10/") && page.next &&
	       !strcmp(page.next, page.objs[4].key),
	       "list_prefixes: first page of directories, sorted");
	char *next = page.next;
	page.next = NULL;
	mti_list_page_free(&page);
	rc = store->ops->list_prefixes(store, "L/", next, 100, &page, &err);
	tap_ok(rc == 0 && page.n == 10 && !strcmp(page.objs[9].key, "L/emptydir/") && !page.next,
	       "list_prefixes: the rest after the token (%zu)", page.n);
	mti_list_page_free(&page);
	free(next);
	c.n = 0;
	mti_store_list_prefixes(store, "", collect, &c, &err);
	tap_ok(c.n >= 3 && !strcmp(c.keys[0], "L/") && !strcmp(c.keys[1], "Lx/"),
	       "list_prefixes at the root");
	for (size_t i = 0; i < c.n; i++)
		free(c.keys[i]);
	free(c.keys);

	for (size_t i = 0; i < NLIST; i++)
		free(keys[i]);
}

/* Page through prefix with pages of max keys; the keys go to out (one
 * string, newline-separated).  Returns the number of pages or -1. */
static int list_pages(const char *prefix, size_t max, char **out, size_t *nkeys)
{
	mt_buf b = {0};
	char *token = NULL;
	int pages = 0;
	*nkeys = 0;
	do {
		mt_list_page page;
		mt_error err;
		if (store->ops->list(store, prefix, token, max, &page, &err)) {
			tap_diag("list: %s", err.message);
			pages = -1;
			break;
		}
		pages++;
		for (size_t i = 0; i < page.n; i++) {
			mti_buf_append(&b, page.objs[i].key, strlen(page.objs[i].key));
			mti_buf_append(&b, "\n", 1);
		}
		*nkeys += page.n;
		free(token);
		token = page.next;
		page.next = NULL;
		mti_list_page_free(&page);
	} while (token && pages < 100000);
	free(token);
	mti_buf_append(&b, "", 1);
	*out = (char *)b.data;
	return pages;
}

static char *join_keys(char **keys, size_t n)
{
	mt_buf b = {0};
	for (size_t i = 0; i < n; i++) {
		mti_buf_append(&b, keys[i], strlen(keys[i]));
		mti_buf_append(&b, "\n", 1);
	}
	mti_buf_append(&b, "", 1);
	return (char *)b.data;
}

static void test_list_small_pages(void)
{
	/* The same 2500 keys in pages of 7: tokens that fall inside nested
	 * directories must resume right after themselves. */
	static char *keys[NLIST + 10];
	struct collect c = {keys, 0, 0};
	mt_error err;
	mti_store_list_all(store, "L/", collect, &c, &err);
	char *want = join_keys(keys, c.n), *got;
	size_t n;
	int pages = list_pages("L/", 7, &got, &n);
	tap_ok(pages == (NLIST + 6) / 7 && strcmp(got, want) == 0,
	       "pages of 7 keys give the same %zu keys in order (%d pages)", n, pages);
	free(got);
	free(want);
	for (size_t i = 0; i < c.n; i++)
		free(keys[i]);
}

#define NFLAT 2500

/* Set a directory's mtime, so a cached listing of it is (or is not) stale
 * whatever the file system's timestamp granularity. */
static void set_dir_mtime(const char *rel, const struct timespec *t)
{
	char p[600];
	snprintf(p, sizeof p, "%s/%s", root, rel);
	struct timespec ts[2] = {*t, *t};
	if (utimensat(AT_FDCWD, p, ts, 0) != 0)
		tap_diag("utimensat %s: %s", p, strerror(errno));
}

static struct timespec dir_mtime(const char *rel)
{
	char p[600];
	snprintf(p, sizeof p, "%s/%s", root, rel);
	struct stat sb = {0};
	stat(p, &sb);
	return sb.st_mtim;
}

/* One directory larger than a page: read once, then served from memory
 * while it is unchanged. */
static void test_list_flat(void)
{
	mt_error err;
	for (int i = 0; i < NFLAT; i++) {
		char k[32];
		snprintf(k, sizeof k, "flat/k%05d", i);
		put_str(k, k, MT_PUT_NOSYNC, &err);
	}
	mt_list_page p1, p2, p3;
	int rc = store->ops->list(store, "flat/", NULL, 1000, &p1, &err);
	tap_ok(rc == 0 && p1.n == 1000 && !strcmp(p1.objs[0].key, "flat/k00000") &&
	       !strcmp(p1.next, "flat/k00999"), "flat directory: first page of 1000");

	/* A file deleted behind an unchanged directory mtime. */
	struct timespec t = dir_mtime("flat");
	const char *gone = "flat/k01500";
	mti_store_del(store, &gone, 1, &err);
	set_dir_mtime("flat", &t);
	rc = store->ops->list(store, "flat/", p1.next, 1000, &p2, &err);
	int ok = rc == 0 && p2.n == 1000 && p2.next && !strcmp(p2.next, "flat/k02000");
	for (size_t i = 0; ok && i < p2.n; i++)
		ok = strcmp(p2.objs[i].key, gone) != 0 && (!i || strcmp(p2.objs[i - 1].key,
									p2.objs[i].key) < 0);
	tap_ok(ok, "second page skips a file deleted since the directory was read (next %s)",
	       p2.next ? p2.next : "NULL");

	/* A file created behind a changed mtime must appear. */
	put_str("flat/k02100a", "new", 0, &err);
	t.tv_sec += 10;
	set_dir_mtime("flat", &t);
	rc = store->ops->list(store, "flat/", p2.next, 1000, &p3, &err);
	int found = 0;
	for (size_t i = 0; rc == 0 && i < p3.n; i++)
		found += !strcmp(p3.objs[i].key, "flat/k02100a");
	tap_ok(rc == 0 && p3.n == 500 && !p3.next && found == 1 &&
	       !strcmp(p3.objs[0].key, "flat/k02001") && !strcmp(p3.objs[499].key, "flat/k02499"),
	       "after the directory changed, the last page sees a new key (%zu keys)", p3.n);
	mti_list_page_free(&p1);
	mti_list_page_free(&p2);
	mti_list_page_free(&p3);
}

static void *list_worker(void *arg)
{
	char *got;
	size_t n;
	int pages = list_pages((const char *)arg, 100, &got, &n);
	free(got);
	return (void *)(intptr_t)(pages > 0 ? (intptr_t)n : -1);
}

static void test_list_threads(void)
{
	pthread_t th[4];
	const char *prefixes[4] = {"flat/", "L/", "flat/", "L/"};
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, list_worker, (void *)(uintptr_t)prefixes[i]);
	int ok = 1;
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(th[i], &r);
		/* flat/ lost one key and gained one in test_list_flat. */
		ok &= (intptr_t)r == (i % 2 ? NLIST : NFLAT);
	}
	tap_ok(ok, "4 threads page through two large listings at once, each sees every key");
}

static void test_sweep_sync(void)
{
	mt_error err;
	char p[600];
	put_str("sw/a/obj", "keep", 0, &err);
	snprintf(p, sizeof p, "%s/sw/a/.tmp.obj.1.2.3", root);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs("old!", f);
		fclose(f);
	}
	struct utimbuf old = {1000000000, 1000000000};
	utime(p, &old);
	snprintf(p, sizeof p, "%s/sw/a/.tmp.young.1.2.3", root);
	if ((f = fopen(p, "w")))
		fclose(f);
	uint64_t n = 0, bytes = 0;
	TAP_CALL(store->ops->sweep(store, "sw/", 1500000000, 1, &n, &bytes, &err), &err,
		 "sweep, dry run");
	tap_ok(n == 1 && bytes == 4 && count_files("sw/a", ".tmp.") == 2,
	       "finds only the old temporary file, deletes nothing");
	TAP_CALL(store->ops->sweep(store, "sw/", 1500000000, 0, &n, &bytes, &err), &err, "sweep");
	tap_ok(count_files("sw/a", ".tmp.") == 1 && is_str("sw/a/obj", "keep"),
	       "removes it, keeps the young one and the objects");

	const char *keys[] = {"sw/a/obj", "L/a0", "L/b"};
	TAP_CALL(store->ops->sync(store, keys, 3, &err), &err, "sync of stored keys");
	const char *missing[] = {"sw/a/none"};
	int rc = store->ops->sync(store, missing, 1, &err);
	tap_ok(rc == MT_ENOTFOUND && strstr(err.message, "sw/a/none"),
	       "sync of a missing key names it: %s", err.message);
}

/* A backend whose errors do not name the key: the wrappers add it. */
static int mute_get(mt_store *s, const char *key, uint64_t offset, uint64_t len, void **data,
		    size_t *got, mt_error *err)
{
	return mti_err(err, MT_EIO, "disk on fire");
}

static void test_wrappers_name_key(void)
{
	mt_store_ops ops = *store->ops;
	const mt_store_ops *real = store->ops;
	ops.get = mute_get;
	store->ops = &ops;
	mt_error err;
	void *d;
	size_t got;
	int rc = mti_store_get(store, "some/key", 0, 1, &d, &got, &err);
	store->ops = real;
	tap_ok(rc == MT_EIO && strcmp(err.message, "some/key: disk on fire") == 0,
	       "the get wrapper names the key the backend left out: %s", err.message);
}

/* Scatter/gather: more entries than one preadv/pwritev takes, odd and
 * empty ones between, through the backend and through the wrappers'
 * fallback (a table without readv/putv). */
static void test_iov(void)
{
	enum { N = 3000 };
	static struct iovec iov[N];
	static unsigned char src[N * 7], dst[N * 7];
	size_t at = 0;
	for (size_t i = 0; i < N; i++) {
		size_t len = i % 5 == 3 ? 0 : 1 + i % 7;
		for (size_t j = 0; j < len; j++)
			src[at + j] = (unsigned char)(i * 31 + j);
		iov[i] = (struct iovec){src + at, len};
		at += len;
	}
	mt_error err = {0};
	mt_store_ops ops = *store->ops;
	const mt_store_ops *real = store->ops;
	for (int pass = 0; pass < 2; pass++) {
		const char *how = pass ? "through a copy" : "by the backend";
		TAP_CALL(mti_store_putv(store, "iov/obj", iov, N, 0, &err), &err, "putv %s", how);
		void *whole = NULL;
		size_t got = 0;
		int ok = !mti_store_get(store, "iov/obj", 0, UINT64_MAX, &whole, &got, &err) &&
			 got == at && !memcmp(whole, src, at);
		free(whole);
		tap_ok(ok, "putv %s wrote the %zu bytes of %d entries in order", how, at, N);
		for (size_t i = 0, off = 0; i < N; off += iov[i].iov_len, i++)
			iov[i].iov_base = dst + off;
		memset(dst, 0, sizeof dst);
		TAP_CALL(mti_store_readv(store, "iov/obj", 0, iov, N, &err), &err, "readv %s", how);
		tap_ok(!memcmp(dst, src, at), "readv %s scattered every byte back", how);
		struct iovec past = {dst, 2};
		tap_ok(mti_store_readv(store, "iov/obj", at - 1, &past, 1, &err) == MT_ERANGE &&
			       strstr(err.message, "iov/obj"),
		       "readv %s past the end is MT_ERANGE naming the key: %s", how, err.message);
		for (size_t i = 0, off = 0; i < N; off += iov[i].iov_len, i++)
			iov[i].iov_base = src + off;
		ops.readv = NULL;
		ops.putv = NULL;
		store->ops = &ops;
	}
	store->ops = real;
}

static void test_permission(void)
{
	if (geteuid() == 0) {
		tap_ok(1, "# SKIP permission errors cannot be provoked as root");
		return;
	}
	mt_error err;
	char p[600];
	put_str("perm/x", "x", 0, &err);
	snprintf(p, sizeof p, "%s/perm/x", root);
	chmod(p, 0);
	void *d = NULL;
	size_t got;
	int rc = mti_store_get(store, "perm/x", 0, UINT64_MAX, &d, &got, &err);
	tap_ok(rc == MT_EAUTH && strstr(err.message, "perm/x"), "unreadable object: %s",
	       err.message);
	chmod(p, 0644);
}

/* ---- threads ------------------------------------------------------------- */

#define THREADS 4
#define PER_THREAD 150

static void *put_worker(void *arg)
{
	long t = (long)arg;
	intptr_t failures = 0;
	for (int i = 0; i < PER_THREAD; i++) {
		char key[64], val[64];
		/* Shared and fresh directories, so mkdir races too. */
		snprintf(key, sizeof key, "thr/%s%d/t%ld-%d", i % 2 ? "shared" : "own", i % 7, t,
			 i);
		snprintf(val, sizeof val, "value %ld %d", t, i);
		mt_error err;
		if (put_str(key, val, i % 3 == 0 ? MT_PUT_EXCLUSIVE : 0, &err) != 0)
			failures++;
		if (!is_str(key, val))
			failures++;
	}
	return (void *)failures;
}

static void test_threads(void)
{
	pthread_t th[THREADS];
	for (long t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, put_worker, (void *)t);
	intptr_t failures = 0;
	for (int t = 0; t < THREADS; t++) {
		void *r;
		pthread_join(th[t], &r);
		failures += (intptr_t)r;
	}
	tap_ok(failures == 0, "4 threads put and read back 600 keys (%ld failures)",
	       (long)failures);
	struct collect c = {calloc(THREADS * PER_THREAD + 1, sizeof(char *)), 0, 0};
	mt_error err;
	mti_store_list_all(store, "thr/", collect, &c, &err);
	int all = c.n == THREADS * PER_THREAD;
	for (int t = 0; all && t < THREADS; t++)
		for (int i = 0; all && i < PER_THREAD; i++) {
			char val[64];
			snprintf(val, sizeof val, "value %d %d", t, i);
			char key[64];
			snprintf(key, sizeof key, "thr/%s%d/t%d-%d", i % 2 ? "shared" : "own",
				 i % 7, t, i);
			all = is_str(key, val);
		}
	tap_ok(all, "all %zu objects are listed with the right content", c.n);
	for (size_t i = 0; i < c.n; i++)
		free(c.keys[i]);
	free(c.keys);
}

int main(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(tmp, sizeof tmp, "%s/mt-store-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(tmp)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(root, sizeof root, "%s/store", tmp);
	mt_error err;
	if (mt_store_open(root, &store, &err)) {
		printf("Bail out! %s\n", err.message);
		return 1;
	}
	test_urls();
	test_default_store();
	test_open_without_create();
	test_roundtrip();
	test_prune();
	test_prune_race();
	test_ranges();
	test_exclusive();
	test_bad_keys();
	test_uploads();
	test_list();
	test_list_small_pages();
	test_list_flat();
	test_list_threads();
	test_sweep_sync();
	test_wrappers_name_key();
	test_iov();
	test_permission();
	test_threads();
	mt_store_close(store);
	mt_store_close(NULL);
	rm_tree(tmp);
	return tap_done();
}
