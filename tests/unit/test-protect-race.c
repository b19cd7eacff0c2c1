/* test-protect-race.c — a protect and an upgrade of the same version, interleaved at their commit points by a store that runs one inside the other's write: the version ends with a record of its final manifest, or unprotected with a clear error, never with a record of a text it no longer has. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matorage.h"
#include "protect.h"
#include "store.h"
#include "tap-store.h"
#include "tap.h"

static mt_store *store;
static char root[512];

/* The interleaving: the first put of a key ending in hook_key runs
 * hook_fn (the other operation, whole) before the put itself. */
static mt_store_ops hook_ops;
static const mt_store_ops *real_ops;
static const char *hook_key;
static void (*hook_fn)(void);
static int hook_fired, hook_puts;
static int hook_put(mt_store *s, const char *key, const void *data, size_t len, int flags,
		    mt_error *err)
{
	size_t n = strlen(key), kn = hook_key ? strlen(hook_key) : 0;
	if (hook_key && n >= kn && !strcmp(key + n - kn, hook_key)) {
		hook_puts++;
		if (hook_fn && !hook_fired) {
			hook_fired = 1;
			hook_fn();
		}
	}
	return real_ops->put(s, key, data, len, flags, err);
}

static void hook_set(const char *key, void (*fn)(void))
{
	hook_key = key;
	hook_fn = fn;
	hook_fired = hook_puts = 0;
}

/* DATASET@v1 in format 1: 12 one-row shards of x (int64) = row * 3. */
static int put_v1(const char *dataset)
{
	mt_attr a = {.name = "x", .dtype = MT_INT64, .rank = 0};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 1;
	int64_t x[12];
	for (int i = 0; i < 12; i++)
		x[i] = i * 3;
	const void *data[1] = {x};
	mt_writer *w = NULL;
	mt_error err = {0};
	setenv("MATORAGE_MANIFEST_FORMAT", "1", 1);
	int rc = mt_writer_open(store, dataset, &a, 1, &o, &w, &err) ||
		 mt_writer_append(w, 12, data, NULL, &err) || mt_writer_commit(w, NULL, 0, &err);
	unsetenv("MATORAGE_MANIFEST_FORMAT");
	if (rc)
		tap_diag("put %s: %s", dataset, err.message);
	mt_writer_close(w);
	return rc;
}

static char *file_of(const char *dataset, const char *what)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/datasets/%s/%s", root, dataset, what);
	size_t len;
	return tap_read_file(path, &len);
}

/* DATASET@v1's record decodes, holds the version's manifest byte for byte
 * and is format 2, as is the manifest; and a repair finds nothing wrong. */
static void record_matches(const char *dataset, const char *what)
{
	mti_prec *p = NULL;
	mt_error err = {0};
	int rc = mti_prec_load(store, dataset, "v1", &p, &err);
	char *man = file_of(dataset, "versions/v1.json");
	tap_ok(rc == 0 && p && man && p->format == 2 && strstr(man, "\"format\":2") &&
		       p->manifest_len == strlen(man) && !memcmp(p->manifest, man, p->manifest_len),
	       "%s: the record is format 2 and holds the final manifest%s%s", what,
	       rc ? ": " : "", rc ? err.message : "");
	tap_ok(rc == 0 && p && p->nfgroups > 0, "%s: it has fragment groups (%zu)", what,
	       p ? p->nfgroups : 0);
	mti_prec_free(p);
	free(man);
	mt_repair_opts o;
	mt_repair_opts_init(&o);
	o.dry_run = 1;
	o.use_remotes = 0;
	mt_repair_stats st;
	rc = mt_repair(store, dataset, "v1", &o, &st, &err);
	tap_ok(rc == 0 && st.damaged == 0, "%s: repair --dry-run finds every object sound "
	       "(%llu objects, %llu damaged)%s%s", what, (unsigned long long)st.objects,
	       (unsigned long long)st.damaged, rc ? ": " : "", rc ? err.message : "");
}

static int upgrade_rc, upgrade_changed;
static mt_error upgrade_err;
static void run_upgrade_a(void)
{
	upgrade_rc = mt_store_upgrade(store, "a", "v1", &upgrade_changed, &upgrade_err);
}

static int protect_rc;
static mt_error protect_err;
static void run_protect_b(void)
{
	mt_protect_opts o;
	mt_protect_opts_init(&o);
	o.k = 2;
	o.m = 1;
	protect_rc = mt_protect(store, "b", "v1", &o, &protect_err);
}

