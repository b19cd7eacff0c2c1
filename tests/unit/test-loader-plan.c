/* test-loader-plan.c — the loader's order is the same on every platform: plans for fixed seeds, epochs, ranks and layouts give these committed row ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader-plan.h"
#include "tap.h"

/*
 * The lists below were produced once by a loader over a version of 200 rows
 * in shards of 37 (the last of 15) and are never regenerated: a change in
 * them is a change of every user's order, which breaks resume tokens taken
 * before it.  The plan draws with integers only (splitmix64, Lemire's
 * bounded draws), so no compiler, libc or CPU may change them.
 */

/* A rank 0: 9 batches, 67 rows */
static const uint64_t expect_a_rank_0[] = {
	152, 78, 80, 158, 150, 74, 151, 79, 159, 154, 153, 155, 81, 149, 82, 148,
	84, 85, 77, 75, 83, 157, 156, 76, 86, 73, 88, 90, 93, 92, 87, 94,
	97, 91, 95, 96, 147, 89, 167, 165, 171, 145, 136, 144, 140, 142, 162, 137,
	161, 168, 160, 146, 166, 141, 169, 170, 143, 138, 135, 163, 139, 164, 34, 103,
	99, 106, 104,
};
/* A rank 1: 9 batches, 67 rows */
static const uint64_t expect_a_rank_1[] = {
	101, 24, 25, 29, 108, 27, 32, 31, 98, 33, 107, 35, 100, 102, 109, 30,
	26, 28, 105, 121, 36, 119, 117, 115, 114, 122, 111, 116, 113, 110, 112, 120,
	118, 44, 48, 42, 39, 41, 47, 45, 40, 46, 184, 43, 38, 37, 4, 127,
	126, 133, 128, 134, 123, 3, 132, 125, 6, 130, 124, 11, 8, 10, 1, 131,
	0, 9, 2,
};
/* A rank 2: 9 batches, 67 rows */
static const uint64_t expect_a_rank_2[] = {
	5, 7, 129, 176, 182, 197, 172, 181, 175, 177, 173, 178, 198, 183, 174, 199,
	179, 180, 67, 195, 66, 196, 69, 190, 191, 70, 63, 61, 187, 72, 64, 62,
	193, 194, 188, 192, 71, 185, 186, 189, 68, 65, 58, 60, 51, 21, 18, 20,
	13, 50, 53, 16, 17, 59, 19, 22, 52, 14, 15, 12, 23, 54, 55, 57,
	56, 49, 152,
};
/* C rank 0: 5 batches, 50 rows */
static const uint64_t expect_c_rank_0[] = {
	97, 91, 95, 96, 147, 89, 167, 165, 171, 145, 136, 144, 140, 142, 162, 137,
	161, 168, 160, 146, 166, 141, 169, 170, 143, 138, 135, 163, 139, 164, 34, 103,
	99, 106, 104, 118, 44, 48, 42, 39, 41, 47, 45, 40, 46, 184, 43, 38,
	37, 4,
};
/* C rank 1: 5 batches, 50 rows */
static const uint64_t expect_c_rank_1[] = {
	127, 126, 133, 128, 134, 123, 3, 132, 125, 6, 130, 124, 11, 8, 10, 1,
	131, 0, 9, 2, 193, 194, 188, 192, 71, 185, 186, 189, 68, 65, 58, 60,
	51, 21, 18, 20, 13, 50, 53, 16, 17, 59, 19, 22, 52, 14, 15, 12,
	23, 54,
};
/* D: 4 batches, 200 rows */
static const uint64_t expect_d[] = {
	25, 9, 7, 0, 192, 5, 11, 6, 18, 186, 10, 188, 22, 13, 190, 26,
	15, 29, 24, 17, 27, 3, 23, 19, 20, 198, 193, 31, 30, 191, 8, 4,
	1, 197, 16, 12, 199, 194, 2, 196, 28, 14, 189, 195, 187, 21, 185, 178,
	129, 112, 174, 139, 154, 168, 165, 171, 173, 134, 132, 133, 115, 149, 119, 111,
	128, 160, 152, 114, 135, 166, 117, 118, 156, 164, 177, 121, 125, 153, 163, 179,
	131, 175, 169, 162, 130, 116, 167, 124, 141, 170, 137, 158, 142, 127, 140, 176,
	136, 138, 157, 150, 155, 126, 148, 151, 113, 172, 159, 120, 122, 123, 161, 147,
	184, 144, 70, 146, 106, 53, 41, 54, 108, 59, 46, 109, 43, 37, 183, 143,
	47, 48, 110, 42, 64, 51, 35, 39, 73, 49, 107, 69, 32, 180, 40, 55,
	52, 45, 34, 61, 36, 72, 67, 58, 38, 65, 50, 182, 33, 62, 57, 60,
	71, 181, 66, 145, 63, 56, 68, 44, 91, 74, 103, 95, 85, 79, 88, 92,
	89, 105, 76, 77, 87, 97, 93, 86, 101, 94, 75, 81, 82, 80, 83, 102,
	78, 98, 96, 104, 99, 100, 90, 84,
};

