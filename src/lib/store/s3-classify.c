/* s3-classify.c — the verdict on one answer to an S3 request, apart from the sending so it can be tested alone. */
#include "s3-classify.h"

#include <curl/curl.h>
#include <string.h>

static int status_code(long status, const char *s3code)
{
	if (status == 404)
		return MT_ENOTFOUND;
	if (status == 401 || status == 403)
		return MT_EAUTH;
	if (status == 412 || (status == 409 && !strcmp(s3code, "ConditionalRequestConflict")))
		return MT_EEXIST;
	if (status == 416)
		return MT_ERANGE;
	if (status == 501)
		return MT_EUNSUPPORTED;
	return MT_EIO;
}

static int retryable_status(long status, const char *s3code)
{
	return status >= 500 || status == 429 || !strcmp(s3code, "SlowDown") ||
	       !strcmp(s3code, "RequestTimeout") || !strcmp(s3code, "InternalError");
}

static int retryable_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_COULDNT_RESOLVE_HOST:
		return 1;
	default:
		return 0;
	}
}

mt_s3_verdict mti_s3_classify(const mt_s3_answer *a)
{
	mt_s3_verdict v = {0, 0, 0};
	const char *s3code = a->s3code ? a->s3code : "";
	CURLcode cc = (CURLcode)a->curl_rc;
	if (cc == CURLE_OK && ((a->status >= 200 && a->status < 300) ||
			       (a->allow_404 && a->status == 404))) {
		v.ok = 1;
		return v;
	}
	/* A body longer than asked for is the server's fault: sending again
	 * would bring it again. */
	if (cc != CURLE_OK)
		v.again = retryable_curl(cc) && !a->overflow;
	else
		v.again = retryable_status(a->status, s3code);
	if (a->overflow)
		v.code = MT_ECORRUPT;
	else if (cc != CURLE_OK)
		v.code = cc == CURLE_PEER_FAILED_VERIFICATION ? MT_EAUTH : MT_ENET;
	else
		v.code = status_code(a->status, s3code);
	return v;
}
