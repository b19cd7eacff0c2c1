/* codec.h — checksums (sha256, xxh3) and Zstandard chunk compression, plus the HDF5 filter 32015 that wraps it. */
#ifndef MT_CODEC_H
#define MT_CODEC_H

#include <sys/uio.h>

#include "util.h"

#define MT_ZSTD_FILTER_ID 32015
#define MT_SHA256_HEX 65 /* 64 digits and NUL */

/* Hex sha256 of a buffer. */
MT_LOCAL int mti_sha256_hex(const void *data, size_t len, char out[MT_SHA256_HEX], mt_error *err);

/* Incremental sha256 for objects read in pieces. */
typedef struct mt_sha256 mt_sha256;
MT_LOCAL int mti_sha256_new(mt_sha256 **out, mt_error *err);
MT_LOCAL int mti_sha256_update(mt_sha256 *h, const void *data, size_t len, mt_error *err);
MT_LOCAL int mti_sha256_final(mt_sha256 *h, char out[MT_SHA256_HEX], mt_error *err);
MT_LOCAL void mti_sha256_free(mt_sha256 *h);

/* 64-bit XXH3 of a buffer (seed 0). */
MT_LOCAL uint64_t mti_xxh3(const void *data, size_t len);
/* codec-xxh3.c: the same hash built for AVX2 (x86-64 with GCC or clang);
 * mti_xxh3 calls it when the CPU has AVX2. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MTI_XXH3_AVX2 1
MT_LOCAL uint64_t mti_xxh3_avx2(const void *data, size_t len);
#else
#define MTI_XXH3_AVX2 0
#endif

/* Compress src into a new zstd frame that records its content size (what
 * the HDF5 zstd filter expects).  *out is malloc'ed. */
MT_LOCAL int mti_zstd_compress(const void *src, size_t len, int level, void **out, size_t *outlen,
			      mt_error *err);
/* The same on `threads` threads (one frame, content size recorded): for
 * one large buffer, such as a model's tensor. */
MT_LOCAL int mti_zstd_compress_mt(const void *src, size_t len, int level, int threads, void **out,
				 size_t *outlen, mt_error *err);
/* A zstd frame of raw (stored) blocks, content size recorded: any zstd
 * decoder reads it, and writing it costs no compression, for data that
 * does not compress.  It is laid out as a gather list over the data, so a
 * store writes it from (and reads it back into) the caller's buffer
 * without building the frame in memory: mti_zstd_raw_layout allocates
 * the gather list (niov entries over data and hdr, nblocks blocks),
 * writing the frame's headers into hdr with `fill` (to write the frame)
 * and leaving hdr to receive them without (to read one);
 * mti_zstd_raw_hdr_ok then says whether the headers read are exactly
 * those of a raw frame of len bytes. */
typedef struct mti_zstd_raw {
	struct iovec *iov;
	size_t niov, nblocks;
	unsigned char *hdr;
	size_t nhdr; /* the frame is nhdr + len bytes */
} mti_zstd_raw;
MT_LOCAL size_t mti_zstd_raw_hdr_bytes(size_t len);
MT_LOCAL int mti_zstd_raw_layout(void *data, size_t len, int fill, mti_zstd_raw *out);
MT_LOCAL void mti_zstd_raw_free(mti_zstd_raw *f);
MT_LOCAL int mti_zstd_raw_hdr_ok(const unsigned char *hdr, size_t len);
/* How well src compresses at `level`, as compressed / original bytes of
 * 8 spread samples of 16 KiB (the whole buffer when smaller): a guess that
 * costs about 1% of compressing all of a large buffer. */
MT_LOCAL double mti_zstd_ratio_guess(const void *src, size_t len, int level);
/* Whether src is one whole zstd frame, nothing after it, whose header
 * declares exactly `want` content bytes: checked before anything is
 * allocated for it (a frame may claim any size).  MT_ECORRUPT otherwise. */
MT_LOCAL int mti_zstd_frame_check(const void *src, size_t len, uint64_t want, mt_error *err);
/* Decompress a frame that must expand to exactly `dstlen` bytes. */
MT_LOCAL int mti_zstd_decompress(const void *src, size_t len, void *dst, size_t dstlen,
				mt_error *err);

/* Register filter 32015 with HDF5 (once per process; thread-safe). */
MT_LOCAL int mti_zstd_filter_register(mt_error *err);

#endif
