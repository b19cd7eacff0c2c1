/* matorage.h — the public API of libmatorage: versioned, sharded numeric datasets in object storage. */
#ifndef MATORAGE_H
#define MATORAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MT_BUILDING_LIBRARY)
#define MT_API __attribute__((visibility("default")))
#else
#define MT_API
#endif

/*
 * Threading: every handle (mt_store, mt_reader, mt_writer) may be used from
 * several threads at once unless a function says otherwise; each handle
 * serialises what must be serialised internally.  mt_error records are
 * per call: give each thread its own.
 *
 * Ownership: strings and arrays a function returns through an out pointer
 * belong to the caller unless the comment says "borrowed"; borrowed
 * pointers stay valid until the handle they came from is closed.  Every
 * close and free function accepts NULL.
 */

#define MT_VERSION_MAJOR 0
#define MT_VERSION_MINOR 1
#define MT_VERSION_PATCH 0
/* The on-disk/in-bucket format this library writes (doc/FORMAT.md). */
#define MT_FORMAT_VERSION 1

/* The library's version as "MAJOR.MINOR.PATCH". */
MT_API const char *mt_version(void);

/* ---- errors ---------------------------------------------------------- */

/* X(name, value, message): the one table codes and messages come from. */
#define MT_ERRORS(X)                                                        \
	X(MT_OK, 0, "success")                                              \
	X(MT_ENOMEM, -1, "out of memory")                                   \
	X(MT_EINVAL, -2, "invalid argument")                                \
	X(MT_EIO, -3, "input/output error")                                 \
	X(MT_ENOTFOUND, -4, "not found")                                    \
	X(MT_EEXIST, -5, "already exists")                                  \
	X(MT_ECORRUPT, -6, "data is corrupt")                               \
	X(MT_EFORMAT, -7, "malformed or unsupported format")                \
	X(MT_ECANCELED, -8, "canceled")                                     \
	X(MT_EHDF5, -9, "HDF5 error")                                       \
	X(MT_ECODEC, -10, "compression error")                              \
	X(MT_EUNSUPPORTED, -11, "not supported")                            \
	X(MT_ERANGE, -12, "out of range")                                   \
	X(MT_ESTATE, -13, "operation not valid in this state")              \
	X(MT_EAUTH, -14, "access denied")                                   \
	X(MT_ENET, -15, "network error")

enum mt_status {
#define MT_ERR_ENUM_(name, value, msg) name = value,
	MT_ERRORS(MT_ERR_ENUM_)
#undef MT_ERR_ENUM_
};

/* A static message for a code; never NULL. */
MT_API const char *mt_strerror(int code);

/* Filled by a failing call: the code and a one-line message naming the
 * object, key, shard or row involved.  Pass NULL when not interested. */
typedef struct mt_error {
	int code;
	char message[512];
} mt_error;

#if defined(__GNUC__)
#define MT_FORMAT_(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define MT_FORMAT_(fmt, args)
#endif
/* Fill err (when not NULL) with code and a printf-style message, cut to fit;
 * returns code, so code layered on the library (a binding, an application)
 * reports its own failures in the same record as the library's:
 * `return mt_error_set(err, MT_EINVAL, "%s: not a number", key);`. */
MT_API int mt_error_set(mt_error *err, int code, const char *fmt, ...) MT_FORMAT_(3, 4);

/* ---- progress --------------------------------------------------------- */

/* Called from the thread doing the work, at most a few times a second and
 * once at the end.  `done` and `total` count bytes unless the operation
 * says otherwise; total may be 0 when unknown.  Return nonzero to cancel:
 * the operation then fails with MT_ECANCELED and commits nothing. */
typedef int (*mt_progress_fn)(void *ud, uint64_t done, uint64_t total);

/* ---- option structs --------------------------------------------------- */

/*
 * Option structs (mt_store_opts, mt_writer_opts, mt_loader_opts) can grow.
 * Each begins with `size`: the struct's size as the caller's matorage.h
 * declares it.  The *_opts_init macros set it, and every other field to
 * its default: start every option struct with one.  Fields are only ever
 * appended.  Given a smaller struct (a caller built against an older
 * matorage.h), the library reads the fields it covers and takes defaults
 * for the rest; a size it does not know (larger than its own: a header
 * newer than the library; or one no *_opts_init set) is MT_EINVAL naming
 * the struct.  Other languages' bindings call the *_opts_init_size
 * functions with the size of their own declaration of the struct.
 */

/* ---- dtypes ----------------------------------------------------------- */

typedef enum mt_dtype {
	MT_DTYPE_INVALID = 0,
	MT_BOOL,
	MT_INT8,
	MT_INT16,
	MT_INT32,
	MT_INT64,
	MT_UINT8,
	MT_UINT16,
	MT_UINT32,
	MT_UINT64,
	MT_FLOAT16,
	MT_FLOAT32,
	MT_FLOAT64,
	/* Brain float (the top 16 bits of a float32), as trained models keep
	 * their weights: for checkpoint tensors only.  Dataset attributes
	 * refuse it (HDF5 and NumPy have no such type). */
	MT_BFLOAT16,
	/* UTF-8 text, one string per row: a ragged attribute of rank 0 whose
	 * items are the bytes of the row's text (lengths in bytes, no NUL
	 * terminator; a row holds no NUL byte).  Stored as ragged uint8 with
	 * the dtype name "str" (doc/FORMAT.md, "Text").  Writers refuse a row
	 * that is not valid UTF-8.  Dataset attributes only. */
	MT_STR
} mt_dtype;

/* Bytes per element; 0 for an invalid dtype. */
MT_API size_t mt_dtype_size(mt_dtype t);
/* NumPy's name ("float32", "bool"); "invalid" for an invalid dtype. */
MT_API const char *mt_dtype_name(mt_dtype t);
/* The dtype named `name` (NumPy names), or MT_DTYPE_INVALID. */
MT_API mt_dtype mt_dtype_parse(const char *name);

/* 0 when len bytes at text are UTF-8 as a str row must be (well-formed,
 * no overlong form, no surrogate, at most U+10FFFF, no NUL), else MT_EINVAL
 * with the offset of the first bad byte in *bad (when not NULL). */
MT_API int mt_utf8_check(const void *text, size_t len, size_t *bad);

/* ---- attributes ------------------------------------------------------- */

#define MT_MAX_RANK 8

/* One column of a dataset.  A fixed attribute's row is an array of
 * `shape[0..rank)` elements (rank 0: a scalar).  A ragged attribute's row
 * is a variable number of items, each item an array of `shape[0..rank)`
 * elements (rank 0: a plain sequence, e.g. token ids). */
typedef struct mt_attr {
	const char *name;
	mt_dtype dtype;
	int rank;
	uint64_t shape[MT_MAX_RANK];
	int ragged;
} mt_attr;

/* Elements in one row (fixed) or one item (ragged). */
MT_API uint64_t mt_attr_items(const mt_attr *a);

/* ---- where matorage keeps its files ----------------------------------- */

/* matorage's directories, by the XDG base directory rules. */
enum { MT_DIR_DATA, MT_DIR_CONFIG, MT_DIR_CACHE };

/* The path of file `name` in matorage's directory of kind dir:
 * MT_DIR_DATA: $XDG_DATA_HOME/matorage/NAME, else ~/.local/share/matorage/NAME
 * (the default store, the catalog); MT_DIR_CONFIG: $XDG_CONFIG_HOME/matorage/NAME,
 * else ~/.config/matorage/NAME (the remotes); MT_DIR_CACHE: $XDG_CACHE_HOME/matorage/NAME,
 * else ~/.cache/matorage/NAME (what a loader keeps of far stores).  An XDG variable that is unset,
 * empty or not an absolute path is ignored, as the specification says.  ~ is
 * $HOME when set and not empty, else the user's home directory in the
 * password database; without either it is MT_EINVAL saying what to set.
 * Nothing is created.  *out is malloc'ed: free() it. */
MT_API int mt_user_path(int dir, const char *name, char **out, mt_error *err);

/* ---- stores ----------------------------------------------------------- */

typedef struct mt_store mt_store;

/* Open a store by URL: "file:///abs/path" or a plain path for a local
 * directory, "s3://BUCKET[/PREFIX]" for an S3-compatible server, or the
 * name of a remote (mt_remote_add).  NULL or "" opens the embedded
 * default: $MATORAGE_STORE if set, else file://$XDG_DATA_HOME/matorage/store
 * (~/.local/share/..., mt_user_path).  A missing directory is created, as a writer needs;
 * a reader opens with mt_store_open_opts and create 0, so that a mistyped
 * path creates nothing. */
MT_API int mt_store_open(const char *url, mt_store **out, mt_error *err);

/* S3 addressing: path style (http://host/bucket/key), virtual-hosted
 * (http://bucket.host/key), or virtual-hosted for AWS and path style for
 * any other endpoint. */
enum { MT_S3_AUTO = 0, MT_S3_PATH, MT_S3_VIRTUAL };

/* How to reach a store; only S3 reads them.  A NULL or 0 field takes its
 * value from the remote named by the URL, else from the environment and
 * the AWS configuration files, as the AWS CLI does: AWS_ENDPOINT_URL,
 * AWS_REGION / AWS_DEFAULT_REGION, AWS_PROFILE, ~/.aws/credentials,
 * ~/.aws/config. */
typedef struct mt_store_opts {
	size_t size;           /* set by mt_store_opts_init */
	const char *endpoint;  /* "http(s)://host[:port]"; default AWS's */
	const char *region;    /* default "us-east-1" */
	const char *profile;   /* AWS profile for credentials and defaults */
	const char *ca_bundle; /* PEM file of trusted CAs; default $AWS_CA_BUNDLE, else the system's */
	int insecure;          /* do not verify TLS certificates */
	int addressing;        /* MT_S3_AUTO, MT_S3_PATH, MT_S3_VIRTUAL */
	int max_requests;      /* requests in flight at once; 0: 16 */
	int max_attempts;      /* tries per request (retries on 5xx, 429, resets, timeouts); 0: 6 */
	/* Directory stores: create the directory when it is missing (set by
	 * writers).  With 0 nothing is created and a missing directory is
	 * MT_ENOTFOUND, "no store at DIR", except the built-in default store
	 * (no URL and no $MATORAGE_STORE), which reads as empty until a writer
	 * makes it.  S3 stores create nothing either way. */
	int create;
	/* A line per request and retry for --debug; credentials and
	 * signatures never appear in it.  Called from any thread. */
	void (*log)(void *ud, const char *line);
	void *log_ud;
} mt_store_opts;
/* Defaults for every field; size: sizeof the caller's mt_store_opts. */
MT_API void mt_store_opts_init_size(mt_store_opts *o, size_t size);
#define mt_store_opts_init(o) mt_store_opts_init_size((o), sizeof(mt_store_opts))
/* mt_store_open with options (NULL: all defaults, and create as mt_store_open does). */
MT_API int mt_store_open_opts(const char *url, const mt_store_opts *opts, mt_store **out,
			      mt_error *err);

