/* test-ckpt.c — model checkpoints on a local store: round trip, dedup of unchanged tensors, bad inputs, keep, gc with pins, verify, copy. */
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "format.h"
#include "lock.h"
#include "tap.h"
#include "tap-store.h"

static char root[256];
static mt_store *store;

/* Bytes of every file under dir (what the store holds). */
static long long dir_bytes(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "du -sb --apparent-size '%s' | cut -f1", dir);
	FILE *p = popen(cmd, "r");
	long long n = -1;
	if (p && fscanf(p, "%lld", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

static int count_files(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null | wc -l", dir);
	FILE *p = popen(cmd, "r");
	int n = -1;
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

/* A deterministic float buffer; `salt` changes every value. */
static float *make_floats(size_t n, unsigned salt)
{
	float *v = malloc(n * sizeof *v);
	uint64_t x = 0x9e3779b97f4a7c15ull ^ salt;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		v[i] = (float)(x % 100000) / 1000.0f;
	}
	return v;
}

static int save(const char *name, float *big, size_t nbig, int64_t step, const mt_ckpt_opts *o,
		char **version)
{
	mt_error err = {0};
	mt_ckpt_writer *w = NULL;
	uint64_t shape[2] = {nbig / 100, 100}, bshape[1] = {4};
	int64_t bias[4] = {1, 2, 3, step};
	char meta[128], state[160];
	snprintf(meta, sizeof meta, "{\"step\":%lld,\"metrics\":{\"loss\":0.5},\"tags\":[\"t\"]}",
		 (long long)step);
	snprintf(state, sizeof state, "{\"optimizer\":{\"groups\":[{\"lr\":0.1,\"params\":"
		 "[\"w\",\"b\"]}]},\"rng\":\"%lld\"}", (long long)step * 7);
	int rc = mt_ckpt_writer_open(store, name, o, &w, &err);
	if (!rc)
		rc = mt_ckpt_add(w, "w", MT_FLOAT32, 2, shape, big, nbig * sizeof *big, &err);
	if (!rc)
		rc = mt_ckpt_add(w, "b", MT_INT64, 1, bshape, bias, sizeof bias, &err);
	if (!rc)
		rc = mt_ckpt_set_meta(w, meta, &err);
	if (!rc)
		rc = mt_ckpt_set_state(w, state, &err);
	if (!rc)
		rc = mt_ckpt_commit(w, version, &err);
	if (rc)
		tap_diag("save: %s", err.message);
	mt_ckpt_writer_close(w);
	return rc;
}

static void test_roundtrip_and_dedup(void)
{
	size_t n = 100000;
	float *big = make_floats(n, 1);
	char *v1 = NULL, *v2 = NULL, dir[400];
	tap_ok(save("net", big, n, 10, NULL, &v1) == 0 && v1 && !strcmp(v1, "v1"),
	       "first checkpoint commits as v1");
	snprintf(dir, sizeof dir, "%s/models/net/tensors", root);
	long long before = dir_bytes(dir);
	tap_ok(count_files(dir) == 2, "two tensor objects stored");
	/* Only the small tensor changes (its step): the big one is not stored again. */
	tap_ok(save("net", big, n, 20, NULL, &v2) == 0 && v2 && !strcmp(v2, "v2"),
	       "second checkpoint commits as v2");
	long long after = dir_bytes(dir);
	tap_ok(count_files(dir) == 3 && after - before < 200,
	       "second checkpoint added one small object (%lld bytes)", after - before);

	mt_ckpt *c = NULL;
	mt_error err = {0};
	TAP_CALL(mt_ckpt_open(store, "net", &c, &err), &err, "open the newest");
	tap_ok(c && !strcmp(mt_ckpt_version(c), "v2") && !strcmp(mt_ckpt_parent(c), "v1"),
	       "newest is v2, child of v1");
	mt_ckpt_tensor_info t;
	tap_ok(c && mt_ckpt_ntensors(c) == 2 && !mt_ckpt_tensor(c, 0, &t, NULL) &&
		       !strcmp(t.key, "w") && t.ndim == 2 && t.shape[0] == n / 100 &&
		       t.dtype == MT_FLOAT32 && t.bytes == n * 4,
	       "tensor info in the order added");
	float *back = malloc(n * sizeof *back);
	TAP_CALL(mt_ckpt_read(c, "w", back, n * sizeof *back, &err), &err, "read w");
	tap_ok(!memcmp(back, big, n * sizeof *back), "w reads back exactly");
	int64_t b[4] = {0};
	TAP_CALL(mt_ckpt_read(c, "b", b, sizeof b, &err), &err, "read b");
	tap_ok(b[3] == 20, "b holds the second step");
	tap_ok(mt_ckpt_read(c, "b", b, 8, &err) == MT_ERANGE, "a short buffer is MT_ERANGE");
	tap_ok(mt_ckpt_read(c, "nope", b, sizeof b, &err) == MT_ENOTFOUND, "unknown key");
	tap_ok(strstr(mt_ckpt_state(c), "\"rng\":\"140\"") != NULL, "state round-trips");
	tap_ok(strstr(mt_ckpt_meta(c), "\"step\":20") != NULL, "meta round-trips");
	mt_ckpt_close(c);
	c = NULL;
	TAP_CALL(mt_ckpt_open(store, "net@v1", &c, &err), &err, "open net@v1");
	tap_ok(c && strstr(mt_ckpt_meta(c), "\"step\":10"), "v1 keeps its own meta");
	mt_ckpt_close(c);
	char **names = NULL;
	size_t nn = 0;
	TAP_CALL(mt_models_list(store, &names, &nn, &err), &err, "list models");
	tap_ok(nn == 1 && !strcmp(names[0], "net"), "one model listed");
	mt_strv_free(names, nn);
	free(back);
	free(big);
	free(v1);
	free(v2);
}

/* A tensor of random bits is stored in raw zstd blocks (a few bytes over its
 * size), one of zeros compressed; both read back exactly, and the zstd
 * command decodes the raw one (any zstd decoder must). */
__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
	char cmd[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd);
}

static int read_noise(void *back, size_t len, mt_error *err)
{
	mt_ckpt *c = NULL;
	memset(back, 0, len);
	int rc = mt_ckpt_open(store, "rawz", &c, err);
	if (!rc)
		rc = mt_ckpt_read(c, "noise", back, len, err);
	mt_ckpt_close(c);
	return rc;
}

/* rawz@v1 without the xxh3 members, as written before they were recorded. */
static int strip_xxh3(void)
{
	char path[600];
	snprintf(path, sizeof path, "%s/models/rawz/versions/v1.json", root);
	json_t *m = json_load_file(path, 0, NULL), *t = json_object_get(m, "tensors"), *e;
	const char *k;
	json_object_del(m, "checksum");
	json_object_foreach(t, k, e) json_object_del(e, "xxh3");
	char *text = json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(m);
	FILE *f = text && !mti_json_seal(&text) ? fopen(path, "w") : NULL;
	int ok = f && fputs(text, f) >= 0;
	if (f)
		ok = !fclose(f) && ok;
	free(text);
	return ok;
}

/* The raw frame damaged in its data, in a block header, swapped for a
 * compressed frame of the same bytes (as another writer stores them),
 * and read through a manifest without xxh3. */
static void damaged_objects(const char *sha, const void *noise, void *back, size_t len)
{
	char obj[600], keep[600];
	snprintf(obj, sizeof obj, "%s/models/rawz/tensors/%s", root, sha ? sha : "-");
	snprintf(keep, sizeof keep, "%s/../raw-frame", root);
	mt_error err = {0};
	sh("cp '%s' '%s'", obj, keep);
	/* a byte of the first block's data; then the first block's header */
	sh("printf '\\377' | dd of='%s' bs=1 seek=5000 conv=notrunc status=none", obj);
	tap_ok(read_noise(back, len, &err) == MT_ECORRUPT && strstr(err.message, "xxh3") &&
		       strstr(err.message, "noise"),
	       "a damaged byte of a raw frame is caught by the xxh3: %s", err.message);
	sh("cp '%s' '%s'", keep, obj);
	/* block 60's header: in the last part of a read in parts */
	sh("printf '\\377' | dd of='%s' bs=1 seek=%lu conv=notrunc status=none", obj,
	   14ul + 60ul * (3ul + (128ul << 10)));
	tap_ok(read_noise(back, len, &err) < 0 && strstr(err.message, "noise"),
	       "a damaged block header is an error, not garbage: %s", err.message);
	sh("cp '%s' '%s'", keep, obj);
	sh("printf '\\377' | dd of='%s' bs=1 seek=%lu conv=notrunc status=none", obj,
	   14ul + 70ul * (3ul + (128ul << 10)) + 9ul);
	tap_ok(read_noise(back, len, &err) == MT_ECORRUPT && strstr(err.message, "xxh3"),
	       "so is a damaged byte in the last part: %s", err.message);
	sh("cp '%s' '%s'", keep, obj);
	sh("truncate -s -1 '%s'", obj);
	tap_ok(read_noise(back, len, &err) < 0 && strstr(err.message, "noise"),
	       "and a frame one byte short: %s", err.message);
	sh("zstd -q -dc '%s' | zstd -q -3 -c > '%s'", keep, obj);
	TAP_CALL(read_noise(back, len, &err), &err, "the same bytes compressed by another writer");
	tap_ok(!memcmp(back, noise, len), "they read back exactly, through the decoder");
	sh("cp '%s' '%s'", keep, obj);
	tap_ok(strip_xxh3(), "a manifest without xxh3");
	TAP_CALL(read_noise(back, len, &err), &err, "reads the raw frame");
	tap_ok(!memcmp(back, noise, len), "exactly, checked by sha256");
	sh("printf '\\377' | dd of='%s' bs=1 seek=5000 conv=notrunc status=none", obj);
	tap_ok(read_noise(back, len, &err) == MT_ECORRUPT && strstr(err.message, "hash to"),
	       "and a damaged byte is caught by the sha256: %s", err.message);
	sh("cp '%s' '%s'", keep, obj);
	unlink(keep);
}

static void test_raw_or_compressed(void)
{
	size_t n = 9 << 18; /* 9 MiB of floats: read in parts on several threads */
	uint32_t *noise = malloc(n * 4);
	float *zeros = calloc(n, 4);
	uint64_t x = 88172645463325252ull, shape[1] = {n};
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		noise[i] = (uint32_t)x;
	}
	mt_error err = {0};
	mt_ckpt_writer *w = NULL;
	int rc = mt_ckpt_writer_open(store, "rawz", NULL, &w, &err);
	if (!rc)
		rc = mt_ckpt_add(w, "noise", MT_UINT32, 1, shape, noise, n * 4, &err);
	if (!rc)
		rc = mt_ckpt_add(w, "zeros", MT_FLOAT32, 1, shape, zeros, n * 4, &err);
	if (!rc)
		rc = mt_ckpt_commit(w, NULL, &err);
	mt_ckpt_writer_close(w);
	TAP_CALL(rc, &err, "a checkpoint of noise and zeros");
	mt_ckpt *c = NULL;
	mt_ckpt_tensor_info t0 = {0}, t1 = {0};
	TAP_CALL(mt_ckpt_open(store, "rawz", &c, &err), &err, "open it");
	int got = c && !mt_ckpt_tensor(c, 0, &t0, NULL) && !mt_ckpt_tensor(c, 1, &t1, NULL);
	tap_ok(got && t0.stored == n * 4 + 14 + 3 * (n * 4 / (128 << 10)) && t1.stored < n * 4 / 100,
	       "noise stored raw (%llu bytes for %zu), zeros compressed (%llu)",
	       (unsigned long long)t0.stored, n * 4, (unsigned long long)t1.stored);
	uint32_t *back = malloc(n * 4);
	TAP_CALL(mt_ckpt_read(c, "noise", back, n * 4, &err), &err, "read the raw one");
	tap_ok(!memcmp(back, noise, n * 4), "it reads back exactly");
	char cmd[700];
	snprintf(cmd, sizeof cmd, "zstd -dc '%s/models/rawz/tensors/%s' | sha256sum | grep -q '^%s '",
		 root, t0.sha256 ? t0.sha256 : "-", t0.sha256 ? t0.sha256 : "-");
	tap_ok(system(cmd) == 0, "the zstd command decodes the raw frame to the tensor's bytes");
	damaged_objects(t0.sha256, noise, back, n * 4);
	mt_ckpt_close(c);
	free(back);
	free(noise);
	free(zeros);
}

