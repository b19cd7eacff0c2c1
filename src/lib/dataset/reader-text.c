/* reader-text.c — rows of a str attribute read back as C strings. */
#include <stdlib.h>
#include <string.h>

#include "reader.h"

/* Split `total` bytes of text at the rows' lengths into n C strings. */
static int text_split(const char *bytes, const uint64_t *lens, uint64_t n, char ***out,
		      mt_error *err)
{
	char **v = calloc(n ? (size_t)n : 1, sizeof *v);
	if (!v)
		return mti_err(err, MT_ENOMEM, "out of memory for %llu rows of text",
			       (unsigned long long)n);
	for (uint64_t i = 0; i < n; i++) {
		if (!(v[i] = malloc((size_t)lens[i] + 1))) {
			mt_strv_free(v, (size_t)n);
			return mti_err(err, MT_ENOMEM, "out of memory for %llu rows of text",
				       (unsigned long long)n);
		}
		memcpy(v[i], bytes, (size_t)lens[i]);
		v[i][lens[i]] = 0;
		bytes += lens[i];
	}
	*out = v;
	return 0;
}

int mt_reader_read_str(mt_reader *r, size_t attr, uint64_t a, uint64_t b, char ***out,
		       mt_error *err)
{
	*out = NULL;
	if (attr < r->m->nattrs && r->m->attrs[attr].dtype != MT_STR)
		return mti_err(err, MT_EINVAL, "%s@%s: attribute %s is %s, not str", r->m->dataset,
			       r->m->version, r->m->attrs[attr].name,
			       mt_dtype_name(r->m->attrs[attr].dtype));
	uint64_t n = b >= a ? b - a : 0, total = 0;
	uint64_t *lens = malloc((n ? (size_t)n : 1) * sizeof *lens);
	if (!lens)
		return mti_err(err, MT_ENOMEM, "out of memory for %llu rows of text",
			       (unsigned long long)n);
	int rc = mt_reader_ragged_lengths(r, attr, a, b, lens, &total, err);
	char *bytes = NULL;
	if (!rc && (total > SIZE_MAX - 1 || !(bytes = malloc((size_t)total + 1))))
		rc = mti_err(err, MT_ENOMEM, "out of memory for %llu bytes of text",
			     (unsigned long long)total);
	if (!rc)
		rc = mt_reader_read(r, attr, a, b, bytes, (size_t)total, err);
	if (!rc)
		rc = text_split(bytes, lens, n, out, err);
	free(bytes);
	free(lens);
	return rc;
}
