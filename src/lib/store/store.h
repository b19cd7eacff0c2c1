/* store.h — the object store behind a table of functions: ranged get, (multipart) put, head, paginated list, delete. */
#ifndef MT_STORE_H
#define MT_STORE_H

#include <sys/uio.h>

#include "util.h"

/* One listed object. */
typedef struct mt_obj {
	char *key;
	uint64_t size;
	int64_t mtime; /* seconds since the epoch */
	char *etag;    /* the server's digest of the object (S3's ETag, unquoted); NULL: none */
} mt_obj;

/* One page of a listing.  `next` is the continuation token for the next
 * page, NULL when this was the last.  A page may hold fewer than the
 * maximum, even none, and still have a next one (S3 does this). */
typedef struct mt_list_page {
	mt_obj *objs;
	size_t n;
	char *next;
} mt_list_page;
MT_LOCAL void mti_list_page_free(mt_list_page *p);

/* An object being written in parts (multipart upload on S3, a temporary
 * file on fs).  Nothing is visible under the key before commit. */
typedef struct mt_upload mt_upload;

/* put flags */
#define MT_PUT_EXCLUSIVE 1 /* fail with MT_EEXIST when the key exists (manifests) */
#define MT_PUT_NOSYNC 2    /* durable only after a later sync of the key (shards) */

typedef struct mt_store_ops {
	const char *scheme;
	/* 1: every request pays a network round trip, so readers fetch runs
	 * of adjacent ranges with one request; 0: a local read is cheap, and
	 * one read per range keeps decoding spread over threads. */
	int far;
	/* Read len bytes at offset (len UINT64_MAX: to the end) into a new
	 * malloc'ed buffer.  MT_ENOTFOUND for a missing key; a range past the
	 * end is MT_ERANGE. */
	int (*get)(mt_store *s, const char *key, uint64_t offset, uint64_t len, void **data,
		   size_t *got, mt_error *err);
	/* Read exactly len bytes at offset into a caller buffer. */
	int (*read)(mt_store *s, const char *key, uint64_t offset, void *buf, size_t len,
		    mt_error *err);
	int (*put)(mt_store *s, const char *key, const void *data, size_t len, int flags,
		   mt_error *err);
	int (*upload_open)(mt_store *s, const char *key, int flags, mt_upload **out, mt_error *err);
	/* Parts are appended in call order; not thread-safe per upload. */
	int (*upload_write)(mt_upload *u, const void *data, size_t len, mt_error *err);
	/* Make the object visible under its key.  Frees u, whether it
	 * succeeds or not: a failed commit leaves nothing under the key. */
	int (*upload_commit)(mt_upload *u, mt_error *err);
	void (*upload_abort)(mt_upload *u); /* discard the parts, free u */
	/* size and mtime may each be NULL (every backend honours both): a
	 * caller may ask only whether the key exists. */
	int (*head)(mt_store *s, const char *key, uint64_t *size, int64_t *mtime, mt_error *err);
	/* Keys under prefix, sorted, at most max per page (0: the backend's
	 * default); token NULL for the first page. */
	int (*list)(mt_store *s, const char *prefix, const char *token, size_t max,
		    mt_list_page *page, mt_error *err);
	/* The distinct next path segments under prefix, each returned as an
	 * object whose key is prefix + segment + "/" (S3's CommonPrefixes with
	 * delimiter '/'): listing datasets then costs one entry per dataset,
	 * not one per shard.  Sorted, paged like list; size and mtime are 0. */
	int (*list_prefixes)(mt_store *s, const char *prefix, const char *token, size_t max,
			     mt_list_page *page, mt_error *err);
	/* Delete keys; a missing key is not an error. */
	int (*del)(mt_store *s, const char *const *keys, size_t n, mt_error *err);
	/* Make objects written with MT_PUT_NOSYNC durable: one flush for many
	 * objects instead of a stall per object. */
	int (*sync)(mt_store *s, const char *const *keys, size_t n, mt_error *err);
	/* Find (and unless dry_run remove) uploads under prefix that were
	 * started before `before` (epoch seconds) and never finished: temporary
	 * files of a crashed writer, abandoned multipart uploads. */
	int (*sweep)(mt_store *s, const char *prefix, int64_t before, int dry_run,
		     uint64_t *n, uint64_t *bytes, mt_error *err);
	void (*close)(mt_store *s);
	/* Optional (NULL: read the object and compare): whether key holds
	 * exactly these bytes, answered as mti_store_holds does but cheaper
	 * where the server keeps a digest of each object (S3's ETag). */
	int (*holds)(mt_store *s, const char *key, const void *data, size_t len, mt_error *err);
	/* Optional (NULL: cannot tell): 1 when a listed object o holds exactly
	 * these bytes by its size and digest, 0 when it does not or the digest
	 * cannot say (an ETag of another upload form, or of encryption). */
	int (*listed_holds)(const mt_obj *o, const void *data, size_t len);
	/* Optional (NULL: through get or put and a copy): read the bytes at
	 * offset scattered over iov, or put an object gathered from it, for a
	 * large object laid out in the caller's memory with small headers
	 * between (a raw zstd frame).  readv is MT_ERANGE when the object
	 * ends first. */
	int (*readv)(mt_store *s, const char *key, uint64_t offset, const struct iovec *iov,
		     size_t n, mt_error *err);
	int (*putv)(mt_store *s, const char *key, const struct iovec *iov, size_t n, int flags,
		    mt_error *err);
} mt_store_ops;

