/* format.h — format 1 in memory: the chunk index, the manifest, and the HDF5 shard image (doc/FORMAT.md). */
#ifndef MT_FORMAT_H
#define MT_FORMAT_H

#include "util.h"

/* ---- chunk index --------------------------------------------------------
 * One entry per HDF5 dataset in a shard ("image", "tokens/values",
 * "tokens/offsets").  A "unit" is a row of a fixed attribute, an item of
 * ragged values, or one offset.  Encoded little-endian, see FORMAT.md.
 * Version 2 adds the shard's rows and each unit's shape, so a reader can
 * check the manifest's dtypes, shapes and rows against the shard itself. */

#define MT_INDEX_VERSION 2

/* Caps on what a chunk index may declare (doc/FORMAT.md, "Sound shards"),
 * checked before anything is multiplied or allocated: a chunk decodes to
 * at most MT_CHUNK_MAX_BYTES (HDF5's own limit on a chunk), and to at most
 * MT_ZSTD_MAX_RATIO times its compressed bytes (no zstd frame expands
 * more: a 4-byte RLE block makes at most 128 KiB); a shard has fewer than
 * MT_SHARD_MAX_ROWS rows. */
#define MT_CHUNK_MAX_BYTES 0xffffffffull
#define MT_ZSTD_MAX_RATIO 32768u
#define MT_SHARD_MAX_ROWS (1ull << 48)

typedef struct mt_chunk {
	uint64_t offset; /* byte offset of the compressed chunk in the shard */
	uint64_t size;   /* compressed bytes */
	uint64_t first;  /* first unit */
	uint64_t count;  /* units held */
	uint64_t xxh3;   /* of the compressed bytes */
} mt_chunk;

typedef struct mt_index_entry {
	char *name;
	mt_dtype dtype;
	uint64_t unit_bytes;  /* bytes per unit, uncompressed */
	uint64_t chunk_units; /* units per (full) chunk */
	uint64_t units;       /* units in the dataset */
	size_t nchunks;
	mt_chunk *chunks;
	int rank;                     /* version 2: dimensions of one unit; -1 in version 1 */
	uint64_t shape[MT_MAX_RANK];
} mt_index_entry;

typedef struct mt_index {
	size_t n;
	mt_index_entry *e;
	uint32_t version; /* 1 or 2; the encoder writes this version */
	uint64_t rows;    /* version 2: the shard's rows */
	uint64_t xxh3;    /* decoded: the index's trailing checksum */
	/* decoded: the entries sorted by name (equal names in index order), so
	 * a shard of many attributes is bound and read without a scan per
	 * attribute; NULL in an index built in memory, which is scanned. */
	mt_index_entry **byname;
} mt_index;

MT_LOCAL int mti_index_encode(const mt_index *ix, mt_buf *out, mt_error *err);
/* Decode and check an encoded index of version 1 or 2 (magic, lengths,
 * trailing xxh3, chunks in order and inside the shard of `shard_bytes`,
 * version 2 shapes against unit sizes).  `what` names the shard in errors. */
MT_LOCAL int mti_index_decode(const void *data, size_t len, uint64_t shard_bytes, const char *what,
			     mt_index **out, mt_error *err);
MT_LOCAL const mt_index_entry *mti_index_find(const mt_index *ix, const char *name);
MT_LOCAL void mti_index_free(mt_index *ix);
/* Frees what an index holds, not the index itself (one on the stack). */
MT_LOCAL void mti_index_clear(mt_index *ix);

/* ---- manifest ---------------------------------------------------------- */

typedef struct mt_mshard {
	char sha256[65];
	uint64_t bytes;
	uint64_t rows;
	uint64_t first_row;
	uint64_t index_offset; /* the chunk index's bytes inside the shard */
	uint64_t index_bytes;
	int has_index_xxh3;    /* manifests before the field lack it */
	uint64_t index_xxh3;   /* the chunk index's trailing XXH3-64 */
} mt_mshard;

/* Format 2 (doc/FORMAT.md, "Manifest format 2"): a version's manifest is a
 * root naming fragments, each an immutable object
 * datasets/<dataset>/fragments/<sha256>.json holding a run of the shard
 * entries, bound by its sha256 and size in the root.  Versions share
 * fragments: an append names its parent's full ones again. */
