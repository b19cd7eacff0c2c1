/* test-verify-memo.c — verifies of every version of an append chain through one mt_verify_memo read each shard object once (the store's reads counted by key), and still say, for each version, which of its shards is damaged; a damaged object at other rows is read again, and a dry-run repair given the memo reads no shard the verifies found sound. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matorage.h"
#include "store.h"
#include "tap-count.h"
#include "tap-store.h"
#include "tap.h"

#define NVERSIONS 5
#define MAXKEYS 64

static mt_store *store;
static char root[512];

/* Reads of shard objects, by key. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char keys[MAXKEYS][256];
static int reads_of[MAXKEYS], nkeys;

/* tap_watch_reads' hook for keys of shard objects. */
static void count(const char *key)
{
	pthread_mutex_lock(&lock);
	int i = 0;
	while (i < nkeys && strcmp(keys[i], key))
		i++;
	if (i == nkeys && nkeys < MAXKEYS)
		snprintf(keys[nkeys++], sizeof keys[0], "%s", key);
	if (i < MAXKEYS)
		reads_of[i]++;
	pthread_mutex_unlock(&lock);
}

static void count_reset(void)
{
	pthread_mutex_lock(&lock);
	nkeys = 0;
	memset(reads_of, 0, sizeof reads_of);
	pthread_mutex_unlock(&lock);
}

/* Reads in all, and the most of any one object. */
static int reads_total(int *most)
{
	int n = 0;
	*most = 0;
	for (int i = 0; i < nkeys; i++) {
		n += reads_of[i];
		*most = reads_of[i] > *most ? reads_of[i] : *most;
	}
	return n;
}

/* v1: 4 shards of 100 rows; v2..v5 each append one more shard. */
static int write_chain(void)
{
	mt_attr attrs[1] = {{.name = "x", .dtype = MT_INT64, .rank = 0}};
	int64_t x[400];
	for (int i = 0; i < 400; i++)
		x[i] = i;
	mt_error err = {0};
	int rc = 0;
	for (int v = 0; !rc && v < NVERSIONS; v++) {
		mt_writer_opts o;
		mt_writer_opts_init(&o);
		o.shard_rows = 100;
		o.append = v > 0;
		mt_writer *w = NULL;
		const void *data[1] = {x};
		for (int i = 0; i < 100; i++)
			x[i] = 1000 * v + i; /* each append's rows its own */
		rc = mt_writer_open(store, "ch", v ? NULL : attrs, 1, &o, &w, &err) ||
		     mt_writer_append(w, v ? 100 : 400, data, NULL, &err) ||
		     mt_writer_commit(w, NULL, 0, &err);
		mt_writer_close(w);
	}
	if (rc)
		tap_diag("writer: %s", err.message);
	return rc ? -1 : 0;
}

struct seen {
	int checked, bad;
	char first_bad[64];
};

static void seen_fn(void *ud, size_t shard, const mt_shard_info *info, int code,
		    const char *message)
{
	struct seen *s = ud;
	s->checked++;
	if (code && !s->bad++)
		snprintf(s->first_bad, sizeof s->first_bad, "shard %zu", shard);
}

/* Verify v1..v5, through memo (NULL: none): shards checked and damaged in
 * each; 0, or the first error that is no damage. */
static int verify_all(mt_verify_memo *memo, struct seen *out)
{
	for (int v = 0; v < NVERSIONS; v++) {
		char name[8];
		snprintf(name, sizeof name, "v%d", v + 1);
		mt_reader *r = NULL;
		mt_error err = {0};
		memset(&out[v], 0, sizeof out[v]);
		int rc = mt_reader_open(store, "ch", name, &r, &err);
		if (!rc)
			rc = mt_reader_verify_memo(r, memo, seen_fn, &out[v], NULL, NULL, &err);
		mt_reader_close(r);
		if (rc && rc != MT_ECORRUPT) {
			tap_diag("verify %s: %s", name, err.message);
			return rc;
		}
	}
	return 0;
}

