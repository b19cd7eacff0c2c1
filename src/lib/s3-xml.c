/* s3-xml.c — the few S3 XML responses. */
#include "util.h"
