/* ckpt.h — internal glue between the model checkpoint writer, reader and the copies, gc and verify of models. */
#ifndef MT_CKPT_H
#define MT_CKPT_H

#include "protect.h"
#include "store.h"

/* Keys of a model's objects (doc/FORMAT.md, "Models"); malloc'ed. */
MT_LOCAL char *mti_ckpt_root(const char *name);
MT_LOCAL char *mti_ckpt_key_manifest(const char *name, const char *version);
MT_LOCAL char *mti_ckpt_key_tombstone(const char *name, const char *version);
MT_LOCAL char *mti_ckpt_key_tensor(const char *name, const char *sha256);

/* The checkpoints of a model, oldest (smallest number) first, and in *max
 * (when not NULL) the largest number among them and the tombstones: the
 * next checkpoint is v<max+1>.  An empty list is not an error here. */
MT_LOCAL int mti_ckpt_versions(mt_store *s, const char *name, char ***out, size_t *n,
			      uint64_t *max, mt_error *err);

/* Open name@version from a manifest's text (len bytes), which it checks
 * (checksum, names, tensors); `what` (the key) is named in errors. */
MT_LOCAL int mti_ckpt_decode(const char *json, size_t len, const char *name, const char *version,
			    const char *what, mt_ckpt **out, mt_error *err);

/* The size caps of a checkpoint's "meta" (a json_t *): its author,
 * description and tags as a manifest's (doc/FORMAT.md, "Size caps");
 * `code` is what a breach returns. */
struct json_t;

/* Protection of checkpoints (ckpt-protect.c): the keys, the record (an
 * mti_prec whose `dataset` is the model and whose members are the
 * checkpoint's distinct tensor objects, `shard` their first tensor's index;
 * MT_ENOTFOUND when unprotected), and a tensor's raw bytes rebuilt from the
 * rest of its group (out: the tensor's bytes; nread may be NULL). */
/* Push the keys of the tensor objects checkpoint `version` names onto *keys. */
MT_LOCAL int mti_ckpt_tensor_keys(mt_store *s, const char *name, const char *version,
				  char ***keys, size_t *n, mt_error *err);
/* Delete those of the tensor objects `keys` (sorted in place) that no
 * checkpoint names and no live writer pins, at once (no grace period), as
 * gc does under its lock: what retention dropped. */
MT_LOCAL int mti_ckpt_reclaim(mt_store *s, const char *name, char **keys, size_t n,
			      mt_error *err);
MT_LOCAL char *mti_ckpt_key_protect(const char *name, const char *version);
MT_LOCAL char *mti_ckpt_key_parity(const char *name, const char *sha256);
MT_LOCAL int mti_ckpt_prec_load(mt_store *s, const char *name, const char *version,
			       mti_prec **out, mt_error *err);
MT_LOCAL int mti_ckpt_rebuild(mt_store *s, const mti_prec *p, const char *sha256, void *out,
			     uint64_t *nread, mt_error *err);
/* Check the m parity objects of group gi of p against their sha256:
 * state[r] (MT_REPAIR_*) and why[r] (malloc'ed, NULL when sound) for each;
 * a damaged one is repairable when the group's members are sound, and with
 * fix it is coded again from them and written back (rebuilt).  Nonzero
 * only for what stopped the check (no memory, a write that failed). */
MT_LOCAL int mti_ckpt_parity_check(mt_store *s, const mti_prec *p, size_t gi, int fix, int *state,
				   char **why, uint64_t *nread, mt_error *err);
MT_LOCAL int mti_ckpt_meta_caps(struct json_t *meta, int code, const char *what, mt_error *err);

#endif
