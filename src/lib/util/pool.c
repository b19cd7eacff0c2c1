/* pool.c — run independent jobs on a few threads and collect the first failure. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct job_set {
	int (*fn)(void *ud, size_t i);
	void *ud;
	size_t n;
	atomic_size_t next;
	atomic_int rc;
};

static void *worker(void *arg)
{
	struct job_set *js = arg;
	for (;;) {
		if (atomic_load(&js->rc))
			break;
		size_t i = atomic_fetch_add(&js->next, 1);
		if (i >= js->n)
			break;
		int rc = js->fn(js->ud, i);
		if (rc) {
			int zero = 0;
			atomic_compare_exchange_strong(&js->rc, &zero, rc);
		}
	}
	return NULL;
}

int mti_parallel_for(int threads, size_t n, int (*fn)(void *ud, size_t i), void *ud)
{
	struct job_set js = {.fn = fn, .ud = ud, .n = n};
	atomic_init(&js.next, 0);
	atomic_init(&js.rc, 0);
	if (threads < 1)
		threads = 1;
	if ((size_t)threads > n)
		threads = n ? (int)n : 1;
	pthread_t tid[256];
	int started = 0;
	/* Threads that fail to start just leave more work for the others. */
	for (int t = 1; t < threads && t < 256; t++)
		if (pthread_create(&tid[started], NULL, worker, &js) == 0)
			started++;
	worker(&js);
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	return atomic_load(&js.rc);
}

/* ---- per-thread scratch buffers ---------------------------------------- */

struct scratch {
	void *p[MTI_SCRATCH_SLOTS];
	size_t cap[MTI_SCRATCH_SLOTS];
};

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_ok;

/* The buffers of threads that ended, for the next threads to take: the
 * jobs' threads last one read each, and a MiB freed back to the kernel at
 * every thread's end faults in again in the next (a sixth of a loader's
 * cycles went to clearing those pages). */
#define SCRATCH_SPARE 16
/* Larger buffers (a version of huge chunks) are not kept past their thread. */
#define SCRATCH_SPARE_MAX (8u << 20)
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct scratch *spare[SCRATCH_SPARE];
static int nspare;

static void scratch_free(void *v)
{
	struct scratch *s = v;
	for (int i = 0; i < MTI_SCRATCH_SLOTS; i++)
		if (s->cap[i] > SCRATCH_SPARE_MAX) {
			mti_huge_free(s->p[i], s->cap[i]);
			s->p[i] = NULL;
			s->cap[i] = 0;
		}
	pthread_mutex_lock(&spare_lock);
	if (nspare < SCRATCH_SPARE) {
		spare[nspare++] = s;
		s = NULL;
	}
	pthread_mutex_unlock(&spare_lock);
	for (int i = 0; s && i < MTI_SCRATCH_SLOTS; i++)
		mti_huge_free(s->p[i], s->cap[i]);
	free(s);
}

static struct scratch *scratch_take(void)
{
	struct scratch *s = NULL;
	pthread_mutex_lock(&spare_lock);
	if (nspare)
		s = spare[--nspare];
	pthread_mutex_unlock(&spare_lock);
	return s ? s : calloc(1, sizeof *s);
}

/* As for the chunk cache: a fork while an ending thread holds spare_lock
 * would leave it held in the child, so fork() takes it first. */
static void spare_fork_prepare(void)
{
	pthread_mutex_lock(&spare_lock);
}

static void spare_fork_after(void)
{
	pthread_mutex_unlock(&spare_lock);
}

static void scratch_init(void)
{
	scratch_ok = !pthread_atfork(spare_fork_prepare, spare_fork_after, spare_fork_after) &&
		     pthread_key_create(&scratch_key, scratch_free) == 0;
}

void *mti_thread_scratch(int slot, size_t n)
{
	pthread_once(&scratch_once, scratch_init);
	if (!scratch_ok || slot < 0 || slot >= MTI_SCRATCH_SLOTS)
		return NULL;
	struct scratch *s = pthread_getspecific(scratch_key);
	if (!s) {
		if (!(s = scratch_take()))
			return NULL;
		if (pthread_setspecific(scratch_key, s)) {
			scratch_free(s);
			return NULL;
		}
	}
	/* A decoded chunk (a MiB by default) goes on huge pages: one fault
	 * for the thread's first chunk, not 256 (mti_huge_alloc). */
	if (n > s->cap[slot] || !s->p[slot]) {
		mti_huge_free(s->p[slot], s->cap[slot]);
		s->p[slot] = mti_huge_alloc(n, &s->cap[slot]);
	}
	return s->p[slot];
}