/* Tensors given at once: stored on several threads, entered in the order
 * given; one bad tensor leaves all of them out. */
static void test_add_many(void)
{
	enum { N = 24 };
	size_t len[N];
	float *data[N];
	mt_ckpt_tensor_in in[N];
	char keys[N][16];
	uint64_t shapes[N];
	for (int i = 0; i < N; i++) {
		len[i] = i % 3 == 0 ? (size_t)300000 + (size_t)i : (size_t)(i * 17);
		data[i] = make_floats(len[i], i % 3 == 0 ? 1 : 0);
		if (i % 3 == 0) /* random bits: stored as raw frames */
			for (size_t j = 0; j < len[i]; j++)
				((uint32_t *)data[i])[j] = (uint32_t)(j * 2654435761u) ^ (uint32_t)i;
		snprintf(keys[i], sizeof keys[i], "t%02d", N - i); /* not sorted */
		shapes[i] = len[i];
		in[i] = (mt_ckpt_tensor_in){keys[i], MT_FLOAT32, 1, &shapes[i], data[i], len[i] * 4};
	}
	mt_ckpt_opts o;
	mt_ckpt_opts_init(&o);
	o.threads = 3;
	mt_error err = {0};
	mt_ckpt_writer *w = NULL;
	TAP_CALL(mt_ckpt_writer_open(store, "many", &o, &w, &err), &err, "a writer on 3 threads");
	in[7].nbytes = 3;
	tap_ok(mt_ckpt_add_many(w, in, N, &err) == MT_EINVAL && strstr(err.message, "'t17'"),
	       "a bad tensor among many names it: %s", err.message);
	in[7].nbytes = len[7] * 4;
	in[9].key = keys[3];
	tap_ok(mt_ckpt_add_many(w, in, N, &err) == MT_EEXIST && strstr(err.message, "twice"),
	       "a key given twice among many: %s", err.message);
	in[9].key = keys[9];
	TAP_CALL(mt_ckpt_add_many(w, in, N, &err), &err, "add %d tensors at once", N);
	tap_ok(mt_ckpt_add_many(w, in + 2, 1, &err) == MT_EEXIST, "then one of them again is "
	       "refused: %s", err.message);
	TAP_CALL(mt_ckpt_commit(w, NULL, &err), &err, "commit");
	mt_ckpt_writer_close(w);
	mt_ckpt *c = NULL;
	TAP_CALL(mt_ckpt_open(store, "many", &c, &err), &err, "open it");
	int ok = c && mt_ckpt_ntensors(c) == N;
	for (int i = 0; ok && i < N; i++) {
		mt_ckpt_tensor_info t;
		float *back = malloc(len[i] * 4 + 1);
		ok = !mt_ckpt_tensor(c, (size_t)i, &t, NULL) && !strcmp(t.key, keys[i]) &&
		     !mt_ckpt_read(c, keys[i], back, len[i] * 4, &err) &&
		     !memcmp(back, data[i], len[i] * 4);
		free(back);
	}
	tap_ok(ok, "all %d in the order given, each reading back exactly", N);
	mt_ckpt_close(c);
	char dir[400];
	snprintf(dir, sizeof dir, "%s/models/many/tensors", root);
	int files = count_files(dir);
	TAP_CALL(mt_ckpt_writer_open(store, "many", &o, &w, &err), &err, "a second writer");
	TAP_CALL(mt_ckpt_add_many(w, in, N, &err), &err, "the same tensors again");
	TAP_CALL(mt_ckpt_commit(w, NULL, &err), &err, "commit");
	mt_ckpt_writer_close(w);
	tap_ok(count_files(dir) == files, "nothing stored twice (%d objects)", files);
	for (int i = 0; i < N; i++)
		free(data[i]);
}