/* The protect has read and coded the format-1 text; before its record is
 * written, a whole upgrade runs (it finds no record, so carries none). */
static void test_upgrade_inside_protect(void)
{
	hook_set("datasets/a/protect/v1.json", run_upgrade_a);
	mt_protect_opts o;
	mt_protect_opts_init(&o);
	o.k = 2;
	o.m = 1;
	mt_error err = {0};
	int rc = mt_protect(store, "a", "v1", &o, &err);
	tap_ok(hook_fired && upgrade_rc == 0 && upgrade_changed,
	       "an upgrade ran between the protect's coding and its record%s%s",
	       upgrade_rc ? ": " : "", upgrade_rc ? upgrade_err.message : "");
	tap_ok(rc == 0, "the protect succeeds%s%s", rc ? ": " : "", rc ? err.message : "");
	tap_ok(hook_puts == 2, "it wrote its record twice: for the text it read, then for the "
	       "root it found after (%d)", hook_puts);
	record_matches("a", "upgrade inside protect");
}

/* The upgrade has read that there is no record; before its root is
 * written, a whole protect runs (of the format-1 text). */
static void test_protect_inside_upgrade(void)
{
	hook_set("datasets/b/versions/v1.json", run_protect_b);
	int changed = 0;
	mt_error err = {0};
	int rc = mt_store_upgrade(store, "b", "v1", &changed, &err);
	char *rec = file_of("b", "protect/v1.json");
	tap_ok(hook_fired && protect_rc == 0, "a protect ran between the upgrade's look for a "
	       "record and its root%s%s", protect_rc ? ": " : "",
	       protect_rc ? protect_err.message : "");
	tap_ok(rc == 0 && changed, "the upgrade succeeds%s%s", rc ? ": " : "", rc ? err.message : "");
	free(rec);
	record_matches("b", "protect inside upgrade");
}

/* Every time the protect is about to write its record, the manifest is
 * swapped for another text (old and new alternately): it gives up with
 * MT_ESTATE and leaves no record of a text the version does not have. */
static char *text_f1, *text_f2;
static int swaps;
static void swap_manifest(void)
{
	const char *t = swaps++ % 2 ? text_f2 : text_f1;
	mt_error e = {0};
	real_ops->put(store, "datasets/c/versions/v1.json", t, strlen(t), 0, &e);
	hook_fired = 0; /* again at the next record */
}

static void test_manifest_keeps_changing(void)
{
	int changed = 0;
	mt_error err = {0};
	text_f1 = file_of("c", "versions/v1.json");
	int rc = mt_store_upgrade(store, "c", "v1", &changed, &err);
	text_f2 = file_of("c", "versions/v1.json");
	if (rc || !text_f1 || !text_f2)
		tap_diag("upgrade c: %s", err.message);
	hook_set("datasets/c/protect/v1.json", swap_manifest);
	mt_protect_opts o;
	mt_protect_opts_init(&o);
	o.k = 2;
	o.m = 1;
	rc = mt_protect(store, "c", "v1", &o, &err);
	tap_ok(rc == MT_ESTATE && strstr(err.message, "c@v1: its manifest was replaced each of the "
					 "3 times") && strstr(err.message, "left unprotected"),
	       "a manifest replaced at every run: MT_ESTATE, said clearly (%s)", err.message);
	mti_prec *p = NULL;
	mt_error e = {0};
	char *rec = file_of("c", "protect/v1.json");
	tap_ok(!rec && mti_prec_load(store, "c", "v1", &p, &e) == MT_ENOTFOUND,
	       "no record is left of a text the version no longer has");
	mti_prec_free(p);
	free(rec);
	free(text_f1);
	free(text_f2);
}

int main(void)
{
	setenv("MATORAGE_FRAGMENT_SHARDS", "4", 1);
	if (tap_scratch_store("protect-race", root, sizeof root, &store) || put_v1("a") ||
	    put_v1("b") || put_v1("c"))
		return tap_ok(0, "setup"), tap_done();
	real_ops = store->ops;
	hook_ops = *real_ops;
	hook_ops.put = hook_put;
	store->ops = &hook_ops;
	test_upgrade_inside_protect();
	test_protect_inside_upgrade();
	test_manifest_keeps_changing();
	store->ops = real_ops;
	mt_store_close(store);
	return tap_done();
}
