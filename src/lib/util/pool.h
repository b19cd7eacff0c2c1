/* pool.h — a fixed set of worker threads running independent jobs, used to compress and decompress chunks in parallel. */
#ifndef MT_POOL_H
#define MT_POOL_H

#include "util.h"

typedef struct mt_pool mt_pool;

/* Run fn(ud, i) for i in [0, n) on up to `threads` threads (the caller's
 * thread among them) and wait for all.  Returns the first nonzero value a
 * job returned (later jobs are skipped once one fails), else 0. */
MT_LOCAL int mti_parallel_for(int threads, size_t n, int (*fn)(void *ud, size_t i), void *ud);

/* A buffer of at least n bytes that belongs to the calling thread, one per
 * slot (0 to MTI_SCRATCH_SLOTS - 1): kept for the thread's next call, freed
 * when the thread ends; contents not kept when it grows.  For buffers a
 * job needs per chunk: a fresh malloc of a MiB each time is handed back to
 * the kernel on free and faults in again.  From MTI_HUGE_MIN bytes on it is
 * on huge pages (mti_huge_alloc).  NULL when out of memory. */
#define MTI_SCRATCH_SLOTS 2
MT_LOCAL void *mti_thread_scratch(int slot, size_t n);

#endif
