/* fuzz-manifest.c — libFuzzer target: the manifest decoder rejects malformed JSON cleanly. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "codec.h"
#include "format.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* jansson seeds its hash tables at random, and which keys it then compares
 * feeds libFuzzer's compare hooks: a fixed seed keeps a seeded run the same
 * from one time to the next. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	json_object_seed(1);
	return 0;
}

/* The input as a format-2 fragment of 4 shards from row 10 of a root that
 * names it by its own hash: past the hash, the parser sees hostile text. */
static void fuzz_fragment(const uint8_t *data, size_t size)
{
	mt_attr a = {.name = (char *)"x", .dtype = MT_UINT8, .rank = 0};
	mt_mfrag f = {.bytes = size, .first_row = 10, .rows = 40, .nshards = 4, .first_shard = 3};
	mt_mshard shards[7];
	mt_manifest m = {.format = 2, .dataset = (char *)"d", .version = (char *)"v2", .rows = 50,
			 .attrs = &a, .nattrs = 1, .shards = shards, .nshards = 7, .frags = &f,
			 .nfrags = 1};
	mt_error err;
	if (mti_sha256_hex(data, size, f.sha256, &err))
		return;
	memset(shards, 0, sizeof shards);
	int rc = mti_fragment_decode(&m, 0, (const char *)data, size, "fuzz", &err);
	if (rc && rc != MT_EFORMAT && rc != MT_ECORRUPT && rc != MT_ENOMEM)
		abort();
	uint64_t rows = 10;
	for (size_t i = 3; !rc && i < 7; i++) {
		if (shards[i].first_row != rows || shards[i].rows == 0)
			abort();
		rows += shards[i].rows;
	}
	if (!rc && (rows != 50 || !f.loaded))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mt_manifest *m = NULL;
	mt_error err;
	fuzz_fragment(data, size);
	int rc = mti_manifest_decode((const char *)data, size, "fuzz", &m, &err);
	if (rc != 0) {
		/* MT_ECORRUPT: a checksum member that does not match the text. */
		if ((rc != MT_EFORMAT && rc != MT_ECORRUPT && rc != MT_ENOMEM) || m)
			abort();
		return 0;
	}
	/* What a successful decode promises the reader that trusts it: a
	 * format-2 root's fragments cover its rows and shards in order. */
	uint64_t rows = 0;
	size_t shards = 0;
	for (size_t i = 0; i < m->nfrags; i++) {
		const mt_mfrag *f = &m->frags[i];
		if (f->first_row != rows || f->first_shard != shards || !f->nshards ||
		    f->rows < f->nshards || f->loaded)
			abort();
		rows += f->rows;
		shards += f->nshards;
	}
	if (m->format == 2 && (rows != m->rows || shards != m->nshards))
		abort();
	rows = m->format == 2 ? m->rows : 0;
	for (size_t i = 0; m->format == 1 && i < m->nshards; i++) {
		const mt_mshard *s = &m->shards[i];
		if (s->first_row != rows || strlen(s->sha256) != 64 ||
		    s->index_offset + s->index_bytes > s->bytes)
			abort();
		rows += s->rows;
	}
	if (rows != m->rows || m->nattrs == 0 || mti_attrs_check(m->attrs, m->nattrs, &err) != 0)
		abort();
	/* And what is decoded encodes again, to text that decodes the same. */
	char *json = NULL;
	if (mti_manifest_encode(m, &json, &err) == 0) {
		mt_manifest *again = NULL;
		if (mti_manifest_decode(json, strlen(json), "again", &again, &err) != 0 ||
		    again->nshards != m->nshards || again->rows != m->rows ||
		    again->nfrags != m->nfrags)
			abort();
		mti_manifest_free(again);
		free(json);
	}
	mti_manifest_free(m);
	return 0;
}
