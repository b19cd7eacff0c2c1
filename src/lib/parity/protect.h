/* protect.h — Reed–Solomon parity over a version's shards (doc/FORMAT.md, "Protection"):
 * the protection record, encoding groups with ISA-L, and rebuilding members whole or by
 * byte span from the rest of their group. */
#ifndef MT_PROTECT_H
#define MT_PROTECT_H

#include "format.h"
#include "store.h"

/* K and M are bounded so a group's matrix stays invertible (Cauchy over
 * GF(2^8) needs K + M <= 256) and a record stays small. */
#define MTI_PARITY_MAX_K 64
#define MTI_PARITY_MAX_M 16

/* One member of a group: shard number `shard` of the version (in a
 * fragment group: fragment number `shard` of its root). */
typedef struct mti_pmember {
	size_t shard;      /* index into the manifest's shards (or fragments) */
	char sha256[65];
	uint64_t bytes;
} mti_pmember;

/* One parity object of a group. */
typedef struct mti_pparity {
	char sha256[65];
	uint64_t bytes; /* always the group's stripe */
} mti_pparity;

typedef struct mti_pgroup {
	uint64_t stripe;      /* bytes of each coded row: the longest member */
	size_t nmembers;      /* 1..k; missing members count as all zeros */
	mti_pmember *members;
	mti_pparity *parity;  /* m of them */
} mti_pgroup;

/* A version's protection record (protect/<version>.json), decoded.  A
 * format-2 version's record (format 2) embeds its root and also has groups
 * over the root's fragments, coded as shard groups are. */
typedef struct mti_prec {
	int format;           /* 1, or 2 for a format-2 manifest */
	char *dataset;
	char *version;
	int k, m;
	uint8_t *matrix;      /* m rows of k coefficients, row-major */
	char *created;
	char *manifest;       /* the version's manifest text, byte for byte */
	size_t manifest_len;
	size_t ngroups;
	mti_pgroup *groups;
	size_t nfgroups;      /* format 2: groups of fragments, in root order */
	mti_pgroup *fgroups;
} mti_prec;

/* Every parity object p names, those of its shard groups first, then
 * those of its fragment groups. */
MT_LOCAL size_t mti_prec_nparity(const mti_prec *p);
MT_LOCAL const mti_pparity *mti_prec_parity(const mti_prec *p, size_t i);

/* Keys of the layout. */
MT_LOCAL char *mti_key_parity(const char *dataset, const char *sha256);
MT_LOCAL char *mti_key_protect(const char *dataset, const char *version);

/* Encode/decode a record (compact JSON ending in a "checksum" member, like a
 * manifest).  Decoding checks the checksum, the matrix against k and m, the
 * embedded manifest's checksum and that each member's sha256/bytes equal the
 * embedded manifest's shard entry (format 2: each fragment member's the
 * root's fragment; shard members are checked with mti_prec_check_shards
 * once the fragments are loaded); `what` (the key) is named in errors. */
MT_LOCAL int mti_prec_encode(const mti_prec *p, char **json, mt_error *err);
MT_LOCAL int mti_prec_decode(const char *json, size_t len, const char *what, mti_prec **out,
			     mt_error *err);
MT_LOCAL void mti_prec_free(mti_prec *p);
/* The members of p's shard groups against m's shards (for a format-2 m,
 * those of its fragments loaded): MT_ECORRUPT naming `what` and the first
 * that differs. */
MT_LOCAL int mti_prec_check_shards(const mti_prec *p, const mt_manifest *m, const char *what,
				   mt_error *err);

/* Load dataset@version's record: MT_ENOTFOUND (err filled) when the version
 * is not protected. */
MT_LOCAL int mti_prec_load(mt_store *s, const char *dataset, const char *version,
			   mti_prec **out, mt_error *err);

/* The group holding shard number `shard`, and the member's place in it;
 * NULL when the record does not cover that shard. */
MT_LOCAL const mti_pgroup *mti_prec_find(const mti_prec *p, size_t shard, size_t *member);

/* ---- the code itself (pure: no store) ----------------------------------- */

/* The m x k parity rows of ISA-L's gf_gen_cauchy1_matrix(k + m, k). */
MT_LOCAL void mti_parity_matrix(int k, int m, uint8_t *out);

/* parity[r] = sum over j < nd of matrix[r][j] * data[j], over `len` bytes,
 * for r < m; members nd..k-1 are zeros.  Runs on `threads` threads by
 * splitting the byte range. */
MT_LOCAL int mti_parity_encode(int k, int m, const uint8_t *matrix, size_t nd,
			       const uint8_t *const *data, size_t len, uint8_t *const *parity,
			       int threads, mt_error *err);

/* Recover rows: `have` has k + m flags (members 0..k-1, then parity 0..m-1);
 * rows[i] points at len bytes for each row with have[i] set, and at an output
 * buffer of len bytes for each row listed in `want` (nwant of them, each
 * without have set).  Members at or past nd are zeros and count as had.
 * MT_ECORRUPT when fewer than k rows are had. */
MT_LOCAL int mti_parity_decode(int k, int m, const uint8_t *matrix, size_t nd,
			       const unsigned char *have, uint8_t *const *rows, size_t len,
			       const size_t *want, size_t nwant, mt_error *err);

/* ---- rebuilding from a store -------------------------------------------- */

/* A check of rebuilt bytes: 0 when they are right (a chunk's xxh3, a whole
 * member's sha256), nonzero otherwise. */
typedef int (*mti_rebuild_check)(void *ud, const void *buf, size_t len);

/* Rebuild bytes [off, off + len) of shard `shard` of p's version from the
 * same span of the other members and parity objects of its group (ranged
 * reads of s: never whole objects unless the span is).  `avoid` (k + m
 * flags, or NULL) marks rows known bad, which are not read.  When check is
 * given and rejects the result, other choices of k rows are tried (each
 * row left out in turn) before giving up with MT_ECORRUPT.  Bytes past a
 * member's end read as zeros.  `bytes_read` (may be NULL) adds what was
 * fetched. */
MT_LOCAL int mti_parity_rebuild_span(mt_store *s, const mti_prec *p, size_t shard, uint64_t off,
				     size_t len, const unsigned char *avoid, mti_rebuild_check check,
				     void *check_ud, void *out, uint64_t *bytes_read, mt_error *err);
/* The first len bytes of fragment `frag` of p's root (the whole object:
 * len is its size), from the rest of its fragment group, as above. */
MT_LOCAL int mti_parity_rebuild_fragment(mt_store *s, const mti_prec *p, size_t frag, size_t len,
					 mti_rebuild_check check, void *check_ud, void *out,
					 uint64_t *bytes_read, mt_error *err);

#endif
