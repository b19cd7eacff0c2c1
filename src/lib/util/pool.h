/* pool.h — a fixed set of worker threads running independent jobs, used to compress and decompress chunks in parallel. */
#ifndef MT_POOL_H
#define MT_POOL_H

#include "util.h"

typedef struct mt_pool mt_pool;

/* Run fn(ud, i) for i in [0, n) on up to `threads` threads (the caller's
 * thread among them) and wait for all.  Returns the first nonzero value a
 * job returned (later jobs are skipped once one fails), else 0. */
MT_LOCAL int mti_parallel_for(int threads, size_t n, int (*fn)(void *ud, size_t i), void *ud);

#endif
