#!/usr/bin/env python3
"""A tiny HTTPS Terraform module registry for end-to-end tests (stdlib only).

It listens on 127.0.0.1 on an ephemeral port, writes that port to
--port-file once it accepts connections, and serves one module,
acme/hello/null, in the versions --versions lists (default: 1.0.0 only):

  GET /.well-known/terraform.json                   service discovery  (token)
  GET /v1/modules/acme/hello/null/versions          list versions      (token)
  GET /v1/modules/acme/hello/null/VERSION/download  204 + X-Terraform-Get (token)
  GET /archives/hello-VERSION.tar.gz                the module package (open)
  GET /v1/modules/acme/hello/null/VERSION/hello-VERSION.tar.gz
                                                    the same, for a prerelease (open)

X-Terraform-Get is relative, resolved (as Terraform does) against the
download endpoint's URL, in three forms: "/archives/hello-1.0.0.tar.gz"
for 1.0.0 (as it always was), "../../../../../../archives/hello-VERSION.tar.gz"
for other releases (six levels up from .../null/VERSION/ is the root), and
"./hello-VERSION.tar.gz" for prereleases (beside the download endpoint).
Each archive's main.tf has an output "greeting"; 1.0.0's says "hello from
the keyring", the others' add ", version VERSION" and an output "version".

With --provider-versions (default: none, and then everything under /mirror/
is 404) it is also a provider network mirror (provider-network-mirror-protocol)
for acme/thing, base URL https://127.0.0.1:PORT/mirror/, whatever the
provider address's HOSTNAME:

  GET /mirror/HOSTNAME/acme/thing/index.json        the versions       (token)
  GET /mirror/HOSTNAME/acme/thing/VERSION.json      archives + hashes  (token)
  GET /mirror/HOSTNAME/acme/thing/terraform-provider-thing_VERSION_OS_ARCH.zip
                                                    the package        (open)

for platforms linux_amd64 and darwin_arm64. Archive URLs in VERSION.json are
relative to it (the bare file name); "hashes" are the zip's real "zh:" (sha256
of the zip, hex) and "h1:" (golang.org/x/mod/sumdb/dirhash Hash1 over the
zip's files, as Terraform computes it). Each zip holds one executable shell
script, terraform-provider-thing_vVERSION, that fails if it is ever run.

tests/e2e/lib.sh passes a scenario's ${registry_args[@]} on to these options.

"(token)" endpoints want "Authorization: Bearer <--token>" and answer 401
with a JSON error body otherwise; unknown paths are 404. Every request is
appended to --log as one JSON line: {"method", "path", "query",
"authorization" (the header's value, or null), "status"}.

Stops cleanly on SIGTERM or SIGINT.
"""

import argparse
import base64
import hashlib
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
import zipfile

MODULE = "/v1/modules/acme/hello/null"
# go-getter picks the unpacker from the URL path's suffix, not the Content-Type:
# without ".tar.gz" it would GET "?terraform-get=1" and parse the body as HTML.
ARCHIVE = "/archives/hello-1.0.0.tar.gz"
MAIN_TF = b'output "greeting" {\n  value = "hello from the keyring"\n}\n'

MIRROR = "/mirror/"
PROVIDER = "acme/thing"
PLATFORMS = ("linux_amd64", "darwin_arm64")
# A fixed timestamp keeps the zips, and so their zh: hashes, the same every run.
ZIP_DATE = (2024, 1, 1, 0, 0, 0)


def main_tf(version):
    """A module version's main.tf: its greeting (and, but for 1.0.0, its version)."""
    if version == "1.0.0":
        return MAIN_TF
    return ('output "greeting" {\n  value = "hello from the keyring, version %s"\n}\n\n'
            'output "version" {\n  value = "%s"\n}\n' % (version, version)).encode()


