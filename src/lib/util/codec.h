/* codec.h — checksums (sha256, xxh3) and Zstandard chunk compression, plus the HDF5 filter 32015 that wraps it. */
#ifndef MT_CODEC_H
#define MT_CODEC_H

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

/* Compress src into a new zstd frame that records its content size (what
 * the HDF5 zstd filter expects).  *out is malloc'ed. */
MT_LOCAL int mti_zstd_compress(const void *src, size_t len, int level, void **out, size_t *outlen,
			      mt_error *err);
/* The same on `threads` threads (one frame, content size recorded): for
 * one large buffer, such as a model's tensor. */
MT_LOCAL int mti_zstd_compress_mt(const void *src, size_t len, int level, int threads, void **out,
				 size_t *outlen, mt_error *err);
/* src as one zstd frame of raw (stored) blocks, content size recorded:
 * any zstd decoder reads it, and writing it costs a copy, not a
 * compression, for data that does not compress.  *out is malloc'ed. */
MT_LOCAL int mti_zstd_frame_raw(const void *src, size_t len, void **out, size_t *outlen,
			       mt_error *err);
/* How well src compresses at `level`, as compressed / original bytes of
 * 8 spread samples of 16 KiB (the whole buffer when smaller): a guess that
 * costs about 1% of compressing all of a large buffer. */
MT_LOCAL double mti_zstd_ratio_guess(const void *src, size_t len, int level);
/* Decompress a frame that must expand to exactly `dstlen` bytes. */
MT_LOCAL int mti_zstd_decompress(const void *src, size_t len, void *dst, size_t dstlen,
				mt_error *err);

/* Register filter 32015 with HDF5 (once per process; thread-safe). */
MT_LOCAL int mti_zstd_filter_register(mt_error *err);

#endif
