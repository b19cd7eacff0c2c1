/* fuzz-s3-xml.c — libFuzzer target: the S3 answer scanner must walk any bytes without reading outside them. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "s3-xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *doc = (const char *)data;
	/* As a listing: every Contents and the fields read from it. */
	size_t pos = 0;
	mt_xml_span e;
	while (mti_xml_next(doc, size, "Contents", &pos, &e) == 1) {
		static const char *fields[] = {"Key", "Size", "LastModified"};
		for (size_t i = 0; i < 3; i++)
			free(mti_xml_get(e, fields[i]));
	}
	mt_xml_span all = {doc, size};
	free(mti_xml_get(all, "NextContinuationToken"));
	free(mti_xml_decode(all));
	return 0;
}