def make_archive(content=MAIN_TF):
    """The module package: a gzip tarball holding main.tf, built in memory."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("main.tf")
        info.size = len(content)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def module_location(version):
    """(X-Terraform-Get for version, the server path it resolves to)."""
    if version == "1.0.0":
        return ARCHIVE, ARCHIVE
    name = "hello-%s.tar.gz" % version
    if "-" in version:
        # Beside .../null/VERSION/download: ".../null/VERSION/hello-VERSION.tar.gz".
        return "./" + name, "%s/%s/%s" % (MODULE, version, name)
    # The base is /v1/modules/acme/hello/null/VERSION/download: its directory
    # is six segments deep (v1 modules acme hello null VERSION), so six ".."
    # climb back to the root.
    return "../" * 6 + "archives/" + name, "/archives/" + name


def dirhash_h1(files):
    """golang.org/x/mod/sumdb/dirhash.Hash1 over {name: content}."""
    summary = "".join("%s  %s\n" % (hashlib.sha256(files[name]).hexdigest(), name)
                      for name in sorted(files))
    return "h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode()


def make_provider_zip(version, platform):
    """(zip file name, zip bytes, hashes) of the provider package for platform."""
    executable = "terraform-provider-thing_v" + version
    # terraform init only installs providers: should anything run this, it fails.
    script = ("#!/bin/sh\n"
              "echo 'terraform-provider-thing %s (%s): a test fixture, not a provider' >&2\n"
              "exit 1\n" % (version, platform)).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        info = zipfile.ZipInfo(executable, date_time=ZIP_DATE)
        info.create_system = 3  # Unix: Go's archive/zip then reads the mode bits
        info.external_attr = (0o100755 << 16)
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, script)
    data = buf.getvalue()
    hashes = [dirhash_h1({executable: script}), "zh:" + hashlib.sha256(data).hexdigest()]
    return "terraform-provider-thing_%s_%s.zip" % (version, platform), data, hashes


def version_list(text):
    """"1.0.0,1.1.0" -> ["1.0.0", "1.1.0"] ("" -> [])."""
    return [v.strip() for v in text.split(",") if v.strip()]


class Registry(http.server.BaseHTTPRequestHandler):
    # Set by main(): the token we require, the open log file, the module's
    # versions, {server path: module tarball}, the provider's versions,
    # {version: VERSION.json document} and {zip file name: zip bytes}.
    token = None
    log_file = None
    log_lock = threading.Lock()
    module_versions = ["1.0.0"]
    archives = {}
    provider_versions = []
    provider_documents = {}
    provider_zips = {}

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
            self.authorized(200, {"modules": [{"versions": [{"version": v} for v in self.module_versions]}]})
        elif self.module_download(path) is not None:
            # Relative: terraform resolves it against this request's URL.
            self.authorized(204, None, {"X-Terraform-Get": module_location(self.module_download(path))[0]})
        elif path in self.archives:
            # Deliberately open, like a pre-signed storage URL would be.
            self.reply(200, self.archives[path], "application/x-gzip")
        elif self.mirror_file(path) in self.provider_zips:
            # Open too: Terraform never sends credentials for mirror archives.
            self.reply(200, self.provider_zips[self.mirror_file(path)], "application/zip")
        elif self.mirror_file(path, ".json") is not None:
            self.authorized(*self.mirror_document(self.mirror_file(path, ".json")))
        else:
            self.reply_json(404, {"errors": ["not found"]})

    def module_download(self, path):
        """The version if path is a known version's download endpoint, else None."""
        prefix, suffix = MODULE + "/", "/download"
        if path.startswith(prefix) and path.endswith(suffix):
            version = path[len(prefix):-len(suffix)]
            if version in self.module_versions:
                return version
        return None

    def mirror_file(self, path, suffix=""):
        """NAME if path is /mirror/HOSTNAME/acme/thing/NAME + suffix, else None.

        HOSTNAME is any one non-empty segment (the provider address's
        hostname); with no --provider-versions there is no mirror at all.
        """
        if not self.provider_versions or not path.startswith(MIRROR):
            return None
        parts = path[len(MIRROR):].split("/")
        if len(parts) != 4 or not parts[0] or "/".join(parts[1:3]) != PROVIDER \
                or not parts[3].endswith(suffix) or len(parts[3]) == len(suffix):
            return None
        return parts[3][:len(parts[3]) - len(suffix)]

    def mirror_document(self, name):
        """(status, body) for the mirror's NAME.json: index or a VERSION."""
        if name == "index":
            return 200, {"versions": {v: {} for v in self.provider_versions}}
        if name in self.provider_documents:
            return 200, self.provider_documents[name]
        return 404, {"errors": ["no such version"]}

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
    parser.add_argument("--versions", default="1.0.0",
                        help="the module's versions, comma-separated (default: 1.0.0)")
    parser.add_argument("--provider-versions", default="",
                        help="the mirror's versions of acme/thing, comma-separated (default: none: no mirror)")
    args = parser.parse_args()
    module_versions = version_list(args.versions)
    provider_versions = version_list(args.provider_versions)
    for version in module_versions + provider_versions:
        if "/" in version:
            parser.error("bad version %r" % version)

    # Block the stop signals before any thread starts (threads inherit the
    # mask): they can then only end up in the sigwait() below.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)

    Registry.token = args.token
    Registry.module_versions = module_versions
    for version in module_versions:
        Registry.archives[module_location(version)[1]] = make_archive(main_tf(version))
    Registry.provider_versions = provider_versions
    for version in provider_versions:
        archives = {}
        for platform in PLATFORMS:
            filename, data, hashes = make_provider_zip(version, platform)
            # Served beside VERSION.json (under every HOSTNAME): the URL is relative to it.
            Registry.provider_zips[filename] = data
            archives[platform] = {"url": filename, "hashes": hashes}
        Registry.provider_documents[version] = {"archives": archives}
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
