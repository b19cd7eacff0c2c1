/* loader-plan.h — the order a loader delivers rows in: a pure function of the shard layout, seed, epoch, window and the ranks' shares (no I/O, no threads). */
#ifndef MT_LOADER_PLAN_H
#define MT_LOADER_PLAN_H

#include "util.h"

/*
 * The order uses integers only: splitmix64 streams and Lemire's unbiased
 * bounded draws, never floating point or the platform's rand(), so a plan
 * is the same on every platform (tests/unit/test-loader-plan pins it).
 */

/* The next value of a splitmix64 stream whose state is *state. */
MT_LOCAL uint64_t mti_plan_splitmix(uint64_t *state);
/* The state of the stream for (seed, epoch, stream): streams never share a sequence.
 * Stream 0 orders the units, stream w + 1 the rows of window w. */
MT_LOCAL uint64_t mti_plan_stream(uint64_t seed, uint64_t epoch, uint64_t stream);

/* A run of consecutive rows inside one shard: what is read in one go. */
typedef struct mt_plan_unit {
	uint64_t first_row, rows;
} mt_plan_unit;

/* Positions [begin, end) of an epoch's sequence. */
typedef struct mt_plan_span {
	uint64_t begin, end;
} mt_plan_span;

/* How an epoch's rows are shared: world ranks taking batches of batch_rows
 * (only full ones with drop_last).  In a resume token's stages,
 * batches_taken is how many each rank had taken when the token was made. */
typedef struct mt_plan_share {
	unsigned world;
	uint64_t batch_rows;
	int drop_last;
	uint64_t batches_taken;
} mt_plan_share;

typedef struct mt_plan {
	/* What the order is drawn from. */
	uint64_t rows;        /* of the version */
	uint64_t window_rows; /* at most this many rows shuffled together */
	uint64_t unit_rows;   /* at most this many rows per unit */
	int shuffle;
	uint64_t seed;
	uint64_t epoch;
	mt_plan_unit *units; /* in row order */
	size_t nunits, units_cap;

	/* The epoch's sequence: units in unit_order, cut into windows. */
	size_t *unit_order;
	size_t nwindows;
	size_t *window_unit;      /* window w: unit_order[window_unit[w] .. window_unit[w + 1]) */
	uint64_t *window_start;   /* window w: positions [window_start[w], window_start[w + 1]) */

	/* The positions earlier shares of this epoch (a token's stages) left,
	 * ascending, and how many live positions precede each span. */
	mt_plan_span *live;
	size_t nlive;
	uint64_t *live_before;
	uint64_t live_rows;

	/* This rank's share of the live positions. */
	unsigned rank;
	mt_plan_share share;
	uint64_t share_rows; /* indices [rank * share_rows, (rank + 1) * share_rows) */
	uint64_t batches;    /* batches each rank gets */
	size_t *rank_windows; /* the windows the share lies in, in the order it meets them */
	size_t nrank_windows;
	mt_plan_span *mine;   /* the positions of the share (padding aside), ascending */
	size_t nmine;
	/* Which making of a plan this is: each mti_plan_epoch stamps one never
	 * used before (in this process), so what was worked out of a plan can
	 * be kept under it and never taken for another's. */
	uint64_t made;
} mt_plan;

/* An empty plan for `rows` rows, windows of window_rows (>= 2) and units of
 * unit_rows (>= 1); shards are then added in row order. */
MT_LOCAL void mti_plan_init(mt_plan *p, uint64_t rows, uint64_t window_rows, uint64_t unit_rows,
			   int shuffle, uint64_t seed);
/* Cut shard [first_row, first_row + rows) into units. */
MT_LOCAL int mti_plan_add_shard(mt_plan *p, uint64_t first_row, uint64_t rows, mt_error *err);
/* dst (uninitialized or freed) as an empty plan with src's parameters and
 * units: another epoch's plan of the same version. */
MT_LOCAL int mti_plan_copy_layout(mt_plan *dst, const mt_plan *src, mt_error *err);
/* The sequence of `epoch`, the positions the shares in stages[0..nstages)
 * left, and rank's share of them under `share` (its batches_taken unused). */
MT_LOCAL int mti_plan_epoch(mt_plan *p, uint64_t epoch, const mt_plan_share *stages,
			   size_t nstages, unsigned rank, const mt_plan_share *share,
			   mt_error *err);
MT_LOCAL void mti_plan_free(mt_plan *p);

/* The window holding sequence position pos. */
MT_LOCAL size_t mti_plan_window_of(const mt_plan *p, uint64_t pos);
/* Rows in window w. */
MT_LOCAL uint64_t mti_plan_window_rows(const mt_plan *p, size_t w);
/* Window w's rows: rowid[j] the j-th in unit order, perm[i] the unit-order
 * index of the window's i-th row in the sequence (n = its rows). */
MT_LOCAL void mti_plan_window_rowids(const mt_plan *p, size_t w, uint64_t *rowid);
MT_LOCAL void mti_plan_window_perm(const mt_plan *p, size_t w, uint64_t *perm, uint64_t n);
/* The sequence position of index i of the shares (i >= live_rows: padding,
 * positions from the start of the live ones again). */
MT_LOCAL uint64_t mti_plan_position(const mt_plan *p, uint64_t i);
/* The row at sequence position pos, without the window at hand. */
MT_LOCAL int mti_plan_row_at(const mt_plan *p, uint64_t pos, uint64_t *row, mt_error *err);
/* need[i] (window w's units in sequence order, i from 0) set to whether
 * any row of that unit lies at a position of this rank's share; perm is
 * the window's (mti_plan_window_perm).  A rank reads only those units. */
MT_LOCAL void mti_plan_window_need(const mt_plan *p, size_t w, const uint64_t *perm, char *need);
/* Batch k of this rank's share: share indices [*first, *first + *n). */
MT_LOCAL void mti_plan_batch(const mt_plan *p, uint64_t k, uint64_t *first, uint64_t *n);

#endif