static void test_bad_inputs(void)
{
	mt_error err = {0};
	mt_ckpt_writer *w = NULL;
	float x[6] = {0};
	uint64_t shape[2] = {2, 3};
	tap_ok(mt_ckpt_writer_open(store, "bad/name", NULL, &w, &err) == MT_EINVAL,
	       "a bad model name is refused");
	TAP_CALL(mt_ckpt_writer_open(store, "bad", NULL, &w, &err), &err, "open a writer");
	tap_ok(mt_ckpt_add(w, "", MT_FLOAT32, 2, shape, x, sizeof x, &err) == MT_EINVAL &&
		       strstr(err.message, "empty"),
	       "empty key: %s", err.message);
	tap_ok(mt_ckpt_add(w, "x", (mt_dtype)99, 2, shape, x, sizeof x, &err) == MT_EUNSUPPORTED,
	       "unsupported dtype: %s", err.message);
	tap_ok(mt_ckpt_add(w, "x", MT_FLOAT32, 2, shape, x, 20, &err) == MT_EINVAL,
	       "bytes not matching the shape: %s", err.message);
	TAP_CALL(mt_ckpt_add(w, "x", MT_FLOAT32, 2, shape, x, sizeof x, &err), &err, "add x");
	tap_ok(mt_ckpt_add(w, "x", MT_FLOAT32, 2, shape, x, sizeof x, &err) == MT_EEXIST,
	       "a key added twice: %s", err.message);
	tap_ok(mt_ckpt_set_state(w, "{nope", &err) == MT_EINVAL, "invalid state JSON");
	tap_ok(mt_ckpt_set_meta(w, "{\"step\":-1}", &err) == MT_EINVAL, "negative step");
	tap_ok(mt_ckpt_set_meta(w, "[1]", &err) == MT_EINVAL, "meta not an object");
	mt_ckpt_writer_close(w);
	char **v = NULL;
	size_t n = 0;
	tap_ok(mt_ckpt_list(store, "bad", &v, &n, &err) == MT_ENOTFOUND && n == 0,
	       "a writer closed without commit commits nothing");
	mt_ckpt *c = NULL;
	tap_ok(mt_ckpt_open(store, "net@v9", &c, &err) == MT_ENOTFOUND, "missing checkpoint: %s",
	       err.message);
	mt_ckpt_opts o;
	mt_ckpt_opts_init(&o);
	o.size = 3;
	tap_ok(mt_ckpt_writer_open(store, "bad", &o, &w, &err) == MT_EINVAL, "bad opts size");
}

