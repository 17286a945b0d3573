#!/usr/bin/env python3
"""A tiny HTTPS Terraform module registry for end-to-end tests (stdlib only).

It listens on 127.0.0.1 on an ephemeral port (or --port), writes that port to
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

With --modules (default: acme/hello/null only) it serves more modules, each
in the same --versions; a module other than acme/hello/null has main.tf with
an output "greeting" ("hello from NS/NAME/SYSTEM VERSION") and the absolute
X-Terraform-Get "/archives/NS-NAME-SYSTEM-VERSION.tar.gz" (open).

With --providers NS/TYPE,... (default: none, and then discovery offers no
providers.v1) it is also a provider registry (provider-registry-protocol),
providers.v1 = /v1/providers/, each provider in the versions
--registry-provider-versions lists (default: 1.0.0), protocols ["5.0"],
platforms linux_amd64 and darwin_arm64:

  GET /v1/providers/NS/TYPE/versions                the versions       (token)
  GET /v1/providers/NS/TYPE/VERSION/download/OS/ARCH
                                                    the package document (token)
  GET /provider-files/NS/TYPE/VERSION/terraform-provider-TYPE_VERSION_OS_ARCH.zip
  GET /provider-files/NS/TYPE/VERSION/terraform-provider-TYPE_VERSION_SHA256SUMS
  GET /provider-files/NS/TYPE/VERSION/terraform-provider-TYPE_VERSION_SHA256SUMS.sig
                                                    package, sums, signature (open)

The package document's download_url, shasums_url and shasums_signature_url
are absolute (https://127.0.0.1:PORT/provider-files/...), its shasum is the
zip's sha256 and signing_keys.gpg_public_keys holds the public key that made
the detached binary signature of SHA256SUMS: a throw-away RSA key made with
`gpg --batch` in --gpg-home (made there if it holds none; default: a
temporary directory beside --log), so Terraform installs them as
"self-signed". The zips are make_provider_zip()'s, named for TYPE.

--protect-downloads makes the downloads on this origin (module archives,
provider zips, SHA256SUMS and .sig) want the token too, as a registry that
protects its downloads does. --other-origin URL (another server's base URL,
https://127.0.0.1:PORT) puts downloads there: a module other than
acme/hello/null gets X-Terraform-Get URL/archives/NS-NAME-SYSTEM-VERSION.tar.gz,
and each package document's shasums_signature_url is /redirect/... on this
origin, which answers 302 to the same file under URL (that server must serve
the same providers, signed with the same --gpg-home key).

--delay-ms N sleeps N ms before answering each request (benchmarks).

Downloads (module archives, provider zips, SHA256SUMS and signatures, the
mirror's zips) can misbehave, for the archive cache's streaming tests:
--download-pieces N sends each download's body in N writes (default 1),
--piece-delay-ms MS sleeps MS ms between them; three control files, each
in effect while it exists (so one server serves well, then badly, then
well again): --hold-while FILE holds each download's last piece until FILE
is gone, logging a line whose "status" is "holding" before and "released"
after (its other fields as any request's); --lie-while FILE serves provider
zips whose bytes do not match the published hashes (one byte in the middle
flipped, the length unchanged); --chunked-while FILE sends downloads with
Transfer-Encoding: chunked (one chunk per piece) instead of Content-Length.

--tfe makes it TFE-like as well: discovery is open (no token needed) and adds tfe.v2, tfe.v2.1, tfe.v2.2,
state.v2, motd.v1 and login.v1, and it answers the API paths listed in Tfe's
docstring (ping, account details, organizations, workspaces, the OAuth
authorization-code flow with PKCE that `terraform login` uses, and the
authentication-token API that `hostkeeper rotate` uses: a token it creates
is accepted wherever --token is, until it is destroyed).

tests/e2e/lib.sh passes a scenario's ${registry_args[@]} on to these options.

"(token)" endpoints want "Authorization: Bearer <--token>" and answer 401
with a JSON error body otherwise (with --public they want nothing, as
registry.terraform.io does); unknown paths are 404. Every request is
appended to --log as one JSON line: {"method", "path", "query",
"authorization" (the header's value, or null), "status", "user_agent"
(the header's value, or null)}: one line per
request, so a scenario counts requests per path.

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
import socket
import ssl
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse
import zipfile

MODULES = "/v1/modules/"
HELLO = "acme/hello/null"
MODULE = MODULES + HELLO
# go-getter picks the unpacker from the URL path's suffix, not the Content-Type:
# without ".tar.gz" it would GET "?terraform-get=1" and parse the body as HTML.
ARCHIVE = "/archives/hello-1.0.0.tar.gz"
MAIN_TF = b'output "greeting" {\n  value = "hello from the keyring"\n}\n'

MIRROR = "/mirror/"
REDIRECT = "/redirect/"  # --other-origin: 302 to the same path there
PROVIDERS = "/v1/providers/"
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


def module_location(module, version):
    """(X-Terraform-Get for module's version, the server path it resolves to)."""
    if module != HELLO:
        # Other modules (--modules): an absolute path, like hello 1.0.0's.
        path = "/archives/%s-%s.tar.gz" % (module.replace("/", "-"), version)
        return path, path
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


def module_main_tf(module, version):
    """main.tf of module's version: hello's as main_tf() says; others greet by name."""
    if module == HELLO:
        return main_tf(version)
    return ('output "greeting" {\n  value = "hello from %s %s"\n}\n' % (module, version)).encode()


def dirhash_h1(files):
    """golang.org/x/mod/sumdb/dirhash.Hash1 over {name: content}."""
    summary = "".join("%s  %s\n" % (hashlib.sha256(files[name]).hexdigest(), name)
                      for name in sorted(files))
    return "h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode()


def make_provider_zip(version, platform, kind="thing"):
    """(zip file name, zip bytes, hashes) of provider kind's package for platform."""
    executable = "terraform-provider-%s_v%s" % (kind, version)
    # terraform init only installs providers: should anything run this, it fails.
    script = ("#!/bin/sh\n"
              "echo 'terraform-provider-%s %s (%s): a test fixture, not a provider' >&2\n"
              "exit 1\n" % (kind, version, platform)).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        info = zipfile.ZipInfo(executable, date_time=ZIP_DATE)
        info.create_system = 3  # Unix: Go's archive/zip then reads the mode bits
        info.external_attr = (0o100755 << 16)
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, script)
    data = buf.getvalue()
    hashes = [dirhash_h1({executable: script}), "zh:" + hashlib.sha256(data).hexdigest()]
    return "terraform-provider-%s_%s_%s.zip" % (kind, version, platform), data, hashes


