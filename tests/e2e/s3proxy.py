#!/usr/bin/python3
"""s3proxy.py — the tests' S3 front door: checks every request's SigV4 signature with botocore, injects faults, forwards to s3rver.

Usage: s3proxy.py LISTEN_PORT UPSTREAM_PORT PORT_FILE
The access key and secret come from S3PROXY_ACCESS_KEY and S3PROXY_SECRET_KEY.

Every request is re-signed by botocore's own SigV4 signer (not matorage's code) from the
request as received: method, path and query exactly as sent, the headers the client says
it signed, the x-amz-date and the credential scope.  A different signature is answered
403 SignatureDoesNotMatch, an unknown key 403 InvalidAccessKeyId, a body whose sha256 is
not the x-amz-content-sha256 header 400 XAmzContentSHA256Mismatch.

Control endpoints (never signature-checked):
  POST /__faults   {"rules": [{"match": REGEX on "METHOD /path?query",
                               "action": "drop"|"503"|"500"|"429"|"truncate"|"corrupt"|"delay",
                               "count": N (default 1, -1 forever), "delay_ms": MS,
                               "after": N (let the first N matching requests through)}]}
  DELETE /__faults clears the rules, GET /__faults lists what is left.
  GET /__log       one line per request: "METHOD /path?query STATUS" (drop: "drop")
  DELETE /__log    clears it.

s3rver (3.7) prunes directories beneath a common prefix when listing with a delimiter, so
it misses prefixes that hold no object directly; the proxy answers ListObjectsV2 with a
delimiter itself, from s3rver's full listing.
"""
import base64
import hashlib
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
from botocore.credentials import Credentials

ACCESS_KEY = os.environ["S3PROXY_ACCESS_KEY"]
SECRET_KEY = os.environ["S3PROXY_SECRET_KEY"]
UPSTREAM = ("127.0.0.1", int(sys.argv[2]))
S3NS = "http://s3.amazonaws.com/doc/2006-03-01/"
AUTH_RE = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request,\s*"
    r"SignedHeaders=([^,]+),\s*Signature=([0-9a-f]{64})$")

lock = threading.Lock()
rules = []
log = []


def error_xml(code, message):
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()


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


def verify_signature(method, raw_path, headers, body):
    """None when the request is signed correctly, else (status, code, message)."""
    auth = headers.get("authorization")
    if not auth:
        return 403, "AccessDenied", "Anonymous requests are not allowed"
    m = AUTH_RE.match(auth.strip())
    if not m:
        return 400, "AuthorizationHeaderMalformed", "The authorization header is malformed"
    key, day, region, service, signed, signature = m.groups()
    if key != ACCESS_KEY:
        return 403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist"
    amzdate = headers.get("x-amz-date", "")
    payload = headers.get("x-amz-content-sha256")
    if amzdate[:8] != day or service != "s3" or payload is None:
        return 403, "SignatureDoesNotMatch", "Date, service or payload hash header is wrong"
    if payload not in ("UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER") and \
            payload != hashlib.sha256(body).hexdigest():
        return 400, "XAmzContentSHA256Mismatch", "The body is not what was signed"
    names = signed.split(";")
    if "host" not in names:
        return 403, "SignatureDoesNotMatch", "Host is not signed"
    sign_headers = {}
    for n in names:
        v = headers.get(n)
        if v is None:
            return 403, "SignatureDoesNotMatch", f"Signed header {n} is missing"
        sign_headers[n] = v
    req = AWSRequest(method=method, url="http://" + headers["host"] + raw_path,
                     headers=sign_headers, data=body)
    req.context["timestamp"] = amzdate
    signer = S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", region)
    canonical = signer.canonical_request(req)
    expected = signer.signature(signer.string_to_sign(req, canonical), req)
    if expected != signature:
        return 403, "SignatureDoesNotMatch", \
            "The request signature we calculated does not match the signature you provided"
    return None


def upstream(method, path, headers, body):
    conn = http.client.HTTPConnection(*UPSTREAM, timeout=60)
    try:
        conn.request(method, path, body=body if body else None, headers=headers)
        resp = conn.getresponse()
        data = resp.read() if method != "HEAD" else b""
        return resp.status, resp.getheaders(), data
    finally:
        conn.close()


