/* test-dataset.c — writer and reader of whole versions on a local store: layout, appends, damage, gc, threads. */
#include <dirent.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <utime.h>

#include "codec.h"
#include "dataset.h"
#include "lock.h"
#include "tap.h"
#include "tap-store.h"

static char root[256];
static mt_store *store;

/* Count chunk reads by wrapping the backend's read. */
static atomic_int reads;
static mt_store_ops counting_ops;
static const mt_store_ops *real_ops;
static int counting_read(mt_store *s, const char *key, uint64_t off, void *buf, size_t len,
			 mt_error *err)
{
	atomic_fetch_add(&reads, 1);
	return real_ops->read(s, key, off, buf, len, err);
}

/* Count whole-object gets (manifests are read so), and those of
 * format 2's fragments apart. */
static atomic_int gets, frag_gets;
static int counting_get(mt_store *s, const char *key, uint64_t off, uint64_t len, void **data,
			size_t *got, mt_error *err)
{
	atomic_fetch_add(&gets, 1);
	if (strstr(key, "/fragments/"))
		atomic_fetch_add(&frag_gets, 1);
	return real_ops->get(s, key, off, len, data, got, err);
}

static const mt_attr attrs2[] = {
	{"x", MT_FLOAT32, 1, {3}, 0},
	{"tok", MT_INT32, 0, {0}, 1},
};

/* Rows i: x = (i, i+.5, -i), tok = i%5 values i*10+k. */
static void make_rows(uint64_t first, uint64_t n, float **x, int32_t **tok, uint64_t **len)
{
	*x = malloc(n * 3 * sizeof **x);
	*len = malloc(n * sizeof **len);
	uint64_t items = 0;
	for (uint64_t i = 0; i < n; i++)
		items += (first + i) % 5;
	*tok = malloc((items ? items : 1) * sizeof **tok);
	uint64_t t = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t r = first + i;
		(*x)[i * 3] = (float)r;
		(*x)[i * 3 + 1] = (float)r + 0.5f;
		(*x)[i * 3 + 2] = -(float)r;
		(*len)[i] = r % 5;
		for (uint64_t k = 0; k < r % 5; k++)
			(*tok)[t++] = (int32_t)(r * 10 + k);
	}
}

static int write_version(const char *ds, uint64_t first, uint64_t n, mt_writer_opts *o,
			 char *ver, mt_error *err)
{
	mt_writer *w;
	int rc = mt_writer_open(store, ds, o && o->append ? NULL : attrs2, 2, o, &w, err);
	if (rc)
		return rc;
	float *x;
	int32_t *tok;
	uint64_t *len;
	make_rows(first, n, &x, &tok, &len);
	const void *data[2] = {x, tok};
	const uint64_t *lens[2] = {NULL, len};
	rc = mt_writer_append(w, n, data, lens, err);
	if (!rc)
		rc = mt_writer_commit(w, ver, 64, err);
	mt_writer_close(w);
	free(x);
	free(tok);
	free(len);
	return rc;
}

/* Compare rows [a, b) of both attributes with what make_rows wrote. */
static int rows_match(mt_reader *r, uint64_t a, uint64_t b, mt_error *err)
{
	float *x, *gx = malloc((b - a) * 12 + 1);
	int32_t *tok;
	uint64_t *len, total = 0;
	make_rows(a, b - a, &x, &tok, &len);
	uint64_t *glen = malloc((b - a) * 8 + 8);
	int ok = mt_reader_read(r, 0, a, b, gx, (b - a) * 12, err) == 0 &&
		 memcmp(gx, x, (b - a) * 12) == 0 &&
		 mt_reader_ragged_lengths(r, 1, a, b, glen, &total, err) == 0 &&
		 memcmp(glen, len, (b - a) * 8) == 0;
	int32_t *gtok = malloc(total * 4 + 4);
	ok = ok && mt_reader_read(r, 1, a, b, gtok, total * 4, err) == 0 &&
	     memcmp(gtok, tok, total * 4) == 0;
	free(x);
	free(gx);
	free(tok);
	free(gtok);
	free(len);
	free(glen);
	return ok;
}