def version_list(text):
    """"1.0.0,1.1.0" -> ["1.0.0", "1.1.0"] ("" -> [])."""
    return [v.strip() for v in text.split(",") if v.strip()]


class Registry(http.server.BaseHTTPRequestHandler):
    # Set by main(): the token we require, the open log file, the module's
    # versions, {server path: module tarball}, the provider's versions,
    # {version: VERSION.json document} and {zip file name: zip bytes}; the
    # other modules served, the provider registry's documents and files,
    # the per-request delay and the TFE-like API (see main()).
    token = None
    live_tokens = set()      # --token, and the tokens Tfe created and has not destroyed
    log_file = None
    log_lock = threading.Lock()
    module_versions = ["1.0.0"]
    modules = [HELLO]
    archives = {}
    provider_versions = []
    provider_documents = {}
    provider_zips = {}
    registry_documents = {}  # {server path: JSON document} (token)
    registry_files = {}      # {server path: (bytes, content type)} (open)
    discovery = {"modules.v1": MODULES}
    delay = 0.0
    tfe = None               # a Tfe when --tfe
    protect_downloads = False
    public = False           # --public: no endpoint wants the token
    other_origin = None      # --other-origin
    pieces = 1               # --download-pieces
    piece_delay = 0.0        # --piece-delay-ms, in seconds
    hold_while = None        # --hold-while FILE
    lie_while = None         # --lie-while FILE
    chunked_while = None     # --chunked-while FILE

    protocol_version = "HTTP/1.1"

    def setup(self):
        # The TLS handshake happens here, in this connection's own thread, so
        # a stalled client cannot hold up the accept loop.
        self.request.do_handshake()
        # As real servers (nginx's tcp_nodelay, Go's net/http) do: a response
        # written in two writes (head, then body) must not wait for the
        # client's delayed ACK (Nagle), which stalls libcurl ~40 ms a request.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()

    def do_GET(self):
        if self.delay:
            time.sleep(self.delay)
        path = urllib.parse.urlsplit(self.path).path
        # go-getter appends "?terraform-get=1" to some URLs: route on the path.
        module, rest = self.module_request(path)
        if path == "/.well-known/terraform.json":
            if self.tfe is not None:
                # Open, as on HCP Terraform: `terraform login` discovers before it has a token.
                self.reply_json(200, self.discovery)
            else:
                self.authorized(200, self.discovery)
        elif module is not None and rest == "versions":
            self.authorized(200, {"modules": [{"versions": [{"version": v} for v in self.module_versions]}]})
        elif self.module_download(module, rest) is not None:
            # Relative: terraform resolves it against this request's URL.
            location = module_location(module, self.module_download(module, rest))[0]
            if module != HELLO and self.other_origin:
                location = self.other_origin + location
            self.authorized(204, None, {"X-Terraform-Get": location})
        elif path in self.archives:
            # Open, like a pre-signed storage URL would be (unless --protect-downloads).
            self.download(self.archives[path], "application/x-gzip")
        elif path in self.registry_documents:
            self.authorized(200, self.registry_documents[path])
        elif path in self.registry_files:
            # Open, like a release download (GitHub's) would be (unless --protect-downloads).
            self.download(*self.registry_files[path])
        elif path.startswith(REDIRECT) and self.other_origin:
            self.reply(302, b"", "text/plain", {"Location": self.other_origin + path[len(REDIRECT) - 1:]})
        elif self.mirror_file(path) in self.provider_zips:
            # Open too: Terraform never sends credentials for mirror archives.
            self.send_download(self.provider_zips[self.mirror_file(path)], "application/zip")
        elif self.mirror_file(path, ".json") is not None:
            self.authorized(*self.mirror_document(self.mirror_file(path, ".json")))
        elif self.tfe is not None and self.tfe.get(self, path):
            pass
        else:
            self.reply_json(404, {"errors": ["not found"]})

    def do_POST(self):
        if self.delay:
            time.sleep(self.delay)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        path = urllib.parse.urlsplit(self.path).path
        if self.tfe is None or not self.tfe.post(self, path, body):
            self.reply_json(404, {"errors": ["not found"]})

    def do_DELETE(self):
        if self.delay:
            time.sleep(self.delay)
        path = urllib.parse.urlsplit(self.path).path
        if self.tfe is None or not self.tfe.delete(self, path):
            self.reply_json(404, {"errors": ["not found"]})

    def module_request(self, path):
        """("NS/NAME/SYSTEM", the rest of path) for a served module's path, else (None, None)."""
        if not path.startswith(MODULES):
            return None, None
        parts = path[len(MODULES):].split("/", 3)
        if len(parts) < 4 or "/".join(parts[:3]) not in self.modules:
            return None, None
        return "/".join(parts[:3]), parts[3]

    def module_download(self, module, rest):
        """The version if module/rest is a known version's download endpoint, else None."""
        suffix = "/download"
        if module is not None and rest.endswith(suffix) and rest[:-len(suffix)] in self.module_versions:
            return rest[:-len(suffix)]
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

    def download(self, data, content_type):
        """A download: open, or with --protect-downloads wanting the token as authorized() does."""
        if self.protect_downloads and not self.bearer_ok():
            self.reply_json(401, {"errors": ["unauthorized"]}, {"WWW-Authenticate": "Bearer"})
        else:
            self.send_download(data, content_type)

    @staticmethod
    def while_exists(path):
        return path is not None and os.path.exists(path)

    def send_download(self, data, content_type):
        """A download's 200, as --download-pieces and the control files say."""
        if self.while_exists(self.lie_while) and urllib.parse.urlsplit(self.path).path.endswith(".zip"):
            middle = len(data) // 2
            data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]
        chunked = self.while_exists(self.chunked_while)
        self.record(200)
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        count = max(1, min(self.pieces, len(data)))
        bounds = [len(data) * i // count for i in range(count + 1)]
        for i in range(count):
            if i > 0 and self.piece_delay:
                time.sleep(self.piece_delay)
            if i == count - 1 and self.while_exists(self.hold_while):
                self.record("holding")
                while self.while_exists(self.hold_while):
                    time.sleep(0.02)
                self.record("released")
            piece = data[bounds[i]:bounds[i + 1]]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            self.wfile.flush()
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def bearer_ok(self):
        """Whether the request carries a live token (--token or one Tfe created)."""
        header = self.headers.get("Authorization") or ""
        return header.startswith("Bearer ") and header[len("Bearer "):] in self.live_tokens

    def authorized(self, status, body, headers=None):
        """Answers with body (JSON) if the request has our bearer token, else 401.
        With --login-lifetime, the token is one /oauth/token issued and not yet expired."""
        if self.tfe is not None and self.tfe.lifetime:
            given = self.headers.get("Authorization", "")
            good = given.startswith("Bearer ") and self.tfe.unexpired(given[len("Bearer "):])
        else:
            good = self.bearer_ok()
        if not self.public and not good:
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
            "user_agent": self.headers.get("User-Agent"),
        })
        with self.log_lock:
            self.log_file.write(line + "\n")
            self.log_file.flush()

    def log_message(self, format, *args):
        # The JSON log is the record; keep stderr for real problems.
        pass