/* ---- remotes: named stores in matorage's configuration ----------------- */

/* Kept in $MATORAGE_CONFIG, else $XDG_CONFIG_HOME/matorage/config.json
 * (~/.config/matorage/config.json, mt_user_path).  It never holds secrets: credentials
 * come from the AWS profile it names or the environment. */
typedef struct mt_remote {
	char *name; /* [A-Za-z0-9._-], as dataset names */
	char *url;  /* file:// or s3:// */
	char *endpoint, *region, *profile, *ca_bundle; /* NULL when not set */
	int insecure;
	int addressing;
	/* Protection given to versions written to it unless the command says
	 * otherwise: "K+M" (mt_parity_parse), NULL when none. */
	char *parity;
} mt_remote;
/* All configured remotes, sorted by name.  Free with mt_remotes_free. */
MT_API int mt_remotes_list(mt_remote **out, size_t *n, mt_error *err);
/* Add a remote; MT_EEXIST if the name is taken unless replace. */
MT_API int mt_remote_add(const mt_remote *r, int replace, mt_error *err);
/* MT_ENOTFOUND when there is no such remote. */
MT_API int mt_remote_remove(const char *name, mt_error *err);
MT_API void mt_remotes_free(mt_remote *r, size_t n);
MT_API void mt_store_close(mt_store *s);
/* The store's canonical URL (borrowed). */
MT_API const char *mt_store_url(const mt_store *s);

/* Names of the datasets in a store, sorted.  Free with mt_strv_free. */
MT_API int mt_store_datasets(mt_store *s, char ***names, size_t *n, mt_error *err);
/* Names of every dataset directory in a store, sorted: also those with no
 * version (all removed, or every put crashed), whose shards stay until
 * mt_store_gc.  Free with mt_strv_free. */
MT_API int mt_store_dataset_dirs(mt_store *s, char ***names, size_t *n, mt_error *err);
/* Versions of a dataset, oldest first (by creation time).  Free with
 * mt_strv_free.  MT_ENOTFOUND when the dataset has none. */
MT_API int mt_store_versions(mt_store *s, const char *dataset, char ***versions, size_t *n,
			     mt_error *err);
MT_API void mt_strv_free(char **v, size_t n);
/* Free memory the library allocated for the caller (a version name from
 * mt_ckpt_commit, say) where the caller's free() may not be the library's:
 * bindings through a foreign-function interface.  Accepts NULL. */
MT_API void mt_free(void *p);
/* url as messages show it: any user:password@ replaced by "***@".
 * malloc'ed (free it with mt_free); NULL when out of memory. */
MT_API char *mt_url_redact(const char *url);

/* 0 when `name` may name a dataset or a version: [A-Za-z0-9._-], 1 to 128
 * characters, not starting with '.' or '-'; else MT_EINVAL, the message
 * calling it `what` ("dataset"). */
MT_API int mt_name_check(const char *name, const char *what, mt_error *err);

/* One object of a listing: its key (doc/FORMAT.md says which keys hold
 * what), its size and its modification time (seconds since the epoch).
 * Borrowed for the callback. */
typedef struct mt_object_info {
	const char *key;
	uint64_t size;
	int64_t mtime;
} mt_object_info;
/* Call fn for every object whose key starts with `prefix`, page by page as
 * the store lists them; fn returns nonzero to stop (that value is returned).
 * Tools that mirror a store's state (the catalog) use it to see which
 * manifests changed without reading them. */
MT_API int mt_store_list(mt_store *s, const char *prefix,
			 int (*fn)(void *ud, const mt_object_info *o), void *ud, mt_error *err);

/* Delete one version's manifest (then its metadata and protection record).
 * Its shards and parity objects stay until mt_store_gc. */
MT_API int mt_store_delete_version(mt_store *s, const char *dataset, const char *version,
				   mt_error *err);

/* Rewrite dataset@version's manifest in format 2 (doc/FORMAT.md, "Manifest
 * format 2"): the same rows, shards and name, its shard entries moved into
 * fragments.  *changed is 1, or 0 when it was format 2 already.  Taken as a
 * writer takes the dataset (its fragments pinned against gc), then the
 * manifest replaced at once.  A protected version keeps its protection: its
 * record is written again for the root and the fragments (the shards'
 * parity reused, the fragments' coded); a record that cannot be read is
 * MT_ECORRUPT before anything is written. */
MT_API int mt_store_upgrade(mt_store *s, const char *dataset, const char *version, int *changed,
			    mt_error *err);

/* Replace a version's description and tags (ntags may be 0).  Manifests
 * are immutable, so the new values go to a small mutable object beside the
 * manifest (datasets/<dataset>/meta/<version>.json, doc/FORMAT.md) that
 * mt_reader_open reads over the manifest's; mt_store_delete_version
 * deletes it with the version.  MT_ENOTFOUND when there is no such
 * version; an empty tag is MT_EINVAL. */
MT_API int mt_store_set_metadata(mt_store *s, const char *dataset, const char *version,
				 const char *description, const char *const *tags, size_t ntags,
				 mt_error *err);

/* Called once per unreferenced object mt_store_gc finds. */
typedef void (*mt_gc_fn)(void *ud, const char *key, uint64_t bytes);

/* Find (and unless dry_run, delete) shard objects of `dataset` (NULL: of
 * every dataset) that no manifest references and that are older than
 * `grace_seconds` (objects of a put still running are young).  Parity
 * objects no protection record names go too, and records of removed
 * versions; a version whose manifest is gone without having been removed
 * keeps its shards and parity while its record lasts, for repair.  Totals
 * go to *nobjects and *nbytes when not NULL. */
MT_API int mt_store_gc(mt_store *s, const char *dataset, int dry_run, uint64_t grace_seconds,
		       mt_gc_fn fn, void *ud, uint64_t *nobjects, uint64_t *nbytes,
		       mt_error *err);

/* ---- copying versions between stores ---------------------------------- */

typedef struct mt_copy_stats {
	uint64_t versions, versions_present; /* manifests written; already there */
	uint64_t shards, shards_present;     /* shard (and parity) objects sent; already there */
	uint64_t bytes, bytes_present;       /* their bytes */
	uint64_t parity, parity_present;     /* of shards and shards_present, parity objects */
} mt_copy_stats;

/* Copy dataset@version from src to dst (version NULL: every version of
 * the dataset; dataset NULL: every dataset).  Only shards dst lacks are
 * sent (they are content-addressed), several at once, and each version's
 * manifest is written last, so an interrupted copy commits nothing and a
 * re-run sends only what is missing.  A version dst holds with different
 * content is MT_EEXIST.  A protected version's parity objects and protection
 * record go with it (the record after the manifest), also to a dst that
 * has the version but not its protection.  progress counts bytes to send;
 * stats may be NULL. */
MT_API int mt_copy(mt_store *src, mt_store *dst, const char *dataset, const char *version,
		   int threads, mt_progress_fn progress, void *ud, mt_copy_stats *stats,
		   mt_error *err);

/* ---- protection: Reed–Solomon parity over a version's shards ------------ */

/*
 * A protected version can have lost or damaged shards (and a lost
 * manifest) rebuilt: its shards, in manifest order, form groups of up to k,
 * and each group gets m parity objects, any k of whose k + m rows give
 * back the rest (doc/FORMAT.md, "Protection").  Storage grows by about
 * m/k.  Protection is added after the commit and never changes the
 * manifest.
 */

/* What mt_protect did. */
typedef struct mt_protect_stats {
	uint64_t groups;          /* groups in the record */
	uint64_t groups_reused;   /* taken whole from the parent's record */
	uint64_t parity_written;  /* parity objects sent */
	uint64_t parity_present;  /* parity objects the store held already */
	uint64_t bytes_read;      /* shard bytes read to code the new groups */
	uint64_t bytes_written;   /* parity bytes sent */
	int already;              /* the version was protected with this k+m: nothing done */
} mt_protect_stats;

typedef struct mt_protect_opts {
	size_t size;             /* set by mt_protect_opts_init */
	int k;                   /* shards per group, 1..64; default 8 */
	int m;                   /* parity objects per group, 1..16; default 2 */
	int threads;             /* coding threads; 0: number of CPUs */
	mt_progress_fn progress; /* shard bytes read, of those to code */
	void *progress_ud;
	mt_protect_stats *stats; /* filled when not NULL */
} mt_protect_opts;
/* Defaults for every field; size: sizeof the caller's mt_protect_opts. */
MT_API void mt_protect_opts_init_size(mt_protect_opts *o, size_t size);
#define mt_protect_opts_init(o) mt_protect_opts_init_size((o), sizeof(mt_protect_opts))

/* Read "K+M" (e.g. "8+2") into *k and *m: MT_EINVAL unless 1 <= K <= 64 and
 * 1 <= M <= 16. */
MT_API int mt_parity_parse(const char *text, int *k, int *m, mt_error *err);

/* Protect dataset@version (NULL, "" or "latest": the newest) with o->k +
 * o->m parity (o NULL: the defaults).  Every shard is read and checked
 * against its sha256 before it is coded, so damage is never baked into
 * parity (MT_ECORRUPT naming the shard).  A version appended to a parent
 * protected with the same k+m reuses the parent's full groups.  The parity
 * objects go first, the protection record last: an interrupted call
 * protects nothing and a re-run sends only what is missing.  A version
 * already protected with the same k+m is left as it is (stats->already);
 * a record that fails its checks protects nothing and is replaced;
 * with another k+m it is MT_EEXIST.  Runs under the dataset's writer lock,
 * so gc never takes what it writes. */
MT_API int mt_protect(mt_store *s, const char *dataset, const char *version,
		      const mt_protect_opts *o, mt_error *err);

/* How a version is protected, from its protection record. */
typedef struct mt_protection {
	int k, m;
	uint64_t groups;
	uint64_t parity_objects;
	uint64_t parity_bytes;   /* sum of the parity objects' sizes */
	uint64_t data_bytes;     /* sum of the shards' sizes */
	uint64_t record_bytes;   /* the protection record's own size */
} mt_protection;
/* The protection of dataset@version (NULL, "" or "latest": the newest):
 * MT_ENOTFOUND when it has none, MT_ECORRUPT when its record fails its
 * checks.  Overhead is (parity_bytes + record_bytes) / data_bytes. */
