#!/usr/bin/python3
"""s3proxy.py — the tests' S3 front door: checks every request's SigV4 signature with botocore, injects faults, forwards to s3rver.

Usage: s3proxy.py LISTEN_PORT UPSTREAM_PORT PORT_FILE [--allow-anonymous]
The access key and secret come from S3PROXY_ACCESS_KEY and S3PROXY_SECRET_KEY, the
region from S3PROXY_REGION (default us-east-1).  LISTEN_PORT 0 picks a free port; the
port is written to PORT_FILE once the proxy listens.  --allow-anonymous (or
S3PROXY_ALLOW_ANONYMOUS=1) forwards requests without any signature instead of refusing them.

Every request is re-signed by botocore's own SigV4 signer (not matorage's code) from the
request as received, the way S3 computes it: the method, the path and query decoded and
encoded again canonically (so a client that signs a non-canonical spelling of what it sends
fails, as at AWS), exactly the headers the client says it signed, the x-amz-date and the
credential scope.  A different signature is answered 403 SignatureDoesNotMatch (with the
canonical request and string to sign, as AWS does), an unknown key 403 InvalidAccessKeyId,
another region 400 AuthorizationHeaderMalformed, a clock 15 minutes off 403
RequestTimeTooSkewed, a body whose sha256 is not the x-amz-content-sha256 header 400
XAmzContentSHA256Mismatch, no signature at all 403 AccessDenied.  Presigned URLs
(X-Amz-Signature in the query) are checked the same way, and their expiry.

Control endpoints (never signature-checked):
  POST /__faults   {"rules": [{"match": REGEX on "METHOD /path?query",
                               "action": "drop"|"503"|"500"|"429"|"truncate"|"corrupt"|"delay",
                               "count": N (default 1, -1 forever), "delay_ms": MS,
                               "after": N (let the first N matching requests through)}]}
  DELETE /__faults clears the rules, GET /__faults lists what is left.
  GET /__log       one line per request: "METHOD /path?query STATUS" (drop: "drop")
  GET /__log?times=1  the same lines, each led by when the request came in and when its
                   answer went out, in milliseconds since the log was cleared ("START END
                   METHOD /path?query STATUS"): which requests were in flight together.
  DELETE /__log    clears it.

s3rver (3.7) prunes directories beneath a common prefix when listing with a delimiter, so
it misses prefixes that hold no object directly, and ignores encoding-type=url; the proxy
answers ListObjects and ListObjectsV2 itself, from s3rver's full listing of the prefix.
With S3PROXY_PASSTHROUGH=1 (a real S3 server such as Ceph RGW upstream) it only checks
signatures and injects faults: listings, multipart and conditional requests go upstream.
"""
import base64
import calendar
import contextlib
import hashlib
import hmac
import http.client
import json
import os
import re
import socket
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

ACCESS_KEY = os.environ["S3PROXY_ACCESS_KEY"]
SECRET_KEY = os.environ["S3PROXY_SECRET_KEY"]
REGION = os.environ.get("S3PROXY_REGION", "us-east-1")
ALLOW_ANONYMOUS = "--allow-anonymous" in sys.argv[4:] or os.environ.get("S3PROXY_ALLOW_ANONYMOUS") == "1"
UPSTREAM = ("127.0.0.1", int(sys.argv[2]))
S3NS = "http://s3.amazonaws.com/doc/2006-03-01/"
AUTH_RE = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request,\s*"
    r"SignedHeaders=([^,]+),\s*Signature=([0-9a-f]{64})$")

lock = threading.Lock()
cond_lock = threading.Lock()  # serialises conditional writes


class SharedLock:
    """Many holders in shared mode, or one alone."""

    def __init__(self):
        self.cond = threading.Condition()
        self.shared = 0
        self.alone = False

    @contextlib.contextmanager
    def hold(self, alone):
        with self.cond:
            while self.alone or (alone and self.shared):
                self.cond.wait()
            if alone:
                self.alone = True
            else:
                self.shared += 1
        try:
            yield
        finally:
            with self.cond:
                if alone:
                    self.alone = False
                else:
                    self.shared -= 1
                self.cond.notify_all()


