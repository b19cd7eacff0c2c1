/* test-s3-xml.c — the scanner for S3's XML answers: listings, errors, entities, malformed input. */
#include <stdlib.h>
#include <string.h>

#include "s3-xml.h"
#include "tap.h"

static const char listing[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Name>b</Name><Prefix>datasets/</Prefix><KeyCount>3</KeyCount>"
	"<IsTruncated>true</IsTruncated>"
	"<Contents><Key>datasets/a &amp; b.json</Key><Size>12</Size>"
	"<LastModified>2026-11-23T01:02:03.000Z</LastModified></Contents>"
	"<Contents>\n  <Key>datasets/&lt;x&gt; &#65;&#x42;&quot;&apos;</Key>\n  <Size>0</Size>\n"
	"</Contents>"
	"<Contents><Key>datasets/&#xE9;t&#233; &#x1F600;</Key><Size>7</Size></Contents>"
	"<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
	"</ListBucketResult>";

static void test_listing(void)
{
	const char *want[] = {"datasets/a & b.json", "datasets/<x> AB\"'",
			      "datasets/\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80"};
	const char *sizes[] = {"12", "0", "7"};
	size_t pos = 0, n = 0;
	mt_xml_span e;
	int r;
	while ((r = mti_xml_next(listing, sizeof listing - 1, "Contents", &pos, &e)) == 1) {
		char *k = mti_xml_get(e, "Key"), *sz = mti_xml_get(e, "Size");
		tap_ok(n < 3 && k && !strcmp(k, want[n]), "contents %zu: key '%s'", n, k ? k : "(null)");
		tap_ok(n < 3 && sz && !strcmp(sz, sizes[n]), "contents %zu: size %s", n, sz ? sz : "-");
		free(k);
		free(sz);
		n++;
	}
	tap_ok(r == 0 && n == 3, "three Contents, then none (%d)", r);
	mt_xml_span all = {listing, sizeof listing - 1};
	char *tok = mti_xml_get(all, "NextContinuationToken");
	tap_ok(tok && !strcmp(tok, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="), "token");
	free(tok);
	char *t = mti_xml_get(all, "IsTruncated");
	tap_ok(t && !strcmp(t, "true"), "IsTruncated");
	free(t);
	/* "Key" must not match "KeyCount" and vice versa. */
	char *kc = mti_xml_get(all, "KeyCount");
	tap_ok(kc && !strcmp(kc, "3"), "KeyCount is its own element");
	free(kc);
	tap_ok(mti_xml_get(all, "Delimiter") == NULL, "an absent element is NULL");
}

static void test_error_and_empty(void)
{
	const char err[] = "<Error><Code>SignatureDoesNotMatch</Code><Message>The request "
			   "signature we calculated does not match</Message><Empty/></Error>";
	mt_xml_span all = {err, sizeof err - 1};
	char *c = mti_xml_get(all, "Code"), *e = mti_xml_get(all, "Empty");
	tap_ok(c && !strcmp(c, "SignatureDoesNotMatch"), "error code");
	tap_ok(e && !strcmp(e, ""), "self-closed element is empty");
	free(c);
	free(e);
	const char attr[] = "<Delete xmlns=\"x\"><Quiet>true</Quiet></Delete>";
	mt_xml_span a = {attr, sizeof attr - 1};
	size_t pos = 0;
	mt_xml_span in;
	tap_ok(mti_xml_next(attr, sizeof attr - 1, "Delete", &pos, &in) == 1 && in.n == 19,
	       "element with attributes");
	char *q = mti_xml_get(a, "Quiet");
	tap_ok(q && !strcmp(q, "true"), "nested element");
	free(q);
}

static void test_malformed(void)
{
	const char *bad[] = {"<Key>unclosed", "<Key attr", "<Key>a</Ke", "<Key>x</Key >"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		size_t pos = 0;
		mt_xml_span s;
		tap_ok(mti_xml_next(bad[i], strlen(bad[i]), "Key", &pos, &s) == MT_EFORMAT,
		       "unclosed element refused: %s", bad[i]);
	}
	const char *ents[] = {"a &amp b", "&bogus;", "&#;", "&#x;", "&#0;", "&#xD800;",
			      "&#x110000;", "&#99999999999999999999;", "&#12a;", "&"};
	for (size_t i = 0; i < sizeof ents / sizeof ents[0]; i++) {
		mt_xml_span s = {ents[i], strlen(ents[i])};
		char *d = mti_xml_decode(s);
		tap_ok(d == NULL, "bad entity refused: %s", ents[i]);
		free(d);
	}
	/* Every prefix of a listing scans without reading past its end. */
	int fine = 1;
	for (size_t n = 0; n < sizeof listing - 1; n++) {
		size_t pos = 0;
		mt_xml_span s;
		int r;
		while ((r = mti_xml_next(listing, n, "Contents", &pos, &s)) == 1) {
			char *k = mti_xml_get(s, "Key");
			free(k);
		}
		fine &= r == 0 || r == MT_EFORMAT;
	}
	tap_ok(fine, "every truncation of a listing scans cleanly");
}

static void test_escape(void)
{
	mt_buf b = {0};
	tap_ok(mti_xml_escape(&b, "a&b<c>\"d'e \xc3\xa9") == 0 && !mti_buf_append(&b, "", 1),
	       "escape");
	tap_ok(!strcmp((char *)b.data, "a&amp;b&lt;c&gt;&quot;d&apos;e \xc3\xa9"), "escaped: %s",
	       (char *)b.data);
	mt_xml_span s = {(char *)b.data, b.len - 1};
	char *d = mti_xml_decode(s);
	tap_ok(d && !strcmp(d, "a&b<c>\"d'e \xc3\xa9"), "decode(escape(x)) == x");
	free(d);
	mti_buf_free(&b);
}

int main(void)
{
	test_listing();
	test_error_and_empty();
	test_malformed();
	test_escape();
	return tap_done();
}