/* The file of shard 0 (of every version), one byte changed. */
static int damage_shard0(void)
{
	mt_reader *r = NULL;
	mt_error err = {0};
	mt_shard_info info;
	if (mt_reader_open(store, "ch", "v1", &r, &err) || mt_reader_shard(r, 0, &info))
		return -1;
	char path[700];
	snprintf(path, sizeof path, "%s/datasets/ch/shards/%s.h5", root, info.sha256);
	mt_reader_close(r);
	size_t len = 0;
	unsigned char *b = tap_read_file(path, &len);
	if (!b)
		return -1;
	b[len / 2] ^= 0x10;
	int rc = tap_write_file(path, b, len);
	free(b);
	return rc;
}

int main(void)
{
	if (tap_scratch_store("verify-memo", root, sizeof root, &store) || write_chain())
		return tap_ok(0, "setup"), tap_done();
	tap_watch_reads(store, "/shards/", count);
	struct seen s[NVERSIONS];
	int most = 0;

	count_reset();
	int rc = verify_all(NULL, s);
	int total = reads_total(&most);
	tap_ok(!rc && nkeys == 8 && total == 4 + 5 + 6 + 7 + 8,
	       "without a memo, the 5 versions' verifies read their 30 shard references: %d reads "
	       "of %d objects", total, nkeys);

	mt_verify_memo *memo = NULL;
	mt_error err = {0};
	TAP_CALL(mt_verify_memo_new(&memo, &err), &err, "a memo");
	count_reset();
	rc = verify_all(memo, s);
	total = reads_total(&most);
	uint64_t objects = 0, bytes = 0;
	mt_verify_memo_reads(memo, &objects, &bytes);
	tap_ok(!rc && nkeys == 8 && total == 8 && most == 1,
	       "through one memo, each of the 8 shard objects is read once: %d reads, at most %d "
	       "of one", total, most);
	tap_ok(objects == 8 && bytes > 0, "the memo counts 8 objects read (%llu, %llu bytes)",
	       (unsigned long long)objects, (unsigned long long)bytes);
	int all = 1;
	for (int v = 0; v < NVERSIONS; v++)
		all &= s[v].checked == 4 + v && s[v].bad == 0;
	tap_ok(all, "and every version still hears of each of its shards, all sound");
	mt_verify_memo_free(memo);

	tap_ok(damage_shard0() == 0, "shard 0, which every version lists, damaged");
	TAP_CALL(mt_verify_memo_new(&memo, &err), &err, "a fresh memo");
	count_reset();
	rc = verify_all(memo, s);
	total = reads_total(&most);
	tap_ok(!rc && total == 8 && most == 1,
	       "the damaged chain is read once too: %d reads, at most %d of one", total, most);
	all = 1;
	for (int v = 0; v < NVERSIONS; v++)
		all &= s[v].bad == 1 && !strcmp(s[v].first_bad, "shard 0");
	tap_ok(all, "each version is told its shard 0 is damaged (v5: %d damaged, %s)", s[4].bad,
	       s[4].first_bad);

	/* A dry-run repair after the verifies reads only what they found damaged. */
	mt_repair_opts o;
	mt_repair_opts_init(&o);
	o.dry_run = 1;
	o.memo = memo;
	count_reset();
	rc = mt_repair(store, "ch", "v5", &o, NULL, &err);
	total = reads_total(&most);
	tap_ok((rc == 0 || rc == MT_ECORRUPT) && nkeys == 1,
	       "a dry-run repair given the memo reads only the damaged shard (%d objects, %d reads; "
	       "rc %d)", nkeys, total, rc);
	mt_verify_memo_free(memo);
	mt_verify_memo_free(NULL);
	tap_unwatch();
	mt_store_close(store);
	tap_rm_tree(root);
	return tap_done();
}
