"""The registry part of https_registry.py: the request handler serving
modules, the provider registry and the provider mirror (see that file's
docstring for the paths), with --tfe handing the rest to its services
(tfe_server.Tfe, login_server.Login).
"""

import os
import time
import urllib.parse

from https_serving import JsonHandler
from registry_packages import HELLO, MODULES, PROVIDER, module_location

MIRROR = "/mirror/"
REDIRECT = "/redirect/"  # --other-origin: 302 to the same path there


class Registry(JsonHandler):
    # Set by main(): the token we require, the module's versions, {server
    # path: module tarball}, the provider's versions, {version: VERSION.json
    # document} and {zip file name: zip bytes}; the other modules served, the
    # provider registry's documents and files, the per-request delay and the
    # TFE-like services (see main()).
    token = None
    live_tokens = set()      # --token, and the tokens Tfe created and has not destroyed
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
    services = []            # with --tfe: a Tfe and a Login, asked in turn for paths not ours
    login = None             # with --tfe: the Login among them
    protect_downloads = False
    public = False           # --public: no endpoint wants the token
    other_origin = None      # --other-origin
    pieces = 1               # --download-pieces
    piece_delay = 0.0        # --piece-delay-ms, in seconds
    hold_while = None        # --hold-while FILE
    lie_while = None         # --lie-while FILE
    chunked_while = None     # --chunked-while FILE

    def do_GET(self):
        if self.delay:
            time.sleep(self.delay)
        path = urllib.parse.urlsplit(self.path).path
        # go-getter appends "?terraform-get=1" to some URLs: route on the path.
        module, rest = self.module_request(path)
        if path == "/.well-known/terraform.json":
            if self.login is not None:
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
        elif any(service.get(self, path) for service in self.services):
            pass
        else:
            self.reply_json(404, {"errors": ["not found"]})

    def do_POST(self):
        if self.delay:
            time.sleep(self.delay)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        path = urllib.parse.urlsplit(self.path).path
        if not any(service.post(self, path, body) for service in self.services):
            self.reply_json(404, {"errors": ["not found"]})

    def do_DELETE(self):
        if self.delay:
            time.sleep(self.delay)
        path = urllib.parse.urlsplit(self.path).path
        if not any(service.delete(self, path) for service in self.services):
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
        if self.login is not None and self.login.lifetime:
            given = self.headers.get("Authorization", "")
            good = given.startswith("Bearer ") and self.login.unexpired(given[len("Bearer "):])
        else:
            good = self.bearer_ok()
        if not self.public and not good:
            self.reply_json(401, {"errors": ["unauthorized"]}, {"WWW-Authenticate": "Bearer"})
        else:
            self.reply_json(status, body, headers)
