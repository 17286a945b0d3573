#!/usr/bin/env python3
"""A git smart-HTTP server for end-to-end tests (stdlib and git only).

It serves the bare repositories under --repos through the real
`git http-backend` (run as a CGI program, GIT_HTTP_EXPORT_ALL), over TLS
(--cert, --key) on 127.0.0.1 on an ephemeral port written to --port-file
once it accepts connections; with --http-port-file also over plain HTTP on
another port (the same repositories, the same rules).

Every git request needs HTTP Basic authentication whose password is --token
(any non-empty user name): without it the answer is 401 with
`WWW-Authenticate: Basic realm="git"`, which makes git ask its credential
helpers; a wrong password is 401 as well.

With --registry NS/NAME/SYSTEM it is also a Terraform module registry on
the TLS port (bearer --token required, as registries do):
  GET /.well-known/terraform.json                       {"modules.v1": "/v1/modules/"}
  GET /v1/modules/NS/NAME/SYSTEM/versions               version 1.0.0
  GET /v1/modules/NS/NAME/SYSTEM/1.0.0/download         204, X-Terraform-Get:
      git::https://HOST/REPO?ref=v1.0.0  (HOST the request's Host, REPO --registry-repo)

Each request is appended to --log as one JSON line: {"scheme", "host",
"method", "path", "status", "auth": null | "basic" | "bearer" | "other",
"user" (Basic's user name, else null), "token_ok" (whether the credential
was the token)}. The token itself is never logged.
"""

import argparse
import base64
import hmac
import http.server
import json
import os
import socketserver
import ssl
import subprocess
import sys
import threading
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    token = ""
    repos = ""
    registry = None
    registry_repo = ""
    log_file = None
    log_lock = threading.Lock()
    scheme = "https"

    def setup(self):
        if self.scheme == "https":
            self.request.do_handshake()
        super().setup()

    # --- authentication -------------------------------------------------------
    def credential(self):
        """(auth kind, Basic user name, whether it carried the token)."""
        header = self.headers.get("Authorization")
        if header is None:
            return None, None, False
        kind, _, value = header.partition(" ")
        kind = kind.lower()
        if kind == "basic":
            try:
                user, _, password = base64.b64decode(value.strip()).decode("utf-8").partition(":")
            except (ValueError, UnicodeDecodeError):
                return "basic", None, False
            ok = bool(user) and hmac.compare_digest(password.encode(), self.token.encode())
            return "basic", user, ok
        if kind == "bearer":
            return "bearer", None, hmac.compare_digest(value.strip().encode(), self.token.encode())
        return "other", None, False

    def record(self, status):
        auth, user, ok = self.credential()
        entry = {"scheme": self.scheme, "host": self.headers.get("Host"), "method": self.command,
                 "path": urllib.parse.urlsplit(self.path).path, "status": status,
                 "auth": auth, "user": user, "token_ok": ok}
        with self.log_lock:
            self.log_file.write(json.dumps(entry) + "\n")
            self.log_file.flush()

    def reply(self, status, body=b"", headers=None):
        self.record(status)
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    # --- requests ---------------------------------------------------------------
    def do_GET(self):
        self.handle_request()

    def do_POST(self):
        self.handle_request()

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def handle_request(self):
        body = self.read_body()
        path = urllib.parse.urlsplit(self.path).path
        if self.registry is not None and self.scheme == "https" and self.registry_request(path):
            return
        auth, _, ok = self.credential()
        if auth != "basic" or not ok:
            self.reply(401, b"authentication required\n", {"WWW-Authenticate": 'Basic realm="git"'})
            return
        self.git_backend(path, body)

    def registry_request(self, path):
        """Answers a registry path (True), or leaves it to git (False)."""
        module = "/v1/modules/" + self.registry + "/"
        if path == "/.well-known/terraform.json":
            document = {"modules.v1": "/v1/modules/"}
            self.bearer(200, json.dumps(document).encode())
        elif path == module + "versions":
            document = {"modules": [{"versions": [{"version": "1.0.0"}]}]}
            self.bearer(200, json.dumps(document).encode())
        elif path == module + "1.0.0/download":
            location = "git::https://%s/%s?ref=v1.0.0" % (self.headers.get("Host"), self.registry_repo)
            self.bearer(204, b"", {"X-Terraform-Get": location})
        else:
            return False
        return True

    def bearer(self, status, body, headers=None):
        auth, _, ok = self.credential()
        if auth != "bearer" or not ok:
            self.reply(401, b'{"errors":["unauthorized"]}', {"Content-Type": "application/json"})
            return
        self.reply(status, body, dict({"Content-Type": "application/json"}, **(headers or {})))

    def git_backend(self, path, body):
        auth, user, _ = self.credential()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.repos,
            "GIT_HTTP_EXPORT_ALL": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": urllib.parse.unquote(path),
            "QUERY_STRING": urllib.parse.urlsplit(self.path).query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
            "REMOTE_USER": user or "",
            "AUTH_TYPE": "Basic" if auth == "basic" else "",
        }
        for header, variable in (("Content-Encoding", "HTTP_CONTENT_ENCODING"),
                                 ("Git-Protocol", "GIT_PROTOCOL")):
            if self.headers.get(header):
                env[variable] = self.headers.get(header)
        result = subprocess.run(["git", "http-backend"], input=body, env=env,
                                capture_output=True, check=False)
        head, _, payload = result.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = result.stdout.partition(b"\n\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers[name.strip()] = value.strip()
        if result.returncode != 0 and status == 200:
            sys.stderr.write(result.stderr.decode("utf-8", "replace"))
            status = 500
        self.reply(status, payload, headers)

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass


def serve(handler_class, port_file, context):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler_class)
    server.daemon_threads = True
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True,
                                            do_handshake_on_connect=False)
    port = server.server_address[1]
    with open(port_file + ".tmp", "w", encoding="utf-8") as out:
        out.write("%d\n" % port)
    os.replace(port_file + ".tmp", port_file)
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port-file", required=True, help="where to write the TLS port")
    parser.add_argument("--http-port-file", help="also serve plain HTTP, its port written here")
    parser.add_argument("--cert", required=True, help="server certificate (PEM)")
    parser.add_argument("--key", required=True, help="server private key (PEM)")
    parser.add_argument("--token", required=True, help="the password (and bearer token) to require")
    parser.add_argument("--repos", required=True, help="the directory of bare repositories")
    parser.add_argument("--log", required=True, help="JSON-lines request log to append to")
    parser.add_argument("--registry", help="also a module registry for NS/NAME/SYSTEM")
    parser.add_argument("--registry-repo", default="net.git",
                        help="the repository the registry's download points at")
    args = parser.parse_args()

    log_file = open(args.log, "a", encoding="utf-8")  # pylint: disable=consider-using-with
    attributes = {"token": args.token, "repos": os.path.abspath(args.repos), "log_file": log_file,
                  "registry": args.registry, "registry_repo": args.registry_repo}
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    servers = [serve(type("TlsHandler", (Handler,), dict(attributes, scheme="https")),
                     args.port_file, context)]
    if args.http_port_file:
        servers.append(serve(type("PlainHandler", (Handler,), dict(attributes, scheme="http")),
                             args.http_port_file, None))
    for server in servers[1:]:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        servers[0].serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