MT_API int mt_protect_info(mt_store *s, const char *dataset, const char *version,
			   mt_protection *out, mt_error *err);
/* ---- repairing a version ------------------------------------------------ */

/* What an object of a version is, for mt_repair's reports. */
enum { MT_REPAIR_SHARD, MT_REPAIR_PARITY, MT_REPAIR_MANIFEST, MT_REPAIR_RECORD,
       MT_REPAIR_TENSOR, /* a model's tensor object (mt_ckpt_repair) */
       MT_REPAIR_FRAGMENT /* a fragment of a format-2 manifest */ };
/* What became of it: sound as found; rebuilt and written back; (dry run)
 * damaged and rebuildable from `source`; damaged and not rebuildable. */
enum { MT_REPAIR_SOUND, MT_REPAIR_REBUILT, MT_REPAIR_REPAIRABLE, MT_REPAIR_UNREPAIRABLE };

/* One object mt_repair looked at.  Every string is borrowed for the call. */
typedef struct mt_repair_report {
	const char *dataset, *version;
	const char *key;       /* the object's key in the store */
	int kind;              /* MT_REPAIR_SHARD ... */
	int state;             /* MT_REPAIR_SOUND ... */
	const char *source;    /* what rebuilt it: a store's URL, "parity" or
				* "protection record"; NULL when nothing did */
	uint64_t bytes_read;   /* read to check and rebuild it (its own read included) */
	size_t number;         /* shards, fragments: its number; parity: its group's */
	uint64_t first_row, rows; /* shards, fragments: the rows of the version it holds */
	const char *problem;   /* what was wrong with it; NULL when sound */
} mt_repair_report;
typedef void (*mt_repair_fn)(void *ud, const mt_repair_report *r);

/* A salvage: `version` was written as a child of `from`, holding every row
 * of every intact chunk; lost[i] = {first row, count} in `from`'s rows. */
typedef struct mt_salvage_report {
	const char *dataset, *from, *version;
	uint64_t rows_kept, rows_lost;
	const uint64_t (*lost)[2];
	size_t nlost;
} mt_salvage_report;
typedef void (*mt_salvage_fn)(void *ud, const mt_salvage_report *r);

typedef struct mt_repair_opts {
	size_t size;                 /* set by mt_repair_opts_init */
	/* Other stores that may hold the same objects (the caller's). */
	mt_store *const *sources;
	size_t nsources;
	int use_remotes;             /* also every configured remote (mt_remotes_list) */
	/* A loader's shard cache directory (mt_loader_opts.cache_dir): its
	 * files are shards named <sha256>.h5.  NULL: none. */
	const char *cache_dir;
	int dry_run;                 /* find and classify, write nothing */
	/* When objects cannot be rebuilt: write a new version of what is
	 * left (rows of intact chunks), a child of the damaged one. */
	int salvage;
	int threads;                 /* objects checked at once; 0: 4 */
	mt_progress_fn progress;     /* bytes checked of the total */
	void *progress_ud;
	mt_repair_fn report;         /* once per object; may be NULL */
	mt_salvage_fn salvaged;      /* once per salvage; may be NULL */
	void *report_ud;             /* for both */
	/* Shard objects a verify through it found sound are not read again
	 * (a dry run after a verify of the same job); NULL: none. */
	struct mt_verify_memo *memo;
} mt_repair_opts;
MT_API void mt_repair_opts_init_size(mt_repair_opts *o, size_t size);
#define mt_repair_opts_init(o) mt_repair_opts_init_size((o), sizeof(mt_repair_opts))

typedef struct mt_repair_stats {
	uint64_t objects, damaged, rebuilt, unrepairable;
	uint64_t bytes_read;
} mt_repair_stats;

/* Check every object of dataset@version (version NULL: every version of
 * the dataset, those whose manifest is lost but whose protection record
 * holds a copy of it included, and those another store of o's holds that
 * this one lost: made there before a version this store still has, and
 * not removed here) against its sha256, and bring back each
 * damaged or missing one: from another store holding an object of the
 * same sha256 (o->sources, the remotes, the cache directory), else from
 * the parity of its group; a manifest from the protection record; parity
 * objects are computed again.  Each rebuilt object is written under its
 * own name (atomically: an interrupted repair leaves each object either
 * as it was or whole) and read back against its sha256.  Returns 0 when
 * every object is sound at the end (dry run: sound or repairable),
 * MT_ECORRUPT when some could not be rebuilt (err names the first), or
 * the error that stopped the repair.  stats may be NULL.  The
 * callbacks may be called from several threads, one at a time. */
MT_API int mt_repair(mt_store *s, const char *dataset, const char *version,
		     const mt_repair_opts *o, mt_repair_stats *stats, mt_error *err);
/* Check dataset@version's protection alone, as mt_repair checks it: the
 * record and every parity object it names against its sha256 and size.
 * o->report hears of each damaged object (MT_REPAIR_UNREPAIRABLE: nothing
 * is rebuilt here; mt_repair says from what it can be); o->threads and
 * o->progress apply, the rest of o is ignored.  Returns 0 when the version
 * is unprotected or its protection is sound, MT_ECORRUPT when the record
 * or a parity object is damaged or missing (err names the first). */
MT_API int mt_repair_check_protection(mt_store *s, const char *dataset, const char *version,
				      const mt_repair_opts *o, mt_repair_stats *stats,
				      mt_error *err);

/* ---- writing a version ------------------------------------------------ */

typedef struct mt_writer mt_writer;

/* A version another was built from (read by the recipe that wrote it). */
typedef struct mt_source {
	const char *dataset;
	const char *version;
	const char *store; /* the URL of the store it was read from; "" (or NULL
			    * when writing): the written version's own store */
} mt_source;

typedef struct mt_writer_opts {
	size_t size;             /* set by mt_writer_opts_init */
	const char *version;     /* NULL: the next free "vN" */
	const char *parent;      /* append to this version (NULL: latest); used when append */
	int append;              /* start from the parent's rows; its shards are reused */
	uint64_t shard_bytes;    /* uncompressed bytes per shard; 0: 64 MiB */
	uint64_t shard_rows;     /* rows per shard; 0: decided by shard_bytes */
	uint64_t chunk_bytes;    /* uncompressed bytes per chunk; 0: 1 MiB */
	int level;               /* zstd level, 1..22; 0: 3 */
	int threads;             /* compression threads; 0: number of CPUs */
	const char *author;
	const char *description;
	const char *const *tags;
	size_t ntags;
	mt_progress_fn progress; /* bytes uploaded; called from any thread */
	void *progress_ud;
	/* The script that built this version (matorage run) and its arguments
	 * ("KEY=VALUE" each, keys unique): the script is stored once as
	 * datasets/<dataset>/recipes/<sha256>.lua and the manifest names it,
	 * so the version can be explained and rebuilt.  recipe NULL: none. */
	const void *recipe;
	size_t recipe_len;
	const char *const *recipe_args;
	size_t nrecipe_args;
	/* The versions the data came from (matorage run records those the
	 * recipe opened), kept in the manifest as lineage; a source's store
	 * equal to the written store is recorded as "" (the same store), and
	 * any user:password@ in a URL is left out.  NULL: none. */
	const mt_source *sources;
	size_t nsources;
	/* Stage instead of commit: mt_writer_commit uploads the shards and
	 * writes the immutable part record datasets/<dataset>/staged/<id>/<k>.json
	 * (part stage_part of stage_parts, 1 <= k <= n) instead of a version;
	 * mt_staged_commit later merges the parts into one version.  Not with
	 * version, parent or append.  NULL: commit as usual. */
	const char *stage_id;
	uint64_t stage_part, stage_parts;
} mt_writer_opts;

/* Defaults for every field; size: sizeof the caller's mt_writer_opts. */
MT_API void mt_writer_opts_init_size(mt_writer_opts *o, size_t size);
#define mt_writer_opts_init(o) mt_writer_opts_init_size((o), sizeof(mt_writer_opts))

/* Start a new version of `dataset` with these attributes.  With
 * o->append, `attrs` may be NULL (take the parent's) or must equal the
 * parent's; an append to the latest of a dataset that has no version yet,
 * given attributes, starts empty and commits its first version (or
 * continues whichever version another writer committed first).  Nothing is
 * visible to readers before mt_writer_commit. */
MT_API int mt_writer_open(mt_store *s, const char *dataset, const mt_attr *attrs,
			  size_t nattrs, const mt_writer_opts *o, mt_writer **out,
			  mt_error *err);

/* Append `nrows` rows.  data[i] holds attribute i's values for those rows,
 * C-contiguous, little-endian.  For a ragged attribute i, lengths[i] holds
 * nrows row lengths in items and data[i] the rows' items back to back;
 * `lengths` may be NULL when no attribute is ragged.  A str attribute is
 * ragged: lengths[i] in bytes, data[i] the rows' UTF-8 text back to back
 * (no terminators).  A row that is not valid UTF-8, or holds a NUL, fails
 * the call with MT_EINVAL naming the attribute and the row (counted from
 * 0 in this call), and none of the call's rows is appended.  Safe from several
 * threads; each call's rows stay together and in order.  The data is
 * copied before the call returns. */
MT_API int mt_writer_append(mt_writer *w, uint64_t nrows, const void *const *data,
			    const uint64_t *const *lengths, mt_error *err);

/* Attach a file to the version being written (doc/FORMAT.md, "Attachments"):
 * `name` follows the name rules (no '/', no "..") and is what readers ask
 * for; len bytes of data are copied before the call returns and stored at
 * commit as datasets/<dataset>/attachments/<sha256>.  An append keeps the
 * parent's attachments; one attached under the same name replaces it.  At
 * most 1,024 attachments a version, 1 GiB each.  Not with stage_id. */
MT_API int mt_writer_attach(mt_writer *w, const char *name, const void *data, size_t len,
			    mt_error *err);

/* Remove attachment `name` from the version being written: one the parent
 * has (an append keeps them) or one attached by this writer.  MT_ENOTFOUND
 * naming it and what the version holds when neither has it.  Its stored
 * bytes stay while a version names them (mt_store_gc).  Not with stage_id. */
MT_API int mt_writer_detach(mt_writer *w, const char *name, mt_error *err);

/* Upload what is buffered and write the manifest: the commit point.
 * On success the version's name is copied to `version` (cap bytes) when
 * not NULL.  Fails with MT_EEXIST if the version appeared meanwhile. */
