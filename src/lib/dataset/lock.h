/* lock.h — dataset locks: writers pin what their manifest will name, gc keeps what is pinned (doc/FORMAT.md, "Writers and gc"). */
#ifndef MT_LOCK_H
#define MT_LOCK_H

#include "store.h"

/* A writer's or a gc's lock on one dataset of a store: the object
 * datasets/<dataset>/locks/<id>.<kind>, rewritten by a background thread
 * every ttl/4 seconds so its mtime (the store's clock) says it is alive.
 * A lock whose object is older than its ttl is dead: its holder stopped
 * (or lost the store for longer than the ttl, and then may not commit). */
typedef struct mt_dlock mt_dlock;

enum { MT_LOCK_WRITE, MT_LOCK_GC };

/* Seconds a lock lives without a refresh: $MATORAGE_LOCK_TTL, else 120. */
MT_LOCAL double mti_lock_ttl(void);

/* `dataset` is a dataset's name, or the key root of a model
 * ("models/NAME"): its locks are then under models/NAME/locks/. */
MT_LOCAL int mti_dlock_open(mt_store *s, const char *dataset, int kind, mt_dlock **out,
			   mt_error *err);
/* Pin a version (in place of the one pinned before: a writer builds on
 * one parent): gc keeps every object its manifest names, and refuses to
 * delete anything of the dataset when that manifest has been removed, as
 * it can no longer tell which objects the version named. */
MT_LOCAL int mti_dlock_pin_version(mt_dlock *l, const char *version, mt_error *err);
/* Pin objects (full keys) before relying on them: one small object
 * datasets/<dataset>/locks/<id>.<n>.pin listing the keys, a line each. */
MT_LOCAL int mti_dlock_pin_keys(mt_dlock *l, const char *const *keys, size_t n, mt_error *err);
/* Wait while a live gc holds a lock on the dataset.  After pinning an
 * object that already exists, a writer calls this before it checks the
 * object again and reuses it: a gc that started before the pin may have
 * missed it and may be deleting the object. */
MT_LOCAL int mti_dlock_wait_gc(mt_dlock *l, mt_error *err);
/* Refresh now; MT_ESTATE when a refresh ever came later than the ttl
 * allows: a gc may have taken the lock for dead and ignored its pins. */
MT_LOCAL int mti_dlock_check(mt_dlock *l, mt_error *err);
/* Release: remove the pins and the lock object.  Accepts NULL. */
MT_LOCAL void mti_dlock_close(mt_dlock *l);

/* What the live writer locks of a dataset pin, read by gc. */
typedef struct mt_pins {
	char **keys; /* sorted */
	size_t nkeys;
	char **versions;
	size_t nversions;
	size_t writers;  /* live writer locks */
	int64_t now;     /* the store's clock: the newest mtime under locks/ */
	char **dead;     /* objects of locks dead for over twice their ttl */
	size_t ndead;
	char *writer;    /* "host pid N" of one live writer, for messages */
} mt_pins;

/* Read the locks of `dataset`.  `self` (may be NULL) is the caller's own
 * lock, which is not counted. */
MT_LOCAL int mti_dlock_pins(mt_store *s, const char *dataset, const mt_dlock *self, mt_pins *out,
			   mt_error *err);
MT_LOCAL int mti_pins_has_key(const mt_pins *p, const char *key);
/* gc's rule for a listed object: 1 when it may go, for no reference names
 * it (ref[0..nref), sorted), it is no newer than cutoff (the grace period)
 * and no live writer pins it. */
MT_LOCAL int mti_gc_may_delete(const mt_obj *o, char *const *ref, size_t nref, int64_t cutoff,
			      const mt_pins *p);
MT_LOCAL void mti_pins_free(mt_pins *p);

#endif