#define MT_MANIFEST_FORMAT_MAX 2
#define MT_FRAGMENT_SHARDS 2048        /* shards a writer puts in one fragment */
#define MT_FRAGMENT_SHARDS_MAX 65536u  /* the most a reader accepts */
#define MT_FRAGMENT_MAX_BYTES (32ull << 20)
#define MT_MANIFEST_SHARDS_MAX (1ull << 24) /* shards of a format-2 version */
/* A fragment's shard rows as runs in the root ("layout"): runs[k] is
 * `shards` consecutive shards of `rows` rows each.  A fragment needing more
 * runs than this has none in the root (its rows are then known only from
 * the fragment itself). */
#define MT_FRAGMENT_LAYOUT_RUNS 16
typedef struct mt_mrun {
	uint64_t shards, rows;
} mt_mrun;

typedef struct mt_mfrag {
	char sha256[65];
	uint64_t bytes;       /* of the fragment's object */
	uint64_t first_row;   /* the version's row its first shard starts at */
	uint64_t rows;
	uint64_t shard_bytes; /* the sum of its shards' bytes */
	size_t first_shard;   /* its first shard's place in the version */
	size_t nshards;
	int loaded;           /* decoded: its shards are in the manifest's array */
	int fresh;            /* writer: not a fragment of the version it builds on */
	size_t nlayout;       /* runs in layout; 0: the root gives none */
	mt_mrun layout[MT_FRAGMENT_LAYOUT_RUNS];
} mt_mfrag;

/* A file attached to a version (doc/FORMAT.md, "Attachments"): stored once
 * as datasets/<dataset>/attachments/<sha256>, named in the manifest. */
#define MT_ATTACHMENTS_MAX 1024u
#define MT_ATTACHMENT_MAX_BYTES (1ull << 30)
typedef struct mt_mattach {
	char name[129]; /* name rules (mt_name_check) */
	char sha256[65];
	uint64_t bytes;
} mt_mattach;

typedef struct mt_manifest {
	int format;
	char *dataset;
	char *version;
	char *parent;      /* "" when none */
	char *created;     /* RFC 3339 UTC */
	char *author;
	char *description;
	char **tags;
	size_t ntags;
	uint64_t rows;
	uint64_t raw_bytes;
	int level;
	uint64_t chunk_bytes;
	mt_attr *attrs; /* names owned */
	size_t nattrs;
	mt_mshard *shards;
	size_t nshards;
	char recipe[65];     /* sha256 of the recipe script; "" when none */
	char **recipe_args;  /* "KEY=VALUE" each */
	size_t nrecipe_args;
	/* A version written by `repair --salvage`: the damaged version it was
	 * salvaged from (NULL when it is not a salvage) and the rows of that
	 * version it lost, {first row, count} each. */
	char *salvage_from;
	uint64_t (*salvage_lost)[2];
	size_t nsalvage_lost;
	/* The versions it was built from: sources[i]'s strings are
	 * source_strs[3i..3i+2] (dataset, version, store; "" for the same
	 * store), owned by the manifest when decoded. */
	mt_source *sources;
	char **source_strs;
	size_t nsources;
	/* A staged part record (datasets/<d>/staged/<id>/<k>.json), not a
	 * version: part k of n of the staging `part_id`; NULL otherwise. */
	char *part_id;
	uint64_t part_k, part_n;
	/* Format 2: the fragments, in row order; shards[] has room for all
	 * nshards entries, and a fragment's are there once it is loaded
	 * (mti_manifest_load_frags).  nfrags 0: format 1, every shard there. */
	mt_mfrag *frags;
	size_t nfrags;
	/* Attached files, sorted by name, names unique. */
	mt_mattach *attachments;
	size_t nattachments;
} mt_manifest;

/* The "checksum" member that ends a manifest (doc/FORMAT.md, "Manifest
 * checksum"), also used by other sealed objects of the format (protection
 * records).  mti_json_seal replaces the closing brace of compact JSON text
 * (malloc'ed) with the member and the brace; on failure it frees the text,
 * sets *json NULL and returns -1.  mti_json_check_sum checks that text of
 * len bytes ends with that member, written exactly so, and that it matches;
 * `sum` is the member's decoded value (NULL when absent: MT_ECORRUPT).
 * `what` (the key) is named in errors. */