MT_API int mt_writer_commit(mt_writer *w, char *version, size_t cap, mt_error *err);
/* The ids of the stagings of `dataset` that have part records, sorted
 * (none: 0 ids).  Free with mt_strv_free. */
MT_API int mt_staged_list(mt_store *s, const char *dataset, char ***ids, size_t *n,
			  mt_error *err);
/* Merge the parts of staging `id` (NULL: the only one there is) into one
 * version of `dataset`, their rows in part order, appended to the latest
 * version (or the first version); one manifest is the commit point, as for
 * mt_writer_commit (o: author, description, tags; the rest is ignored).
 * Every one of the n parts the records declare must be there, else
 * MT_ENOTFOUND naming the missing ones, and nothing is committed.  The part
 * records are deleted once the version is committed.  The version's name
 * goes to `version` (cap bytes). */
MT_API int mt_staged_commit(mt_store *s, const char *dataset, const char *id,
			    const mt_writer_opts *o, char *version, size_t cap, mt_error *err);
/* Attach n files (names[i], lens[i] bytes at data[i]) to dataset@version
 * (NULL or "latest": the latest) by committing a new version: the same
 * shards and rows, the parent's attachments with these added (a name
 * already there is replaced).  The new version's name (o->version, or the
 * next "vN") goes to `out` (cap bytes); o: version, author, description,
 * tags (may be NULL).  A bad name, a duplicate name or a file over the
 * caps commits nothing. */
MT_API int mt_dataset_attach(mt_store *s, const char *dataset, const char *version,
			     const char *const *names, const void *const *data, const size_t *lens,
			     size_t n, const mt_writer_opts *o, char *out, size_t cap,
			     mt_error *err);
/* Remove the n attachments names[i] from dataset@version (NULL or
 * "latest": the latest) by committing a new version: the same shards and
 * rows, the parent's other attachments.  The new version's name goes to
 * `out` (cap bytes); o as for mt_dataset_attach.  A name the version does
 * not have (MT_ENOTFOUND, naming it) or a name given twice commits
 * nothing. */
MT_API int mt_dataset_detach(mt_store *s, const char *dataset, const char *version,
			     const char *const *names, size_t n, const mt_writer_opts *o,
			     char *out, size_t cap, mt_error *err);
/* Stop uploading and discard the version; shards already uploaded are
 * left for mt_store_gc.  After it, only mt_writer_close is valid. */
MT_API void mt_writer_abort(mt_writer *w);
/* Free the writer; aborts it when not committed. */
MT_API void mt_writer_close(mt_writer *w);

/* ---- compacting versions ---------------------------------------------- */

/* What mt_compact did. */
typedef struct mt_compact_stats {
	uint64_t rows;          /* rows of the new version */
	uint64_t shards_before; /* shards of the compacted version */
	uint64_t shards_after;  /* shards of the new version */
	uint64_t shards_reused; /* full-size shards of it taken as they are */
	uint64_t tail_rows;     /* rows versions after it appended, carried over */
	int unchanged;          /* it was compact already: no version was written */
	char base[256];         /* the compacted version's name */
} mt_compact_stats;

/* Write a new version of `dataset` holding the rows of `version` (NULL or
 * "latest": the newest), in the same order, repacked into shards of
 * o->shard_rows rows or o->shard_bytes uncompressed bytes (0: 64 MiB), so a
 * stream's many small shards become a few large ones.  Shards of it that
 * are already that size are reused as they are while no rows wait to be
 * repacked; the rest are read (checksums checked) and written again.  The
 * new version is committed on top of the latest, like an append: when
 * versions made after `version` appended rows to it (a stream still
 * running), those rows follow the repacked ones, so no committed row is
 * hidden; when the latest does not continue `version` (it is no append to
 * it), nothing is committed and MT_ESTATE names it.  Its parent is the
 * latest it was committed on, its lineage (mt_reader_source) names
 * `version`.  Old versions stay; their shards go only once they are
 * removed and mt_store_gc runs.  o: shard sizes, level (0: the compacted
 * version's), threads, author, description, tags, progress; the rest is
 * ignored.  o and stats may be NULL; the new version's name goes to
 * `out` (cap bytes).  A version whose shards but the last are full size
 * already is left as it is: no version is written (stats->unchanged) and
 * `out` gets its own name. */
MT_API int mt_compact(mt_store *s, const char *dataset, const char *version,
		      const mt_writer_opts *o, mt_compact_stats *stats, char *out, size_t cap,
		      mt_error *err);

/* ---- streaming rows into a dataset ------------------------------------ */

/* Rows appended a few at a time (readings, events) and committed in
 * batches: each commit is one version appended to whatever is the latest at
 * that moment (created as v1 when the dataset has none), so several streams
 * may feed one dataset at once and each commit of each lands in order.
 * Rows are held in memory until committed; a crash loses only those.  One
 * stream is used from one thread at a time. */
typedef struct mt_stream mt_stream;

typedef struct mt_stream_opts {
	size_t size;              /* set by mt_stream_opts_init */
	uint64_t commit_rows;     /* commit once this many rows wait; 0: 100000 */
	uint64_t commit_ms;       /* commit once the oldest waiting row has waited this
				   * long (checked by append and poll); 0: never by time */
	/* Each commit's writer options (level, threads, shard and chunk sizes,
	 * author, description, tags); version, parent, append and stage_id are
	 * the stream's to set.  NULL: the defaults.  Borrowed: it must outlive
	 * the stream. */
	const mt_writer_opts *writer;
	/* Called after each commit with the version made and its new rows (on
	 * the commit's thread with `background`).  NULL: none. */
	void (*committed)(void *ud, const char *version, uint64_t rows);
	void *committed_ud;
	/* Commits by rows or time run on a thread of their own while appends go
	 * on: one at a time and in order, so at most two batches are in memory.
	 * A failed one's rows wait again, in front of the newer ones, and its
	 * error comes back from the next append, poll or commit.  mt_stream_commit
	 * waits for it and then commits in line.  Not with a spool. */
	int background;
	/* A local directory that makes the stream's rows survive a crash: every
	 * waiting row is written there (fdatasync'ed) by mt_stream_sync and before
	 * each commit, and each commit is noted.  A stream opened later on the same
	 * directory takes back the rows no version holds (they are committed at
	 * the next append or poll, whatever the thresholds) and commits every
	 * spooled row exactly once: its versions carry the tag spool-ID-N (rows
	 * up to N of spool ID), looked for after a crash or a failed commit.
	 * While the store fails with an error it may get over (MT_EIO, MT_ENET,
	 * MT_EEXIST), commits report no error: the rows stay spooled and waiting,
	 * and are tried again backing off from 1 s to a minute.  One stream per
	 * directory at a time.  NULL: none. */
	const char *spool_dir;
	/* Called with what the stream's user may want to know (rows replayed from
	 * the spool, rows found committed already; retry 1: a failed commit to be
	 * tried again later), one sentence without a trailing newline.  NULL: none. */
	void (*notice)(void *ud, int retry, const char *message);
	void *notice_ud;
} mt_stream_opts;

MT_API void mt_stream_opts_init_size(mt_stream_opts *o, size_t size);
#define mt_stream_opts_init(o) mt_stream_opts_init_size((o), sizeof(mt_stream_opts))

/* A stream of rows with these attributes (fixed-shape or ragged).  Nothing
 * is written before the first commit; an existing dataset must have the same
 * attributes then. */
MT_API int mt_stream_open(mt_store *s, const char *dataset, const mt_attr *attrs,
			  size_t nattrs, const mt_stream_opts *o, mt_stream **out, mt_error *err);
/* Add nrows rows (data[i]: attribute i's values, C order, little-endian;
 * copied), then commit if enough rows wait or the oldest waited long enough.
 * A failed commit keeps the rows waiting and returns its error. */
MT_API int mt_stream_append(mt_stream *st, uint64_t nrows, const void *const *data,
			    mt_error *err);
/* mt_stream_append with ragged attributes, as mt_writer_append takes them:
 * lengths[i] holds nrows row lengths in items and data[i] the rows' items
 * back to back for a ragged attribute i (lengths[i] of a fixed one is not
 * read; `lengths` may be NULL when none is ragged).  mt_stream_append is
 * this call with NULL lengths, MT_EINVAL when some attribute is ragged.
 * Rows and lengths are copied; a failed commit keeps both waiting. */
MT_API int mt_stream_append_ragged(mt_stream *st, uint64_t nrows, const void *const *data,
				   const uint64_t *const *lengths, mt_error *err);
/* Commit if the oldest waiting row has waited commit_ms; *wait_ms (may be
 * NULL) is then how long until the next commit by time is due (UINT64_MAX:
 * none is).  For callers that wait for input with a timeout. */
MT_API int mt_stream_poll(mt_stream *st, uint64_t *wait_ms, mt_error *err);
/* Commit what waits now; version (cap bytes, may be NULL) gets the new
 * version's name, "" when nothing waited. */
MT_API int mt_stream_commit(mt_stream *st, char *version, size_t cap, mt_error *err);
/* Rows waiting for a commit (with `background`, the running commit's too). */
MT_API uint64_t mt_stream_pending(const mt_stream *st);
/* Make every waiting row durable in the spool (a no-op without one): call it
 * once the rows of a burst of input are in. */
MT_API int mt_stream_sync(mt_stream *st, mt_error *err);
/* Free the stream; rows not committed are dropped (commit first). */
MT_API void mt_stream_close(mt_stream *st);

/* ---- reading a version ------------------------------------------------ */

typedef struct mt_reader mt_reader;

typedef struct mt_version_info {
	const char *dataset;
	const char *version;
	const char *parent;      /* "" when none */
	const char *author;
	const char *description;
	const char *created;     /* RFC 3339, UTC */
	const char *const *tags;
	size_t ntags;
	uint64_t rows;
	uint64_t nshards;
	uint64_t stored_bytes;   /* sum of shard object sizes */
	uint64_t raw_bytes;      /* uncompressed values (and ragged offsets) */
	int level;
	const char *recipe;      /* sha256 of the script that built it; "" when none */
	const char *const *recipe_args; /* its arguments, "KEY=VALUE" each */
	size_t nrecipe_args;
} mt_version_info;

typedef struct mt_shard_info {
	const char *sha256;      /* 64 hex digits */
	const char *key;         /* object key in the store */
	uint64_t bytes;
	uint64_t rows;
	uint64_t first_row;
} mt_shard_info;

/* Open dataset@version; version NULL or "" (or "latest") opens the newest. */
MT_API int mt_reader_open(mt_store *s, const char *dataset, const char *version,
			  mt_reader **out, mt_error *err);
