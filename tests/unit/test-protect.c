/* test-protect.c — parity: the matrix, encode/decode of every erasure pattern, the protection record, rebuilding a span from a store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "format.h"
#include "protect.h"
#include "store.h"
#include "tap.h"

/* GF(2^8) over 0x11d written here, not taken from ISA-L: the test checks
 * the library's use of ISA-L against the format's own definition. */
static uint8_t gmul(uint8_t a, uint8_t b)
{
	uint8_t p = 0;
	while (b) {
		if (b & 1)
			p ^= a;
		a = (uint8_t)((a << 1) ^ (a & 0x80 ? 0x1d : 0));
		b >>= 1;
	}
	return p;
}

static uint8_t ginv(uint8_t a)
{
	for (int b = 1; b < 256; b++)
		if (gmul(a, (uint8_t)b) == 1)
			return (uint8_t)b;
	return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint8_t rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)rng;
}

static void test_matrix(void)
{
	int bad = 0;
	for (int k = 1; k <= MTI_PARITY_MAX_K; k += 7)
		for (int m = 1; m <= MTI_PARITY_MAX_M; m += 5) {
			uint8_t mx[MTI_PARITY_MAX_K * MTI_PARITY_MAX_M];
			mti_parity_matrix(k, m, mx);
			for (int r = 0; r < m; r++)
				for (int j = 0; j < k; j++)
					bad += mx[r * k + j] != ginv((uint8_t)((k + r) ^ j));
		}
	tap_ok(bad == 0, "matrix: coefficient of parity r for member j is inv((K + r) xor j)");
	uint8_t mx[8];
	mti_parity_matrix(4, 2, mx);
	tap_diag("4+2 matrix: [%d,%d,%d,%d] [%d,%d,%d,%d]", mx[0], mx[1], mx[2], mx[3], mx[4],
		 mx[5], mx[6], mx[7]);
}

/* Every pattern of up to m lost rows among the nd members and m parity rows. */
static int erasures(int k, int m, size_t nd, size_t len, int threads)
{
	int nrows = k + m, fails = 0;
	uint8_t mx[MTI_PARITY_MAX_K * MTI_PARITY_MAX_M];
	mti_parity_matrix(k, m, mx);
	uint8_t *orig[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M] = {0};
	uint8_t *rows[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M] = {0};
	for (int i = 0; i < nrows; i++) {
		orig[i] = calloc(len, 1);
		rows[i] = malloc(len);
	}
	for (size_t j = 0; j < nd; j++)
		for (size_t b = 0; b < len; b++)
			orig[j][b] = rnd8();
	mt_error err;
	if (mti_parity_encode(k, m, mx, nd, (const uint8_t *const *)orig, len, orig + k, threads,
			      &err))
		fails++;
	/* Parity against the definition, byte by byte. */
	for (int r = 0; r < m; r++)
		for (size_t b = 0; b < len; b++) {
			uint8_t s = 0;
			for (size_t j = 0; j < nd; j++)
				s ^= gmul(mx[r * k + j], orig[j][b]);
			fails += s != orig[k + r][b];
		}
	/* Rows that exist: members below nd, all parity. */
	int live[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M], nlive = 0;
	for (int i = 0; i < nrows; i++)
		if (i >= k || (size_t)i < nd)
			live[nlive++] = i;
	for (unsigned mask = 1; mask < (1u << nlive); mask++) {
		if (__builtin_popcount(mask) > m)
			continue;
		unsigned char have[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M];
		size_t want[MTI_PARITY_MAX_K + MTI_PARITY_MAX_M], nwant = 0;
		memset(have, 1, sizeof have);
		for (int i = 0; i < nlive; i++)
			if (mask & (1u << i)) {
				have[live[i]] = 0;
				want[nwant++] = (size_t)live[i];
			}
		for (int i = 0; i < nrows; i++)
			memcpy(rows[i], orig[i], len);
		for (size_t w = 0; w < nwant; w++)
			memset(rows[want[w]], 0xa5, len);
		if (mti_parity_decode(k, m, mx, nd, have, rows, len, want, nwant, &err)) {
			fails++;
			continue;
		}
		for (size_t w = 0; w < nwant; w++)
			fails += memcmp(rows[want[w]], orig[want[w]], len) != 0;
	}
	for (int i = 0; i < nrows; i++) {
		free(orig[i]);
		free(rows[i]);
	}
	return fails;
}

