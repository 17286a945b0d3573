#!/usr/bin/env python3
"""Copies the registry answers one configuration needs into static files
and an nginx server's exact-match locations (stdlib only), for
tests/bench/registry_cache.sh's "static" variant: Terraform against the very
answers the registry cache gives, served by nginx from files, shows what
Terraform's own registry protocol costs without the cache's work.

  static_registry.py --tfrc FILE --host HOST --token TOKEN \\
      --public http://127.0.0.1:PORT --rc RC \\
      --modules NS/NAME/SYSTEM@VERSION,... --providers NS/TYPE@VERSION,... \\
      --platform linux_amd64 --out DIR

It reads HOST's modules.v1 and providers.v1 URLs from the tfrc file the
daemon wrote (their scheme and address are ORIGIN, the registry port),
asks each document a `terraform init` asks (a module's versions, its
download location and archive; a provider's versions, its package
document, SHA256SUMS, signature and archive) with the token, and
writes DIR/files/N (each body, ORIGIN replaced by PUBLIC in the documents
and in X-Terraform-Get), DIR/locations.conf (one `location =` per URL
path, for an nginx server block that includes it) and RC (the tfrc file
with ORIGIN replaced by PUBLIC: Terraform's CLI configuration for the
copy). Exit status 0 when every answer was 200 (204 for a module's
download), 1 otherwise.
"""

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Leaves a redirect as the answer: the copy keeps what the port said."""

    def redirect_request(self, *_):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


class Copier:
    def __init__(self, args):
        self.args = args
        self.files = os.path.join(args.out, "files")
        os.makedirs(self.files, exist_ok=True)
        self.locations = []
        self.count = 0

    def fetch(self, url):
        """(status, headers, body) of a GET of URL with the token; no redirects."""
        request = urllib.request.Request(url, headers={"Authorization": "Bearer " + self.args.token})
        try:
            with OPENER.open(request, timeout=30) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def public(self, text):
        return text.replace(self.args.origin, self.args.public)

    def path_of(self, url):
        parsed = urllib.parse.urlsplit(url)
        if f"{parsed.scheme}://{parsed.netloc}" != self.args.origin:
            sys.exit(f"static_registry: {url} is not under {self.args.origin}")
        return parsed.path

    def keep(self, url, media_type, document):
        """Stores URL's answer (200) as a file and its location."""
        status, _, body = self.fetch(url)
        if status != 200:
            sys.exit(f"static_registry: {url} answered {status}")
        if document:
            body = self.public(body.decode()).encode()
        self.count += 1
        name = os.path.join(self.files, str(self.count))
        with open(name, "wb") as f:
            f.write(body)
        self.locations.append(
            f"location = {self.path_of(url)} {{ default_type {media_type}; alias {name}; }}")
        return body

    def module(self, base, spec):
        address, version = spec.split("@")
        self.keep(urllib.parse.urljoin(base, f"{address}/versions"), "application/json", True)
        download = urllib.parse.urljoin(base, f"{address}/{version}/download")
        status, headers, _ = self.fetch(download)
        location = headers.get("X-Terraform-Get") if headers else None
        if status != 204 or not location:
            sys.exit(f"static_registry: {download} answered {status} without X-Terraform-Get")
        archive = urllib.parse.urljoin(download, location)
        self.locations.append(
            f'location = {self.path_of(download)} {{ add_header X-Terraform-Get "{self.public(location)}"; return 204; }}')
        self.keep(archive, "application/octet-stream", False)

    def provider(self, base, spec):
        address, version = spec.split("@")
        system, arch = self.args.platform.split("_", 1)
        self.keep(urllib.parse.urljoin(base, f"{address}/versions"), "application/json", True)
        package_url = urllib.parse.urljoin(base, f"{address}/{version}/download/{system}/{arch}")
        package = json.loads(self.keep(package_url, "application/json", True))
        for key in ("shasums_url", "shasums_signature_url", "download_url"):
            # The stored document names PUBLIC; fetch from ORIGIN.
            url = urllib.parse.urljoin(package_url, package[key].replace(self.args.public, self.args.origin))
            self.keep(url, "application/octet-stream", False)


def service_url(tfrc, host, service):
    """HOST's SERVICE URL from a tfrc file hostkeeperd wrote."""
    block = re.search(r'host\s+"' + re.escape(host) + r'"\s*\{(.*?)\n\}', tfrc, re.S)
    if not block:
        sys.exit(f"static_registry: no host block for {host}")
    found = re.search(r'"' + re.escape(service) + r'"\s*=\s*"([^"]+)"', block.group(1))
    if not found:
        sys.exit(f"static_registry: no {service} for {host}")
    return found.group(1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("--tfrc", "--host", "--token", "--public", "--rc", "--modules", "--providers",
                 "--platform", "--out"):
        p.add_argument(name, required=True)
    args = p.parse_args()
    with open(args.tfrc) as f:
        tfrc = f.read()
    modules_base = service_url(tfrc, args.host, "modules.v1")
    providers_base = service_url(tfrc, args.host, "providers.v1")
    parsed = urllib.parse.urlsplit(modules_base)
    args.origin = f"{parsed.scheme}://{parsed.netloc}"
    copier = Copier(args)
    for spec in filter(None, args.modules.split(",")):
        copier.module(modules_base, spec)
    for spec in filter(None, args.providers.split(",")):
        copier.provider(providers_base, spec)
    with open(os.path.join(args.out, "locations.conf"), "w") as f:
        f.write("\n".join(copier.locations) + "\n")
    with open(args.rc, "w") as f:
        f.write(copier.public(tfrc))


if __name__ == "__main__":
    main()