/* Open dataset@version whose manifest is lost, from the copy its protection
 * record holds (doc/FORMAT.md, "Protection"): what `repair` would write back.
 * MT_ENOTFOUND when the version has no record or was removed. */
MT_API int mt_reader_open_lost(mt_store *s, const char *dataset, const char *version,
			       mt_reader **out, mt_error *err);
/* mt_reader_open that reads only what it is asked for: of a version whose
 * manifest is format 2 (doc/FORMAT.md, "Manifest format 2"), the root at
 * open, then each fragment when rows or shards in it are first read (a
 * damaged fragment fails that call, naming it).  The same otherwise. */
MT_API int mt_reader_open_lazy(mt_store *s, const char *dataset, const char *version,
			       mt_reader **out, mt_error *err);
MT_API void mt_reader_close(mt_reader *r);

/* Borrowed views of the manifest. */
MT_API const mt_version_info *mt_reader_info(const mt_reader *r);
/* The versions this one was built from (mt_writer_opts.sources), in the
 * order recorded; 0 for versions that name none.  Borrowed from r. */
MT_API size_t mt_reader_nsources(const mt_reader *r);
MT_API const mt_source *mt_reader_source(const mt_reader *r, size_t i);
MT_API size_t mt_reader_nattrs(const mt_reader *r);
MT_API const mt_attr *mt_reader_attr(const mt_reader *r, size_t i);
/* Index of the attribute called `name`, or MT_ENOTFOUND. */
MT_API int mt_reader_attr_index(const mt_reader *r, const char *name);
MT_API int mt_reader_shard(const mt_reader *r, size_t i, mt_shard_info *out);
/* mt_reader_shard with the reason it failed in err: of a lazily opened
 * format-2 version, the fragment holding shard i may be missing or
 * damaged (MT_ECORRUPT naming the version, the fragment's key and its
 * rows). */
MT_API int mt_reader_shard_err(const mt_reader *r, size_t i, mt_shard_info *out, mt_error *err);
/* A format-2 version's fragments (doc/FORMAT.md, "Manifest format 2") as
 * its root describes them, in row order; strings borrowed from the reader.
 * Nothing is read: a lazy reader stays lazy. */
typedef struct mt_fragment_info {
	const char *sha256;   /* of the fragment object, 64 hex digits */
	uint64_t bytes;       /* of the fragment object */
	uint64_t first_row, rows;
	uint64_t first_shard, nshards;
	uint64_t shard_bytes; /* its shards' bytes, summed */
} mt_fragment_info;
/* 0 for a format-1 version. */
MT_API size_t mt_reader_nfragments(const mt_reader *r);
MT_API int mt_reader_fragment(const mt_reader *r, size_t i, mt_fragment_info *out);
/* 1 when fragment i of a and fragment j of b are one: the same object of
 * the same dataset, which both roots describe alike (rows, shards, bytes,
 * layout), so it holds the same shard entries for both and loads under one
 * as under the other; else 0. */
MT_API int mt_reader_fragment_same(const mt_reader *a, size_t i, const mt_reader *b, size_t j);
/* Which of the n shard objects shas[k] (64 hex digits) the fragments
 * frags[0..nfrags) of r name: found[k] set to 1 for each named, left as it
 * is otherwise.  A fragment is read and checked against the root (size,
 * sha256) and, only when its text may name one, decoded as a load decodes
 * it (and kept, as mt_reader_shard keeps it); it stops when all are found.
 * A fragment that cannot be read or fails its checks: MT_ECORRUPT naming
 * it, as a load does. */
MT_API int mt_reader_fragments_name(mt_reader *r, const size_t *frags, size_t nfrags,
				    const char *const *shas, size_t n, int *found, mt_error *err);
/* One compressed chunk of one attribute inside a shard. */
typedef struct mt_chunk_info {
	const char *attr;    /* the attribute ("tokens/values", "tokens/offsets" when ragged) */
	const char *dtype;   /* NumPy name of the stored values */
	uint64_t offset;     /* byte offset in the shard object */
	uint64_t bytes;      /* compressed bytes */
	uint64_t first;      /* first unit (row, or item of a ragged attribute) */
	uint64_t count;      /* units held */
	uint64_t unit_bytes; /* uncompressed bytes per unit */
} mt_chunk_info;
/* Call fn for every chunk of shard i, attribute by attribute, in order.
 * Reads the shard's chunk index (once per reader); fn's strings are
 * borrowed for the call. */
MT_API int mt_reader_chunks(mt_reader *r, size_t shard,
			    void (*fn)(void *ud, const mt_chunk_info *c), void *ud, mt_error *err);

/* The manifest as stored (borrowed JSON text). */
MT_API const char *mt_reader_manifest(const mt_reader *r);

/* The recipe script of the version (malloc'ed, NUL-terminated, *len
 * bytes without the NUL; free() it), checked against its sha256.
 * MT_ENOTFOUND when the version has no recipe. */
MT_API int mt_reader_recipe(mt_reader *r, char **script, size_t *len, mt_error *err);

/* A file attached to a version; strings borrowed from the reader. */
typedef struct mt_attachment_info {
	const char *name;
	const char *sha256; /* 64 hex digits */
	uint64_t bytes;
} mt_attachment_info;
/* The version's attachments, in name order (0 for none). */
MT_API size_t mt_reader_nattachments(const mt_reader *r);
MT_API int mt_reader_attachment_info(const mt_reader *r, size_t i, mt_attachment_info *out);
/* The bytes of attachment `name` (malloc'ed, *len bytes, NUL-terminated
 * beyond them; free() it), checked against its size and sha256
 * (MT_ECORRUPT naming the key when they differ).  MT_ENOTFOUND when the
 * version has no attachment of that name. */
MT_API int mt_reader_attachment(mt_reader *r, const char *name, void **data, size_t *len,
				mt_error *err);

/* Total items in rows [a, b) of ragged attribute `attr`; lengths (when not
 * NULL) receives b-a row lengths in items.  Reads only the offsets. */
MT_API int mt_reader_ragged_lengths(mt_reader *r, size_t attr, uint64_t a, uint64_t b,
				    uint64_t *lengths, uint64_t *total, mt_error *err);

/* Rows [a, b) of a str attribute as NUL-terminated strings: (*out)[i] is
 * row a+i's text, malloc'ed, as is the array; free with mt_strv_free(*out,
 * b-a).  (mt_reader_ragged_lengths and mt_reader_read give the same text
 * as lengths and bytes back to back.)  MT_EINVAL for any other dtype. */
MT_API int mt_reader_read_str(mt_reader *r, size_t attr, uint64_t a, uint64_t b, char ***out,
			      mt_error *err);

/* Copy rows [a, b) of attribute `attr` into buf (cap bytes; rows back to
 * back, C order, little-endian; ragged: the rows' items back to back).
 * Reads only the chunks holding those rows and checks each chunk's
 * checksum; a chunk that fails it fails the call with MT_ECORRUPT naming
 * the shard and rows, and nothing of it is copied. */
MT_API int mt_reader_read(mt_reader *r, size_t attr, uint64_t a, uint64_t b, void *buf,
			  size_t cap, mt_error *err);

/* What mt_reader_verify found about one shard: code 0 or an error. */
typedef void (*mt_verify_fn)(void *ud, size_t shard, const mt_shard_info *info, int code,
			     const char *message);

/* Check every shard: object present, size and sha256 as in the manifest,
 * chunk index intact, every chunk's xxh3.  Calls fn once per shard.
 * Returns 0 when all are sound, MT_ECORRUPT when any is not (err names
 * the first), or another error when verification itself could not run. */
MT_API int mt_reader_verify(mt_reader *r, mt_verify_fn fn, void *ud, mt_progress_fn progress,
			    void *progress_ud, mt_error *err);

/* What the verifies of one job learnt of shard objects, by key: a job over
 * a dataset or bucket lists the shards an append chain shares in every
 * version of it, and reads each object once.  Its functions may be called
 * from several threads. */
typedef struct mt_verify_memo mt_verify_memo;
MT_API int mt_verify_memo_new(mt_verify_memo **out, mt_error *err);
MT_API void mt_verify_memo_free(mt_verify_memo *m); /* NULL is fine */
/* The shard objects read through m so far and their bytes (each object
 * once, unless a damaged one was met again at other rows). */
MT_API void mt_verify_memo_reads(mt_verify_memo *m, uint64_t *objects, uint64_t *bytes);
/* mt_reader_verify, but a shard whose object an earlier verify through
 * memo read is not read again: its result is that one's (a damaged object
 * is read again where it holds other rows, as its message names them).
 * fn still hears of every shard of r.  memo NULL: mt_reader_verify. */
MT_API int mt_reader_verify_memo(mt_reader *r, mt_verify_memo *memo, mt_verify_fn fn, void *ud,
				 mt_progress_fn progress, void *progress_ud, mt_error *err);

/* What reading took beyond the shards as stored.  When a version is
 * protected (doc/FORMAT.md, "Protection"), a chunk that fails its checksum
 * twice, or whose shard object is missing or damaged, is rebuilt from the
 * same byte span of the other members and parity objects of its group, and
 * checked against its checksum: the rows delivered are the same.  Nothing
 * is written back (`matorage repair` does that).  Unprotected versions fail
 * as before.  Like option structs, it begins with `size`: set it with
 * MT_READ_STATS_INIT; the library fills the fields that size covers. */
typedef struct mt_read_stats {
	size_t size;
	uint64_t healed_chunks;  /* chunks rebuilt from parity */
	uint64_t healed_indexes; /* shards' chunk indexes rebuilt from parity */
	uint64_t heal_bytes;     /* bytes read from the group to rebuild them */
} mt_read_stats;
#define MT_READ_STATS_INIT { sizeof(mt_read_stats), 0, 0, 0 }
/* Counts since the reader opened (all threads). */
MT_API void mt_reader_stats(const mt_reader *r, mt_read_stats *out);

/* Rows rows[0..n) of fixed-size attribute `attr`, in the given order (any
 * order, repeats allowed), into buf (cap bytes, n rows back to back).
 * The rows are gathered chunk by chunk: each chunk holding any of them is
 * decoded once per call (or taken from the chunk cache below), however
 * many of its rows are asked for.  MT_EINVAL for a ragged attribute,
 * MT_ERANGE for a row past the version's. */
MT_API int mt_reader_read_rows(mt_reader *r, size_t attr, const uint64_t *rows, size_t n,
			       void *buf, size_t cap, mt_error *err);

