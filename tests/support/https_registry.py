#!/usr/bin/env python3
"""A tiny HTTPS Terraform module registry for end-to-end tests (stdlib only).

It listens on 127.0.0.1 on an ephemeral port, writes that port to
--port-file once it accepts connections, and serves one module,
acme/hello/null version 1.0.0:

  GET /.well-known/terraform.json                   service discovery  (token)
  GET /v1/modules/acme/hello/null/versions          list versions      (token)
  GET /v1/modules/acme/hello/null/1.0.0/download    204 + X-Terraform-Get (token)
  GET /archives/hello-1.0.0.tar.gz                  the module package (open)

"(token)" endpoints want "Authorization: Bearer <--token>" and answer 401
with a JSON error body otherwise; unknown paths are 404. Every request is
appended to --log as one JSON line: {"method", "path", "query",
"authorization" (the header's value, or null), "status"}.

Stops cleanly on SIGTERM or SIGINT.
"""

import argparse
import http.server
import io
import json
import os
import signal
import ssl
import sys
import tarfile
import threading
import urllib.parse

MODULE = "/v1/modules/acme/hello/null"
# go-getter picks the unpacker from the URL path's suffix, not the Content-Type:
# without ".tar.gz" it would GET "?terraform-get=1" and parse the body as HTML.
ARCHIVE = "/archives/hello-1.0.0.tar.gz"
MAIN_TF = b'output "greeting" {\n  value = "hello from the keyring"\n}\n'


def make_archive():
    """The module package: a gzip tarball holding main.tf, built in memory."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size = len(MAIN_TF)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(MAIN_TF))
    return buf.getvalue()


class Registry(http.server.BaseHTTPRequestHandler):
    # Set by main(): the token we require, the open log file and the archive.
    token = None
    log_file = None
    log_lock = threading.Lock()
    archive = b""

    protocol_version = "HTTP/1.1"

    def setup(self):
        # The TLS handshake happens here, in this connection's own thread, so
        # a stalled client cannot hold up the accept loop.
        self.request.do_handshake()
        super().setup()

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        # go-getter appends "?terraform-get=1" to some URLs: route on the path.
        if path == "/.well-known/terraform.json":
            self.authorized(200, {"modules.v1": "/v1/modules/"})
        elif path == MODULE + "/versions":
            self.authorized(200, {"modules": [{"versions": [{"version": "1.0.0"}]}]})
        elif path == MODULE + "/1.0.0/download":
            # Relative: terraform resolves it against this request's URL.
            self.authorized(204, None, {"X-Terraform-Get": ARCHIVE})
        elif path == ARCHIVE:
            # Deliberately open, like a pre-signed storage URL would be.
            self.reply(200, self.archive, "application/x-gzip")
        else:
            self.reply_json(404, {"errors": ["not found"]})

    def authorized(self, status, body, headers=None):
        """Answers with body (JSON) if the request has our bearer token, else 401."""
        if self.headers.get("Authorization") != "Bearer " + self.token:
            self.reply_json(401, {"errors": ["unauthorized"]}, {"WWW-Authenticate": "Bearer"})
        else:
            self.reply_json(status, body, headers)

    def reply_json(self, status, body, headers=None):
        data = b"" if body is None else json.dumps(body).encode() + b"\n"
        self.reply(status, data, "application/json", headers)

    def reply(self, status, data, content_type, headers=None):
        self.record(status)
        self.send_response(status)
        if status != 204:
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if status != 204:
            self.wfile.write(data)

    def record(self, status):
        split = urllib.parse.urlsplit(self.path)
        line = json.dumps({
            "method": self.command,
            "path": split.path,
            "query": split.query,
            "authorization": self.headers.get("Authorization"),
            "status": status,
        })
        with self.log_lock:
            self.log_file.write(line + "\n")
            self.log_file.flush()

    def log_message(self, format, *args):
        # The JSON log is the record; keep stderr for real problems.
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that hangs up or fails the TLS handshake gets one line on
        # stderr, not a traceback; anything else is a bug worth the traceback.
        error = sys.exc_info()[1]
        if isinstance(error, OSError):  # ssl.SSLError and ConnectionError too
            print("https_registry: %s:%d: %s" % (client_address + (error,)), file=sys.stderr)
        else:
            super().handle_error(request, client_address)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", required=True, help="where to write the chosen port")
    parser.add_argument("--cert", required=True, help="server certificate (PEM)")
    parser.add_argument("--key", required=True, help="server private key (PEM)")
    parser.add_argument("--token", required=True, help="the bearer token to require")
    parser.add_argument("--log", required=True, help="JSON-lines request log to append to")
    args = parser.parse_args()

    # Block the stop signals before any thread starts (threads inherit the
    # mask): they can then only end up in the sigwait() below.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)

    Registry.token = args.token
    Registry.archive = make_archive()
    Registry.log_file = open(args.log, "a", encoding="utf-8")

    server = Server(("127.0.0.1", 0), Registry)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)

    # Requests are served from a thread; the main thread waits for a stop
    # signal (blocked above, so it stays pending until sigwait takes it).
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    serving.start()

    # Publish the port atomically: readers never see a half-written file.
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write("%d\n" % server.server_address[1])
    os.replace(tmp, args.port_file)

    signal.sigwait(stop_signals)
    server.shutdown()
    serving.join()
    server.server_close()
    Registry.log_file.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
