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
platforms linux_amd64 and darwin_arm64 (--large-provider NS/TYPE=MB makes
that provider's linux_amd64 package MB MiB larger, for benchmarks):

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
"self-signed". The zips are registry_packages.make_provider_zip()'s, named
for TYPE.

--protect-downloads makes the downloads on this origin (module archives,
provider zips, SHA256SUMS and .sig) want the token too, as a registry that
protects its downloads does. --other-origin URL (another server's base URL,
https://127.0.0.1:PORT) puts downloads there: a module other than
acme/hello/null gets X-Terraform-Get URL/archives/NS-NAME-SYSTEM-VERSION.tar.gz,
and each package document's shasums_signature_url is /redirect/... on this
origin, which answers 302 to the same file under URL (that server must serve
the same providers, signed with the same --gpg-home key).

--delay-ms N sleeps N ms before answering each request (benchmarks).
--public-port-file FILE names the port clients reach it on (a proxy in front
of it, latency_proxy.py): its absolute URLs then name that port.

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
state.v2, motd.v1 and login.v1, and it answers the API paths listed in
tfe_server.py (ping, account details, organizations, workspaces, and the
authentication-token API that `hostkeeper rotate` uses: a token it creates
is accepted wherever --token is, until it is destroyed) and login_server.py
(the OAuth authorization-code flow with PKCE that `terraform login` uses).

The parts live beside this file: https_serving.py (TLS, the JSON log,
serving until a stop signal), registry_server.py (the request handler),
registry_packages.py (the archives, zips and signatures it serves),
tfe_server.py and login_server.py (--tfe).

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
import os
import sys
import tempfile

from https_serving import block_stop_signals, serve, tls_server
from login_server import Login
from registry_packages import (HELLO, MODULES, PLATFORMS, PROVIDERS, build_provider_registry, gpg_signer,
                               make_archive, make_provider_zip, module_location, module_main_tf)
from registry_server import REDIRECT, Registry
from tfe_server import Tfe


def version_list(text):
    """"1.0.0,1.1.0" -> ["1.0.0", "1.1.0"] ("" -> [])."""
    return [v.strip() for v in text.split(",") if v.strip()]


def parse_args():
    """The command line, checked, its comma-separated lists split (version_list())."""
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
    parser.add_argument("--large-provider", default=None, metavar="NS/TYPE=MB",
                        help="one of --providers whose linux_amd64 package also holds MB MiB of data")
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
    parser.add_argument("--public-port-file",
                        help="the port clients reach this server on (a proxy's), for its absolute URLs")
    parser.add_argument("--download-pieces", type=int, default=1, help="writes per download body")
    parser.add_argument("--piece-delay-ms", type=int, default=0, help="milliseconds between them")
    parser.add_argument("--hold-while", default=None, help="hold each download's last piece while FILE exists")
    parser.add_argument("--lie-while", default=None, help="serve downloads not matching their hashes while FILE exists")
    parser.add_argument("--chunked-while", default=None, help="send downloads chunked while FILE exists")
    parser.add_argument("--tfe", action="store_true",
                        help="be TFE-like too: tfe.v2*, login.v1 and enough of /api/v2/ (see tfe_server.py)")
    parser.add_argument("--tfe-user", default="hk-e2e-user", help="the user name account/details gives")
    parser.add_argument("--login-lifetime", type=int, default=0,
                        help="with --tfe: /oauth/token issues tokens living this many seconds, with "
                             "refresh tokens, and only those are accepted (see login_server.py)")
    args = parser.parse_args()
    for option in ("versions", "modules", "providers", "registry_provider_versions", "provider_versions"):
        setattr(args, option, version_list(getattr(args, option)))
    for name in args.modules + args.providers:
        if name.count("/") != (2 if name in args.modules else 1) or "" in name.split("/"):
            parser.error("bad module or provider name %r" % name)
    for version in args.versions + args.provider_versions + args.registry_provider_versions:
        if "/" in version:
            parser.error("bad version %r" % version)
    args.padding = {}
    if args.large_provider:
        name, _, size = args.large_provider.partition("=")
        if name not in args.providers or not size.isdigit():
            parser.error("--large-provider wants NS/TYPE=MB, NS/TYPE one of --providers")
        args.padding[name] = int(size) * 1024 * 1024
    return args


def set_up_registry(args):
    """Registry's token, modules, mirror and downloads, as args say."""
    Registry.token = args.token
    Registry.live_tokens = {args.token}
    Registry.module_versions = args.versions
    Registry.modules = args.modules
    for module in args.modules:
        for version in args.versions:
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
    Registry.provider_versions = args.provider_versions
    for version in args.provider_versions:
        archives = {}
        for platform in PLATFORMS:
            filename, data, hashes = make_provider_zip(version, platform)
            # Served beside VERSION.json (under every HOSTNAME): the URL is relative to it.
            Registry.provider_zips[filename] = data
            archives[platform] = {"url": filename, "hashes": hashes}
        Registry.provider_documents[version] = {"archives": archives}
    Registry.log_file = open(args.log, "a", encoding="utf-8")


def set_up_discovery(args, base_url):
    """Registry's discovery document, provider registry and --tfe services;
    base_url is the server's own, https://127.0.0.1:PORT."""
    discovery = {"modules.v1": MODULES}
    if args.providers:
        discovery["providers.v1"] = PROVIDERS
        gpg_home = args.gpg_home or tempfile.mkdtemp(prefix="gnupg-", dir=os.path.dirname(os.path.abspath(args.log)))
        kid, armor, sign, stop_agent = gpg_signer(gpg_home)
        try:
            Registry.registry_documents, Registry.registry_files = build_provider_registry(
                args.providers, args.registry_provider_versions, base_url, (kid, armor, sign), args.padding)
            if args.other_origin:
                for document in Registry.registry_documents.values():
                    if "shasums_signature_url" in document:
                        document["shasums_signature_url"] = document["shasums_signature_url"].replace(
                            base_url + "/", base_url + REDIRECT, 1)
        finally:
            stop_agent()
    if args.tfe:
        Registry.login = Login(base_url, args.login_lifetime)
        Registry.services = [Tfe(args.tfe_user), Registry.login]
        for service in Registry.services:
            discovery.update(service.services())
    Registry.discovery = discovery


def main():
    args = parse_args()
    # Before any thread starts: the stop signals wait for serve().
    block_stop_signals()
    set_up_registry(args)
    server = tls_server(args.port, Registry, args.cert, args.key)
    port = server.server_address[1]
    if args.public_port_file:
        with open(args.public_port_file, encoding="ascii") as f:
            port = int(f.read().strip())
    set_up_discovery(args, "https://127.0.0.1:%d" % port)
    serve(server, args.port_file)
    Registry.log_file.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