/*
 * The chunk cache: decoded chunks kept in memory, shared by every reader
 * and loader of the process, within a budget in bytes (the least recently
 * used chunks go first).  Reads of rows that use a chunk only in part keep
 * it (mt_reader_read_rows, mt_loader_read_rows, mt_reader_read of a few
 * rows), so random access pays one decode per chunk rather than one per
 * row; reads that use whole chunks (an epoch of a loader, a full read)
 * look chunks up but do not fill it.  Only chunks read, checked against
 * their checksum and decoded without error are kept.  The budget is
 * $MATORAGE_CHUNK_CACHE when set (bytes, or with a K, M or G suffix; 0
 * turns the cache off), else 256 MiB; each process has its own.  Every
 * function here may be called from any thread.
 */
typedef struct mt_cache_stats {
	size_t size;        /* set by MT_CACHE_STATS_INIT */
	uint64_t budget;    /* bytes it may hold */
	uint64_t bytes;     /* bytes held now (chunks and their bookkeeping) */
	uint64_t chunks;    /* chunks held now */
	uint64_t hits;      /* lookups that found their chunk */
	uint64_t misses;    /* lookups that did not (the chunk was then read and decoded) */
	uint64_t evictions; /* chunks let go to stay within the budget */
} mt_cache_stats;
#define MT_CACHE_STATS_INIT { sizeof(mt_cache_stats), 0, 0, 0, 0, 0, 0 }
/* Keep at most `bytes` from now on (what is over it is let go at once). */
MT_API void mt_chunk_cache_set_budget(uint64_t bytes);
/* Let go of every chunk held. */
MT_API void mt_chunk_cache_clear(void);
/* Its counts since the process started. */
MT_API void mt_chunk_cache_stats(mt_cache_stats *out);

/* ---- statistics of an attribute ---------------------------------------- */

/*
 * What an attribute holds over every row of a version: counts, range,
 * mean and standard deviation, a histogram, and for labels the class
 * balance.  Values are taken as doubles (integers beyond 2^53 round).
 * NaN and +/-Inf are counted apart and left out of everything else.  A
 * ragged attribute's statistics are over all its items' elements.
 *
 * Two passes read the attribute (one when it fits in window_bytes): the
 * first for counts, range, mean and the spread (summed in double, by
 * blocks of a fixed size merged in order, so the result does not depend
 * on the thread count), the second for the histogram.  Chunks are
 * fetched and decoded on the reader's threads, as mt_reader_read does.
 */
#define MT_STATS_BINS 32          /* default histogram bins */
#define MT_STATS_MAX_BINS 4096
#define MT_STATS_CLASSES 256      /* default limit of the class balance */
#define MT_STATS_MAX_COLUMNS 65536 /* per-column statistics up to this many columns */

typedef struct mt_stats_opts {
	size_t size;         /* set by mt_stats_opts_init */
	int bins;            /* histogram bins, 1..MT_STATS_MAX_BINS; 0: MT_STATS_BINS */
	/* Keep the class balance of an integer (or bool) attribute of one value
	 * a row (scalar, or shape (1,)) while it has at most this many distinct
	 * values; 0: MT_STATS_CLASSES, -1: never. */
	int max_classes;
	uint64_t window_bytes; /* decoded bytes read at once; 0: 64 MiB */
	/* Counts bytes to decode (both passes).  Nonzero cancels: MT_ECANCELED. */
	mt_progress_fn progress;
	void *progress_ud;
} mt_stats_opts;
/* Defaults for every field; size: sizeof the caller's mt_stats_opts. */
MT_API void mt_stats_opts_init_size(mt_stats_opts *o, size_t size);
#define mt_stats_opts_init(o) mt_stats_opts_init_size((o), sizeof(mt_stats_opts))

/* One value of a class balance and the rows holding it. */
typedef struct mt_stats_class {
	int64_t value;
	uint64_t count;
} mt_stats_class;

/* The result; allocated by the library (fields may be appended, never
 * moved), freed with mt_stats_free. */
typedef struct mt_stats {
	char *dataset, *version, *attr;
	mt_dtype dtype;
	int ragged;
	uint64_t rows;      /* rows of the version */
	uint64_t items;     /* ragged: items over all rows; else rows */
	uint64_t count;     /* elements, NaN and Inf included */
	uint64_t finite;    /* elements the numbers below are over */
	uint64_t nan, posinf, neginf;
	double min, max;    /* of finite elements (0 when there are none) */
	double mean;
	double std;         /* population standard deviation (NumPy's ddof=0) */
	/* bins counts; edges[0..bins]: NumPy's np.histogram(x, bins, (min, max))
	 * edges, min - 0.5 .. max + 0.5 when min == max; the last bin holds
	 * its right edge. */
	int bins;
	double *edges;
	uint64_t *hist;
	/* Sorted by value; nclasses -1 when not kept (not an integer attribute
	 * of one value a row, or more distinct values than max_classes). */
	int nclasses;
	mt_stats_class *classes;
	uint64_t bytes_read; /* decoded bytes, both passes */
	/* Per column of an attribute with one dimension beside the row (rank 1,
	 * not ragged, at most MT_STATS_MAX_COLUMNS): each over that column's
	 * finite elements in every row, as NumPy's axis=0 over float64 with
	 * NaN and Inf left out (NaN where a column has none).  columns 0 and
	 * the arrays NULL for other attributes. */
	uint64_t columns;
	double *col_min, *col_max, *col_mean, *col_std;
	/* A str attribute (dtype MT_STR): count and finite are its rows, and
	 * min .. std and the histogram are of row lengths in characters; these
	 * of lengths in bytes, and distinct the count of distinct rows (by a
	 * 64-bit hash; -1 past MT_STATS_TEXT_DISTINCT of them).  Zero else. */
	double bytes_min, bytes_max, bytes_mean;
	int64_t distinct;
} mt_stats;
#define MT_STATS_TEXT_DISTINCT (1 << 20)

/* Statistics of attribute `attr` of the version r reads.  *out is set on
 * success only.  Canceled by opts->progress: MT_ECANCELED, nothing out. */
MT_API int mt_stats_compute(mt_reader *r, size_t attr, const mt_stats_opts *opts,
			    mt_stats **out, mt_error *err);
/* As JSON text (one object: the fields `matorage stats --json` prints,
 * doc/matorage.1); malloc'ed: free() it.
 * Floats are written with 17 significant digits, so they read back exactly. */
MT_API int mt_stats_to_json(const mt_stats *s, char **json, mt_error *err);
/* Back from mt_stats_to_json's text; MT_EFORMAT naming what is wrong. */
MT_API int mt_stats_from_json(const char *json, mt_stats **out, mt_error *err);
MT_API void mt_stats_free(mt_stats *s);

/* ---- loading batches for training ------------------------------------- */

/*
 * A loader streams a version's rows as batches: shuffled (or not), split
 * between the ranks of a distributed job, prefetched on a background thread
 * within a memory budget, and resumable from a small text token.
 *
 * Order.  Rows are grouped in units (runs of consecutive rows inside one
 * shard, at most shuffle_rows / 2) and units in windows (consecutive units,
 * at most shuffle_rows rows).  An epoch's sequence is: the units in an order
 * drawn from (seed, epoch), then the rows of each window in an order drawn
 * from (seed, epoch, window).  Without shuffle it is row order.  It is a
 * pure function of (seed, epoch, rows, shard layout, shuffle_rows): thread
 * counts and the prefetch budget do not change it once shuffle_rows is set.
 *
 * Ranks.  Each of world ranks takes a contiguous share of the sequence:
 * ceil(R / world) rows each, where the last rank's share is completed by
 * repeating rows from the start of the sequence (at most world - 1 rows per
 * epoch), so every rank gets the same number of batches; with drop_last,
 * floor(R / (world * batch_rows)) full batches each and the rest is left
 * out.  All ranks together see every row of an epoch exactly once (plus the
 * repeats).
 *
 * Resume.  mt_loader_state gives a token naming the version, the order and
 * how many batches each rank has taken this epoch; a loader opened with it
 * (opts.resume) delivers exactly the rows not yet delivered, even with
 * another world size or batch size (the rows left are then shared among
 * the new ranks).  Take the token on every rank at the same step; they are
 * identical.
 *
 * Threading: one thread calls next / read_rows / set_epoch / state; the
 * loader's own thread fetches and decodes ahead.
 */
typedef struct mt_loader mt_loader;

typedef struct mt_loader_opts {
	size_t size;                /* set by mt_loader_opts_init */
	size_t batch_rows;          /* rows per batch; 0: 32 */
	const char *const *attrs;   /* attributes to load (others are never fetched); NULL: all */
	size_t nattrs;
	int shuffle;
	uint64_t seed;
	uint64_t epoch;
	unsigned rank, world;       /* this process's rank among world (0: 1) */
	int drop_last;
	uint64_t shuffle_rows;      /* rows shuffled together; 0: what fits in half the budget */
	uint64_t prefetch_bytes;    /* decoded rows held ahead; 0: 256 MiB */
	int fetch_threads;          /* units of a window read at once; 0: 4 */
	int decode_threads;         /* threads decompressing each unit's chunks; 0: CPUs */
	const char *resume;         /* a token from mt_loader_state, or NULL */
	/* Keep whole shards in this directory (shared by processes, at most
	 * cache_bytes, least recently used evicted): later epochs read them
	 * locally.  NULL: no cache. */
	const char *cache_dir;
	uint64_t cache_bytes;       /* 0: 10 GiB */
	/* Keep the version in memory instead, within cache_bytes: decoded when
	 * the decoded rows of the attributes loaded fit (each chunk is then
	 * decoded once, and later epochs and read_rows copy rows out of memory),
	 * else the compressed shards read, as many as fit.  Either way, from
	 * the second epoch on the store is not read (mt_loader_cache_stats
	 * says which: the decoded chunks held, or none). */
	int in_memory;
	/* Batch buffers come from here when set (e.g. pinned memory). */
	void *(*alloc)(void *ud, size_t bytes);
	void (*dealloc)(void *ud, void *p, size_t bytes);
	void *alloc_ud;
	/* 1: no window is read ahead until mt_loader_next (or _next_into) is
	 * called after the open or a set_epoch that starts an epoch afresh: a
	 * loader used only for mt_loader_read_rows (a map-style dataset) then
	 * reads just the chunks of the rows it asks for.  0: the epoch's first
	 * windows are read from the open on, ready for the first batch. */
	int defer_windows;
} mt_loader_opts;

/* One attribute of a batch: the rows' values back to back (C order,
 * little-endian); for a ragged attribute offsets[0..rows] (in items) too. */