static void test_erasures(void)
{
	static const struct { int k, m; size_t nd, len; int threads; } cases[] = {
		{4, 2, 4, 1000, 1}, {4, 2, 3, 1000, 2}, {4, 2, 1, 77, 1}, {3, 3, 3, 513, 2},
		{3, 3, 2, 64, 1},   {8, 2, 8, 4096, 2}, {8, 2, 5, 1, 1},  {1, 1, 1, 100, 1},
		{5, 1, 5, 300, 1},  {6, 4, 6, 3000, 2}, {6, 4, 2, 31, 1}, {2, 5, 2, 200, 1},
		{8, 2, 8, (3u << 20) + 17, 2},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
		tap_ok(erasures(cases[c].k, cases[c].m, cases[c].nd, cases[c].len,
				cases[c].threads) == 0,
		       "%d+%d, %zu members, %zu bytes, %d threads: parity is the definition's, "
		       "and every loss of up to %d rows decodes back", cases[c].k, cases[c].m,
		       cases[c].nd, cases[c].len, cases[c].threads, cases[c].m);
	mt_error err;
	uint8_t mx[8], a[4] = {0}, b[4] = {0};
	uint8_t *rows[6] = {a, b, a, a, a, a};
	unsigned char have[6] = {0, 0, 0, 1, 1, 0};
	size_t want = 0;
	mti_parity_matrix(4, 2, mx);
	tap_ok(mti_parity_decode(4, 2, mx, 4, have, rows, 4, &want, 1, &err) == MT_ECORRUPT,
	       "fewer than k rows: MT_ECORRUPT (%s)", err.message);
	tap_ok(mti_parity_encode(65, 2, mx, 4, (const uint8_t *const *)rows, 4, rows, 1, &err) ==
		       MT_EINVAL, "k past 64 is refused");
}

/* ---- a version in a store ------------------------------------------------ */

#define NSHARDS 7
static char ds[] = "d", ver[] = "v1", empty[] = "";
static uint8_t *shard_data[NSHARDS];
static const size_t shard_len[NSHARDS] = {5000, 4000, 5100, 4999, 300, 6000, 2500};

static char *manifest_json(mt_manifest *m, mt_mshard *sh)
{
	static mt_attr at = {.name = "x", .dtype = MT_UINT8, .rank = 1, .shape = {1}};
	char created[] = "2026-11-22T18:00:00.123Z";
	*m = (mt_manifest){.format = 1, .dataset = ds, .version = ver, .parent = empty,
			   .created = created, .level = 3, .chunk_bytes = 1024, .attrs = &at,
			   .nattrs = 1, .shards = sh, .nshards = NSHARDS};
	for (size_t i = 0; i < NSHARDS; i++) {
		mt_error e;
		mti_sha256_hex(shard_data[i], shard_len[i], sh[i].sha256, &e);
		sh[i].bytes = shard_len[i];
		sh[i].rows = 1;
		sh[i].first_row = i;
		sh[i].index_offset = 0;
		sh[i].index_bytes = 20;
		m->rows++;
	}
	char *json = NULL;
	mt_error e;
	mti_manifest_encode(m, &json, &e);
	return json;
}

/* Groups of up to k shards, parity computed and stored as mt_protect would. */
static mti_prec *protect_by_hand(mt_store *s, int k, int m, const mt_manifest *man,
				 const char *json)
{
	mti_prec *p = calloc(1, sizeof *p);
	p->dataset = strdup(ds);
	p->version = strdup(ver);
	p->created = strdup("2026-11-23T10:00:00.000Z");
	p->k = k;
	p->m = m;
	p->matrix = malloc((size_t)k * (size_t)m);
	mti_parity_matrix(k, m, p->matrix);
	p->manifest = strdup(json);
	p->manifest_len = strlen(json);
	p->ngroups = (NSHARDS + (size_t)k - 1) / (size_t)k;
	p->groups = calloc(p->ngroups, sizeof *p->groups);
	for (size_t g = 0; g < p->ngroups; g++) {
		mti_pgroup *pg = &p->groups[g];
		size_t first = g * (size_t)k;
		pg->nmembers = NSHARDS - first < (size_t)k ? NSHARDS - first : (size_t)k;
		pg->members = calloc(pg->nmembers, sizeof *pg->members);
		pg->parity = calloc((size_t)m, sizeof *pg->parity);
		for (size_t i = 0; i < pg->nmembers; i++) {
			pg->members[i].shard = first + i;
			memcpy(pg->members[i].sha256, man->shards[first + i].sha256, 65);
			pg->members[i].bytes = shard_len[first + i];
			if (shard_len[first + i] > pg->stripe)
				pg->stripe = shard_len[first + i];
		}
		uint8_t *in[MTI_PARITY_MAX_K], *out[MTI_PARITY_MAX_M];
		for (size_t i = 0; i < pg->nmembers; i++) {
			in[i] = calloc(pg->stripe, 1);
			memcpy(in[i], shard_data[first + i], shard_len[first + i]);
		}
		for (int r = 0; r < m; r++)
			out[r] = malloc(pg->stripe);
		mt_error e;
		mti_parity_encode(k, m, p->matrix, pg->nmembers, (const uint8_t *const *)in,
				  pg->stripe, out, 2, &e);
		for (int r = 0; r < m; r++) {
			mti_sha256_hex(out[r], pg->stripe, pg->parity[r].sha256, &e);
			pg->parity[r].bytes = pg->stripe;
			char *key = mti_key_parity(ds, pg->parity[r].sha256);
			mti_store_put(s, key, out[r], pg->stripe, 0, &e);
			free(key);
			free(out[r]);
		}
		for (size_t i = 0; i < pg->nmembers; i++)
			free(in[i]);
	}
	return p;
}

static int check_sha(void *ud, const void *buf, size_t len)
{
	char hex[MT_SHA256_HEX];
	mt_error e;
	mti_sha256_hex(buf, len, hex, &e);
	return strcmp(hex, ud) != 0;
}

static char *reseal(const char *json, const char *from, const char *to)
{
	const char *at = strstr(json, from), *sum = strstr(json, ",\"checksum\"");
	if (!at || !sum)
		return NULL;
	char *t = malloc(strlen(json) + strlen(to) + 2);
	sprintf(t, "%.*s%s%.*s}", (int)(at - json), json, to,
		(int)(sum - at - (ptrdiff_t)strlen(from)), at + strlen(from));
	if (mti_json_seal(&t))
		return NULL;
	return t;
}

static void test_record(mt_store *s, const mti_prec *p)
{
	mt_error err;
	char *json = NULL;
	if (!TAP_CALL(mti_prec_encode(p, &json, &err), &err, "record: encode"))
		return;
	tap_ok(strstr(json, "{\"format\":1,\"dataset\":\"d\",\"version\":\"v1\",\"created\":") ==
		       json && strstr(json, ",\"code\":\"rs-gf256-cauchy\",\"k\":4,\"m\":2,"
				     "\"matrix\":[[") && strstr(json, ",\"checksum\":\"sha256:"),
	       "record: the members of the format, in order, checksum last");
	mti_prec *d = NULL;
	if (TAP_CALL(mti_prec_decode(json, strlen(json), "rec", &d, &err), &err,
		     "record: decode")) {
		char *again = NULL;
		mti_prec_encode(d, &again, &err);
		tap_ok(again && strcmp(again, json) == 0 && d->ngroups == 2 &&
			       d->groups[1].nmembers == 3 && d->manifest_len == p->manifest_len,
		       "record: round trip gives the same text and groups");
		free(again);
	}
	mti_prec_free(d);
	d = NULL;
	char *t = strdup(json);
	t[strlen(t) / 2] ^= 1;
	tap_ok(mti_prec_decode(t, strlen(t), "rec", &d, &err) == MT_ECORRUPT && !d,
	       "record: a flipped bit is refused (%s)", err.message);
	free(t);
	char row[64];
	snprintf(row, sizeof row, "\"matrix\":[[%d,", p->matrix[0]);
	t = reseal(json, row, "\"matrix\":[[1,");
	tap_ok(t && mti_prec_decode(t, strlen(t), "rec", &d, &err) == MT_ECORRUPT &&
		       strstr(err.message, "matrix"),
	       "record: a resealed record with another matrix is refused (%s)", err.message);
	free(t);
	t = reseal(json, "\"bytes\":5000", "\"bytes\":5001");
	tap_ok(t && mti_prec_decode(t, strlen(t), "rec", &d, &err) == MT_ECORRUPT &&
		       strstr(err.message, "manifest says"),
	       "record: a member that disagrees with the manifest is refused (%s)", err.message);
	free(t);
	t = reseal(json, "\"k\":4", "\"k\":3");
	tap_ok(t && mti_prec_decode(t, strlen(t), "rec", &d, &err) == MT_ECORRUPT,
	       "record: another k is refused (%s)", err.message);
	free(t);
	char *key = mti_key_protect(ds, ver);
	mti_store_put(s, key, json, strlen(json), 0, &err);
	tap_ok(mti_prec_load(s, ds, ver, &d, &err) == 0 && mti_prec_find(d, 5, NULL) ==
		       &d->groups[1], "record: loads from the store; shard 5 is in group 1");
	mti_prec_free(d);
	tap_ok(mti_prec_load(s, ds, "v9", &d, &err) == MT_ENOTFOUND,
	       "record: an unprotected version is MT_ENOTFOUND (%s)", err.message);
	free(key);
	free(json);
}

static void test_rebuild(mt_store *s, const mti_prec *p)
{
	mt_error err;
	const mti_pgroup *g = &p->groups[0];
	/* Lose shard 1 entirely: the span comes back from the others. */
	char *k1 = mti_key_shard(ds, g->members[1].sha256);
	mti_store_del(s, (const char *const *)&k1, 1, &err);
	uint8_t buf[6000];
	uint64_t got = 0;
	int rc = mti_parity_rebuild_span(s, p, 1, 100, 900, NULL, NULL, NULL, buf, &got, &err);
	tap_ok(rc == 0 && memcmp(buf, shard_data[1] + 100, 900) == 0 && got == 4 * 900,
	       "rebuild: a span of a lost member from ranged reads of 4 rows (%llu bytes read)",
	       (unsigned long long)got);
	rc = mti_parity_rebuild_span(s, p, 1, 3900, 1200, NULL, NULL, NULL, buf, NULL, &err);
	static const uint8_t zeros[1100];
	tap_ok(rc == 0 && memcmp(buf, shard_data[1] + 3900, 100) == 0 &&
		       memcmp(buf + 100, zeros, 1100) == 0,
	       "rebuild: bytes past the member's end come back as zeros");
	/* Damage shard 0 silently: the check makes the rebuild leave it out. */
	char *k0 = mti_key_shard(ds, g->members[0].sha256);
	uint8_t *bad = malloc(shard_len[0]);
	memcpy(bad, shard_data[0], shard_len[0]);
	bad[10] ^= 0xff;
	mti_store_put(s, k0, bad, shard_len[0], 0, &err);
	rc = mti_parity_rebuild_span(s, p, 1, 0, shard_len[1], NULL, check_sha,
				     g->members[1].sha256, buf, NULL, &err);
	tap_ok(rc == 0 && memcmp(buf, shard_data[1], shard_len[1]) == 0,
	       "rebuild: a damaged row the check rejects is left out in turn");
	unsigned char avoid[6] = {1, 0, 0, 0, 0, 0};
	rc = mti_parity_rebuild_span(s, p, 1, 0, shard_len[1], avoid, NULL, NULL, buf, NULL, &err);
	tap_ok(rc == 0 && memcmp(buf, shard_data[1], shard_len[1]) == 0,
	       "rebuild: rows marked to avoid are not read");
	/* A third loss in a 4+2 group is beyond repair. */
	char *k2 = mti_key_shard(ds, g->members[2].sha256);
	mti_store_del(s, (const char *const *)&k2, 1, &err);
	rc = mti_parity_rebuild_span(s, p, 1, 0, shard_len[1], NULL, check_sha,
				     g->members[1].sha256, buf, NULL, &err);
	tap_ok(rc == MT_ECORRUPT && strstr(err.message, "d@v1: shard 1"),
	       "rebuild: damage beyond m is MT_ECORRUPT naming the shard (%s)", err.message);
	/* The short last group: 3 members of 4. */
	char *k6 = mti_key_shard(ds, p->groups[1].members[2].sha256);
	mti_store_del(s, (const char *const *)&k6, 1, &err);
	rc = mti_parity_rebuild_span(s, p, 6, 0, shard_len[6], NULL, check_sha,
				     p->groups[1].members[2].sha256, buf, NULL, &err);
	tap_ok(rc == 0 && memcmp(buf, shard_data[6], shard_len[6]) == 0,
	       "rebuild: a member of a short group");
	free(bad);
	free(k0);
	free(k1);
	free(k2);
	free(k6);
}

int main(void)
{
	test_matrix();
	test_erasures();
	char root[] = "/tmp/mt-protect-XXXXXX";
	mt_store *s = NULL;
	mt_error err;
	if (!mkdtemp(root) || mt_store_open(root, &s, &err)) {
		tap_ok(0, "open a store in %s", root);
		return tap_done();
	}
	mt_manifest man;
	mt_mshard sh[NSHARDS] = {0};
	for (size_t i = 0; i < NSHARDS; i++) {
		shard_data[i] = malloc(shard_len[i]);
		for (size_t b = 0; b < shard_len[i]; b++)
			shard_data[i][b] = rnd8();
	}
	char *json = manifest_json(&man, sh);
	for (size_t i = 0; i < NSHARDS; i++) {
		char *key = mti_key_shard(ds, sh[i].sha256);
		mti_store_put(s, key, shard_data[i], shard_len[i], 0, &err);
		free(key);
	}
	mti_prec *p = protect_by_hand(s, 4, 2, &man, json);
	test_record(s, p);
	test_rebuild(s, p);
	mti_prec_free(p);
	free(json);
	for (size_t i = 0; i < NSHARDS; i++)
		free(shard_data[i]);
	mt_store_close(s);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	if (system(cmd) != 0)
		tap_diag("could not remove %s", root);
	return tap_done();
}
