/* codec-hash.c — sha256 (OpenSSL EVP) for object names and integrity, xxh3 for chunk checksums. */
#include <openssl/evp.h>
#include <stdlib.h>
#include <xxhash.h>

#include "codec.h"

#define HASH_SHA256_BYTES 32

struct mt_sha256 {
	EVP_MD_CTX *ctx;
};

static void hash_hex(const unsigned char *md, char out[MT_SHA256_HEX])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < HASH_SHA256_BYTES; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 15];
	}
	out[2 * HASH_SHA256_BYTES] = '\0';
}

int mti_sha256_new(mt_sha256 **out, mt_error *err)
{
	mt_sha256 *h = calloc(1, sizeof *h);
	if (!h || !(h->ctx = EVP_MD_CTX_new()) ||
	    EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
		mti_sha256_free(h);
		return mti_err(err, MT_ENOMEM, "sha256: cannot create a digest context");
	}
	*out = h;
	return 0;
}

int mti_sha256_update(mt_sha256 *h, const void *data, size_t len, mt_error *err)
{
	if (EVP_DigestUpdate(h->ctx, data, len) != 1)
		return mti_err(err, MT_EIO, "sha256: digest update of %zu bytes failed", len);
	return 0;
}

int mti_sha256_final(mt_sha256 *h, char out[MT_SHA256_HEX], mt_error *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (EVP_DigestFinal_ex(h->ctx, md, &n) != 1 || n != HASH_SHA256_BYTES)
		return mti_err(err, MT_EIO, "sha256: digest final failed");
	hash_hex(md, out);
	return 0;
}

void mti_sha256_free(mt_sha256 *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

int mti_sha256_hex(const void *data, size_t len, char out[MT_SHA256_HEX], mt_error *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1 || n != HASH_SHA256_BYTES)
		return mti_err(err, MT_EIO, "sha256: digest of %zu bytes failed", len);
	hash_hex(md, out);
	return 0;
}

uint64_t mti_xxh3(const void *data, size_t len)
{
#if MTI_XXH3_AVX2
	if (__builtin_cpu_supports("avx2"))
		return mti_xxh3_avx2(data, len);
#endif
	return XXH3_64bits(data, len);
}