/* Every backend's handle starts with this. */
struct mt_store {
	const mt_store_ops *ops;
	char *url;
};

/* Backends */
/* root is absolute and clean.  A missing root is made with create 1; with 0
 * it is MT_ENOTFOUND; with -1 the store opens and reads as empty (the
 * default store before its first write).  Only 1 creates anything. */
MT_LOCAL int mti_store_fs_open(const char *root, int create, mt_store **out, mt_error *err);
/* url is "s3://BUCKET[/PREFIX]"; o is never NULL. */
MT_LOCAL int mti_store_s3_open(const char *url, const mt_store_opts *o, mt_store **out,
			      mt_error *err);

/* store-cache.c: a read-only view of inner whose shard objects are kept
 * whole in directory dir (at most cap bytes, least recently used evicted),
 * each downloaded once across threads and processes, checked against its
 * sha256 name and renamed into place; dir NULL keeps them in memory
 * instead (those that fit under cap).  inner stays the caller's. */
MT_LOCAL int mti_store_cache_open(mt_store *inner, const char *dir, uint64_t cap, mt_store **out,
				 mt_error *err);

/* remote.c: the remote called name, MT_ENOTFOUND when none is (and when
 * there is no configuration file).  Free with mti_remotes_free_one. */
MT_LOCAL int mti_remote_find(const char *name, mt_remote *out, mt_error *err);
MT_LOCAL void mti_remotes_free_one(mt_remote *r);

/* Convenience over ops that also name the key in errors. */
MT_LOCAL int mti_store_get(mt_store *s, const char *key, uint64_t offset, uint64_t len,
			  void **data, size_t *got, mt_error *err);
/* The whole object, refused (MT_ECORRUPT naming the key) when it holds
 * more than max bytes: decided before it is read (a HEAD on a local store;
 * a range one byte past the cap on a far one), so an object of any size
 * costs at most max + 1 bytes. */
MT_LOCAL int mti_store_get_max(mt_store *s, const char *key, uint64_t max, void **data,
			      size_t *got, mt_error *err);
/* mti_store_get_max with the store as a void *: the reader of objects the
 * format room takes (mti_get_fn), which knows nothing of stores. */
MT_LOCAL int mti_store_get_fn(void *s, const char *key, uint64_t max, void **data, size_t *got,
			      mt_error *err);
MT_LOCAL int mti_store_read(mt_store *s, const char *key, uint64_t offset, void *buf, size_t len,
			   mt_error *err);
MT_LOCAL int mti_store_put(mt_store *s, const char *key, const void *data, size_t len, int flags,
			  mt_error *err);
/* ops->readv and ops->putv, or their equivalent through a copy. */
MT_LOCAL int mti_store_readv(mt_store *s, const char *key, uint64_t offset,
			    const struct iovec *iov, size_t n, mt_error *err);
MT_LOCAL int mti_store_putv(mt_store *s, const char *key, const struct iovec *iov, size_t n,
			   int flags, mt_error *err);
MT_LOCAL int mti_store_head(mt_store *s, const char *key, uint64_t *size, int64_t *mtime,
			   mt_error *err);
MT_LOCAL int mti_store_del(mt_store *s, const char *const *keys, size_t n, mt_error *err);
/* Whether key holds exactly these bytes: 1 it does, 0 there is no such key,
 * MT_EEXIST it holds other bytes (err not filled); another failure fills err.
 * Uses the backend's holds when it has one. */
MT_LOCAL int mti_store_holds(mt_store *s, const char *key, const void *data, size_t len,
			     mt_error *err);
/* ops->listed_holds, or 0 where the backend has none. */
MT_LOCAL int mti_store_listed_holds(mt_store *s, const mt_obj *o, const void *data, size_t len);
/* Call fn for every object under prefix, page by page; stop early when fn
 * returns nonzero (that value is returned).  With `prefixes`, fn gets the
 * next path segments instead (ops->list_prefixes). */
MT_LOCAL int mti_store_list_all(mt_store *s, const char *prefix,
			       int (*fn)(void *ud, const mt_obj *o), void *ud, mt_error *err);
MT_LOCAL int mti_store_list_prefixes(mt_store *s, const char *prefix,
				    int (*fn)(void *ud, const mt_obj *o), void *ud, mt_error *err);
/* The child an entry of mti_store_list_prefixes(s, root, ...) stands for:
 * "<root><name>/" gives *name = "<name>" (malloc'ed; MT_ENOMEM when out of
 * memory), any other entry *name = NULL. */
MT_LOCAL int mti_prefix_child(const mt_obj *o, const char *root, char **name);

#endif
