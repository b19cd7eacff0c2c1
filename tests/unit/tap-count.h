/* tap-count.h — a store's object reads watched by a unit test: its ops wrapped so that every get or read of a key holding a given substring is counted, or handed to the test's own hook (with the range read, to tap_watch.hook_at). */
#ifndef MT_TAP_COUNT_H
#define MT_TAP_COUNT_H

#include <stdatomic.h>
#include <string.h>

#include "store.h"

/* One store watched at a time, as a test's store is one. */
static struct {
	mt_store *store;
	const mt_store_ops *real;
	mt_store_ops ops;
	const char *part;        /* keys holding it are counted */
	void (*hook)(const char *key); /* called for each, when set */
	/* called for each with the range read, when set after tap_watch_reads */
	void (*hook_at)(const char *key, uint64_t off, uint64_t len);
	atomic_int n;
} tap_watch;

static inline void tap_watch_key(const char *key, uint64_t off, uint64_t len)
{
	if (!strstr(key, tap_watch.part))
		return;
	atomic_fetch_add(&tap_watch.n, 1);
	if (tap_watch.hook)
		tap_watch.hook(key);
	if (tap_watch.hook_at)
		tap_watch.hook_at(key, off, len);
}

static inline int tap_watch_get(mt_store *s, const char *key, uint64_t off, uint64_t len,
				void **data, size_t *got, mt_error *err)
{
	tap_watch_key(key, off, len);
	return tap_watch.real->get(s, key, off, len, data, got, err);
}

static inline int tap_watch_read(mt_store *s, const char *key, uint64_t off, void *buf,
				 size_t len, mt_error *err)
{
	tap_watch_key(key, off, len);
	return tap_watch.real->read(s, key, off, buf, len, err);
}

/* Count s's gets and reads of keys holding part from now on (hook, when
 * not NULL, is told each key), until tap_unwatch. */
static inline void tap_watch_reads(mt_store *s, const char *part, void (*hook)(const char *key))
{
	tap_watch.store = s;
	tap_watch.real = s->ops;
	tap_watch.ops = *s->ops;
	tap_watch.ops.get = tap_watch_get;
	tap_watch.ops.read = s->ops->read ? tap_watch_read : NULL;
	tap_watch.part = part;
	tap_watch.hook = hook;
	tap_watch.hook_at = NULL;
	atomic_store(&tap_watch.n, 0);
	s->ops = &tap_watch.ops;
}

/* The reads counted since tap_watch_reads or tap_reads_reset. */
static inline int tap_reads(void)
{
	return atomic_load(&tap_watch.n);
}

static inline void tap_reads_reset(void)
{
	atomic_store(&tap_watch.n, 0);
}

static inline void tap_unwatch(void)
{
	if (tap_watch.store)
		tap_watch.store->ops = tap_watch.real;
	tap_watch.store = NULL;
}

#endif
