/* format-text.c — str attributes: UTF-8 checked before a row is stored (doc/FORMAT.md, "Text"). */
#include <string.h>

#include "format.h"

/* Bytes of the sequence led by byte c, and the least value it may encode
 * (shorter forms are overlong); 0 for a byte that cannot lead. */
static int utf8_lead(unsigned c, uint32_t *cp, uint32_t *min)
{
	if (c < 0x80) {
		*cp = c;
		*min = 0;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		*cp = c & 0x1f;
		*min = 0x80;
		return 2;
	}
	if (c >= 0xe0 && c <= 0xef) {
		*cp = c & 0x0f;
		*min = 0x800;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		*cp = c & 0x07;
		*min = 0x10000;
		return 4;
	}
	return 0;
}

int mt_utf8_check(const void *text, size_t len, size_t *bad)
{
	const unsigned char *p = text;
	for (size_t i = 0; i < len;) {
		uint32_t cp, min;
		int n = utf8_lead(p[i], &cp, &min), k = 1;
		/* NUL is refused too: a row read back as a C string must be whole. */
		if (n == 0 || p[i] == 0 || (size_t)n > len - i)
			goto fail;
		for (; k < n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				goto fail;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			goto fail;
		i += (size_t)n;
		continue;
fail:
		if (bad)
			*bad = i;
		return MT_EINVAL;
	}
	return 0;
}

int mti_str_rows_check(const char *dataset, const mt_attr *a, uint64_t nrows, const void *data,
		       const uint64_t *lengths, mt_error *err)
{
	if (a->dtype != MT_STR)
		return 0;
	const unsigned char *p = data;
	for (uint64_t r = 0; r < nrows; r++) {
		size_t bad;
		if (mt_utf8_check(p, (size_t)lengths[r], &bad))
			return mti_err(err, MT_EINVAL, "dataset %s: attribute %s: row %llu is not "
				      "valid UTF-8 text (byte %zu of the row%s)", dataset, a->name,
				      (unsigned long long)r, bad, p[bad] ? "" : " is a NUL");
		p += lengths[r];
	}
	return 0;
}
