/* format-caps.c — the size caps of manifests and their strings (doc/FORMAT.md, "Size caps"), checked before trust. */
#include <string.h>

#include "format.h"

/* A JSON string's text takes up to 6 bytes per byte it stands for
 * ("\u00XX"), so no member's text is longer than this. */
#define CAPS_RAW_STRING_MAX (6 * (size_t)MT_DESCRIPTION_MAX + 16)

/* The length of the string literal whose opening quote is at p, up to
 * its closing quote (or the end of the text). */
static size_t caps_string_len(const char *p, const char *end)
{
	for (const char *q = p + 1; q < end;) {
		const char *quote = memchr(q, '"', (size_t)(end - q));
		if (!quote)
			return (size_t)(end - p - 1);
		size_t bs = 0;
		while (quote - bs > p + 1 && quote[-1 - (ptrdiff_t)bs] == '\\')
			bs++;
		if (bs % 2 == 0)
			return (size_t)(quote - p - 1);
		q = quote + 1;
	}
	return (size_t)(end - p - 1);
}

int mti_json_caps_scan(const char *json, size_t len, uint64_t max_bytes, const char *what,
		       mt_error *err)
{
	if (len > max_bytes)
		return mti_err(err, MT_ECORRUPT, "%s: %zu bytes, over the cap of %llu bytes for "
			      "such an object (doc/FORMAT.md, \"Size caps\")", what, len,
			      (unsigned long long)max_bytes);
	const char *end = json + len;
	for (const char *p = json; p < end;) {
		const char *quote = memchr(p, '"', (size_t)(end - p));
		if (!quote)
			break;
		size_t n = caps_string_len(quote, end);
		if (n > CAPS_RAW_STRING_MAX)
			return mti_err(err, MT_ECORRUPT, "%s: a string of %zu bytes at byte %zu, "
				      "longer than any member may be (the longest, a description, "
				      "is at most %u bytes)", what, n, (size_t)(quote - json),
				      MT_DESCRIPTION_MAX);
		p = quote + n + 2;
	}
	return 0;
}

static int caps_text(const char *s, size_t max, const char *name, int code, const char *what,
		     mt_error *err)
{
	size_t n = s ? strlen(s) : 0;
	if (n > max)
		return mti_err(err, code, "%s: %s is %zu bytes, over its cap of %zu "
			      "(doc/FORMAT.md, \"Size caps\")", what, name, n, max);
	return 0;
}

static int caps_count(size_t n, size_t max, const char *name, int code, const char *what,
		      mt_error *err)
{
	if (n > max)
		return mti_err(err, code, "%s: %zu %s, over the cap of %zu (doc/FORMAT.md, "
			      "\"Size caps\")", what, n, name, max);
	return 0;
}

int mti_meta_caps(const char *description, const char *const *tags, size_t ntags, int code,
		  const char *what, mt_error *err)
{
	int rc = caps_text(description, MT_DESCRIPTION_MAX, "the description", code, what, err);
	if (!rc)
		rc = caps_count(ntags, MT_TAGS_MAX, "tags", code, what, err);
	for (size_t i = 0; !rc && i < ntags; i++)
		rc = caps_text(tags[i], MT_TAG_MAX, "a tag", code, what, err);
	return rc;
}

int mti_manifest_caps(const mt_manifest *m, int code, const char *what, mt_error *err)
{
	int rc = caps_text(m->author, MT_TEXT_MAX, "the author", code, what, err);
	if (!rc)
		rc = mti_meta_caps(m->description, (const char *const *)m->tags, m->ntags, code,
				   what, err);
	if (!rc)
		rc = caps_count(m->nattrs, MT_ATTRS_MAX, "attributes", code, what, err);
	if (!rc)
		rc = caps_count(m->nrecipe_args, MT_RECIPE_ARGS_MAX, "recipe arguments", code, what,
				err);
	for (size_t i = 0; !rc && i < m->nrecipe_args; i++)
		rc = caps_text(m->recipe_args[i], MT_TEXT_MAX, "a recipe argument (KEY=VALUE)", code,
			       what, err);
	if (!rc)
		rc = caps_count(m->nsources, MT_SOURCES_MAX, "sources", code, what, err);
	for (size_t i = 0; !rc && i < m->nsources; i++)
		rc = caps_text(m->sources[i].store, MT_TEXT_MAX, "a source's store URL", code, what,
			       err);
	return rc;
}
