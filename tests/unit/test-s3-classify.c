/* test-s3-classify.c — the verdict on S3 answers: which succeed, which are sent again, which error each failure is. */
#include <curl/curl.h>

#include "s3-classify.h"
#include "tap.h"

typedef struct row {
	const char *name;
	mt_s3_answer a;
	int ok, again, code;
} row;

static const row rows[] = {
	{"200", {CURLE_OK, 200, "", 0, 0}, 1, 0, 0},
	{"206 partial content", {CURLE_OK, 206, "", 0, 0}, 1, 0, 0},
	{"204 no content", {CURLE_OK, 204, "", 0, 0}, 1, 0, 0},
	{"404 allowed", {CURLE_OK, 404, "NoSuchKey", 0, 1}, 1, 0, 0},
	{"404 not allowed", {CURLE_OK, 404, "NoSuchKey", 0, 0}, 0, 0, MT_ENOTFOUND},
	{"403 SignatureDoesNotMatch", {CURLE_OK, 403, "SignatureDoesNotMatch", 0, 0}, 0, 0,
	 MT_EAUTH},
	{"401", {CURLE_OK, 401, "", 0, 0}, 0, 0, MT_EAUTH},
	{"403 allowed 404 is still refused", {CURLE_OK, 403, "", 0, 1}, 0, 0, MT_EAUTH},
	{"412 precondition", {CURLE_OK, 412, "PreconditionFailed", 0, 0}, 0, 0, MT_EEXIST},
	{"409 ConditionalRequestConflict", {CURLE_OK, 409, "ConditionalRequestConflict", 0, 0}, 0,
	 0, MT_EEXIST},
	{"409 other", {CURLE_OK, 409, "BucketNotEmpty", 0, 0}, 0, 0, MT_EIO},
	{"416", {CURLE_OK, 416, "InvalidRange", 0, 0}, 0, 0, MT_ERANGE},
	{"501", {CURLE_OK, 501, "NotImplemented", 0, 0}, 0, 1, MT_EUNSUPPORTED},
	{"500", {CURLE_OK, 500, "InternalError", 0, 0}, 0, 1, MT_EIO},
	{"503 SlowDown", {CURLE_OK, 503, "SlowDown", 0, 0}, 0, 1, MT_EIO},
	{"429", {CURLE_OK, 429, "", 0, 0}, 0, 1, MT_EIO},
	{"400 RequestTimeout", {CURLE_OK, 400, "RequestTimeout", 0, 0}, 0, 1, MT_EIO},
	{"400 SlowDown", {CURLE_OK, 400, "SlowDown", 0, 0}, 0, 1, MT_EIO},
	{"400 InvalidArgument", {CURLE_OK, 400, "InvalidArgument", 0, 0}, 0, 0, MT_EIO},
	{"400 without a body", {CURLE_OK, 400, NULL, 0, 0}, 0, 0, MT_EIO},
	{"301 redirect", {CURLE_OK, 301, "PermanentRedirect", 0, 0}, 0, 0, MT_EIO},
	{"connection refused", {CURLE_COULDNT_CONNECT, 0, "", 0, 0}, 0, 1, MT_ENET},
	{"timed out", {CURLE_OPERATION_TIMEDOUT, 0, "", 0, 0}, 0, 1, MT_ENET},
	{"connection reset mid-body", {CURLE_RECV_ERROR, 200, "", 0, 0}, 0, 1, MT_ENET},
	{"short body", {CURLE_PARTIAL_FILE, 200, "", 0, 0}, 0, 1, MT_ENET},
	{"empty reply", {CURLE_GOT_NOTHING, 0, "", 0, 0}, 0, 1, MT_ENET},
	{"unknown host", {CURLE_COULDNT_RESOLVE_HOST, 0, "", 0, 0}, 0, 1, MT_ENET},
	{"certificate refused", {CURLE_PEER_FAILED_VERIFICATION, 0, "", 0, 0}, 0, 0, MT_EAUTH},
	{"TLS handshake", {CURLE_SSL_CONNECT_ERROR, 0, "", 0, 0}, 0, 1, MT_ENET},
	{"unsupported protocol", {CURLE_UNSUPPORTED_PROTOCOL, 0, "", 0, 0}, 0, 0, MT_ENET},
	{"more body than the buffer", {CURLE_WRITE_ERROR, 200, "", 1, 0}, 0, 0, MT_ECORRUPT},
	{"overflow on a retryable error is not retried", {CURLE_RECV_ERROR, 200, "", 1, 0}, 0, 0,
	 MT_ECORRUPT},
	{"write error", {CURLE_WRITE_ERROR, 200, "", 0, 0}, 0, 0, MT_ENET},
};

int main(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const row *w = &rows[i];
		mt_s3_verdict v = mti_s3_classify(&w->a);
		tap_ok(v.ok == w->ok && v.again == w->again && (w->ok || v.code == w->code),
		       "%s: %s%s (ok %d, again %d, code %d)", w->name,
		       w->ok ? "success" : "failure", w->again ? ", sent again" : "", v.ok, v.again,
		       v.code);
	}
	return tap_done();
}