static void test_keep_and_gc(void)
{
	mt_ckpt_opts o;
	mt_ckpt_opts_init(&o);
	o.keep = 2;
	size_t n = 1000;
	for (unsigned i = 0; i < 4; i++) {
		float *big = make_floats(n, 100 + i);
		char *v = NULL;
		save("kp", big, n, i, &o, &v);
		free(v);
		free(big);
	}
	char **v = NULL;
	size_t nv = 0;
	mt_error err = {0};
	TAP_CALL(mt_ckpt_list(store, "kp", &v, &nv, &err), &err, "list kp");
	tap_ok(nv == 2 && !strcmp(v[0], "v3") && !strcmp(v[1], "v4"), "keep 2 leaves v3, v4");
	mt_strv_free(v, nv);
	char path[600];
	snprintf(path, sizeof path, "%s/models/kp/versions/v1.removed", root);
	tap_ok(access(path, F_OK) == 0, "removed checkpoints leave tombstones");

	/* Retention reclaims what only the dropped checkpoints named. */
	char dir[400];
	snprintf(dir, sizeof dir, "%s/models/kp/tensors", root);
	int files = count_files(dir);
	uint64_t nobj = 0, nbytes = 0;
	TAP_CALL(mt_ckpt_gc(store, "kp", 1, 0, NULL, NULL, &nobj, &nbytes, &err), &err, "gc dry run");
	tap_ok(files == 4 && nobj == 0, "keep left the 4 objects of v3 and v4 alone, gc finds "
	       "nothing more (%d objects, %llu for gc)", files, (unsigned long long)nobj);

	/* A writer pins one of v3's objects: keep's reclaim leaves it to a later gc. */
	char **keys = NULL;
	size_t nkeys = 0;
	TAP_CALL(mti_ckpt_tensor_keys(store, "kp", "v3", &keys, &nkeys, &err), &err, "v3's objects");
	mt_dlock *pinner = NULL;
	TAP_CALL(mti_dlock_open(store, "models/kp", MT_LOCK_WRITE, &pinner, &err), &err,
		 "another writer's lock");
	if (nkeys)
		mti_dlock_pin_keys(pinner, (const char *const *)keys, 1, &err);
	float *big = make_floats(n, 104);
	char *v5 = NULL;
	save("kp", big, n, 4, &o, &v5);
	free(big);
	free(v5);
	char p0[600], p1[600];
	snprintf(p0, sizeof p0, "%s/%s", root, nkeys ? keys[0] : "-");
	snprintf(p1, sizeof p1, "%s/%s", root, nkeys > 1 ? keys[1] : "-");
	tap_ok(nkeys == 2 && access(p0, F_OK) == 0 && access(p1, F_OK) != 0 &&
		       count_files(dir) == 5,
	       "saving v5 drops v3: its pinned object stays, the other is deleted at once "
	       "(%d objects)", count_files(dir));
	mti_dlock_close(pinner);
	mt_strv_free(keys, nkeys);
	files = count_files(dir);
	TAP_CALL(mt_ckpt_gc(store, "kp", 0, 0, NULL, NULL, &nobj, &nbytes, &err), &err,
		 "gc once that writer is gone");
	tap_ok(nobj == 1 && count_files(dir) == files - 1, "gc takes the object it pinned");
	files = count_files(dir);
	mt_dlock *lock = NULL;
	char key[200];
	snprintf(key, sizeof key, "models/kp/tensors/%064d", 0);
	const char *k = key;
	TAP_CALL(mti_dlock_open(store, "models/kp", MT_LOCK_WRITE, &lock, &err), &err, "a writer lock");
	mti_dlock_pin_keys(lock, &k, 1, &err);
	FILE *f = NULL;
	snprintf(path, sizeof path, "%s/%s", root, key);
	f = fopen(path, "w");
	if (f)
		fclose(f);
	TAP_CALL(mt_ckpt_gc(store, "kp", 0, 0, NULL, NULL, &nobj, &nbytes, &err), &err, "gc");
	tap_ok(access(path, F_OK) == 0, "gc keeps an object a live writer pinned");
	tap_ok(count_files(dir) == files + 1, "gc deleted nothing a checkpoint names");
	mti_dlock_close(lock);
	TAP_CALL(mt_ckpt_gc(store, "kp", 0, 0, NULL, NULL, &nobj, &nbytes, &err), &err, "gc again");
	tap_ok(access(path, F_OK) != 0, "once the writer is gone, the object goes");
	TAP_CALL(mt_ckpt_verify(store, "kp", NULL, 2, NULL, NULL, &nobj, &err), &err,
		 "verify what is left");
}

