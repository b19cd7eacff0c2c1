/* fuzz-manifest.c — libFuzzer target: the manifest decoder rejects malformed JSON cleanly. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mt_manifest *m = NULL;
	mt_error err;
	int rc = mti_manifest_decode((const char *)data, size, "fuzz", &m, &err);
	if (rc != 0) {
		/* MT_ECORRUPT: a checksum member that does not match the text. */
		if ((rc != MT_EFORMAT && rc != MT_ECORRUPT && rc != MT_ENOMEM) || m)
			abort();
		return 0;
	}
	/* What a successful decode promises the reader that trusts it. */
	uint64_t rows = 0;
	for (size_t i = 0; i < m->nshards; i++) {
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
		    again->nshards != m->nshards || again->rows != m->rows)
			abort();
		mti_manifest_free(again);
		free(json);
	}
	mti_manifest_free(m);
	return 0;
}
