"""The content https_registry.py serves (stdlib and gpg only): module
packages, provider packages with their hashes, and the provider registry's
documents and files signed with a throw-away GnuPG key.
"""

import base64
import hashlib
import io
import os
import subprocess
import tarfile
import zipfile

MODULES = "/v1/modules/"
HELLO = "acme/hello/null"
MODULE = MODULES + HELLO
# go-getter picks the unpacker from the URL path's suffix, not the Content-Type:
# without ".tar.gz" it would GET "?terraform-get=1" and parse the body as HTML.
ARCHIVE = "/archives/hello-1.0.0.tar.gz"
MAIN_TF = b'output "greeting" {\n  value = "hello from the keyring"\n}\n'

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


def make_provider_zip(version, platform, kind="thing", padding=0):
    """(zip file name, zip bytes, hashes) of provider kind's package for
    platform; with padding, the zip also holds that many bytes of data
    (stored, not compressed: the same every run), as a large provider's does."""
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
        files = {executable: script}
        if padding:
            name = "terraform-provider-%s-data.bin" % kind
            files[name] = hashlib.shake_256(name.encode()).digest(padding)
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.create_system = 3
            info.external_attr = (0o100644 << 16)
            z.writestr(info, files[name], zipfile.ZIP_STORED)
    data = buf.getvalue()
    hashes = [dirhash_h1(files), "zh:" + hashlib.sha256(data).hexdigest()]
    return "terraform-provider-%s_%s_%s.zip" % (kind, version, platform), data, hashes



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


def build_provider_registry(providers, versions, base_url, signer, padding=None):
    """({path: JSON document}, {path: (bytes, content type)}) of the provider registry.

    For each "NS/TYPE" in providers and each version: the versions document,
    the download document of every platform, and the open files under
    /provider-files/NS/TYPE/VERSION/: each platform's zip, the SHA256SUMS
    file and its detached signature (signer: gpg_signer()'s first three).
    padding: {"NS/TYPE": bytes} of extra data in that provider's linux_amd64 zips.
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
            zips = {p: make_provider_zip(version, p, kind, (padding or {}).get(name, 0) if p == "linux_amd64" else 0)
                    for p in PLATFORMS}
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