static void test_basic(void)
{
	mt_error err = {0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 100;
	o.chunk_bytes = 12 * 10; /* 10 rows of x per chunk: exact boundaries */
	o.author = "tester";
	o.description = "basic";
	const char *tags[] = {"a", "b"};
	o.tags = tags;
	o.ntags = 2;
	char ver[64];
	TAP_CALL(write_version("basic", 0, 250, &o, ver, &err), &err, "write 250 rows in 100-row shards");
	tap_ok(strcmp(ver, "v1") == 0, "first automatic version is v1 (got %s)", ver);
	mt_reader *r;
	if (!TAP_CALL(mt_reader_open(store, "basic", NULL, &r, &err), &err, "open latest"))
		return;
	const mt_version_info *in = mt_reader_info(r);
	tap_ok(in->rows == 250 && in->nshards == 3, "250 rows in 3 shards (%llu, %llu)",
	       (unsigned long long)in->rows, (unsigned long long)in->nshards);
	tap_ok(strcmp(in->author, "tester") == 0 && in->ntags == 2 && strcmp(in->tags[1], "b") == 0,
	       "author and tags kept");
	tap_ok(rows_match(r, 0, 250, &err), "all rows read back bit-exact");
	tap_ok(rows_match(r, 95, 205, &err), "rows across two shard boundaries");
	tap_ok(rows_match(r, 100, 100, &err), "empty range reads nothing");
	tap_ok(rows_match(r, 249, 250, &err), "last row");
	float one[3];
	atomic_store(&reads, 0);
	int rc = mt_reader_read(r, 0, 137, 138, one, sizeof one, &err);
	tap_ok(rc == 0 && one[0] == 137.0f && atomic_load(&reads) == 1,
	       "one row reads exactly one chunk (%d reads)", atomic_load(&reads));
	atomic_store(&reads, 0);
	float ten[30];
	rc = mt_reader_read(r, 0, 110, 120, ten, sizeof ten, &err);
	tap_ok(rc == 0 && atomic_load(&reads) == 1, "an aligned 10-row chunk is one read");
	rc = mt_reader_read(r, 0, 240, 251, ten, sizeof ten, &err);
	tap_ok(rc == MT_ERANGE && strstr(err.message, "240:251"), "range past the end: %s",
	       err.message);
	rc = mt_reader_read(r, 0, 0, 10, ten, 8, &err);
	tap_ok(rc == MT_ERANGE, "too small a buffer is refused");
	mt_reader_close(r);

	TAP_CALL(write_version("basic", 0, 10, &o, ver, &err), &err, "second version");
	tap_ok(strcmp(ver, "v2") == 0, "next automatic version is v2");
	o.version = "v2";
	rc = write_version("basic", 0, 10, &o, ver, &err);
	tap_ok(rc == MT_EEXIST && strstr(err.message, "basic@v2"), "existing version refused: %s",
	       err.message);
	char **v;
	size_t n;
	rc = mt_store_versions(store, "basic", &v, &n, &err);
	tap_ok(rc == 0 && n == 2 && strcmp(v[0], "v1") == 0 && strcmp(v[1], "v2") == 0,
	       "versions listed oldest first");
	mt_strv_free(v, n);
}

/* Sources as lineage: this store's recorded as "", another's URL without
 * any user:password@; a source that is no version refused. */
static void test_sources(void)
{
	mt_error err = {0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	mt_source src[] = {
		{ "basic", "v1", mt_store_url(store) },
		{ "far", "v2", "http://user:secret@127.0.0.1:9/bucket" },
		{ "near", "v3", NULL },
	};
	o.sources = src;
	o.nsources = 3;
	char ver[64];
	mt_reader *r = NULL;
	if (!TAP_CALL(write_version("derived", 0, 5, &o, ver, &err), &err, "write with 3 sources") ||
	    !TAP_CALL(mt_reader_open(store, "derived", ver, &r, &err), &err, "open it"))
		return;
	const mt_source *a = mt_reader_source(r, 0), *b = mt_reader_source(r, 1);
	tap_ok(mt_reader_nsources(r) == 3 && !strcmp(a->dataset, "basic") && !strcmp(a->store, "") &&
	       !strcmp(mt_reader_source(r, 2)->store, "") && !mt_reader_source(r, 3),
	       "this store's sources are recorded as \"\"");
	tap_ok(!strcmp(b->store, "http://127.0.0.1:9/bucket") && !strstr(mt_reader_manifest(r), "secret"),
	       "another store's URL is kept without its credentials (%s)", b->store);
	mt_reader_close(r);
	src[1].version = "../x";
	tap_ok(write_version("derived", 0, 5, &o, ver, &err) == MT_EINVAL &&
	       strstr(err.message, "source 1"), "a source that is no version is refused: %s",
	       err.message);
}

static void test_append_and_zero(void)
{
	mt_error err = {0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 64;
	char ver[64];
	TAP_CALL(write_version("app", 0, 100, &o, ver, &err), &err, "base version");
	o.append = 1;
	TAP_CALL(write_version("app", 100, 50, &o, ver, &err), &err, "appended version");
	mt_reader *a, *b;
	mt_reader_open(store, "app", "v1", &a, &err);
	if (!TAP_CALL(mt_reader_open(store, "app", "v2", &b, &err), &err, "open appended"))
		return;
	mt_shard_info s0, t0;
	mt_reader_shard(a, 0, &s0);
	mt_reader_shard(b, 0, &t0);
	tap_ok(mt_reader_info(b)->rows == 150 && strcmp(mt_reader_info(b)->parent, "v1") == 0,
	       "appended version has 150 rows and parent v1");
	tap_ok(strcmp(s0.sha256, t0.sha256) == 0 && mt_reader_info(b)->nshards == 3,
	       "parent shards are reused, not rewritten");
	tap_ok(rows_match(b, 0, 150, &err), "appended rows continue the parent's");
	mt_reader_close(a);
	mt_reader_close(b);

	mt_writer *w;
	TAP_CALL(mt_writer_open(store, "empty", attrs2, 2, NULL, &w, &err), &err, "open for 0 rows");
	int rc = mt_writer_commit(w, ver, sizeof ver, &err);
	mt_writer_close(w);
	mt_reader *r;
	tap_ok(rc == 0 && mt_reader_open(store, "empty", NULL, &r, &err) == 0 &&
	       mt_reader_info(r)->rows == 0 && mt_reader_info(r)->nshards == 0,
	       "a 0-row version commits and opens");
	if (rc == 0)
		mt_reader_close(r);
	rc = write_version("one", 0, 1, NULL, ver, &err);
	tap_ok(rc == 0 && mt_reader_open(store, "one", NULL, &r, &err) == 0 &&
	       rows_match(r, 0, 1, &err), "a 1-row version round-trips");
	if (rc == 0)
		mt_reader_close(r);
}

/* Writer w (opened as an append) appends rows [first, first + n) and
 * commits into ver. */
static int append_rows(mt_writer *w, uint64_t first, uint64_t n, char *ver, mt_error *err)
{
	float *x;
	int32_t *tok;
	uint64_t *len;
	make_rows(first, n, &x, &tok, &len);
	const void *data[2] = {x, tok};
	const uint64_t *lens[2] = {NULL, len};
	int rc = mt_writer_append(w, n, data, lens, err);
	if (!rc)
		rc = mt_writer_commit(w, ver, 64, err);
	free(x);
	free(tok);
	free(len);
	return rc;
}

/* An append to a format-2 version reads its root and its last fragment
 * only, and names the others again; so does one rebased onto a version
 * committed while it ran. */
static void test_append_frags(void)
{
	mt_error err = {0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 1;
	char ver[64];
	setenv("MATORAGE_FRAGMENT_SHARDS", "4", 1);
	/* 30 one-row shards: 7 full fragments of 4 and one of 2. */
	TAP_CALL(write_version("frag", 0, 30, &o, ver, &err), &err, "a format-2 version of 30 shards");
	o.append = 1;
	atomic_store(&frag_gets, 0);
	TAP_CALL(write_version("frag", 30, 1, &o, ver, &err), &err, "append one row");
	tap_ok(atomic_load(&frag_gets) == 1, "the append read one fragment, the last (read %d)",
	       atomic_load(&frag_gets));
	mt_manifest *a = NULL, *b = NULL;
	int rc = mti_dataset_load(store, "frag", "v1", &a, NULL, &err);
	if (!rc)
		rc = mti_dataset_load(store, "frag", "v2", &b, NULL, &err);
	int same = !rc && a->nfrags == 8 && b->nfrags == 8 && b->nshards == 31;
	for (size_t i = 0; same && i < 7; i++)
		same = !strcmp(a->frags[i].sha256, b->frags[i].sha256) &&
		       b->frags[i].first_shard == 4 * i;
	tap_ok(same && b->frags[7].nshards == 3 && strcmp(a->frags[7].sha256, b->frags[7].sha256),
	       "v2 names v1's 7 full fragments, then one of 3 shards");
	mti_manifest_free(a);
	mti_manifest_free(b);

	/* Two appends to v2: the one committed last continues the other's. */
	mt_writer *w1, *w2;
	TAP_CALL(mt_writer_open(store, "frag", NULL, 0, &o, &w1, &err), &err, "an append opened");
	TAP_CALL(mt_writer_open(store, "frag", NULL, 0, &o, &w2, &err), &err, "another one");
	TAP_CALL(append_rows(w2, 31, 2, ver, &err), &err, "the second commits first");
	atomic_store(&frag_gets, 0);
	TAP_CALL(append_rows(w1, 33, 3, ver, &err), &err, "the first commits, rebased");
	tap_ok(atomic_load(&frag_gets) == 1, "the rebase read one fragment (read %d)",
	       atomic_load(&frag_gets));
	mt_writer_close(w1);
	mt_writer_close(w2);
	mt_reader *r;
	rc = mt_reader_open(store, "frag", NULL, &r, &err);
	tap_ok(!rc && mt_reader_info(r)->rows == 36 && mt_reader_info(r)->nshards == 36 &&
	       !strcmp(mt_reader_info(r)->parent, "v3") && rows_match(r, 0, 36, &err),
	       "the latest holds all 36 rows in order (%s)", rc ? err.message : "ok");
	if (!rc)
		mt_reader_close(r);
	unsetenv("MATORAGE_FRAGMENT_SHARDS");
}

static void flip_byte(const char *key, uint64_t off)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", root, key);
	FILE *f = fopen(path, "r+b");
	fseek(f, (long)off, SEEK_SET);
	int c = fgetc(f);
	fseek(f, (long)off, SEEK_SET);
	fputc(c ^ 0x40, f);
	fclose(f);
}

struct vres {
	int bad;
	char msg[512];
};
static void on_verify(void *ud, size_t i, const mt_shard_info *in, int code, const char *msg)
{
	struct vres *v = ud;
	if (code) {
		v->bad++;
		snprintf(v->msg, sizeof v->msg, "%s", msg);
	}
}

static void test_damage(void)
{
	mt_error err = {0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 100;
	o.chunk_bytes = 120;
	char ver[64];
	write_version("dmg", 0, 200, &o, ver, &err);
	mt_reader *r;
	if (!TAP_CALL(mt_reader_open(store, "dmg", NULL, &r, &err), &err, "open for damage"))
		return;
	struct vres v = {0};
	TAP_CALL(mt_reader_verify(r, on_verify, &v, NULL, NULL, &err), &err, "fresh version verifies");
	mt_shard_info si;
	mt_reader_shard(r, 1, &si);
	const mt_index *ix;
	mt_error e2;
	/* Flip a byte inside chunk 2 of x in shard 1 (rows 120..129). */
	void *idx;
	size_t got;
	mt_manifest *m;
	mti_dataset_load(store, "dmg", NULL, &m, NULL, &e2);
	mti_store_get(store, si.key, m->shards[1].index_offset, m->shards[1].index_bytes, &idx, &got,
		     &e2);
	mt_index *dec;
	mti_index_decode(idx, got, si.bytes, si.key, &dec, &e2);
	ix = dec;
	const mt_index_entry *ex = mti_index_find(ix, "x");
	flip_byte(si.key, ex->chunks[2].offset + ex->chunks[2].size / 2);
	mti_index_free(dec);
	free(idx);
	mti_manifest_free(m);
	char sha[65];
	snprintf(sha, sizeof sha, "%s", si.sha256);
	mt_reader_close(r);

	mt_reader_open(store, "dmg", NULL, &r, &err);
	float buf[300];
	int rc = mt_reader_read(r, 0, 115, 125, buf, sizeof buf, &err);
	tap_ok(rc == MT_ECORRUPT && strstr(err.message, sha) && strstr(err.message, "120..129"),
	       "damaged chunk refused, naming shard and rows: %s", err.message);
	tap_ok(rows_match(r, 130, 200, &err), "rows in sound chunks still read");
	memset(&v, 0, sizeof v);
	rc = mt_reader_verify(r, on_verify, &v, NULL, NULL, &err);
	tap_ok(rc == MT_ECORRUPT && v.bad == 1 && strstr(v.msg, "sha256") && strstr(v.msg, "x chunk 2"),
	       "verify reports the one damaged shard: %s", v.msg);
	mt_reader_close(r);

	/* A missing shard object. */
	char path[512];
	mt_reader_open(store, "dmg", NULL, &r, &err);
	mt_reader_shard(r, 0, &si);
	snprintf(path, sizeof path, "%s/%s", root, si.key);
	unlink(path);
	rc = mt_reader_read(r, 0, 0, 10, buf, sizeof buf, &err);
	tap_ok(rc == MT_ENOTFOUND && strstr(err.message, si.key), "missing shard named: %s",
	       err.message);
	mt_reader_close(r);

	/* A corrupt manifest. */
	snprintf(path, sizeof path, "%s/datasets/dmg/versions/v1.json", root);
	FILE *f = fopen(path, "w");
	fputs("{\"format\": 1, \"dataset\": ", f);
	fclose(f);
	rc = mt_reader_open(store, "dmg", "v1", &r, &err);
	tap_ok(rc == MT_EFORMAT && strstr(err.message, "datasets/dmg/versions/v1.json"),
	       "corrupt manifest named: %s", err.message);
	rc = mt_store_gc(store, "dmg", 1, 0, NULL, NULL, NULL, NULL, &err);
	tap_ok(rc != 0 && strstr(err.message, "gc refused"), "gc refuses with an unreadable manifest");
}

static int gc_count;
static void on_gc(void *ud, const char *key, uint64_t bytes)
{
	gc_count++;
}

static void test_gc_abort_cancel(void)
{
	mt_error err = {0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 10;
	char ver[64];
	write_version("gc", 0, 30, &o, ver, &err);
	/* An aborted writer leaves uploaded shards but no version. */
	mt_writer *w;
	mt_writer_open(store, "gc", attrs2, 2, &o, &w, &err);
	float *x;
	int32_t *tok;
	uint64_t *len;
	make_rows(1000, 50, &x, &tok, &len);
	const void *data[2] = {x, tok};
	const uint64_t *lens[2] = {NULL, len};
	mt_writer_append(w, 50, data, lens, &err);
	mt_writer_abort(w);
	int rc = mt_writer_commit(w, ver, sizeof ver, &err);
	tap_ok(rc == MT_ESTATE, "commit after abort fails");
	mt_writer_close(w);
	char **v;
	size_t n;
	mt_store_versions(store, "gc", &v, &n, &err);
	tap_ok(n == 1, "aborted version is not visible");
	mt_strv_free(v, n);
	uint64_t nobj = 0, nbytes = 0;
	rc = mt_store_gc(store, "gc", 1, 3600, on_gc, NULL, &nobj, &nbytes, &err);
	tap_ok(rc == 0 && nobj == 0, "young orphans are kept by the grace period");
	rc = mt_store_gc(store, "gc", 1, 0, on_gc, NULL, &nobj, &nbytes, &err);
	uint64_t dry = nobj;
	tap_ok(rc == 0 && nobj >= 1 && gc_count == (int)nobj, "dry run finds %llu orphans",
	       (unsigned long long)nobj);
	rc = mt_store_gc(store, "gc", 0, 0, NULL, NULL, &nobj, &nbytes, &err);
	tap_ok(rc == 0 && nobj == dry, "gc deletes them");
	rc = mt_store_gc(store, "gc", 1, 0, NULL, NULL, &nobj, &nbytes, &err);
	mt_reader *r;
	tap_ok(rc == 0 && nobj == 0 && mt_reader_open(store, "gc", NULL, &r, &err) == 0 &&
	       rows_match(r, 0, 30, &err), "nothing left to collect; the version still reads");
	mt_reader_close(r);
	TAP_CALL(mt_store_delete_version(store, "gc", "v1", &err), &err, "delete a version");
	rc = mt_store_gc(store, "gc", 0, 0, NULL, NULL, &nobj, &nbytes, &err);
	tap_ok(rc == 0 && nobj == 3, "its 3 shards become garbage");
	rc = mt_store_delete_version(store, "gc", "v1", &err);
	tap_ok(rc == MT_ENOTFOUND, "deleting it again: %s", err.message);
	free(x);
	free(tok);
	free(len);

	/* A crashed writer's half-written temporary file is swept by gc once
	 * it is older than the grace period, and never listed as an object.
	 * (The gc above emptied shards/, and a file store removes a directory
	 * a delete empties: the writer had made it again.) */
	char tmp[512];
	snprintf(tmp, sizeof tmp, "%s/datasets/gc/shards", root);
	mkdir(tmp, 0777);
	snprintf(tmp, sizeof tmp, "%s/datasets/gc/shards/.tmp.abc.h5.1234.0", root);
	FILE *f = fopen(tmp, "w");
	tap_ok(f != NULL, "a crashed writer's temporary file %s", tmp);
	if (f) {
		fputs("partial", f);
		fclose(f);
	}
	rc = mt_store_gc(store, "gc", 1, 3600, NULL, NULL, &nobj, &nbytes, &err);
	tap_ok(rc == 0 && nobj == 0 && access(tmp, F_OK) == 0, "a young temporary file is kept");
	struct utimbuf old = {time(NULL) - 7200, time(NULL) - 7200};
	utime(tmp, &old);
	rc = mt_store_gc(store, "gc", 1, 3600, NULL, NULL, &nobj, &nbytes, &err);
	tap_ok(rc == 0 && nobj == 1 && nbytes == 7 && access(tmp, F_OK) == 0,
	       "an old one is counted by the dry run");
	rc = mt_store_gc(store, "gc", 0, 3600, NULL, NULL, &nobj, &nbytes, &err);
	tap_ok(rc == 0 && nobj == 1 && access(tmp, F_OK) != 0, "and removed by gc");
	/* With no grace, one under a minute old stays: it may be a writer's
	 * lock being put in place, which no pin names yet. */
	f = fopen(tmp, "w");
	if (f) {
		fputs("lock", f);
		fclose(f);
	}
	struct utimbuf recent = {time(NULL) - 30, time(NULL) - 30};
	utime(tmp, &recent);
	rc = mt_store_gc(store, "gc", 0, 0, NULL, NULL, &nobj, &nbytes, &err);
	tap_ok(rc == 0 && nobj == 0 && access(tmp, F_OK) == 0,
	       "--grace 0 keeps a temporary file under a minute old");
	struct utimbuf older = {time(NULL) - 90, time(NULL) - 90};
	utime(tmp, &older);
	rc = mt_store_gc(store, "gc", 0, 0, NULL, NULL, &nobj, &nbytes, &err);
	tap_ok(rc == 0 && nobj == 1 && access(tmp, F_OK) != 0, "and sweeps it past the minute");
}

static int cancel_after_first(void *ud, uint64_t done, uint64_t total)
{
	return 1;
}

static void test_cancel(void)
{
	mt_error err = {0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 10;
	o.progress = cancel_after_first;
	char ver[64];
	int rc = write_version("cancel", 0, 100, &o, ver, &err);
	mt_reader *r;
	tap_ok(rc == MT_ECANCELED && mt_reader_open(store, "cancel", NULL, &r, &err) == MT_ENOTFOUND,
	       "progress callback cancels; nothing committed");
}

struct thr {
	mt_writer *w;
	int id;
};

static void *append_thread(void *arg)
{
	struct thr *t = arg;
	for (int b = 0; b < 20; b++) {
		float x[25 * 3];
		int32_t tok[25 * 4];
		uint64_t len[25];
		for (int i = 0; i < 25; i++) {
			x[i * 3] = (float)t->id;
			x[i * 3 + 1] = (float)b;
			x[i * 3 + 2] = (float)i;
			len[i] = 1;
			tok[i] = t->id * 1000 + b;
		}
		const void *data[2] = {x, tok};
		const uint64_t *lens[2] = {NULL, len};
		mt_error err;
		if (mt_writer_append(t->w, 25, data, lens, &err))
			return (void *)1;
	}
	return NULL;
}

static void test_threads(void)
{
	mt_error err = {0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 70;
	mt_writer *w;
	mt_writer_open(store, "thr", attrs2, 2, &o, &w, &err);
	pthread_t tid[4];
	struct thr t[4];
	for (int i = 0; i < 4; i++) {
		t[i] = (struct thr){w, i};
		pthread_create(&tid[i], NULL, append_thread, &t[i]);
	}
	int failed = 0;
	for (int i = 0; i < 4; i++) {
		void *res;
		pthread_join(tid[i], &res);
		failed |= res != NULL;
	}
	char ver[64];
	int rc = mt_writer_commit(w, ver, sizeof ver, &err);
	mt_writer_close(w);
	tap_ok(!failed && rc == 0, "4 threads append 20 batches each");
	mt_reader *r;
	mt_reader_open(store, "thr", NULL, &r, &err);
	float *x = malloc(2000 * 12);
	int32_t *tok = malloc(2000 * 4);
	rc = mt_reader_read(r, 0, 0, 2000, x, 2000 * 12, &err);
	rc |= mt_reader_read(r, 1, 0, 2000, tok, 2000 * 4, &err);
	int seen[4][20] = {{0}}, whole = rc == 0;
	if (rc)
		tap_diag("read: %s", err.message);
	for (int i = 0; whole && i < 2000; i += 25) {
		int id = (int)x[i * 3], b = (int)x[i * 3 + 1];
		seen[id][b]++;
		for (int k = 0; k < 25; k++)
			whole &= (int)x[(i + k) * 3] == id && (int)x[(i + k) * 3 + 1] == b &&
				 (int)x[(i + k) * 3 + 2] == k && tok[i + k] == id * 1000 + b;
		if (!whole)
			tap_diag("row %d: id %d batch %d", i, id, b);
	}
	for (int i = 0; i < 4; i++)
		for (int b = 0; b < 20; b++)
			whole &= seen[i][b] == 1;
	tap_ok(mt_reader_info(r)->rows == 2000 && whole,
	       "every batch appears once, its rows together and in order");
	free(x);
	free(tok);
	mt_reader_close(r);
}

/* HDF5 itself (through the registered filter) sees what was written, and
 * identical rows make identical shard bytes. */
static void test_hdf5_view(void)
{
	mt_error err = {0};
	char v1[64], v2[64];
	write_version("h5a", 0, 40, NULL, v1, &err);
	write_version("h5a", 0, 40, NULL, v2, &err);
	mt_reader *a, *b;
	mt_reader_open(store, "h5a", v1, &a, &err);
	mt_reader_open(store, "h5a", v2, &b, &err);
	mt_shard_info sa, sb;
	mt_reader_shard(a, 0, &sa);
	mt_reader_shard(b, 0, &sb);
	tap_ok(strcmp(sa.sha256, sb.sha256) == 0, "same rows give byte-identical shards");
	char path[512];
	snprintf(path, sizeof path, "%s/%s", root, sa.key);
	mti_zstd_filter_register(&err);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t d = H5Dopen2(f, "x", H5P_DEFAULT);
	float got[120], *want;
	int32_t *tok;
	uint64_t *len;
	make_rows(0, 40, &want, &tok, &len);
	herr_t hr = H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got);
	tap_ok(f >= 0 && hr >= 0 && memcmp(got, want, sizeof got) == 0,
	       "HDF5 reads the shard's x through filter 32015");
	hid_t o = H5Dopen2(f, "tok/offsets", H5P_DEFAULT);
	int64_t offs[41];
	hr = H5Dread(o, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, offs);
	tap_ok(hr >= 0 && offs[0] == 0 && offs[40] == 80 && offs[2] - offs[1] == 1,
	       "ragged offsets readable by HDF5");
	H5Dclose(o);
	H5Dclose(d);
	H5Fclose(f);
	free(want);
	free(tok);
	free(len);
	mt_reader_close(a);
	mt_reader_close(b);
}

/* The order markers under versions/ of dataset ds: how many, and the name
 * of the one of version v (NULL: none). */
static int count_marks(const char *ds, const char *v, char *found, size_t cap)
{
	char dir[400];
	snprintf(dir, sizeof dir, "%s/datasets/%s/versions", root, ds);
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *at = strstr(e->d_name, ".at.");
		if (!at || strlen(at) != 4 + 19)
			continue;
		n++;
		if (v && (size_t)(at - e->d_name) == strlen(v) && !strncmp(e->d_name, v, strlen(v)))
			snprintf(found, cap, "%s/%s", dir, e->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

static int versions_are(const char *ds, const char *want)
{
	char **v, got[256] = "";
	size_t n;
	mt_error err = {0};
	if (mt_store_versions(store, ds, &v, &n, &err))
		return 0;
	for (size_t i = 0; i < n; i++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", v[i]);
	mt_strv_free(v, n);
	if (strcmp(got, want))
		tap_diag("versions: %s, want %s", got, want);
	return !strcmp(got, want);
}

/* Order markers: versions are ordered from one listing; the newest is
 * checked against its manifest; a missing, stray or lying marker changes
 * nothing that readers see (doc/FORMAT.md, "Order markers"). */
static void test_markers(void)
{
	mt_error err = {0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	char ver[64], mark[600] = "", moved[700];
	int rc = 0;
	for (int i = 0; i < 5 && !rc; i++) {
		o.append = i > 0;
		rc = write_version("ord", (uint64_t)i * 3, 3, &o, ver, &err);
	}
	TAP_CALL(rc, &err, "five versions committed");
	tap_ok(count_marks("ord", NULL, NULL, 0) == 5, "each has its order marker");
	atomic_store(&gets, 0);
	tap_ok(versions_are("ord", "v1 v2 v3 v4 v5"), "versions in order");
	tap_ok(atomic_load(&gets) == 1, "from the listing and one read, the newest's (%d reads)",
	       atomic_load(&gets));

	count_marks("ord", "v3", mark, sizeof mark);
	tap_ok(mark[0] && unlink(mark) == 0, "v3's marker removed");
	atomic_store(&gets, 0);
	tap_ok(versions_are("ord", "v1 v2 v3 v4 v5"), "a version without a marker still in order");
	tap_ok(atomic_load(&gets) == 2, "its manifest was read for it (%d reads)", atomic_load(&gets));

	/* A lie: v1's marker claims the future.  latest is still v5. */
	count_marks("ord", "v1", mark, sizeof mark);
	snprintf(moved, sizeof moved, "%.*s20991231T235959999Z", (int)(strlen(mark) - 19), mark);
	tap_ok(rename(mark, moved) == 0, "v1's marker now says 2099");
	mt_manifest *m = NULL;
	rc = mti_dataset_load(store, "ord", NULL, &m, NULL, &err);
	tap_ok(!rc && !strcmp(m->version, "v5"), "latest is still v5: the newest's marker is "
	       "checked against its manifest (%s)", rc ? err.message : m->version);
	mti_manifest_free(m);
	tap_ok(versions_are("ord", "v1 v2 v3 v4 v5"), "and the order comes from the manifests");
	tap_ok(rename(moved, mark) == 0, "v1's marker back");

	/* A marker of no manifest: a writer killed between the two writes. */
	snprintf(moved, sizeof moved, "%s/datasets/ord/versions/v6.at.20991231T235959999Z", root);
	FILE *f = fopen(moved, "w");
	tap_ok(f && fclose(f) == 0, "a marker of no version (v6, 2099)");
	tap_ok(versions_are("ord", "v1 v2 v3 v4 v5"), "is ignored");
	o.append = 1;
	TAP_CALL(write_version("ord", 15, 3, &o, ver, &err), &err, "an append commits");
	tap_ok(!strcmp(ver, "v6"), "as v6 (%s), the name no manifest had", ver);
	tap_ok(count_marks("ord", "v6", NULL, 0) == 6, "v6 has two markers now (the stray one)");
	tap_ok(versions_are("ord", "v1 v2 v3 v4 v5 v6"), "two markers: v6's manifest decides");
	TAP_CALL(mt_store_delete_version(store, "ord", "v6", &err), &err, "rm v6");
	tap_ok(count_marks("ord", "v6", NULL, 0) == 4, "rm took v6's markers (v3's is gone too)");

	snprintf(moved, sizeof moved, "%s/datasets/ord/versions/v9.at.20261124T000000000Z", root);
	f = fopen(moved, "w");
	if (f)
		fclose(f);
	rc = mt_store_gc(store, "ord", 0, 0, NULL, NULL, NULL, NULL, &err);
	TAP_CALL(rc, &err, "gc");
	tap_ok(access(moved, F_OK) != 0, "gc deleted the marker of no version");
	tap_ok(count_marks("ord", NULL, NULL, 0) == 4, "and kept the markers of v1, v2, v4, v5");
	tap_ok(versions_are("ord", "v1 v2 v3 v4 v5"), "versions after rm and gc");
}

/* Pin objects a writer holds under datasets/<dataset>/locks/. */
static size_t count_pins(const char *dataset)
{
	char dir[400];
	snprintf(dir, sizeof dir, "%s/datasets/%s/locks", root, dataset);
	DIR *d = opendir(dir);
	size_t n = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		n += len > 4 && !strcmp(e->d_name + len - 4, ".pin");
	}
	if (d)
		closedir(d);
	return n;
}

/* 1 when what a gc reads of the locks pins keys[0..n). */
static int pins_cover(const mt_dlock *self, char **keys, int n)
{
	mt_pins p;
	mt_error err = {0};
	if (mti_dlock_pins(store, "pins", self, &p, &err))
		return 0;
	int all = 1;
	for (int j = 0; j < n; j++)
		all &= mti_pins_has_key(&p, keys[j]);
	mti_pins_free(&p);
	return all;
}

struct gc_wait {
	mt_dlock *l;
	atomic_int done;
	int rc;
};

static void *wait_for_gc(void *arg)
{
	struct gc_wait *g = arg;
	mt_error err = {0};
	g->rc = mti_dlock_wait_gc(g->l, &err);
	atomic_store(&g->done, 1);
	return NULL;
}

/* A writer pins each of its objects before it looks for it.  Its older pin
 * objects are folded into newer ones, so it holds few at once whatever it
 * wrote; yet what a gc reads always covers every key, and an object folded
 * away is not deleted while a gc is live (that gc may have listed it and
 * not its replacement). */
static void test_pins(void)
{
	enum { N = 5000, MORE = 8 };
	mt_error err = {0};
	mt_dlock *w = NULL, *gc = NULL;
	TAP_CALL(mti_dlock_open(store, "pins", MT_LOCK_WRITE, &w, &err), &err, "a writer lock");
	char **keys = calloc(N + MORE, sizeof *keys);
	int rc = keys ? 0 : MT_ENOMEM, covered = 1;
	size_t most = 0;
	for (int i = 0; i < N + MORE && !rc; i++)
		if (!(keys[i] = mti_asprintf("datasets/pins/shards/%064d.h5", i)))
			rc = MT_ENOMEM;
	for (int i = 0; i < N && !rc; i++) {
		rc = mti_dlock_pin_keys(w, (const char *const *)&keys[i], 1, &err);
		if (!rc)
			rc = mti_dlock_wait_gc(w, &err);
		size_t n = count_pins("pins");
		most = n > most ? n : most;
		if (!rc && (i % 499 == 0 || i == N - 1))
			covered &= pins_cover(NULL, keys, i + 1);
	}
	tap_ok(!rc, "%d objects pinned one by one (%s)", N, rc ? err.message : "ok");
	tap_ok(covered, "what a gc reads covers every key pinned so far (checked 12 times)");
	tap_ok(most <= 32, "the writer held at most %zu pin objects at once", most);

	TAP_CALL(mti_dlock_open(store, "pins", MT_LOCK_GC, &gc, &err), &err, "a gc lock");
	size_t before = count_pins("pins");
	for (int i = N; i < N + MORE && !rc; i++)
		rc = mti_dlock_pin_keys(w, (const char *const *)&keys[i], 1, &err);
	struct gc_wait g = {.l = w};
	pthread_t t;
	int started = !rc && pthread_create(&t, NULL, wait_for_gc, &g) == 0;
	usleep(400000);
	tap_ok(started && !atomic_load(&g.done), "the writer waits while the gc is live");
	tap_ok(count_pins("pins") == before + MORE,
	       "no pin object was deleted while the gc is live (%zu, %zu before %d more pins)",
	       count_pins("pins"), before, MORE);
	tap_ok(pins_cover(gc, keys, N + MORE), "that gc sees every key");
	mti_dlock_close(gc);
	if (started)
		pthread_join(t, NULL);
	tap_ok(started && g.rc == 0, "the writer goes on once the gc is gone");
	tap_ok(count_pins("pins") < before + MORE, "and then deletes the pin objects folded away");
	tap_ok(pins_cover(NULL, keys, N + MORE), "still covering every key");
	mti_dlock_close(w);
	tap_ok(count_pins("pins") == 0, "released: no pin object is left");
	for (int i = 0; keys && i < N + MORE; i++)
		free(keys[i]);
	free(keys);
}

int main(void)
{
	if (tap_scratch_store("dataset", root, sizeof root, &store))
		return 1;
	real_ops = store->ops;
	counting_ops = *real_ops;
	counting_ops.read = counting_read;
	counting_ops.get = counting_get;
	store->ops = &counting_ops;
	test_basic();
	test_sources();
	test_append_and_zero();
	test_append_frags();
	test_damage();
	test_gc_abort_cancel();
	test_cancel();
	test_threads();
	test_hdf5_view();
	test_markers();
	test_pins();
	store->ops = real_ops;
	mt_store_close(store);
	tap_rm_tree(root);
	return tap_done();
}