# s3rver removes a directory left empty by a delete while another request may be writing
# an object into it, and dies of the ENOENT (its objects are files in directories). S3 has
# no such race: deletes run alone here, writes together.
writes = SharedLock()


def write_order(method, query, bucket):
    if not bucket or method not in ("PUT", "POST", "DELETE"):
        return contextlib.nullcontext()
    return writes.hold(method == "DELETE" or (method == "POST" and "delete" in query))
rules = []
log = []
log_times = []  # (start, end) of each log line, time.monotonic()
log_epoch = time.monotonic()


def error_xml(code, message, extra=()):
    """An S3 error document; extra: (element, text) pairs after the message."""
    more = "".join(f"<{k}>{escape(v)}</{k}>" for k, v in extra)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{escape(message)}</Message>{more}</Error>").encode()


def take_fault(line):
    """The first rule matching this request, its count used up by one."""
    with lock:
        for r in rules:
            if re.search(r["match"], line):
                if r.get("after", 0) > 0:
                    r["after"] -= 1
                    continue
                if r.get("count", 1) > 0:
                    r["count"] = r.get("count", 1) - 1
                    if r["count"] == 0:
                        rules.remove(r)
                return dict(r)
    return None


def uri_encode(raw, safe):
    """AWS's UriEncode of percent-decoded raw text: every byte but A-Za-z0-9 -_.~ (and safe) as %XX."""
    return urllib.parse.quote(urllib.parse.unquote_to_bytes(raw), safe="-_.~" + safe)


def canonical_path(raw_path):
    """The canonical URI S3 computes: the path decoded, then each byte encoded once, '/' kept.
    A client that sends its path in any other spelling (lowercase hex, a bare reserved
    character) but signs it as sent fails here as it would at AWS."""
    return uri_encode(raw_path, "/") or "/"


def canonical_query(raw_query, skip=()):
    pairs = []
    for part in raw_query.split("&") if raw_query else []:
        k, _, v = part.partition("=")
        if urllib.parse.unquote(k) in skip:
            continue
        pairs.append((uri_encode(k, ""), uri_encode(v, "")))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


class Signer(S3SigV4Auth):
    """botocore's S3 SigV4 signer, fed the canonical path, query and exactly the headers
    the client named in SignedHeaders (botocore would leave out user-agent and expect)."""

    def __init__(self, region, path, query, headers):
        super().__init__(Credentials(ACCESS_KEY, SECRET_KEY), "s3", region)
        self._path, self._query, self._headers = path, query, headers

    def _normalize_url_path(self, path):
        return self._path

    def canonical_query_string(self, request):
        return self._query

    def headers_to_sign(self, request):
        return self._headers


def verify_signature(method, raw_path, headers, body):
    """None when the request is signed correctly, else (status, code, message)."""
    path, _, query = raw_path.partition("?")
    auth = headers.get("authorization")
    qargs = urllib.parse.parse_qs(query, keep_blank_values=True)
    if not auth and "X-Amz-Signature" in qargs:
        return verify_presigned(method, path, query, qargs, headers)
    if not auth:
        if ALLOW_ANONYMOUS:
            return None
        return 403, "AccessDenied", "Anonymous requests are not allowed"
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return 400, "InvalidRequest", \
            "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256."
    m = AUTH_RE.match(auth.strip())
    if not m:
        return 400, "AuthorizationHeaderMalformed", "The authorization header is malformed"
    key, day, region, service, signed, signature = m.groups()
    payload = headers.get("x-amz-content-sha256")
    return check(method, path, query, headers, key, day, region, service, signed, signature,
                 headers.get("x-amz-date", ""), payload, body)


