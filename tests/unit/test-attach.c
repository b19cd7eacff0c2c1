/* test-attach.c — attachments through the C API: a bad name refused naming it, attach and detach in one writer, mt_dataset_detach of a name the version lacks committing nothing, and removing the last one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matorage.h"
#include "tap.h"

static mt_store *store;
static const mt_attr attrs[] = { { "y", MT_INT32, 0, { 0 }, 0 } };

/* A writer of ds: the first version, or an append (keeps the parent's attachments). */
static mt_writer *open_writer(const char *ds, int append)
{
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.append = append;
	o.threads = 1;
	mt_writer *w = NULL;
	mt_error err = { 0 };
	if (mt_writer_open(store, ds, append ? NULL : attrs, append ? 0 : 1, &o, &w, &err))
		tap_diag("open %s: %s", ds, err.message);
	return w;
}

/* The names of ds@version's attachments, "a,b,c" ("" for none; "?" when it cannot be read). */
static const char *names(const char *ds, const char *version)
{
	static char buf[512];
	mt_reader *r;
	mt_error err = { 0 };
	if (mt_reader_open(store, ds, version, &r, &err))
		return "?";
	buf[0] = '\0';
	for (size_t i = 0; i < mt_reader_nattachments(r); i++) {
		mt_attachment_info a;
		mt_reader_attachment_info(r, i, &a);
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? "," : "", a.name);
	}
	mt_reader_close(r);
	return buf;
}

static size_t nversions(const char *ds)
{
	char **v = NULL;
	size_t n = 0;
	mt_error err = { 0 };
	mt_store_versions(store, ds, &v, &n, &err);
	mt_strv_free(v, n);
	return n;
}

static void test_writer(void)
{
	mt_error err = { 0 };
	mt_writer *w = open_writer("ds", 0);
	int32_t y[3] = { 1, 2, 3 };
	const void *data[1] = { y };
	TAP_CALL(mt_writer_append(w, 3, data, NULL, &err), &err, "three rows");
	int rc = mt_writer_attach(w, "tok/vocab.txt", "a", 1, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "'tok/vocab.txt'"),
	       "a name with '/' is MT_EINVAL naming it: %s", err.message);
	TAP_CALL(mt_writer_attach(w, "vocab.txt", "the\n", 4, &err), &err, "vocab.txt attached");
	TAP_CALL(mt_writer_attach(w, "merges.txt", "a b\n", 4, &err), &err, "merges.txt attached");
	TAP_CALL(mt_writer_detach(w, "merges.txt", &err), &err,
		 "merges.txt removed from the same writer");
	rc = mt_writer_detach(w, "merges.txt", &err);
	tap_ok(rc == MT_ENOTFOUND && strstr(err.message, "'merges.txt'"),
	       "removing it again is MT_ENOTFOUND naming it: %s", err.message);
	TAP_CALL(mt_writer_commit(w, NULL, 0, &err), &err, "v1 committed");
	mt_writer_close(w);
	tap_ok(!strcmp(names("ds", "v1"), "vocab.txt"), "v1 holds vocab.txt only: %s",
	       names("ds", "v1"));

	/* An append that removes the parent's and attaches another. */
	w = open_writer("ds", 1);
	rc = mt_writer_detach(w, "nope", &err);
	tap_ok(rc == MT_ENOTFOUND && strstr(err.message, "'nope'") &&
	       strstr(err.message, "it has: vocab.txt"),
	       "removing what the parent lacks names it and what it has: %s", err.message);
	TAP_CALL(mt_writer_detach(w, "vocab.txt", &err), &err, "the parent's vocab.txt removed");
	TAP_CALL(mt_writer_attach(w, "config.json", "{}", 2, &err), &err, "config.json attached");
	TAP_CALL(mt_writer_commit(w, NULL, 0, &err), &err, "v2 committed");
	mt_writer_close(w);
	tap_ok(!strcmp(names("ds", "v2"), "config.json"), "v2 holds config.json only: %s",
	       names("ds", "v2"));
	tap_ok(!strcmp(names("ds", "v1"), "vocab.txt"), "v1 is unchanged");
}

static void test_dataset_detach(void)
{
	mt_error err = { 0 };
	char v[64];
	const char *both[] = { "vocab.txt", "readme.md" };
	const void *data[] = { "the\n", "# hi\n" };
	const size_t lens[] = { 4, 5 };
	TAP_CALL(mt_dataset_attach(store, "ds", "v2", both, data, lens, 2, NULL, v, sizeof v, &err),
		 &err, "two attached to v2");
	size_t n = nversions("ds");
	const char *bad[] = { "vocab.txt", "tokenizer.json" };
	int rc = mt_dataset_detach(store, "ds", NULL, bad, 2, NULL, v, sizeof v, &err);
	tap_ok(rc == MT_ENOTFOUND && strstr(err.message, "'tokenizer.json'") &&
	       strstr(err.message, "nothing was committed"),
	       "a name the version lacks is MT_ENOTFOUND naming it: %s", err.message);
	const char *twice[] = { "vocab.txt", "vocab.txt" };
	rc = mt_dataset_detach(store, "ds", NULL, twice, 2, NULL, v, sizeof v, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "given twice"), "a name twice is MT_EINVAL");
	rc = mt_dataset_detach(store, "ds", NULL, NULL, 0, NULL, v, sizeof v, &err);
	tap_ok(rc == MT_EINVAL, "no name is MT_EINVAL");
	tap_ok(nversions("ds") == n, "none of them committed a version");
	const char *all[] = { "config.json", "readme.md", "vocab.txt" };
	TAP_CALL(mt_dataset_detach(store, "ds", NULL, all, 3, NULL, v, sizeof v, &err), &err,
		 "every one removed");
	tap_ok(!strcmp(names("ds", v), "") && !strcmp(names("ds", "v3"), "config.json,readme.md,vocab.txt"),
	       "%s holds none, v3 still all three", v);
	mt_reader *r;
	TAP_CALL(mt_reader_open(store, "ds", v, &r, &err), &err, "%s opens", v);
	tap_ok(r && mt_reader_info(r)->rows == 3, "with v1's three rows");
	mt_reader_close(r);
}

int main(void)
{
	char root[] = "/tmp/mt-test-attach.XXXXXX";
	if (!mkdtemp(root))
		return 1;
	char url[300];
	snprintf(url, sizeof url, "file://%s/store", root);
	mt_store_opts so;
	mt_store_opts_init(&so);
	so.create = 1;
	mt_error err = { 0 };
	if (mt_store_open_opts(url, &so, &store, &err)) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	test_writer();
	test_dataset_detach();
	mt_store_close(store);
	tap_rm_tree(root);
	return tap_done();
}
