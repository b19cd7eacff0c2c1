/* pool.c — run independent jobs on a few threads and collect the first failure. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>

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