def list_with_delimiter(bucket, query):
    """ListObjectsV2 with a delimiter, computed from s3rver's full listing."""
    prefix = query.get("prefix", [""])[0]
    delim = query.get("delimiter", [""])[0]
    max_keys = int(query.get("max-keys", ["1000"])[0])
    after = query.get("continuation-token", [""])[0]
    after = base64.urlsafe_b64decode(after.encode()).decode() if after else ""
    entries, token = {}, None
    while True:
        q = {"list-type": "2", "prefix": prefix, "max-keys": "1000"}
        if token:
            q["continuation-token"] = token
        status, _, data = upstream("GET", f"/{bucket}?" + urllib.parse.urlencode(q), {}, b"")
        if status != 200:
            return status, data
        root = ET.fromstring(data)
        ns = root.tag[:root.tag.index("}") + 1] if root.tag.startswith("{") else ""
        for c in root.findall(ns + "Contents"):
            k = c.find(ns + "Key").text
            rest = k[len(prefix):]
            if delim and delim in rest:
                p = prefix + rest[:rest.index(delim) + len(delim)]
                entries[p] = None
            else:
                entries[k] = {t: c.find(ns + t).text for t in
                              ("Key", "LastModified", "ETag", "Size", "StorageClass")}
        token_el = root.find(ns + "NextContinuationToken")
        if token_el is None:
            break
        token = token_el.text
    names = sorted(n for n in entries if n > after)
    page, truncated = names[:max_keys], len(names) > max_keys
    out = [f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="{S3NS}">',
           f"<Name>{bucket}</Name><Prefix>{escape(prefix)}</Prefix>",
           f"<Delimiter>{escape(delim)}</Delimiter><MaxKeys>{max_keys}</MaxKeys>",
           f"<KeyCount>{len(page)}</KeyCount><IsTruncated>{str(truncated).lower()}</IsTruncated>"]
    if truncated:
        tok = base64.urlsafe_b64encode(page[-1].encode()).decode()
        out.append(f"<NextContinuationToken>{tok}</NextContinuationToken>")
    for n in page:
        if entries[n] is None:
            out.append(f"<CommonPrefixes><Prefix>{escape(n)}</Prefix></CommonPrefixes>")
        else:
            out.append("<Contents>" + "".join(
                f"<{t}>{escape(v or '')}</{t}>" for t, v in entries[n].items()) + "</Contents>")
    out.append("</ListBucketResult>")
    return 200, "".join(out).encode()


def escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "s3proxy"

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

    def control(self, method, path, body):
        global rules
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
                text = ("\n".join(log) + ("\n" if log else "")).encode()
        self.reply(200, text, [("Content-Type", "text/plain")])

    def handle_any(self):
        method = self.command
        raw = self.path
        body = self.read_body()
        path_only = raw.split("?", 1)[0]
        if path_only in ("/__faults", "/__log"):
            return self.control(method, path_only, body)
        line = f"{method} {raw}"
        headers = {k.lower(): v for k, v in self.headers.items()}
        bad = verify_signature(method, raw, headers, body)
        if bad:
            status, code, msg = bad
            return self.reply(status, error_xml(code, msg), [("Content-Type", "application/xml")],
                              line, method == "HEAD")
        fault = take_fault(line)
        action = fault["action"] if fault else None
        if action == "drop":
            with lock:
                log.append(f"{line} drop")
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        if action in ("503", "500", "429"):
            code = "InternalError" if action == "500" else "SlowDown"
            return self.reply(int(action), error_xml(code, "injected fault"),
                              [("Content-Type", "application/xml")], line, method == "HEAD")
        if action == "delay":
            time.sleep(fault.get("delay_ms", 1000) / 1000.0)
        fwd = {k: v for k, v in self.headers.items()
               if k.lower() not in ("connection", "keep-alive", "transfer-encoding", "expect")}
        if body:
            fwd["Content-Length"] = str(len(body))
        parsed = urllib.parse.urlsplit(raw)
        query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        parts = parsed.path.strip("/").split("/", 1)
        if method == "GET" and len(parts) == 1 and parts[0] and "delimiter" in query \
                and query.get("list-type") == ["2"]:
            status, data = list_with_delimiter(urllib.parse.unquote(parts[0]), query)
            return self.reply(status, data, [("Content-Type", "application/xml")], line)
        try:
            status, rheaders, data = upstream(method, raw, fwd, body)
        except OSError as e:
            return self.reply(502, error_xml("BadGateway", str(e)), [], line)
        if action == "corrupt" and data:
            # One byte flipped, the length kept: only a checksum can tell.
            data = data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF]) + \
                data[len(data) // 2 + 1:]
            with lock:
                log.append(f"{line} corrupted")
        if action == "truncate" and len(data) > 1:
            with lock:
                log.append(f"{line} truncated")
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


def main():
    srv = Server(("127.0.0.1", int(sys.argv[1])), Handler)
    with open(sys.argv[3] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(sys.argv[3] + ".tmp", sys.argv[3])
    srv.serve_forever()


if __name__ == "__main__":
    main()