MT_LOCAL int mti_json_seal(char **json);
MT_LOCAL int mti_json_check_sum(const char *json, size_t len, const char *sum, const char *what,
			       mt_error *err);

/* ---- size caps (doc/FORMAT.md, "Size caps") -------------------------------
 * A manifest's object is read only when its size is under the cap (a few
 * million shards at ~170 bytes each fit), and every string in it has a cap
 * of its own: a crafted description costs a reader no more than its bytes. */
#define MT_MANIFEST_MAX_BYTES (512ull << 20)
#define MT_META_MAX_BYTES (4ull << 20) /* meta/<version>.json */
#define MT_DESCRIPTION_MAX (64u << 10)
#define MT_TEXT_MAX 4096u /* author, a recipe argument KEY=VALUE, a source's store URL */
#define MT_TAG_MAX 256u
#define MT_TAGS_MAX 1024u
#define MT_ATTRS_MAX 65536u
#define MT_RECIPE_ARGS_MAX 1024u
#define MT_SOURCES_MAX 65536u
/* format-caps.c: JSON text of len bytes over max_bytes, or holding a
 * string literal longer than any member's cap allows, is MT_ECORRUPT
 * naming `what`, before a parser copies any of it. */
MT_LOCAL int mti_json_caps_scan(const char *json, size_t len, uint64_t max_bytes,
				const char *what, mt_error *err);
/* The caps of a manifest's strings and counts; `code` is what a breach
 * returns (MT_ECORRUPT reading, MT_EINVAL writing). */
MT_LOCAL int mti_manifest_caps(const mt_manifest *m, int code, const char *what, mt_error *err);
MT_LOCAL int mti_meta_caps(const char *description, const char *const *tags, size_t ntags,
			   int code, const char *what, mt_error *err);

/* Compact JSON text (malloc'ed, NUL-terminated), ending with the
 * "checksum" member over the rest of the text. */
MT_LOCAL int mti_manifest_encode(const mt_manifest *m, char **json, mt_error *err);
/* Parse and validate (checksum when present, names, dtypes, shapes, row
 * sums, shard order); `what` (the key) is named in errors.  A checksum
 * that does not match the text is MT_ECORRUPT. */
MT_LOCAL int mti_manifest_decode(const char *json, size_t len, const char *what,
				mt_manifest **out, mt_error *err);
MT_LOCAL void mti_manifest_free(mt_manifest *m);

/* ---- format 2: fragments (format-fragment.c) ------------------------------
 * A fragment's text: {"format":2,"dataset":D,"first_row":F,"shards":[...]},
 * the entries exactly as a format-1 manifest writes them. */
MT_LOCAL char *mti_key_fragment(const char *dataset, const char *sha256);
/* Shards a writer puts in a fragment: $MATORAGE_FRAGMENT_SHARDS (1 to
 * MT_FRAGMENT_SHARDS_MAX), else MT_FRAGMENT_SHARDS. */
MT_LOCAL size_t mti_fragment_shards(void);
/* Encode shards[0..n) (first_row set) of dataset as a fragment's text
 * (malloc'ed), with its sha256 and size into f (first_row, rows, nshards
 * too). */
MT_LOCAL int mti_fragment_encode(const char *dataset, const mt_mshard *shards, size_t n,
				 mt_mfrag *f, char **json, mt_error *err);
/* Check that len bytes are fragment f of m (size, sha256, dataset, rows,
 * first rows, entries) and put its entries into m->shards; `what` (the
 * fragment's key) is named in errors, which also name m's version and the
 * fragment's rows.  MT_ECORRUPT for a fragment that is not f. */
MT_LOCAL int mti_fragment_decode(mt_manifest *m, size_t f, const char *json, size_t len,
				 const char *what, mt_error *err);
/* Read an object of at most max bytes (a store's get; 0 or MT_E*). */
typedef int (*mti_get_fn)(void *ud, const char *key, uint64_t max, void **data, size_t *len,
			  mt_error *err);
/* Load fragments [f0, f1) of m that are not loaded yet, through get (on
 * up to 8 threads); a missing or damaged fragment is MT_ECORRUPT naming
 * the version, the fragment's key and its rows.  A format-1 m: 0. */