def verify_presigned(method, path, query, qargs, headers):
    """A presigned URL: the same check, its parts taken from the query string."""
    def q(name):
        return qargs.get(name, [""])[0]
    if q("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
        return 400, "AuthorizationQueryParametersError", "X-Amz-Algorithm must be AWS4-HMAC-SHA256"
    cred = q("X-Amz-Credential").split("/")
    if len(cred) != 5 or cred[4] != "aws4_request":
        return 400, "AuthorizationQueryParametersError", "X-Amz-Credential is malformed"
    amzdate = q("X-Amz-Date")
    try:
        t = calendar.timegm(time.strptime(amzdate, "%Y%m%dT%H%M%SZ"))
        expires = int(q("X-Amz-Expires"))
    except ValueError:
        return 400, "AuthorizationQueryParametersError", "X-Amz-Date or X-Amz-Expires is malformed"
    if time.time() > t + expires:
        return 403, "AccessDenied", "Request has expired"
    query = canonical_query(query, skip=("X-Amz-Signature",))
    return check(method, path, None, headers, cred[0], cred[1], cred[2], cred[3],
                 q("X-Amz-SignedHeaders"), q("X-Amz-Signature"), amzdate,
                 headers.get("x-amz-content-sha256", "UNSIGNED-PAYLOAD"), None, query=query)


def check(method, path, raw_query, headers, key, day, region, service, signed, signature,
          amzdate, payload, body, query=None):
    if key != ACCESS_KEY:
        return 403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist"
    if region != REGION or service != "s3" or amzdate[:8] != day:
        return 400, "AuthorizationHeaderMalformed", \
            f"The credential scope is wrong: region {region} (expected {REGION}), " \
            f"service {service}, day {day} (x-amz-date {amzdate})"
    try:
        skew = abs(time.time() - calendar.timegm(time.strptime(amzdate, "%Y%m%dT%H%M%SZ")))
    except ValueError:
        return 403, "AccessDenied", "x-amz-date is missing or malformed"
    if skew > 15 * 60 and body is not None:
        return 403, "RequestTimeTooSkewed", \
            "The difference between the request time and the current time is too large"
    if payload is None:
        return 400, "InvalidRequest", "Missing required header x-amz-content-sha256"
    if payload.startswith("STREAMING-") and payload != "STREAMING-UNSIGNED-PAYLOAD-TRAILER":
        return 501, "NotImplemented", f"The test proxy does not check {payload} bodies"
    if body is not None and payload not in ("UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER") \
            and payload != hashlib.sha256(body).hexdigest():
        return 400, "XAmzContentSHA256Mismatch", \
            "The provided x-amz-content-sha256 header does not match what was computed"
    names = signed.split(";")
    if "host" not in names:
        return 403, "SignatureDoesNotMatch", "Host is not signed"
    sign_headers = HTTPHeaders()
    for n in names:
        vals = headers.get_all(n)
        if not vals:
            return 403, "SignatureDoesNotMatch", f"Signed header {n} is missing"
        for v in vals:
            sign_headers[n] = v
    if query is None:
        query = canonical_query(raw_query)
    req = AWSRequest(method=method, url="http://" + headers["host"] + "/", headers={})
    req.headers["X-Amz-Content-SHA256"] = payload
    req.context["timestamp"] = amzdate
    signer = Signer(region, canonical_path(path), query, sign_headers)
    canonical = signer.canonical_request(req)
    sts = signer.string_to_sign(req, canonical)
    if not hmac.compare_digest(signer.signature(sts, req), signature):
        # As AWS does: what the server signed, for the client's author to compare.
        return 403, "SignatureDoesNotMatch", \
            "The request signature we calculated does not match the signature you provided. " \
            "Check your key and signing method.", \
            (("AWSAccessKeyId", key), ("StringToSign", sts), ("CanonicalRequest", canonical))
    return None


PASSTHROUGH = os.environ.get("S3PROXY_PASSTHROUGH") == "1"


def upstream(method, path, headers, body):
    conn = http.client.HTTPConnection(*UPSTREAM, timeout=60)
    try:
        # Headers as a list of pairs: repeated ones (x-amz-meta-*) pass as they came.
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        hdrs = headers.items() if isinstance(headers, dict) else headers
        names = {k.lower() for k, _ in hdrs}
        if "host" not in names:
            conn.putheader("Host", "%s:%d" % UPSTREAM)
        for k, v in hdrs:
            conn.putheader(k, v)
        conn.endheaders(body if body else None)
        resp = conn.getresponse()
        data = resp.read() if method != "HEAD" else b""
        return resp.status, resp.getheaders(), data
    finally:
        conn.close()


LIST_PARAMS = {"list-type", "prefix", "delimiter", "max-keys", "continuation-token",
               "start-after", "marker", "encoding-type", "fetch-owner"}


def xml_of(el, ns):
    """An element s3rver sent, without its namespace, text escaped."""
    tag = el.tag[len(ns):]
    kids = list(el)
    inner = "".join(xml_of(k, ns) for k in kids) if kids else escape(el.text or "")
    return f"<{tag}>{inner}</{tag}>"


def list_objects(bucket, query):
    """ListObjects (v1) and ListObjectsV2, answered from s3rver's complete listing of the prefix,
    as S3 does: s3rver loses common prefixes that hold no object directly, pages its own way
    and ignores encoding-type=url."""
    def arg(name, default=""):
        return query.get(name, [default])[0]
    v2 = arg("list-type") == "2"
    prefix, delim = arg("prefix"), arg("delimiter")
    url = arg("encoding-type") == "url"
    try:
        max_keys = int(arg("max-keys", "1000"))
        after = arg("start-after") if v2 else arg("marker")
        token = arg("continuation-token")
        if v2 and token:
            after = max(after, base64.urlsafe_b64decode(token.encode()).decode())
    except ValueError:
        return 400, error_xml("InvalidArgument", "max-keys or continuation-token is invalid")
    max_keys = max(0, min(max_keys, 1000))
    entries, next_token = {}, None
    while True:
        q = {"list-type": "2", "prefix": prefix, "max-keys": "1000"}
        if next_token:
            q["continuation-token"] = next_token
        status, _, data = upstream("GET", f"/{urllib.parse.quote(bucket)}?" +
                                   urllib.parse.urlencode(q, quote_via=urllib.parse.quote), {}, b"")
        if status != 200:
            return status, data
        root = ET.fromstring(data)
        ns = root.tag[:root.tag.index("}") + 1] if root.tag.startswith("{") else ""
        for c in root.findall(ns + "Contents"):
            k = c.find(ns + "Key").text or ""
            rest = k[len(prefix):]
            if delim and delim in rest:
                entries[prefix + rest[:rest.index(delim) + len(delim)]] = None
            else:
                entries[k] = [(x, xml_of(x, ns)) for x in c]
        el = root.find(ns + "NextContinuationToken")
        if el is None or not el.text:
            break
        next_token = el.text
    # S3 orders by the keys' UTF-8 bytes: the order of Python's code points.
    names = sorted(n for n in entries if n > after)
    page, truncated = names[:max_keys], len(names) > max_keys

    def enc(t):
        return escape(urllib.parse.quote_plus(t, safe="/") if url else t)
    out = [f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="{S3NS}">',
           f"<Name>{escape(bucket)}</Name><Prefix>{enc(prefix)}</Prefix>"]
    if v2:
        if token:
            out.append(f"<ContinuationToken>{escape(token)}</ContinuationToken>")
        if arg("start-after"):
            out.append(f"<StartAfter>{enc(arg('start-after'))}</StartAfter>")
        out.append(f"<KeyCount>{len(page)}</KeyCount>")
    else:
        out.append(f"<Marker>{enc(arg('marker'))}</Marker>")
    if delim:
        out.append(f"<Delimiter>{enc(delim)}</Delimiter>")
    if url:
        out.append("<EncodingType>url</EncodingType>")
    out.append(f"<MaxKeys>{max_keys}</MaxKeys><IsTruncated>{str(truncated).lower()}</IsTruncated>")
    if truncated and v2:
        tok = base64.urlsafe_b64encode(page[-1].encode()).decode()
        out.append(f"<NextContinuationToken>{tok}</NextContinuationToken>")
    elif truncated:
        out.append(f"<NextMarker>{enc(page[-1])}</NextMarker>")
    for n in page:
        if entries[n] is not None:
            parts = []
            for el, text in entries[n]:
                parts.append(f"<Key>{enc(n)}</Key>" if text.startswith("<Key>") else text)
            out.append("<Contents>" + "".join(parts) + "</Contents>")
    for n in page:
        if entries[n] is None:
            out.append(f"<CommonPrefixes><Prefix>{enc(n)}</Prefix></CommonPrefixes>")
    out.append("</ListBucketResult>")
    return 200, "".join(out).encode()


def escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


# Multipart uploads as S3 keeps them (s3rver 3.7 has no ListParts, ListMultipartUploads or
# AbortMultipartUpload, accepts parts for any upload id, and checks no part size): the
# proxy records each upload it saw begin, in a file beside PORT_FILE so that a restarted
# proxy still knows them.
UPLOADS = {}
UPLOADS_FILE = None
MIN_PART = 5 * 1024 * 1024


def save_uploads():
    if UPLOADS_FILE:
        with open(UPLOADS_FILE + ".tmp", "w") as f:
            json.dump(UPLOADS, f)
        os.replace(UPLOADS_FILE + ".tmp", UPLOADS_FILE)


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def xml_reply(status, body):
    return status, (f'<?xml version="1.0" encoding="UTF-8"?>\n{body}').encode(), \
        [("Content-Type", "application/xml")]


def err_reply(status, code, message, extra=()):
    return status, error_xml(code, message, extra), [("Content-Type", "application/xml")]


def list_parts(bucket, key, uid, up):
    parts = "".join(
        f"<Part><PartNumber>{n}</PartNumber><LastModified>{p['time']}</LastModified>"
        f"<ETag>{escape(p['etag'])}</ETag><Size>{p['size']}</Size></Part>"
        for n, p in sorted(up["parts"].items(), key=lambda kv: int(kv[0])))
    return xml_reply(200, f'<ListPartsResult xmlns="{S3NS}"><Bucket>{escape(bucket)}</Bucket>'
                     f"<Key>{escape(key)}</Key><UploadId>{uid}</UploadId>"
                     f"<PartNumberMarker>0</PartNumberMarker><MaxParts>1000</MaxParts>"
                     f"<IsTruncated>false</IsTruncated><StorageClass>STANDARD</StorageClass>"
                     f"{parts}</ListPartsResult>")


def list_uploads(bucket, query):
    prefix = query.get("prefix", [""])[0]
    ups = sorted((u["key"], u["time"], uid) for uid, u in UPLOADS.items()
                 if u["bucket"] == bucket and u["key"].startswith(prefix))
    items = "".join(f"<Upload><Key>{escape(k)}</Key><UploadId>{uid}</UploadId>"
                    f"<StorageClass>STANDARD</StorageClass><Initiated>{t}</Initiated></Upload>"
                    for k, t, uid in ups)
    return xml_reply(200, f'<ListMultipartUploadsResult xmlns="{S3NS}"><Bucket>{escape(bucket)}'
                     f"</Bucket><Prefix>{escape(prefix)}</Prefix><MaxUploads>1000</MaxUploads>"
                     f"<IsTruncated>false</IsTruncated>{items}</ListMultipartUploadsResult>")


def check_complete(up, body):
    """The CompleteMultipartUpload body against the parts S3 holds: None or an error reply."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return err_reply(400, "MalformedXML", "The XML you provided was not well-formed")
    ns = root.tag[:root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    listed = []
    for p in root.findall(ns + "Part"):
        try:
            listed.append((int(p.find(ns + "PartNumber").text), (p.find(ns + "ETag").text or "")))
        except (AttributeError, TypeError, ValueError):
            return err_reply(400, "MalformedXML", "A Part lacks its PartNumber or ETag")
    if not listed:
        return err_reply(400, "MalformedXML", "The XML you provided was not well-formed")
    if [n for n, _ in listed] != sorted(set(n for n, _ in listed)):
        return err_reply(400, "InvalidPartOrder", "The list of parts was not in ascending order")
    for i, (n, etag) in enumerate(listed):
        have = up["parts"].get(str(n))
        if have is None or have["etag"].strip('"') != etag.strip().strip('"'):
            return err_reply(400, "InvalidPart", f"Part {n} was not uploaded or its ETag differs")
        if i < len(listed) - 1 and have["size"] < MIN_PART:
            return err_reply(400, "EntityTooSmall",
                             "Your proposed upload is smaller than the minimum allowed object size",
                             (("PartNumber", str(n)), ("ProposedSize", str(have["size"])),
                              ("MinSizeAllowed", str(MIN_PART))))
    return None


def head_etag(raw_path):
    """The ETag of the object now at raw_path, or None when there is none."""
    status, headers, _ = upstream("HEAD", raw_path, {}, b"")
    if status != 200:
        return None
    return next((v for k, v in headers if k.lower() == "etag"), "").strip('"')


def etag_matches(header, etag):
    return any(t.strip() in ("*", f'"{etag}"', etag) for t in header.split(","))


def s3_semantics(method, raw, query, bucket, key, headers, body):
    """What S3 answers where s3rver does not: a reply (status, body, headers), or None to
    forward the request."""
    path_only = raw.split("?", 1)[0]
    md5 = headers.get("content-md5")
    if md5 is not None and method in ("PUT", "POST"):
        try:
            want = base64.b64decode(md5, validate=True)
        except ValueError:
            want = b""
        if len(want) != 16:
            return err_reply(400, "InvalidDigest", "The Content-MD5 you specified is not valid")
        if want != hashlib.md5(body).digest():
            return err_reply(400, "BadDigest",
                             "The Content-MD5 you specified did not match what we received")
    uid = query.get("uploadId", [None])[0]
    if key and uid is not None:
        with lock:
            up = UPLOADS.get(uid)
        if up is None or up["bucket"] != bucket or up["key"] != key:
            return err_reply(404, "NoSuchUpload", "The specified upload does not exist. The upload "
                             "ID may be invalid, or the upload may have been aborted or completed.")
        if method == "DELETE":
            with lock:
                UPLOADS.pop(uid, None)
                save_uploads()
            return 204, b"", []
        if method == "GET":
            with lock:
                return list_parts(bucket, key, uid, up)
        if method == "PUT":
            try:
                n = int(query.get("partNumber", ["0"])[0])
            except ValueError:
                n = 0
            if not 1 <= n <= 10000:
                return err_reply(400, "InvalidArgument",
                                 "Part number must be an integer between 1 and 10000, inclusive")
        if method == "POST":
            with lock:
                bad = check_complete(up, body)
            if bad:
                return bad
    if method == "GET" and not key and "uploads" in query:
        with lock:
            return list_uploads(bucket, query)
    if key and method in ("GET", "HEAD") and headers.get("if-match"):
        etag = head_etag(path_only)
        if etag is None:
            return None
        if not etag_matches(headers["if-match"], etag):
            return err_reply(412, "PreconditionFailed",
                             "At least one of the pre-conditions you specified did not hold")
    # Conditional writes: PutObject and CompleteMultipartUpload with If-None-Match: * or If-Match.
    if key and (method == "PUT" and "partNumber" not in query or method == "POST" and uid):
        inm, im = headers.get("if-none-match"), headers.get("if-match")
        if inm or im:
            etag = head_etag(path_only)
            if inm and inm.strip() == "*" and etag is not None:
                return err_reply(412, "PreconditionFailed",
                                 "At least one of the pre-conditions you specified did not hold")
            if im and etag is None:
                return err_reply(404, "NoSuchKey", "The specified key does not exist.")
            if im and not etag_matches(im, etag):
                return err_reply(412, "PreconditionFailed",
                                 "At least one of the pre-conditions you specified did not hold")
    return None


def s3_record(method, query, bucket, key, status, rheaders, data, body):
    """Note the multipart uploads that began, gained a part or completed upstream."""
    if status != 200 or not key:
        return
    uid = query.get("uploadId", [None])[0]
    with lock:
        if method == "POST" and "uploads" in query:
            m = re.search(rb"<UploadId>([^<]+)</UploadId>", data)
            if m:
                UPLOADS[m.group(1).decode()] = {"bucket": bucket, "key": key, "time": now_iso(),
                                                "parts": {}}
        elif method == "PUT" and uid in UPLOADS:
            etag = next((v for k, v in rheaders if k.lower() == "etag"), "")
            UPLOADS[uid]["parts"][str(int(query["partNumber"][0]))] = \
                {"etag": etag, "size": len(body), "time": now_iso()}
        elif method == "POST" and uid in UPLOADS and b"<Error>" not in data:
            del UPLOADS[uid]
        else:
            return
        save_uploads()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "s3proxy"
    timeout = 120  # an idle or stalled client connection is closed, never held forever

    def log_message(self, fmt, *args):
        pass

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def reply(self, status, body, headers=(), line=None, head=False):
        if line is not None:
            with lock:
                log.append(f"{line} {status}")
                log_times.append((getattr(self, "started", None), time.monotonic()))
        self.send_response(status)
        sent = set()
        for k, v in headers:
            if k.lower() in ("connection", "keep-alive", "transfer-encoding", "content-length",
                             "date", "server"):
                if k.lower() == "content-length" and head:
                    self.send_header(k, v)
                    sent.add("content-length")
                continue
            self.send_header(k, v)
        if "content-length" not in sent:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def control(self, method, path, body, query=""):
        global rules, log_epoch
        if path == "/__faults":
            with lock:
                if method == "POST":
                    rules.extend(json.loads(body or b"{}").get("rules", []))
                elif method == "DELETE":
                    rules = []
                text = json.dumps(rules).encode()
        else:
            with lock:
                if method == "DELETE":
                    log.clear()
                    log_times.clear()
                    log_epoch = time.monotonic()
                lines = log
                if "times=1" in query:
                    ms = lambda t: f"{(t - log_epoch) * 1000:.1f}" if t is not None else "-"
                    lines = [f"{ms(a)} {ms(b)} {x}" for x, (a, b) in zip(log, log_times)]
                text = ("\n".join(lines) + ("\n" if lines else "")).encode()
        self.reply(200, text, [("Content-Type", "text/plain")])

    def handle_any(self):
        method = self.command
        raw = self.path
        self.started = time.monotonic()
        body = self.read_body()
        path_only = raw.split("?", 1)[0]
        if path_only in ("/__faults", "/__log"):
            return self.control(method, path_only, body, raw.partition("?")[2])
        line = f"{method} {raw}"
        bad = verify_signature(method, raw, self.headers, body)
        if bad:
            status, code, msg = bad[:3]
            return self.reply(status, error_xml(code, msg, bad[3] if len(bad) > 3 else ()),
                              [("Content-Type", "application/xml")],
                              line, method == "HEAD")
        fault = take_fault(line)
        action = fault["action"] if fault else None
        if action == "drop":
            with lock:
                log.append(f"{line} drop")
                log_times.append((getattr(self, "started", None), time.monotonic()))
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        if action in ("503", "500", "429"):
            code = "InternalError" if action == "500" else "SlowDown"
            return self.reply(int(action), error_xml(code, "injected fault"),
                              [("Content-Type", "application/xml")], line, method == "HEAD")
        if action == "delay":
            time.sleep(fault.get("delay_ms", 1000) / 1000.0)
        # Node rejects a repeated Content-Length (s3cmd spells it in lower case): one, ours.
        fwd = [(k, v) for k, v in self.headers.items()
               if k.lower() not in ("connection", "keep-alive", "transfer-encoding", "expect",
                                    "content-length")]
        if body or method in ("PUT", "POST"):
            fwd.append(("Content-Length", str(len(body))))
        parsed = urllib.parse.urlsplit(raw)
        query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        parts = [urllib.parse.unquote(p) for p in parsed.path[1:].split("/", 1)]
        bucket, key = parts[0], parts[1] if len(parts) > 1 else ""
        if PASSTHROUGH:
            try:
                status, rheaders, data = upstream(method, raw, fwd, body)
            except OSError as e:
                return self.reply(502, error_xml("BadGateway", str(e)), [], line)
            return self.finish(status, rheaders, data, action, line, method)
        try:
            if method == "GET" and bucket and not key and set(query) <= LIST_PARAMS:
                status, data = list_objects(bucket, query)
                return self.reply(status, data, [("Content-Type", "application/xml")], line)
            # A conditional write is checked and done as one step, as S3 does: two
            # creates of one key with If-None-Match: * never both succeed.
            cond = key and method in ("PUT", "POST") and (
                self.headers.get("if-none-match") or self.headers.get("if-match"))
            with cond_lock if cond else contextlib.nullcontext(), \
                    write_order(method, query, bucket):
                own = s3_semantics(method, raw, query, bucket, key, self.headers, body)
                if own:
                    return self.reply(own[0], own[1], own[2], line, method == "HEAD")
                status, rheaders, data = upstream(method, raw, fwd, body)
        except OSError as e:
            return self.reply(502, error_xml("BadGateway", str(e)), [], line)
        s3_record(method, query, bucket, key, status, rheaders, data, body)
        return self.finish(status, rheaders, data, action, line, method)

    def finish(self, status, rheaders, data, action, line, method):
        """The upstream reply, corrupted or truncated when a fault says so."""
        if action == "corrupt" and data:
            # One byte flipped, the length kept: only a checksum can tell.
            data = data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF]) + \
                data[len(data) // 2 + 1:]
            with lock:
                log.append(f"{line} corrupted")
                log_times.append((getattr(self, "started", None), time.monotonic()))
        if action == "truncate" and len(data) > 1:
            with lock:
                log.append(f"{line} truncated")
                log_times.append((getattr(self, "started", None), time.monotonic()))
            self.send_response(status)
            for k, v in rheaders:
                if k.lower() not in ("connection", "keep-alive", "transfer-encoding",
                                     "content-length", "date", "server"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        return self.reply(status, data, rheaders, line, method == "HEAD")

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default listen backlog is 5: a client opening more connections at
    # once than that has the rest of its SYNs dropped and resent a second later.
    request_queue_size = 128


def main():
    global UPLOADS_FILE
    UPLOADS_FILE = os.path.join(os.path.dirname(os.path.abspath(sys.argv[3])), "s3proxy-uploads.json")
    try:
        with open(UPLOADS_FILE) as f:
            UPLOADS.update(json.load(f))
    except (OSError, ValueError):
        pass
    srv = Server(("127.0.0.1", int(sys.argv[1])), Handler)
    with open(sys.argv[3] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(sys.argv[3] + ".tmp", sys.argv[3])
    srv.serve_forever()


if __name__ == "__main__":
    main()
