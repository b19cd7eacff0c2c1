/* s3-xml.h — find elements in the S3 XML responses matorage reads, and escape text for the requests it sends. */
#ifndef MT_S3_XML_H
#define MT_S3_XML_H

#include "util.h"

/* The inner text of an element, undecoded, inside the document. */
typedef struct mt_xml_span {
	const char *p;
	size_t n;
} mt_xml_span;

/* The next element called `name` at or after *pos in doc[0, len): its
 * content goes to *inner and *pos moves past its end tag.  Returns 1 when
 * found, 0 when there is none left, MT_EFORMAT when the element is not
 * closed.  S3 responses never nest an element inside one of the same
 * name, which this relies on; an empty element (<A/>) has empty content. */
MT_LOCAL int mti_xml_next(const char *doc, size_t len, const char *name, size_t *pos,
			 mt_xml_span *inner);
/* The first `name` inside span, decoded (entities and character
 * references), or NULL when absent or malformed or out of memory. */
MT_LOCAL char *mti_xml_get(mt_xml_span in, const char *name);
/* Decode a span's entities into a new string; NULL when malformed. */
MT_LOCAL char *mti_xml_decode(mt_xml_span s);
/* Append s with &, <, >, " and ' escaped. */
MT_LOCAL int mti_xml_escape(mt_buf *b, const char *s);

#endif