/* The version's shards: first row and rows. */
static const uint64_t layout[][2] = {{0, 37}, {37, 37}, {74, 37}, {111, 37}, {148, 37}, {185, 15}};

static int plan_make(mt_plan *p, uint64_t window_rows, int shuffle, uint64_t seed)
{
	mt_error err = {0};
	mti_plan_init(p, 200, window_rows, window_rows / 2, shuffle, seed);
	for (size_t i = 0; i < sizeof layout / sizeof *layout; i++)
		if (mti_plan_add_shard(p, layout[i][0], layout[i][1], &err))
			return tap_diag("add_shard: %s", err.message), -1;
	return 0;
}

/* The rows of this rank's share, in order, as the loader delivers them:
 * from the decoded window, or (padding) looked up on its own. */
static int share_rows(const mt_plan *p, uint64_t *rows, size_t cap, size_t *n)
{
	mt_error err = {0};
	*n = 0;
	for (uint64_t k = 0; k < p->batches; k++) {
		uint64_t first, count;
		mti_plan_batch(p, k, &first, &count);
		for (uint64_t i = first; i < first + count; i++) {
			uint64_t pos = mti_plan_position(p, i), row = 0, direct = 0;
			size_t w = mti_plan_window_of(p, pos);
			uint64_t wn = mti_plan_window_rows(p, w);
			uint64_t *rowid = malloc(wn * sizeof *rowid), *perm = malloc(wn * sizeof *perm);
			if (!rowid || !perm || *n == cap)
				return free(rowid), free(perm), -1;
			mti_plan_window_rowids(p, w, rowid);
			mti_plan_window_perm(p, w, perm, wn);
			row = rowid[perm[pos - p->window_start[w]]];
			free(rowid);
			free(perm);
			if (mti_plan_row_at(p, pos, &direct, &err) || direct != row)
				return tap_diag("position %llu: window says row %llu, row_at %llu",
						(unsigned long long)pos, (unsigned long long)row,
						(unsigned long long)direct), -1;
			rows[(*n)++] = row;
		}
	}
	return 0;
}

/* The share of `rank` compared with the committed list. */
static void check_share(const char *what, mt_plan *p, uint64_t batches, const uint64_t *want,
			size_t nwant)
{
	uint64_t got[256];
	size_t n = 0;
	int rc = share_rows(p, got, 256, &n);
	size_t bad = n;
	for (size_t i = 0; i < n && i < nwant; i++)
		if (got[i] != want[i]) {
			bad = i;
			break;
		}
	tap_ok(!rc && p->batches == batches && n == nwant && bad == n,
	       "%s: %llu batches, the %zu committed rows in order", what,
	       (unsigned long long)p->batches, nwant);
	if (bad < n && bad < nwant)
		tap_diag("  first difference at %zu: row %llu, committed %llu", bad,
			 (unsigned long long)got[bad], (unsigned long long)want[bad]);
}