def gpg_signer(home):
    """(key id, ASCII-armored public key, sign(bytes) -> detached binary signature).

    The key lives in GnuPG home directory home: a throw-away RSA key made
    there with `gpg --batch` when it holds none yet (no passphrase, signing
    only, no expiry), so a scenario may pass one directory to several server
    starts and keep one key.
    """
    os.makedirs(home, mode=0o700, exist_ok=True)
    env = dict(os.environ, GNUPGHOME=home)

    def gpg(*args, data=None):
        return subprocess.run(["gpg", "--batch", "--quiet", "--no-tty", "--pinentry-mode", "loopback",
                               "--passphrase", ""] + list(args), input=data, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout

    def key_id():
        for line in gpg("--with-colons", "--list-secret-keys").decode().splitlines():
            if line.startswith("sec:"):
                return line.split(":")[4]
        return None

    if key_id() is None:
        gpg("--quick-gen-key", "https_registry test signer <signer@example.invalid>", "rsa2048", "sign", "never")
    kid = key_id()
    armor = gpg("--armor", "--export", kid).decode()

    def sign(data):
        return gpg("--detach-sign", "--local-user", kid, "--output", "-", data=data)

    def stop_agent():
        # gpg started a gpg-agent for this home: it must not outlive us.
        subprocess.run(["gpgconf", "--kill", "all"], env=env, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    return kid, armor, sign, stop_agent


def build_provider_registry(providers, versions, base_url, signer):
    """({path: JSON document}, {path: (bytes, content type)}) of the provider registry.

    For each "NS/TYPE" in providers and each version: the versions document,
    the download document of every platform, and the open files under
    /provider-files/NS/TYPE/VERSION/: each platform's zip, the SHA256SUMS
    file and its detached signature (signer: gpg_signer()'s first three).
    """
    kid, armor, sign = signer
    documents, files = {}, {}
    for name in providers:
        namespace, kind = name.split("/")
        documents[PROVIDERS + name + "/versions"] = {"versions": [{
            "version": v, "protocols": ["5.0"],
            "platforms": [dict(zip(("os", "arch"), p.split("_"))) for p in PLATFORMS]} for v in versions]}
        for version in versions:
            files_dir = "/provider-files/%s/%s/" % (name, version)
            sums_name = "terraform-provider-%s_%s_SHA256SUMS" % (kind, version)
            zips = {p: make_provider_zip(version, p, kind) for p in PLATFORMS}
            sums = "".join("%s  %s\n" % (hashlib.sha256(data).hexdigest(), filename)
                           for filename, data, _ in sorted(zips.values())).encode()
            files[files_dir + sums_name] = (sums, "text/plain")
            files[files_dir + sums_name + ".sig"] = (sign(sums), "application/octet-stream")
            for platform, (filename, data, _) in zips.items():
                files[files_dir + filename] = (data, "application/zip")
                os_name, arch = platform.split("_")
                documents["%s%s/%s/download/%s/%s" % (PROVIDERS, name, version, os_name, arch)] = {
                    "protocols": ["5.0"], "os": os_name, "arch": arch, "filename": filename,
                    "download_url": base_url + files_dir + filename,
                    "shasums_url": base_url + files_dir + sums_name,
                    "shasums_signature_url": base_url + files_dir + sums_name + ".sig",
                    "shasum": hashlib.sha256(data).hexdigest(),
                    "signing_keys": {"gpg_public_keys": [{"key_id": kid, "ascii_armor": armor}]}}
    return documents, files


class Tfe:
    """The TFE-like part (--tfe): the services HCP Terraform / Terraform
    Enterprise add to discovery, and just enough of their API for `terraform
    login` and for `terraform init` with a `cloud` block or a `remote` backend.

      GET  /api/v2/ping                                 (open; TFP-API-Version header)
      GET  /api/v2/account/details                      the user --tfe-user (token)
      GET  /api/v2/users/user-e2e/authentication-tokens  the user's one token, expiring in 2099 (token)
      GET  /api/v2/organizations/ORG[/entitlement-set]  any ORG (token)
      GET  /api/v2/organizations/ORG/workspaces/NAME    a local-execution workspace (token)
      GET  /api/v2/workspaces/ws-NAME[/current-state-version]  (token; no state: 404)
      GET  /app/oauth/authorize?...                     302 to redirect_uri?code=..&state=.. (open)
      POST /oauth/token                                 the --token, for a code and its PKCE verifier
      POST /api/v2/users/user-e2e/authentication-tokens a new token, live at once, with the
                                                        requested expired-at (token)
      DELETE /api/v2/authentication-tokens/ID           destroys one it created: 204 (token)

    With --login-lifetime SECONDS, /oauth/token issues a new access token
    living that long with a refresh token instead, takes the refresh_token
    grant (each refresh token once: a new one comes with each answer), and
    only an unexpired issued token is accepted where the token is wanted.
    """

    TOKENS = "/api/v2/users/user-e2e/authentication-tokens"

    def __init__(self, base_url, user, lifetime=0):
        self.base_url = base_url
        self.user = user
        self.lifetime = lifetime
        self.codes = {}  # {code: (code_challenge, redirect_uri)}
        self.created = {}  # {token id: token}, the authentication tokens not destroyed
        self.last_id = 0
        self.issued = {}  # {access token: monotonic expiry}
        self.refresh_tokens = set()
        self.lock = threading.Lock()

    def unexpired(self, token):
        with self.lock:
            return time.monotonic() < self.issued.get(token, 0)

    def issue(self):
        """A new access token and refresh token (--login-lifetime), as the token endpoint answers them."""
        access = "login-at-" + base64.urlsafe_b64encode(os.urandom(12)).decode()
        refresh = "login-rt-" + base64.urlsafe_b64encode(os.urandom(12)).decode()
        with self.lock:
            self.issued[access] = time.monotonic() + self.lifetime
            self.refresh_tokens.add(refresh)
        return {"access_token": access, "token_type": "bearer", "expires_in": self.lifetime,
                "refresh_token": refresh}

    def services(self):
        """Discovery entries: relative API URLs (as TFE gives), absolute login URLs."""
        return {"tfe.v2": "/api/v2/", "tfe.v2.1": "/api/v2/", "tfe.v2.2": "/api/v2/",
                "state.v2": "/api/v2/", "motd.v1": "/api/terraform/motd",
                "login.v1": {"client": "terraform-cli", "grant_types": ["authz_code"],
                             "authz": self.base_url + "/app/oauth/authorize",
                             "token": self.base_url + "/oauth/token", "ports": [10000, 10010]}}

    @staticmethod
    def api_headers():
        return {"TFP-API-Version": "2.6", "TFP-AppName": "Terraform Enterprise", "X-TFE-Version": "v202401-1"}

    def get(self, handler, path):
        """Answers a GET for one of our paths (True), or leaves it (False)."""
        if path == "/api/v2/ping":
            handler.reply_json(200, {}, self.api_headers())
        elif path == "/api/v2/account/details":
            handler.authorized(200, {"data": {"id": "user-e2e", "type": "users", "attributes": {
                "username": self.user, "email": self.user + "@example.invalid", "is-service-account": False,
                "two-factor": {"enabled": False, "verified": False}}}}, self.api_headers())
        elif path == "/api/v2/users/user-e2e/authentication-tokens":
            handler.authorized(200, {"data": [{"id": "at-e2e", "type": "authentication-tokens", "attributes": {
                "created-at": "2026-01-01T00:00:00.000Z", "last-used-at": None, "description": "e2e",
                "token": None, "expired-at": "2099-01-01T00:00:00.000Z"}}],
                "meta": {"pagination": {"current-page": 1, "total-count": 1}}}, self.api_headers())
        elif path.startswith("/api/v2/organizations/"):
            parts = path[len("/api/v2/organizations/"):].split("/")
            if len(parts) == 1:
                handler.authorized(200, {"data": {"id": parts[0], "type": "organizations",
                                                  "attributes": {"name": parts[0], "email": "org@example.invalid"}}},
                                   self.api_headers())
            elif len(parts) == 2 and parts[1] == "entitlement-set":
                handler.authorized(200, {"data": {"id": "org-" + parts[0], "type": "entitlement-sets", "attributes": {
                    "operations": True, "private-module-registry": True, "sentinel": False, "state-storage": True,
                    "teams": False, "vcs-integrations": False}}}, self.api_headers())
            elif len(parts) == 3 and parts[1] == "workspaces":
                handler.authorized(200, self.workspace(parts[0], parts[2]), self.api_headers())
            else:
                return False
        elif path.startswith("/api/v2/workspaces/ws-"):
            parts = path[len("/api/v2/workspaces/ws-"):].split("/")
            if len(parts) == 1:
                handler.authorized(200, self.workspace("org", parts[0]), self.api_headers())
            else:
                handler.authorized(404, {"errors": [{"status": "404", "title": "not found"}]}, self.api_headers())
        elif path == "/app/oauth/authorize":
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(handler.path).query)
            code = base64.urlsafe_b64encode(os.urandom(18)).decode()
            redirect = query.get("redirect_uri", [""])[0]
            with self.lock:
                self.codes[code] = (query.get("code_challenge", [""])[0], redirect)
            location = redirect + "?" + urllib.parse.urlencode({"code": code, "state": query.get("state", [""])[0]})
            handler.reply(302, b"", "text/plain", {"Location": location})
        else:
            return False
        return True

    def post(self, handler, path, body):
        """Answers a POST for one of our paths (True), or leaves it (False)."""
        if path == self.TOKENS:
            return self.create_token(handler, body)
        if path != "/oauth/token":
            return False
        form = urllib.parse.parse_qs(body.decode("ascii", "replace"))
        if self.lifetime and form.get("grant_type", [""])[0] == "refresh_token":
            with self.lock:
                known = form.get("refresh_token", [""])[0] in self.refresh_tokens
                self.refresh_tokens.discard(form.get("refresh_token", [""])[0])
            if known and form.get("client_id", [""])[0] == "terraform-cli":
                handler.reply_json(200, self.issue())
            else:
                handler.reply_json(400, {"error": "invalid_grant", "error_description": "unknown refresh token"})
            return True
        code, verifier = form.get("code", [""])[0], form.get("code_verifier", [""])[0]
        with self.lock:
            challenge, redirect = self.codes.pop(code, (None, None))
        expected = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        if challenge is None or challenge != expected or form.get("redirect_uri", [""])[0] != redirect \
                or form.get("grant_type", [""])[0] != "authorization_code":
            handler.reply_json(400, {"error": "invalid_grant"})
        elif self.lifetime:
            handler.reply_json(200, self.issue())
        else:
            handler.reply_json(200, {"access_token": handler.token, "token_type": "bearer"})
        return True

    def create_token(self, handler, body):
        """POST authentication-tokens: a JSON:API document of type authentication-tokens."""
        if not handler.bearer_ok():
            handler.authorized(401, None)
            return True
        try:
            attributes = json.loads(body)["data"]["attributes"]
            expired_at = attributes.get("expired-at")
        except (ValueError, KeyError, TypeError):
            handler.reply_json(422, {"errors": [{"status": "422", "title": "invalid document"}]})
            return True
        token = "hk-e2e-rotated-" + os.urandom(16).hex()
        with self.lock:
            self.last_id += 1
            token_id = "at-%d" % self.last_id
            self.created[token_id] = token
            handler.live_tokens.add(token)
        handler.reply_json(201, {"data": {"id": token_id, "type": "authentication-tokens", "attributes": {
            "token": token, "description": attributes.get("description"), "expired-at": expired_at,
            "created-at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())}}}, self.api_headers())
        return True

    def delete(self, handler, path):
        """DELETE authentication-tokens/ID: the token is refused from then on."""
        prefix = "/api/v2/authentication-tokens/"
        if not path.startswith(prefix):
            return False
        if not handler.bearer_ok():
            handler.authorized(401, None)
            return True
        with self.lock:
            token = self.created.pop(path[len(prefix):], None)
            if token is not None:
                handler.live_tokens.discard(token)
        if token is None:
            handler.reply_json(404, {"errors": [{"status": "404", "title": "not found"}]})
        else:
            handler.reply(204, b"", "application/json", self.api_headers())
        return True

    def workspace(self, org, name):
        return {"data": {"id": "ws-" + name, "type": "workspaces", "attributes": {
            "name": name, "execution-mode": "local", "operations": False, "terraform-version": "latest",
            "locked": False, "auto-apply": False, "setting-overwrites": {"execution-mode": True},
            "actions": {"is-destroyable": True},
            "permissions": {"can-update": True, "can-queue-run": True, "can-read-state-versions": True,
                            "can-create-state-versions": True, "can-lock": True, "can-unlock": True,
                            "can-force-unlock": True, "can-read-settings": True, "can-update-variable": True}},
            "relationships": {"organization": {"data": {"id": org, "type": "organizations"}}}}}


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
    parser.add_argument("--port", type=int, default=0,
                        help="listen on this port (default: 0, an ephemeral one): to restart a server where it was")
    parser.add_argument("--cert", required=True, help="server certificate (PEM)")
    parser.add_argument("--key", required=True, help="server private key (PEM)")
    parser.add_argument("--token", required=True, help="the bearer token to require")
    parser.add_argument("--log", required=True, help="JSON-lines request log to append to")
    parser.add_argument("--versions", default="1.0.0",
                        help="the module's versions, comma-separated (default: 1.0.0)")
    parser.add_argument("--provider-versions", default="",
                        help="the mirror's versions of acme/thing, comma-separated (default: none: no mirror)")
    parser.add_argument("--modules", default=HELLO,
                        help="the registry's modules NS/NAME/SYSTEM, comma-separated (default: %s)" % HELLO)
    parser.add_argument("--providers", default="",
                        help="the provider registry's providers NS/TYPE, comma-separated "
                             "(default: none: no providers.v1)")
    parser.add_argument("--registry-provider-versions", default="1.0.0",
                        help="the provider registry's versions of each provider, comma-separated (default: 1.0.0)")
    parser.add_argument("--gpg-home", default=None,
                        help="GnuPG home holding (or to hold) the key that signs SHA256SUMS "
                             "(default: a temporary one beside --log)")
    parser.add_argument("--protect-downloads", action="store_true",
                        help="downloads (archives, zips, SHA256SUMS, .sig) want the token too")
    parser.add_argument("--public", action="store_true",
                        help="no endpoint wants the token: a public registry")
    parser.add_argument("--other-origin", default=None,
                        help="another server's base URL for some downloads (see the docstring)")
    parser.add_argument("--delay-ms", type=int, default=0, help="milliseconds added to every request")
    parser.add_argument("--download-pieces", type=int, default=1, help="writes per download body")
    parser.add_argument("--piece-delay-ms", type=int, default=0, help="milliseconds between them")
    parser.add_argument("--hold-while", default=None, help="hold each download's last piece while FILE exists")
    parser.add_argument("--lie-while", default=None, help="serve downloads not matching their hashes while FILE exists")
    parser.add_argument("--chunked-while", default=None, help="send downloads chunked while FILE exists")
    parser.add_argument("--tfe", action="store_true",
                        help="be TFE-like too: tfe.v2*, login.v1 and enough of /api/v2/ (see Tfe)")
    parser.add_argument("--tfe-user", default="hk-e2e-user", help="the user name account/details gives")
    parser.add_argument("--login-lifetime", type=int, default=0,
                        help="with --tfe: /oauth/token issues tokens living this many seconds, with "
                             "refresh tokens, and only those are accepted (see Tfe)")
    args = parser.parse_args()
    module_versions = version_list(args.versions)
    modules = version_list(args.modules)
    providers = version_list(args.providers)
    registry_provider_versions = version_list(args.registry_provider_versions)
    for name in modules + providers:
        if name.count("/") != (2 if name in modules else 1) or "" in name.split("/"):
            parser.error("bad module or provider name %r" % name)
    provider_versions = version_list(args.provider_versions)
    for version in module_versions + provider_versions + registry_provider_versions:
        if "/" in version:
            parser.error("bad version %r" % version)

    # Block the stop signals before any thread starts (threads inherit the
    # mask): they can then only end up in the sigwait() below.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)

    Registry.token = args.token
    Registry.live_tokens = {args.token}
    Registry.module_versions = module_versions
    Registry.modules = modules
    for module in modules:
        for version in module_versions:
            Registry.archives[module_location(module, version)[1]] = make_archive(module_main_tf(module, version))
    Registry.delay = args.delay_ms / 1000.0
    Registry.protect_downloads = args.protect_downloads
    Registry.public = args.public
    Registry.other_origin = args.other_origin
    Registry.pieces = args.download_pieces
    Registry.piece_delay = args.piece_delay_ms / 1000.0
    Registry.hold_while = args.hold_while
    Registry.lie_while = args.lie_while
    Registry.chunked_while = args.chunked_while
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

    server = Server(("127.0.0.1", args.port), Registry)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
    base_url = "https://127.0.0.1:%d" % server.server_address[1]

    discovery = {"modules.v1": MODULES}
    if providers:
        discovery["providers.v1"] = PROVIDERS
        gpg_home = args.gpg_home or tempfile.mkdtemp(prefix="gnupg-", dir=os.path.dirname(os.path.abspath(args.log)))
        kid, armor, sign, stop_agent = gpg_signer(gpg_home)
        try:
            Registry.registry_documents, Registry.registry_files = build_provider_registry(
                providers, registry_provider_versions, base_url, (kid, armor, sign))
            if args.other_origin:
                for document in Registry.registry_documents.values():
                    if "shasums_signature_url" in document:
                        document["shasums_signature_url"] = document["shasums_signature_url"].replace(
                            base_url + "/", base_url + REDIRECT, 1)
        finally:
            stop_agent()
    if args.tfe:
        Registry.tfe = Tfe(base_url, args.tfe_user, args.login_lifetime)
        discovery.update(Registry.tfe.services())
    Registry.discovery = discovery

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
