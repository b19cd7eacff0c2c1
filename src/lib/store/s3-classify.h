/* s3-classify.h — what one answer to an S3 request means: success, worth sending again, or which error. */
#ifndef MT_S3_CLASSIFY_H
#define MT_S3_CLASSIFY_H

#include "util.h"

/* How one sending of a request went, as the transport and server told. */
typedef struct mt_s3_answer {
	int curl_rc;        /* the transfer's CURLcode; CURLE_OK when an answer came whole */
	long status;        /* HTTP status, 0 when none came */
	const char *s3code; /* S3's error code from the answer's body, "" when none */
	int overflow;       /* the body was longer than the caller's buffer */
	int allow_404;      /* a missing object is an answer, not an error */
} mt_s3_answer;

typedef struct mt_s3_verdict {
	int ok;    /* a success: 2xx, or 404 when allowed */
	int again; /* a failure a server or network may fix by itself */
	int code;  /* when not ok: the MT_E* code to fail with */
} mt_s3_verdict;

/* The verdict on one answer; no I/O, no state. */
MT_LOCAL mt_s3_verdict mti_s3_classify(const mt_s3_answer *a);

#endif