MT_LOCAL int mti_manifest_load_frags(mt_manifest *m, size_t f0, size_t f1, mti_get_fn get,
				     void *ud, mt_error *err);
/* The fragment holding shard i / row `row` of a format-2 m. */
MT_LOCAL size_t mti_manifest_frag_of_shard(const mt_manifest *m, size_t i);
MT_LOCAL size_t mti_manifest_frag_of_row(const mt_manifest *m, uint64_t row);
/* Order of fragments as roots describe them: sha256 first, then size,
 * rows, shards, shard bytes and layout.  0: two roots say the very same of
 * one fragment object, so it loads under one exactly as under the other
 * (the same entries, the same checks passed or failed). */
MT_LOCAL int mti_frag_cmp(const mt_mfrag *a, const mt_mfrag *b);
/* Cut m's shards (first_row set) into fragments of `per` shards: first
 * those of `prev` (the fragments of the version it builds on) whose very
 * bytes m's shards encode to at the same place, but not a last one
 * shorter than per (the new shards join it), then new ones of per shards
 * (fresh set).  m->frags and m->nfrags are replaced (free()d with m). */
MT_LOCAL int mti_manifest_cut(mt_manifest *m, const mt_mfrag *prev, size_t nprev, size_t per,
			      mt_error *err);

/* Decode the chunk index of shard i of m (the bytes at the manifest's
 * index offset; `shard_bytes` as for mti_index_decode) and check it is the
 * one the manifest names: its trailing xxh3 against the manifest's
 * index_xxh3 when recorded, then each attribute's dtype, shape (version 2)
 * or unit size (version 1) and rows against the manifest.  `what` names
 * the shard in errors; a mismatch is MT_ECORRUPT saying what differs. */
MT_LOCAL int mti_index_decode_shard(const void *data, size_t len, uint64_t shard_bytes,
				   const mt_manifest *m, size_t i, const char *what,
				   mt_index **out, mt_error *err);
/* ---- soundness: the one check of a shard ----------------------------------
 * A shard is sound (doc/FORMAT.md, "Sound shards") when
 *   - its bytes are as many as the manifest says and match its sha256;
 *   - it is an HDF5 file (the signature at byte 0);
 *   - its chunk index lies inside it, decodes, is coherent (sizes
 *     overflow-checked and within the caps above, chunks on the grid,
 *     inside the object, apart from each other and from the index) and is
 *     the one the manifest names (mti_index_decode_shard: rows, dtypes,
 *     shapes and units against the manifest);
 *   - every chunk matches its xxh3 and is one zstd frame whose declared
 *     content size is the index's chunk size, and which decodes to it;
 *   - every ragged attribute's offsets start at 0, never decrease and end
 *     at the number of items its values hold.
 * verify, protect, compact, copy and repair apply mti_shard_check to a
 * shard read whole; the reader applies the same checks to the parts it
 * reads (the index, each frame before it is decoded, the signature and a
 * shard's offsets before its ragged rows are used).
 *
 * mti_shard_check: data is shard i of m, `len` bytes read whole; `what`
 * names it in errors.  0 when sound, with *out (when out is not NULL) the
 * decoded index, to free with mti_index_free; else MT_ECORRUPT (or
 * MT_ENOMEM) and err says the first thing wrong.
 * mti_shard_check_body: the same without the sha256, for a caller that
 * knows the hash fails and asks whether the chunks and index still hold.
 * mti_shard_is_hdf5: whether len bytes from byte 0 start with HDF5's
 * signature. */
MT_LOCAL int mti_shard_check(const void *data, size_t len, const mt_manifest *m, size_t i,
			    const char *what, mt_index **out, mt_error *err);
MT_LOCAL int mti_shard_check_body(const void *data, size_t len, const mt_manifest *m, size_t i,
				 const char *what, mt_index **out, mt_error *err);
MT_LOCAL int mti_shard_is_hdf5(const void *head, size_t len);
/* For each of shards v[0..n), the first shard of v naming the same object
 * (sha256), and with `entry` also the same entry but for its first_row
 * (bytes, rows, chunk index): (*first)[i] <= i, malloc'ed.  A shard a
 * version names many times is then read, sent or checked once: the checks
 * of mti_shard_check that pass depend on those fields alone. */
MT_LOCAL int mti_shard_firsts(const mt_mshard *v, size_t n, int entry, size_t **first,
			     mt_error *err);