static int nbad;
static void on_bad(void *ud, const char *version, const char *key, const char *object,
		   const char *message)
{
	nbad++;
	tap_diag("damaged: %s %s %s: %s", version, key, object, message);
}

static void test_verify_and_copy(void)
{
	mt_error err = {0};
	char dst_root[300];
	snprintf(dst_root, sizeof dst_root, "%s-copy", root);
	mt_store *dst = NULL;
	mt_store_opts so;
	mt_store_opts_init(&so);
	so.create = 1;
	TAP_CALL(mt_store_open_opts(dst_root, &so, &dst, &err), &err, "open a second store");
	mt_copy_stats st;
	TAP_CALL(mt_ckpt_copy(store, dst, "net", NULL, NULL, NULL, &st, &err), &err, "copy net");
	tap_ok(st.versions == 2 && st.shards == 3, "two checkpoints, three tensors sent");
	TAP_CALL(mt_ckpt_copy(store, dst, "net", NULL, NULL, NULL, &st, &err), &err, "copy again");
	tap_ok(st.versions == 0 && st.versions_present == 2 && st.shards == 0,
	       "a second copy sends nothing");
	mt_ckpt *c = NULL;
	TAP_CALL(mt_ckpt_open(dst, "net@v1", &c, &err), &err, "the copy opens");
	mt_ckpt_close(c);

	/* Damage one object: verify names it. */
	TAP_CALL(mt_ckpt_open(store, "net@v1", &c, &err), &err, "open net@v1");
	mt_ckpt_tensor_info t;
	mt_ckpt_tensor(c, 1, &t, NULL);
	char path[500];
	snprintf(path, sizeof path, "%s/models/net/tensors/%s", root, t.sha256);
	FILE *f = fopen(path, "r+b");
	if (f) {
		fseek(f, 9, SEEK_SET);
		fputc(0x55, f);
		fclose(f);
	}
	uint64_t checked = 0;
	nbad = 0;
	int rc = mt_ckpt_verify(store, "net", NULL, 2, on_bad, NULL, &checked, &err);
	tap_ok(rc == MT_ECORRUPT && nbad == 1 && strstr(err.message, t.sha256),
	       "verify names the damaged object: %s", err.message);
	int64_t b[4];
	tap_ok(mt_ckpt_read(c, "b", b, sizeof b, &err) != 0, "reading it fails: %s", err.message);
	mt_ckpt_close(c);
	mt_store_close(dst);
	tap_rm_tree(dst_root);
}

