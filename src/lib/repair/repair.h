/* repair.h — internal glue between repair.c (checking, other stores, writing back), repair-rebuild.c (parity, the manifest, the sources) and repair-salvage.c. */
#ifndef MT_REPAIR_H
#define MT_REPAIR_H

#include <pthread.h>

#include "format.h"
#include "lock.h"
#include "protect.h"
#include "store.h"

enum { RP_SOUND, RP_DAMAGED, RP_REPAIRABLE, RP_REBUILT };

/* One object of the version being repaired. */
typedef struct rp_obj {
	char *key;
	char sha256[65];
	uint64_t bytes;
	int kind;             /* MT_REPAIR_SHARD ... */
	int state;            /* RP_* */
	size_t number;        /* shard (fragment) number, group number (parity) */
	uint64_t first_row, rows;
	char *problem;        /* what is wrong with it */
	const char *source;   /* what rebuilt it (static or a source's name) */
	size_t src;           /* 1 + the index in c->src of the store found holding it, 0: none */
	uint64_t read;        /* bytes read for it */
	uint8_t *data;        /* rebuilt bytes waiting to be written back */
} rp_obj;

/* Another store to look in: `flat` for a loader's cache directory, whose
 * files are <sha256>.h5 and hold shards only. */
typedef struct rp_source {
	mt_store *store;
	char *name;
	int owned, flat;
} rp_source;

typedef struct rp_ctx {
	mt_store *s;
	mt_repair_opts o;
	mt_repair_stats *st;
	const char *dataset, *version;
	mt_manifest *m;       /* the version's manifest, once found */
	char *mjson;          /* its text */
	size_t mlen;
	rp_obj mobj;          /* the manifest as an object */
	int mmissing;         /* it was not there at all (not damaged) */
	mti_prec *p;          /* its protection record; NULL when unprotected */
	rp_obj robj;          /* the record as an object, once found damaged */
	char *rjson;          /* a sound copy of it from another store, to write back */
	size_t rlen;
	rp_obj *objs;
	size_t nobjs, capobjs;
	size_t from;          /* objs before it were checked by an earlier pass */
	/* What mti_rp_parity rebuilds from: the record's groups over shards,
	 * or (format 2, first) over fragments; gkind is their members' kind. */
	const mti_pgroup *groups;
	size_t ngroups;
	int gkind;
	rp_source *src;
	size_t nsrc;
	mt_dlock *dlock;      /* taken at the first write back */
	pthread_mutex_t lock; /* stats, progress, the first failure */
	pthread_mutex_t wlock; /* the lock and its pins */
	uint64_t done, total;
	int canceled;
	int failed;
	mt_error failure;
	char **held;          /* names reports point at ("parity of v2"), freed after them */
	size_t nheld;
} rp_ctx;

MT_LOCAL void mti_rp_obj_clear(rp_obj *o);
MT_LOCAL int mti_rp_fail(rp_ctx *c, int rc, const mt_error *e);
MT_LOCAL void mti_rp_add_read(rp_ctx *c, rp_obj *o, uint64_t n);
/* Read key whole: MT_ECORRUPT (and *why) when it is missing, not `bytes`
 * long, or (sha256 not NULL) does not hash to sha256. */
MT_LOCAL int mti_rp_fetch(mt_store *s, const char *key, const char *sha256, uint64_t bytes,
			  void **data, uint64_t *nread, char **why, mt_error *err);
/* Take the dataset's writer lock once, naming the version. */
MT_LOCAL int mti_rp_lock(rp_ctx *c, mt_error *err);
/* o->data (o->bytes) back under o->key, checked against o->sha256 before
 * and after; a dry run only checks it. */
MT_LOCAL int mti_rp_write_back(rp_ctx *c, rp_obj *o, mt_error *err);

/* repair-rebuild.c */
MT_LOCAL int mti_rp_sources_open(rp_ctx *c, mt_error *err);
MT_LOCAL void mti_rp_sources_close(rp_ctx *c);
/* o whole from source k, held against its sha256 and size as mti_rp_fetch. */
MT_LOCAL int mti_rp_source_fetch(rp_ctx *c, size_t k, const rp_obj *o, void **data,
				 uint64_t *nread, mt_error *err);
/* The versions to repair: the one named, or every version of the dataset
 * and every one a protection record names whose manifest is gone. */
MT_LOCAL int mti_rp_versions(rp_ctx *c, const char *version, char ***out, size_t *n,
			     mt_error *err);
/* Find c->version's manifest (and record): 0, or 1 when the version was
 * removed (a tombstone: nothing to repair). */
MT_LOCAL int mti_rp_manifest_find(rp_ctx *c, mt_error *err);
MT_LOCAL int mti_rp_manifest_write(rp_ctx *c, mt_error *err);
/* A damaged record back from another store's copy, once its parity objects
 * are all sound: before the manifest, which stays the last write. */
MT_LOCAL int mti_rp_record_write(rp_ctx *c, mt_error *err);
/* Loads the version's protection record into c->p; a damaged one goes to
 * c->robj (RP_DAMAGED, its problem without the key) and c->p stays NULL. */
MT_LOCAL int mti_rp_record_load(rp_ctx *c, mt_error *err);
/* The record is no record after all (why: e's message): noted in c->robj
 * as mti_rp_record_load notes a damaged one, c->p freed. */
MT_LOCAL int mti_rp_record_damaged(rp_ctx *c, const mt_error *e, mt_error *err);
MT_LOCAL int mti_rp_parity(rp_ctx *c, mt_error *err);

/* repair-siblings.c: objects of `kind` (shards, or fragments) still
 * damaged that another version's protection record lists as members (of
 * its shard groups, or its fragment groups), rebuilt from that version's
 * parity. */
MT_LOCAL int mti_rp_siblings(rp_ctx *c, int kind, mt_error *err);

/* repair-salvage.c */
MT_LOCAL int mti_rp_salvage(rp_ctx *c, mt_error *err);
/* Damaged shards whose index and chunks are intact, written again from
 * them (only their HDF5 metadata was damaged). */
MT_LOCAL int mti_rp_container(rp_ctx *c, mt_error *err);

#endif