typedef struct mt_batch_col {
	const void *data;
	size_t bytes;
	const uint64_t *offsets; /* NULL unless ragged */
} mt_batch_col;

typedef struct mt_batch {
	size_t rows;
	const uint64_t *row_ids;  /* global row numbers, in batch order */
	const mt_batch_col *cols; /* in the order of opts.attrs */
	size_t ncols;
} mt_batch;

/* Defaults for every field; size: sizeof the caller's mt_loader_opts. */
MT_API void mt_loader_opts_init_size(mt_loader_opts *o, size_t size);
#define mt_loader_opts_init(o) mt_loader_opts_init_size((o), sizeof(mt_loader_opts))
MT_API int mt_loader_open(mt_store *s, const char *dataset, const char *version,
			  const mt_loader_opts *o, mt_loader **out, mt_error *err);
/* The next batch of this rank's share (borrowed, valid until the next call
 * on the loader).  At the end of the epoch: returns 0 with *out NULL. */
MT_API int mt_loader_next(mt_loader *l, const mt_batch **out, mt_error *err);
/* mt_loader_next, with fixed-size column c (in the order of opts.attrs) gathered
 * straight into into[c], the caller's memory with room for into_rows rows, when
 * into[c] is not NULL: the batch's cols[c].data is then into[c], which stays the
 * caller's (the loader never writes it again), so a batch kept needs no copy.
 * Ragged columns, NULL entries and row_ids use the loader's buffers as
 * mt_loader_next does.  MT_EINVAL when the batch has more than into_rows rows
 * (a batch has at most batch_rows). */
MT_API int mt_loader_next_into(mt_loader *l, void *const *into, size_t into_rows,
			       const mt_batch **out, mt_error *err);
/* mt_loader_next, with the batch's fixed-size columns of at least min_bytes
 * held when it lies in one window (all but the few batches that straddle
 * two, or are padding): holds (room for one per column, in the order of
 * opts.attrs) gets an id for each column held, 0 for the others.  A held
 * column's data points into the window and stays valid, the caller's to read
 * and write, until mt_loader_release(l, holds[c]) rather than until the next
 * call: the loader fills that window's memory again only after.  The rest
 * (row_ids, ragged columns, columns not held) is valid until the next call,
 * as with mt_loader_next.  A filler waits for a window's held columns before
 * filling its buffers again, unless the batches asked for need that window
 * first: then it takes new buffers, and the held ones keep only the pages
 * the held columns lie in (memory past the prefetch budget while they are
 * kept, about what copies would take) until their last release.
 * mt_loader_close frees the loader but for the columns still held, which
 * keep only their own pages: their releases, the only calls left to make on
 * it, free the rest. */
MT_API int mt_loader_next_held(mt_loader *l, const mt_batch **out, uint64_t *holds,
			       size_t min_bytes, mt_error *err);
/* Let go of a column held by mt_loader_next_held; 0 does nothing.  Safe from
 * any thread, and after mt_loader_close. */
MT_API void mt_loader_release(mt_loader *l, uint64_t hold);
/* Batches this rank gets in the current epoch (all ranks get as many). */
MT_API uint64_t mt_loader_batches(const mt_loader *l);
/* The reader the loader reads the version through (borrowed, valid until
 * mt_loader_close): its info and attributes, with no second open.  The
 * loader does not read the version's metadata object: the info's
 * description and tags are those of the manifest (as committed, before any
 * `describe`); mt_reader_open gives the edited ones. */
MT_API const mt_reader *mt_loader_reader(const mt_loader *l);
/* Start epoch `epoch` from its beginning.  Once it has been called, the
 * loader reads the next epoch's first windows while this epoch's last is
 * handed out: set_epoch(epoch + 1) after the last batch keeps them (see
 * doc/loader.md, "Across epochs"). */
MT_API int mt_loader_set_epoch(mt_loader *l, uint64_t epoch, mt_error *err);
/* The resume token (a NUL-terminated line) into buf; returns its length,
 * which may be >= cap (then call again with a bigger buffer). */
MT_API size_t mt_loader_state(const mt_loader *l, char *buf, size_t cap);
/* Rows by number, in the given order, as one batch (borrowed, valid until
 * the next call); reads only the chunks holding them, each chunk decoded
 * once per call whatever its rows' order, and kept in the chunk cache. */
MT_API int mt_loader_read_rows(mt_loader *l, const uint64_t *rows, size_t n,
			       const mt_batch **out, mt_error *err);
/* Chunks healed from parity since the loader opened (see mt_read_stats):
 * the batches and their order are those of the intact version. */
MT_API void mt_loader_stats(const mt_loader *l, mt_read_stats *out);
/* The counts of the chunk cache the loader's reads use: the process's (see
 * mt_chunk_cache_stats), or with in_memory the loader's own decoded chunks. */
MT_API void mt_loader_cache_stats(const mt_loader *l, mt_cache_stats *out);
MT_API void mt_loader_close(mt_loader *l);

/* Several loaders mixed into one stream by weight: each batch comes whole
 * from one of them, drawn with probability proportional to its weight
 * among those with batches left this epoch, from (seed, epoch, batch
 * number).  The epoch ends when every loader's has; each still delivers
 * each of its rows once.  The loaders stay the caller's (close them after
 * the mix); use them only through the mix meanwhile. */
typedef struct mt_mix mt_mix;
MT_API int mt_mix_open(mt_loader *const *loaders, const double *weights, size_t n,
		       uint64_t seed, mt_mix **out, mt_error *err);
/* The next batch and which loader (index) it came from; *out NULL at the
 * end of the epoch. */
MT_API int mt_mix_next(mt_mix *m, const mt_batch **out, size_t *source, mt_error *err);
/* Every loader to epoch `epoch`, and the draws with them. */
MT_API int mt_mix_set_epoch(mt_mix *m, uint64_t epoch, mt_error *err);
/* Where the draws are, as a line (like mt_loader_state).  To resume, open
 * each loader with its own token, open the mix over them, then
 * mt_mix_resume with this one: the draws go on where they stopped. */
MT_API size_t mt_mix_state(const mt_mix *m, char *buf, size_t cap);
MT_API int mt_mix_resume(mt_mix *m, const char *token, mt_error *err);
MT_API void mt_mix_close(mt_mix *m);

/* ---- NumPy .npy files -------------------------------------------------- */

typedef struct mt_npy mt_npy;

typedef struct mt_npy_info {
	mt_dtype dtype;
	int rank;                /* 0 for a scalar array */
	uint64_t shape[MT_MAX_RANK + 1];
	int fortran_order;
	int big_endian;
	uint64_t header_bytes;   /* where the array's bytes start in the file */
	uint64_t data_bytes;
	/* NumPy text ('<U' n): dtype is MT_STR and each element is text_chars
	 * UTF-32 code units, NUL-padded; mt_npy_read_rows gives them as
	 * little-endian uint32.  0 for every other dtype. */
	uint64_t text_chars;
} mt_npy_info;

/* Parse a .npy header (format 1.0, 2.0 or 3.0) from the first len bytes of
 * a file.  MT_EFORMAT names what is wrong (object dtype, bad dict, ...);
 * a header longer than len is MT_ERANGE. */
MT_API int mt_npy_parse_header(const void *buf, size_t len, mt_npy_info *out, mt_error *err);

/* Open a .npy file: parse its header and check the file holds exactly the
 * data it declares (a truncated file, or bytes after the array, is
 * MT_EFORMAT naming the path).  Every error names the path. */
MT_API int mt_npy_open(const char *path, mt_npy **out, mt_error *err);
MT_API const mt_npy_info *mt_npy_get_info(const mt_npy *n);
/* Copy rows [a, b) along the first dimension into buf (cap bytes) as
 * C-order little-endian values, whatever the file's order and byte order.
 * Not safe from several threads on one handle. */
MT_API int mt_npy_read_rows(mt_npy *n, uint64_t a, uint64_t b, void *buf, size_t cap,
			    mt_error *err);
MT_API void mt_npy_close(mt_npy *n);

/* Write a .npy file as a stream: create with the array's dtype and shape,
 * write its C-order little-endian bytes in any number of pieces, finish.
 * A regular file (or an absent one) is written under a temporary name
 * beside it and renamed by finish, so a reader never sees half of it;
 * close without finish removes it.  A symbolic link is written through:
 * the same rules apply to its target, and the link stays.  A device or a
 * FIFO is opened and written as it is, never replaced.  A directory is
 * refused (MT_EIO naming it). */
typedef struct mt_npy_writer mt_npy_writer;
/* dtype MT_STR writes NumPy's '<U' text: shape[rank-1] (at least 1) is the
 * width in characters, the array has the rank-1 dimensions before it, and
 * each character is written as a little-endian uint32 code point (0 pads). */
MT_API int mt_npy_create(const char *path, mt_dtype dtype, int rank, const uint64_t *shape,
			 mt_npy_writer **out, mt_error *err);
/* The same stream onto fd (standard output, a pipe), written as it comes;
 * name is what errors call it.  fd stays the caller's: finish and close
 * leave it open. */
MT_API int mt_npy_create_fd(int fd, const char *name, mt_dtype dtype, int rank,
			    const uint64_t *shape, mt_npy_writer **out, mt_error *err);
MT_API int mt_npy_write(mt_npy_writer *w, const void *data, size_t bytes, mt_error *err);
/* Where the next byte written lands in the file, the header's counted.  A
 * large file (64 MiB or more, written under a temporary name) goes to the
 * disk past the page cache where its file system allows: then a piece whose
 * address is congruent to this offset modulo 4096 is written from where it
 * lies, any other is copied first. */
MT_API uint64_t mt_npy_writer_offset(const mt_npy_writer *w);
/* MT_ESTATE when fewer or more bytes were written than the shape holds. */
MT_API int mt_npy_finish(mt_npy_writer *w, mt_error *err);
MT_API void mt_npy_writer_close(mt_npy_writer *w);

/* ---- models: checkpoints of tensors and state --------------------------- */

/*
 * A model is a named series of checkpoints (versions v1, v2, ...) beside the
 * datasets of a store: models/<name>/versions/<vN>.json manifests naming
 * content-addressed tensor objects models/<name>/tensors/<sha256> (the
 * sha256 of the tensor's raw bytes, the object a zstd frame of them), so a
 * tensor unchanged since an earlier checkpoint is stored and sent once
 * (doc/FORMAT.md, "Models").  A checkpoint holds tensors by key, a free-form
 * JSON "state" (optimizer groups, scheduler, step, RNG state; tensors are
 * referred to by their keys) and metadata.  Like a dataset version, a
 * checkpoint exists once its manifest is written, last, by an exclusive
 * create, and writers pin what they reuse so a concurrent gc keeps it.
 *
 * Threading: one writer is used by one thread at a time.  An open
 * checkpoint (mt_ckpt) may be read from several threads at once.
 */