static void test_streams(void)
{
	uint64_t s = mti_plan_stream(42, 3, 0);
	tap_ok(s == 0x2ce02c4ee4d2ea09ull, "the stream of (seed 42, epoch 3, 0) starts where it did");
	const uint64_t want[4] = {0x15f4163333581662ull, 0x3e8555678fabef86ull, 0x483a4e17e6e6a9c0ull,
				  0x59c6b4d98a3abdb1ull};
	int same = 1;
	for (int i = 0; i < 4; i++)
		same &= mti_plan_splitmix(&s) == want[i];
	tap_ok(same, "and gives the same four values");
	tap_ok(mti_plan_stream(0xfeedfacecafebeefull, 0, 7) == 0x462b10c506e08283ull,
	       "a high seed and another stream too");
}

static void test_ranks(void)
{
	static const uint64_t *const want[3] = {expect_a_rank_0, expect_a_rank_1, expect_a_rank_2};
	static const size_t nwant[3] = {sizeof expect_a_rank_0 / sizeof(uint64_t),
					sizeof expect_a_rank_1 / sizeof(uint64_t),
					sizeof expect_a_rank_2 / sizeof(uint64_t)};
	mt_plan_share share = {3, 8, 0, 0};
	for (unsigned r = 0; r < 3; r++) {
		mt_plan p;
		mt_error err = {0};
		char what[64];
		snprintf(what, sizeof what, "seed 42, epoch 3, window 24, rank %u of 3", r);
		if (plan_make(&p, 24, 1, 42) == 0 &&
		    TAP_CALL(mti_plan_epoch(&p, 3, NULL, 0, r, &share, &err), &err, "%s: plan", what))
			check_share(what, &p, 9, want[r], nwant[r]);
		mti_plan_free(&p);
	}
}

/* After 4 batches each of 3 ranks, 2 ranks of 10-row batches, drop_last. */
static void test_resumed(void)
{
	static const uint64_t *const want[2] = {expect_c_rank_0, expect_c_rank_1};
	static const size_t nwant[2] = {sizeof expect_c_rank_0 / sizeof(uint64_t),
					sizeof expect_c_rank_1 / sizeof(uint64_t)};
	mt_plan_share before = {3, 8, 0, 4}, share = {2, 10, 1, 0};
	for (unsigned r = 0; r < 2; r++) {
		mt_plan p;
		mt_error err = {0};
		char what[64];
		snprintf(what, sizeof what, "resumed after 3:8:0:4, rank %u of 2", r);
		if (plan_make(&p, 24, 1, 42) == 0 &&
		    TAP_CALL(mti_plan_epoch(&p, 3, &before, 1, r, &share, &err), &err, "%s: plan",
			     what))
			check_share(what, &p, 5, want[r], nwant[r]);
		mti_plan_free(&p);
	}
}

static void test_one_rank(void)
{
	mt_plan p;
	mt_error err = {0};
	mt_plan_share share = {1, 50, 0, 0};
	if (plan_make(&p, 64, 1, 0xfeedfacecafebeefull) == 0 &&
	    TAP_CALL(mti_plan_epoch(&p, 0, NULL, 0, 0, &share, &err), &err, "one rank: plan"))
		check_share("a 64-bit seed, epoch 0, window 64, one rank", &p, 4, expect_d,
			    sizeof expect_d / sizeof(uint64_t));
	mti_plan_free(&p);
	share.batch_rows = 64;
	if (plan_make(&p, 24, 0, 42) == 0 &&
	    TAP_CALL(mti_plan_epoch(&p, 5, NULL, 0, 0, &share, &err), &err, "unshuffled: plan")) {
		uint64_t rows[256];
		size_t n = 0;
		int in_order = share_rows(&p, rows, 256, &n) == 0 && n == 200;
		for (size_t i = 0; in_order && i < n; i++)
			in_order = rows[i] == i;
		tap_ok(in_order, "without shuffle: rows 0..199 in order, whatever the seed and epoch");
	}
	mti_plan_free(&p);
}

int main(void)
{
	test_streams();
	test_ranks();
	test_resumed();
	test_one_rank();
	return tap_done();
}
