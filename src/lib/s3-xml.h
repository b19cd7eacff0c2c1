/* s3-xml.h — find elements in the S3 XML responses matorage reads. */
#ifndef MT_S3_XML_H
#define MT_S3_XML_H
#include "util.h"
#endif