/* Writers racing for names: each commit lands under its own, none is lost. */
#define RACERS 4
static void *racer(void *arg)
{
	long i = (long)arg;
	mt_error err = {0};
	mt_ckpt_writer *w = NULL;
	float x[8];
	for (int k = 0; k < 8; k++)
		x[k] = (float)(i * 8 + k);
	uint64_t shape[1] = {8};
	char **out = calloc(1, sizeof *out);
	if (mt_ckpt_writer_open(store, "race", NULL, &w, &err) ||
	    mt_ckpt_add(w, "x", MT_FLOAT32, 1, shape, x, sizeof x, &err) ||
	    mt_ckpt_commit(w, out, &err))
		tap_diag("racer %ld: %s", i, err.message);
	mt_ckpt_writer_close(w);
	return out;
}

static void test_race_and_edges(void)
{
	pthread_t t[RACERS];
	for (long i = 0; i < RACERS; i++)
		pthread_create(&t[i], NULL, racer, (void *)i);
	int distinct = 1, all = 1;
	char *names[RACERS];
	for (int i = 0; i < RACERS; i++) {
		char **out;
		pthread_join(t[i], (void **)&out);
		names[i] = *out;
		free(out);
		all = all && names[i];
		for (int j = 0; j < i && names[i]; j++)
			distinct = distinct && names[j] && strcmp(names[i], names[j]);
	}
	tap_ok(all && distinct, "%d writers committing at once each get their own checkpoint",
	       RACERS);
	char **v = NULL;
	size_t n = 0;
	mt_error err = {0};
	TAP_CALL(mt_ckpt_list(store, "race", &v, &n, &err), &err, "list race");
	tap_ok(n == RACERS && !strcmp(v[n - 1], "v4"), "v1..v%d, none lost", RACERS);
	mt_strv_free(v, n);
	for (int i = 0; i < RACERS; i++)
		free(names[i]);

	/* A scalar and an empty tensor round-trip. */
	mt_ckpt_writer *w = NULL;
	double pi = 3.25;
	uint64_t zero[1] = {0};
	char *ver = NULL;
	TAP_CALL(mt_ckpt_writer_open(store, "edge", NULL, &w, &err), &err, "open edge");
	TAP_CALL(mt_ckpt_add(w, "pi", MT_FLOAT64, 0, NULL, &pi, sizeof pi, &err), &err, "add a scalar");
	TAP_CALL(mt_ckpt_add(w, "none", MT_INT32, 1, zero, NULL, 0, &err), &err, "add an empty tensor");
	TAP_CALL(mt_ckpt_commit(w, &ver, &err), &err, "commit edge");
	tap_ok(mt_ckpt_add(w, "late", MT_FLOAT64, 0, NULL, &pi, sizeof pi, &err) == MT_ESTATE,
	       "adding after the commit is refused");
	mt_ckpt_writer_close(w);
	free(ver);
	mt_ckpt *c = NULL;
	double back = 0;
	char one;
	TAP_CALL(mt_ckpt_open(store, "edge@latest", &c, &err), &err, "open edge@latest");
	TAP_CALL(mt_ckpt_read(c, "pi", &back, sizeof back, &err), &err, "read the scalar");
	tap_ok(back == 3.25, "the scalar reads back");
	TAP_CALL(mt_ckpt_read(c, "none", &one, 0, &err), &err, "read the empty tensor");
	tap_ok(!strcmp(mt_ckpt_state(c), "null") && !strcmp(mt_ckpt_meta(c), "{}"),
	       "no state is null, no meta is {}");
	mt_ckpt_close(c);
}

int main(void)
{
	if (tap_scratch_store("ckpt", root, sizeof root, &store))
		return 1;
	test_roundtrip_and_dedup();
	test_raw_or_compressed();
	test_add_many();
	test_bad_inputs();
	test_keep_and_gc();
	test_verify_and_copy();
	test_race_and_edges();
	mt_store_close(store);
	tap_rm_tree(root);
	return tap_done();
}
