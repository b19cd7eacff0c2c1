/* s3-xml.c — a scanner for the flat XML documents S3 answers with (listings, errors, multipart ids). */
#include <stdlib.h>
#include <string.h>

#include "s3-xml.h"

/* Does an element name end here: "<Key>", "<Key/>", "<Key attr=...>"? */
static int name_ends(char c)
{
	return c == '>' || c == '/' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int mti_xml_next(const char *doc, size_t len, const char *name, size_t *pos, mt_xml_span *inner)
{
	size_t nl = strlen(name);
	for (size_t i = *pos; i + nl + 2 <= len; i++) {
		if (doc[i] != '<' || memcmp(doc + i + 1, name, nl) != 0 ||
		    !name_ends(doc[i + 1 + nl]))
			continue;
		const char *gt = memchr(doc + i + 1 + nl, '>', len - (i + 1 + nl));
		if (!gt)
			return MT_EFORMAT;
		size_t start = (size_t)(gt - doc) + 1;
		if (gt[-1] == '/') {
			*inner = (mt_xml_span){doc + start, 0};
			*pos = start;
			return 1;
		}
		for (size_t j = start; j + nl + 3 <= len; j++) {
			if (doc[j] == '<' && doc[j + 1] == '/' && memcmp(doc + j + 2, name, nl) == 0 &&
			    doc[j + 2 + nl] == '>') {
				*inner = (mt_xml_span){doc + start, j - start};
				*pos = j + nl + 3;
				return 1;
			}
		}
		return MT_EFORMAT;
	}
	return 0;
}

char *mti_xml_get(mt_xml_span in, const char *name)
{
	size_t pos = 0;
	mt_xml_span s;
	if (mti_xml_next(in.p, in.n, name, &pos, &s) != 1)
		return NULL;
	return mti_xml_decode(s);
}

/* UTF-8 of a code point; 0 bytes for one XML does not allow. */
static size_t utf8_put(char *o, unsigned long cp)
{
	if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return 0;
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

char *mti_xml_decode(mt_xml_span s)
{
	/* Decoding never lengthens: "&#x10FFFF;" (10 bytes) is 4 of UTF-8. */
	char *out = malloc(s.n + 1), *o = out;
	if (!out)
		return NULL;
	static const struct {
		const char *ent;
		char c;
	} named[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
	for (size_t i = 0; i < s.n;) {
		if (s.p[i] != '&') {
			*o++ = s.p[i++];
			continue;
		}
		const char *semi = memchr(s.p + i, ';', s.n - i);
		if (!semi)
			goto bad;
		size_t elen = (size_t)(semi - (s.p + i)) + 1; /* "&...;" */
		size_t k;
		for (k = 0; k < sizeof named / sizeof named[0]; k++)
			if (elen - 1 == strlen(named[k].ent) &&
			    memcmp(s.p + i + 1, named[k].ent, elen - 1) == 0)
				break;
		if (k < sizeof named / sizeof named[0]) {
			*o++ = named[k].c;
		} else if (elen > 3 && s.p[i + 1] == '#') {
			int hex = s.p[i + 2] == 'x';
			unsigned long cp = 0;
			size_t d = i + 2 + (size_t)hex;
			if (d >= i + elen - 1)
				goto bad;
			for (; d < i + elen - 1; d++) {
				char c = s.p[d];
				int v = c >= '0' && c <= '9'	       ? c - '0'
					: hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
					: hex && c >= 'A' && c <= 'F' ? c - 'A' + 10
								      : -1;
				if (v < 0 || cp > 0x10FFFF)
					goto bad;
				cp = cp * (hex ? 16 : 10) + (unsigned long)v;
			}
			size_t w = utf8_put(o, cp);
			if (!w)
				goto bad;
			o += w;
		} else {
			goto bad;
		}
		i += elen;
	}
	*o = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

int mti_xml_escape(mt_buf *b, const char *s)
{
	for (; *s; s++) {
		const char *e = *s == '&'    ? "&amp;"
				: *s == '<'  ? "&lt;"
				: *s == '>'  ? "&gt;"
				: *s == '"'  ? "&quot;"
				: *s == '\'' ? "&apos;"
					     : NULL;
		if (e ? mti_buf_append(b, e, strlen(e)) : mti_buf_append(b, s, 1))
			return MT_ENOMEM;
	}
	return 0;
}