/* Deep copies of attribute arrays (names duplicated). */
MT_LOCAL int mti_attrs_dup(const mt_attr *a, size_t n, mt_attr **out);
MT_LOCAL void mti_attrs_free(mt_attr *a, size_t n);
/* Check a list of attributes a writer is given: names unique and valid,
 * dtypes known, ranks and shapes sane. */
MT_LOCAL int mti_attrs_check(const mt_attr *a, size_t n, mt_error *err);
/* When a is a str attribute: each of the nrows rows (lengths in bytes, the
 * text back to back in data; lengths already checked against overflow) is
 * valid UTF-8 without NUL, else MT_EINVAL naming the dataset, attribute and
 * row (counted from 0 in this batch).  0 for any other dtype. */
MT_LOCAL int mti_str_rows_check(const char *dataset, const mt_attr *a, uint64_t nrows,
			       const void *data, const uint64_t *lengths, mt_error *err);

/* ---- shard image -------------------------------------------------------- */

/* One attribute's rows for a shard, already laid out back to back. */
typedef struct mt_shard_col {
	const void *data;       /* values */
	const uint64_t *offsets; /* ragged: rows+1 item offsets starting at 0 */
} mt_shard_col;

typedef struct mt_shard_image {
	mt_buf image;           /* the HDF5 file bytes */
	char sha256[65];
	uint64_t index_offset;
	uint64_t index_bytes;
	uint64_t index_xxh3;    /* the chunk index's trailing checksum */
	uint64_t raw_bytes;
} mt_shard_image;

/* Build the HDF5 file image of one shard in memory: chunks compressed on
 * `threads` threads, written with H5Dwrite_chunk, the chunk index stored
 * as dataset "_matorage_index", then the sha256 of the image.  out must be
 * zeroed or hold an earlier image, whose buffer is reused (fresh pages
 * cost more than filling them) or freed. */
MT_LOCAL int mti_shard_build(const char *dataset, const mt_attr *attrs, size_t nattrs,
			    uint64_t rows, const mt_shard_col *cols, uint64_t chunk_bytes,
			    int level, int threads, mt_shard_image *out, mt_error *err);
MT_LOCAL void mti_shard_image_free(mt_shard_image *s);
/* The same file image again from a shard whose HDF5 metadata is damaged:
 * its decoded (version 2) index and the compressed chunks it names in the
 * shard's `data` (len bytes), as mti_shard_build wrote them at zstd
 * `level` (the filter records it).  The writer is deterministic, so the
 * caller holds out->sha256 against the manifest's. */
MT_LOCAL int mti_shard_rebuild(const char *dataset, const mt_index *ix, const void *data,
			       size_t len, int level, mt_shard_image *out, mt_error *err);

/* Store keys of the layout. */
MT_LOCAL char *mti_key_manifest(const char *dataset, const char *version);
MT_LOCAL char *mti_key_shard(const char *dataset, const char *sha256);
MT_LOCAL char *mti_key_meta(const char *dataset, const char *version);
/* datasets/<dataset>/head.json: a copy of the newest manifest (a hint). */
MT_LOCAL char *mti_key_head(const char *dataset);
MT_LOCAL char *mti_key_recipe(const char *dataset, const char *sha256);
/* datasets/<dataset>/attachments/<sha256>: an attached file's bytes. */
MT_LOCAL char *mti_key_attachment(const char *dataset, const char *sha256);
/* datasets/<dataset>/staged/<id>/<k>.json: part k of a staged version. */
MT_LOCAL char *mti_key_staged(const char *dataset, const char *id, uint64_t k);

/* ---- curated metadata (meta/<version>.json) ------------------------------ */

/* Encode the description and tags that replace m's for m's version (the
 * other fields of m only name it), edited at time `updated` (RFC 3339). */
MT_LOCAL int mti_meta_encode(const mt_manifest *m, const char *updated, const char *description,
			    const char *const *tags, size_t ntags, char **json, mt_error *err);
/* Decode a metadata object for m's version and put its description and tags
 * into m in place of the manifest's.  `what` names the object in errors. */
MT_LOCAL int mti_meta_apply(mt_manifest *m, const char *json, size_t len, const char *what,
			   mt_error *err);

#endif
