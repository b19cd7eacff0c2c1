/* s3-auth.c — S3 credentials from the environment and AWS files; SigV4 signing. */
#include "util.h"