typedef struct mt_ckpt_writer mt_ckpt_writer;
typedef struct mt_ckpt mt_ckpt;

typedef struct mt_ckpt_opts {
	size_t size;  /* set by mt_ckpt_opts_init */
	int keep;     /* after the commit, keep the newest `keep` checkpoints (0: all); the
		       * tensor objects only the dropped ones named are deleted at once,
		       * but for those another live writer pins (a later gc takes them) */
	int level;    /* zstd level, 1..22; 0: 3 */
	int threads;  /* threads hashing, compressing and storing tensors; 0: number of CPUs */
} mt_ckpt_opts;
MT_API void mt_ckpt_opts_init_size(mt_ckpt_opts *o, size_t size);
#define mt_ckpt_opts_init(o) mt_ckpt_opts_init_size((o), sizeof(mt_ckpt_opts))

/* Start a checkpoint of model `name` (a name as mt_name_check allows); it
 * takes the model's writer lock until commit or close.  opts may be NULL. */
MT_API int mt_ckpt_writer_open(mt_store *s, const char *name, const mt_ckpt_opts *opts,
			       mt_ckpt_writer **out, mt_error *err);
/* Add tensor `key` (1..1024 bytes of UTF-8 without control characters,
 * unique in the checkpoint): ndim (0..MT_MAX_RANK) dimensions shape[],
 * C order, little-endian, nbytes = elements x mt_dtype_size(dtype).  The
 * tensor is hashed, and compressed and stored unless the model already
 * holds one with the same bytes; data stays the caller's and may be reused
 * when the call returns.  An error leaves the writer usable, the tensor not
 * added. */
MT_API int mt_ckpt_add(mt_ckpt_writer *w, const char *key, mt_dtype dtype, int ndim,
		       const uint64_t *shape, const void *data, size_t nbytes, mt_error *err);
/* One tensor for mt_ckpt_add_many: the arguments of mt_ckpt_add. */
typedef struct mt_ckpt_tensor_in {
	const char *key;
	mt_dtype dtype;
	int ndim;
	const uint64_t *shape;
	const void *data;
	size_t nbytes;
} mt_ckpt_tensor_in;
/* Add n tensors as mt_ckpt_add would one after another, hashed and stored
 * on the writer's `threads` threads at once (a model of many tensors
 * saves at the speed of all cores, not one).  Every tensor is checked
 * before any is stored; on an error none of them is added (objects
 * already stored stay until mt_ckpt_gc) and the message names the first
 * failing tensor. */
MT_API int mt_ckpt_add_many(mt_ckpt_writer *w, const mt_ckpt_tensor_in *t, size_t n,
			    mt_error *err);
/* The checkpoint's state: JSON text of any value (an object, usually),
 * replacing any set before.  Invalid JSON is MT_EINVAL. */
MT_API int mt_ckpt_set_state(mt_ckpt_writer *w, const char *json, mt_error *err);
/* Metadata: a JSON object whose members "step" (integer >= 0), "metrics"
 * (object of numbers), "author", "description" (strings) and "tags" (array
 * of strings) are checked; other members are kept as given. */
MT_API int mt_ckpt_set_meta(mt_ckpt_writer *w, const char *json, mt_error *err);
/* Commit: make the new tensors durable, write the manifest under the next
 * free name (*version_out, when not NULL, gets it malloc'ed), then apply
 * `keep`.  A writer commits at most once.  When only `keep` fails, the
 * checkpoint is committed: the error is returned and *version_out is set. */
MT_API int mt_ckpt_commit(mt_ckpt_writer *w, char **version_out, mt_error *err);
/* Close; without a commit nothing is committed (the tensors already
 * stored stay until mt_ckpt_gc).  Accepts NULL. */
MT_API void mt_ckpt_writer_close(mt_ckpt_writer *w);

/* Names of the models of a store that have a checkpoint, sorted. */
MT_API int mt_models_list(mt_store *s, char ***names, size_t *n, mt_error *err);
/* Checkpoints of model `name`, oldest first.  MT_ENOTFOUND when none.
 * Free both with mt_strv_free. */
MT_API int mt_ckpt_list(mt_store *s, const char *name, char ***versions, size_t *n,
			mt_error *err);

/* Open "NAME" (the newest checkpoint), "NAME@latest" or "NAME@vN". */
MT_API int mt_ckpt_open(mt_store *s, const char *spec, mt_ckpt **out, mt_error *err);

typedef struct mt_ckpt_tensor_info {
	const char *key;      /* borrowed */
	mt_dtype dtype;
	int ndim;
	uint64_t shape[MT_MAX_RANK];
	uint64_t bytes;       /* raw bytes */
	uint64_t stored;      /* bytes of its object in the store */
	const char *sha256;   /* of the raw bytes; borrowed */
} mt_ckpt_tensor_info;

/* Borrowed strings: the model, the version, its parent ("" for none), its
 * creation time, the manifest text (JSON), the state and meta as JSON text
 * ("null" / "{}" when none were set). */
MT_API const char *mt_ckpt_model(const mt_ckpt *c);
MT_API const char *mt_ckpt_version(const mt_ckpt *c);
MT_API const char *mt_ckpt_parent(const mt_ckpt *c);
MT_API const char *mt_ckpt_created(const mt_ckpt *c);
MT_API const char *mt_ckpt_manifest(const mt_ckpt *c);
MT_API const char *mt_ckpt_state(const mt_ckpt *c);
MT_API const char *mt_ckpt_meta(const mt_ckpt *c);
/* Tensors in the order they were added. */
MT_API size_t mt_ckpt_ntensors(const mt_ckpt *c);
MT_API int mt_ckpt_tensor(const mt_ckpt *c, size_t i, mt_ckpt_tensor_info *out, mt_error *err);
/* Index of tensor `key`, or -1. */
MT_API long mt_ckpt_find(const mt_ckpt *c, const char *key);
/* Read tensor `key` into buf (cap bytes, at least its bytes): one read
 * (straight into buf for a raw frame on the local store), decompressed
 * and checked against the manifest's xxh3, or its sha256 for checkpoints
 * written without one (MT_ECORRUPT naming the object when it differs).
 * MT_ENOTFOUND for an unknown key. */
MT_API int mt_ckpt_read(mt_ckpt *c, const char *key, void *buf, size_t cap, mt_error *err);
MT_API void mt_ckpt_close(mt_ckpt *c);

/* Remove checkpoint name@version: a tombstone keeps its name from reuse,
 * then the manifest goes; its tensors stay until mt_ckpt_gc. */
MT_API int mt_ckpt_delete(mt_store *s, const char *name, const char *version, mt_error *err);

/* Called for each damaged object mt_ckpt_verify finds. */
typedef void (*mt_ckpt_bad_fn)(void *ud, const char *version, const char *key,
			       const char *object, const char *message);
/* Read every tensor of name@version (version NULL: of every checkpoint,
 * each object once) and check it against its sha256; fn (may be NULL)
 * hears of each damaged or missing one.  *nchecked (may be NULL) counts
 * objects checked.  MT_ECORRUPT when any was damaged or missing, err
 * naming the first. */
MT_API int mt_ckpt_verify(mt_store *s, const char *name, const char *version, int threads,
			  mt_ckpt_bad_fn fn, void *ud, uint64_t *nchecked, mt_error *err);
/* Add Reed–Solomon parity (K data rows, M parity rows) over the tensors of
 * checkpoint spec ("NAME", "NAME@vN"; doc/FORMAT.md, "Protection of
 * checkpoints"): parity objects first, the record last.  MT_EEXIST when it
 * is protected already.  mt_ckpt_read then heals a damaged or missing
 * tensor from that parity. */
MT_API int mt_ckpt_protect(mt_store *s, const char *spec, int k, int m, mt_error *err);
/* mt_repair for a model: check every tensor object of name@version
 * (version NULL: of every checkpoint; "latest": the newest) against its
 * sha256, and bring back each damaged or missing one from another store
 * (o->sources, the remotes), from the checkpoint's parity, or from the
 * parity of another protected checkpoint naming the same object (source
 * "parity of vN"); a lost
 * manifest from another store or the protection record.  Reports have
 * kind MT_REPAIR_TENSOR (number: the tensor's index),
 * MT_REPAIR_PARITY (number: its group; a damaged parity object is coded
 * again from the checkpoint's sound tensors) or MT_REPAIR_MANIFEST, and
 * `dataset` set to the model.  o->dry_run, report,
 * sources and use_remotes apply.  MT_ECORRUPT when something could not be
 * rebuilt. */
MT_API int mt_ckpt_repair(mt_store *s, const char *name, const char *version,
			  const mt_repair_opts *o, mt_repair_stats *stats, mt_error *err);

/* Check the protection of name@version alone (version NULL: of every
 * checkpoint; "latest": the newest), as mt_ckpt_repair checks it: each
 * parity object against its sha256 and size, reported (kind
 * MT_REPAIR_PARITY, number: its group) as sound, repairable (coded again
 * from the checkpoint's tensors by mt_ckpt_repair) or unrepairable; a
 * record that fails its checks is MT_REPAIR_RECORD.  Nothing is written;
 * o->report applies.  Returns 0 when no checkpoint is protected or every
 * protection is sound, MT_ECORRUPT when something is damaged or missing
 * (err names the first). */
MT_API int mt_ckpt_check_protection(mt_store *s, const char *name, const char *version,
				    const mt_repair_opts *o, mt_repair_stats *stats,
				    mt_error *err);
/* Find (and unless dry_run, delete) tensor objects of model `name` (NULL:
 * of every model) that no checkpoint names, older than grace_seconds and
 * not pinned by a live writer, as mt_store_gc does for shards. */
MT_API int mt_ckpt_gc(mt_store *s, const char *name, int dry_run, uint64_t grace_seconds,
		      mt_gc_fn fn, void *ud, uint64_t *nobjects, uint64_t *nbytes,
		      mt_error *err);

/* Copy name@version (NULL: every checkpoint, oldest first) from src to
 * dst, sending only tensor objects dst lacks, each checkpoint's manifest
 * last; counted in stats (versions, shards = tensor objects, bytes) as
 * mt_copy does.  A checkpoint dst holds with other content is MT_EEXIST. */
MT_API int mt_ckpt_copy(mt_store *src, mt_store *dst, const char *name, const char *version,
			mt_progress_fn progress, void *ud, mt_copy_stats *stats, mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
