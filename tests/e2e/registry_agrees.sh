#!/usr/bin/env bash
# registry_agrees.sh BIN_DIR
#
# End to end: `terraform init` and hostkeeper, asking the same loopback
# registry and provider network mirror, agree. Terraform installs a module
# (version constraint "~> 1.1" over several versions, a prerelease among them)
# and a provider through the mirror (">= 1.0, < 2.0"); then
#   - `hostkeeper module versions` puts first the version terraform installed,
#     and `hostkeeper module download` gives the URL terraform fetched it from
#     (the registry's X-Terraform-Get is "../"-relative: both must resolve it);
#   - `hostkeeper provider versions --mirror` puts first the version terraform
#     locked, `hostkeeper provider package --mirror` gives the archive URL
#     terraform downloaded, and its hashes cover the lock file's;
#   - hostkeeper's mirror requests carried the token the keyring holds for the
#     mirror's host:port, and no archive request carried any Authorization.
# A second init asks for a prerelease by its exact version, whose location is
# "./"-relative: the same module checks must hold for it.
#
# Run it inside support/keyring-env.sh:
#   tests/support/keyring-env.sh tests/e2e/registry_agrees.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no terraform,
# or terraform not on linux_amd64, the mirror's platform).
set -euo pipefail

e2e_name=e2e-registry-agrees  # read by lib.sh
# lib.sh passes these on to https_registry.py.
module_versions=1.0.0,1.1.0,1.2.0,1.3.0-beta.1,2.0.0
provider_versions=1.0.0,1.4.0,1.5.0-rc.1,2.0.0
registry_args=(--versions "$module_versions" --provider-versions "$provider_versions")
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hk=$bin/hostkeeper
module=$host/acme/hello/null
module_constraint="~> 1.1"
provider=registry.example.com/acme/thing
provider_constraint=">= 1.0, < 2.0"
mirror=https://$host/mirror/
mirror_dir=/mirror/$provider  # the mirror's paths for $provider
platform=linux_amd64

# The mirror carries linux_amd64 (and darwin_arm64): terraform must want one.
tf_platform=$("$terraform" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["platform"])')
if [[ $tf_platform != "$platform" ]]; then
    echo "SKIP: terraform runs on $tf_platform; the test mirror serves $platform"
    exit 77
fi

# json FILE EXPRESSION: prints the Python EXPRESSION over the JSON document in
# FILE (bound to d); a list is printed one item a line.
json() {
    python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
value = eval(sys.argv[2], {"d": d})
for item in value if isinstance(value, list) else [value]:
    print(item)
PY
}

# hk_run OUTFILE ARGS...: runs hostkeeper ARGS with stdout in OUTFILE; fails
# (showing its output) unless it exits 0.
hk_run() {
    local out=$1 rc=0
    shift
    "$hk" "$@" >"$out" 2>"$out.stderr" || rc=$?
    if [[ $rc -ne 0 ]]; then
        show "$out"
        show "$out.stderr"
        fail "hostkeeper $* exited with $rc"
    fi
}

# fetched LOG SUFFIX: the URLs (https://$host + path, "?query" if any) that the
# requests in LOG for paths ending in SUFFIX asked for, once each.
fetched() {
    python3 - "$1" "$2" "https://$host" <<'PY'
import json, sys
urls = []
for line in open(sys.argv[1], encoding="utf-8"):
    entry = json.loads(line)
    if entry["path"].endswith(sys.argv[2]):
        url = sys.argv[3] + entry["path"] + ("?" + entry["query"] if entry["query"] else "")
        if url not in urls:
            urls.append(url)
print("\n".join(urls))
PY
}

# module_agrees WORKDIR CONSTRAINT TF_LOG TAG: the module version terraform
# installed in WORKDIR (modules.json, and the installed main.tf says so) and the
# archive URL it fetched (TF_LOG: terraform's requests) are what `hostkeeper
# module versions --constraint CONSTRAINT` puts first and `hostkeeper module
# download` resolves. Sets hk_module_version and tf_module_url (the URL);
# TAG names its output files.
module_agrees() {
    local work=$1 constraint=$2 tflog=$3 tag=$4 modules_json tf_version tf_url hk_url
    modules_json=$work/.terraform/modules/modules.json
    tf_version=$(json "$modules_json" '[m["Version"] for m in d["Modules"] if m["Key"] == "hello"]')
    [[ -n $tf_version ]] || { show "$modules_json"; fail "no module \"hello\" in $modules_json"; }
    grep -qsF "version $tf_version\"" "$work/.terraform/modules/hello/main.tf" ||
        { show "$work/.terraform/modules/hello/main.tf"; fail "the installed main.tf is not version $tf_version's"; }
    tf_url=$(fetched "$tflog" .tar.gz)
    [[ -n $tf_url && $tf_url != *$'\n'* ]] ||
        { show "$tflog"; fail "terraform did not fetch exactly one module archive: ${tf_url:-none}"; }
    echo "terraform (\"$constraint\"): module $tf_version, archive $tf_url"

    hk_run "$root/module-versions$tag.json" module versions "$module" --constraint "$constraint" --json
    hk_module_version=$(json "$root/module-versions$tag.json" 'd["versions"][0]["version"] if d["versions"] else ""')
    if [[ $hk_module_version != "$tf_version" ]]; then
        show "$root/module-versions$tag.json"
        fail "module version: terraform installed '$tf_version', hostkeeper module versions --constraint '$constraint' puts first '$hk_module_version'"
    fi
    pass "module version: terraform installed $tf_version, the newest hostkeeper lists for \"$constraint\" ($(json "$root/module-versions$tag.json" '[v["version"] for v in d["versions"]]' | paste -sd' '))"

    hk_run "$root/module-download$tag.json" module download "$module" "$hk_module_version" --json
    hk_url=$(json "$root/module-download$tag.json" 'd["location"]')
    if [[ $hk_url != "$tf_url" ]]; then
        show "$root/module-download$tag.json"
        fail "module location: terraform fetched '$tf_url', hostkeeper module download $hk_module_version says '$hk_url'"
    fi
    pass "module location: hostkeeper module download $hk_module_version gives $hk_url, the URL terraform fetched"
    tf_module_url=$tf_url
}

# --- The token goes into the keyring, for the registry's and mirror's host:port --
printf '{"token":"%s"}' "$TOKEN" | "$helper" store "$host" ||
    fail "terraform-credentials-hostkeeper store $host exited with $?"
[[ $("$helper" get "$host") == "{\"token\":\"$TOKEN\"}" ]] ||
    fail "terraform-credentials-hostkeeper get $host does not give back the stored token"
pass "the helper stored the token for $host"

# --- Terraform's configuration ------------------------------------------------------
mkdir -p "$HOME/.terraform.d/plugins"
ln -sf "$helper" "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper"
export TF_CLI_CONFIG_FILE=$root/terraform.rc
cat >"$TF_CLI_CONFIG_FILE" <<RC
credentials_helper "hostkeeper" {
  args = ["--timeout=20"]
}

provider_installation {
  network_mirror {
    url = "$mirror"
  }
}
RC

work=$root/work
mkdir -p "$work"
cat >"$work/main.tf" <<TF
terraform {
  required_providers {
    thing = {
      source  = "$provider"
      version = "$provider_constraint"
    }
  }
}

module "hello" {
  source  = "$module"
  version = "$module_constraint"
}

output "greeting" {
  value = module.hello.greeting
}
TF

# --- terraform init ------------------------------------------------------------------
if ! init "$work" "$root/init.out"; then
    show "$root/init.out"
    show "$log"
    fail "terraform init failed"
fi
pass "terraform init installed module $module ($module_constraint) and provider $provider ($provider_constraint) through the mirror"
# The packaged "provider" is a shell script that exits 1: init succeeded, so
# it installed the provider without running it.

# Terraform's requests are the log so far; hostkeeper's are what follows.
lines=$(wc -l <"$log")
head -n "$lines" "$log" >"$root/terraform-requests.jsonl"
tf_log=$root/terraform-requests.jsonl
hk_log=$root/hostkeeper-requests.jsonl

# --- What terraform chose and fetched ------------------------------------------------
lock=$work/.terraform.lock.hcl
# The lock file's block for $provider: its version and its hashes, one a line.
python3 - "$lock" "$provider" >"$root/lock.txt" <<'PY' || { show "$lock"; fail "no block for $provider in .terraform.lock.hcl"; }
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
block = re.search(r'provider "%s" \{(.*?)\n\}' % re.escape(sys.argv[2]), text, re.S)
if not block:
    sys.exit(1)
print(re.search(r'version\s*=\s*"([^"]+)"', block.group(1)).group(1))
hashes = re.search(r'hashes\s*=\s*\[(.*?)\]', block.group(1), re.S)
for value in re.findall(r'"([^"]+)"', hashes.group(1) if hashes else ""):
    print(value)
PY
tf_provider_version=$(head -n1 "$root/lock.txt")
tail -n +2 "$root/lock.txt" >"$root/lock-hashes.txt"
tf_provider_url=$(fetched "$tf_log" .zip)
[[ -n $tf_provider_url && $tf_provider_url != *$'\n'* ]] ||
    { show "$tf_log"; fail "terraform did not fetch exactly one provider archive: ${tf_provider_url:-none}"; }
echo "terraform: provider $tf_provider_version, archive $tf_provider_url, lock hashes $(paste -sd' ' "$root/lock-hashes.txt")"

# --- hostkeeper on the module -----------------------------------------------------------
module_agrees "$work" "$module_constraint" "$tf_log" ""

# --- hostkeeper on the provider, through the mirror ----------------------------------
hk_run "$root/provider-versions.json" provider versions "$provider" --constraint "$provider_constraint" \
    --mirror "$mirror" --json
hk_provider_version=$(json "$root/provider-versions.json" 'd["versions"][0]["version"] if d["versions"] else ""')
if [[ $hk_provider_version != "$tf_provider_version" ]]; then
    show "$root/provider-versions.json"
    show "$lock"
    fail "provider version: terraform locked '$tf_provider_version', hostkeeper provider versions --constraint '$provider_constraint' puts first '$hk_provider_version'"
fi
pass "provider version: terraform locked $tf_provider_version, the newest hostkeeper lists for \"$provider_constraint\" ($(json "$root/provider-versions.json" '[v["version"] for v in d["versions"]]' | paste -sd' '))"

hk_run "$root/provider-package.json" provider package "$provider" "$hk_provider_version" \
    --platform "$platform" --mirror "$mirror" --json
hk_provider_url=$(json "$root/provider-package.json" 'd["download_url"]')
if [[ $hk_provider_url != "$tf_provider_url" ]]; then
    show "$root/provider-package.json"
    fail "provider archive: terraform downloaded '$tf_provider_url', hostkeeper provider package says '$hk_provider_url'"
fi
[[ $hk_provider_url == */"$(json "$root/provider-package.json" 'd["filename"]')" ]] ||
    { show "$root/provider-package.json"; fail "provider package: filename is not download_url's last segment"; }
pass "provider archive: hostkeeper provider package gives $hk_provider_url, the URL terraform downloaded"
# hostkeeper's requests end here: the test's own fetch of the mirror's document follows.
tail -n "+$((lines + 1))" "$log" >"$hk_log"

# Hashes. What the mirror published for $platform, fetched here with the token,
# is the reference. Terraform's lock file does not hold all of it: from a
# mirror (unsigned packages) terraform records only the h1: hash it computed
# itself over the package it installed (for this platform), and the mirror's
# other hashes (zh:, other platforms) only for packages signed by a trusted
# key. So: every lock-file hash that the mirror published must be among
# hostkeeper's, there must be at least one such (terraform checked the package
# against the mirror's hashes, so its h1: is the mirror's), and hostkeeper must
# pass on exactly the mirror's hashes. A lock-file hash the mirror did not
# publish (none expected) is reported, not failed on: hostkeeper cannot know it.
python3 - "$mirror${provider}/$hk_provider_version.json" "$TOKEN" "$platform" "$SSL_CERT_FILE" \
    >"$root/mirror-hashes.txt" <<'PY' || fail "could not fetch the mirror's $hk_provider_version.json"
import json, ssl, sys, urllib.request
request = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=sys.argv[4])) as reply:
    print("\n".join(json.load(reply)["archives"][sys.argv[3]]["hashes"]))
PY
json "$root/provider-package.json" 'd["hashes"]' >"$root/hostkeeper-hashes.txt"
if [[ $(sort "$root/hostkeeper-hashes.txt") != $(sort "$root/mirror-hashes.txt") ]]; then
    show "$root/mirror-hashes.txt"
    show "$root/provider-package.json"
    fail "hostkeeper's hashes for $platform are not the mirror's"
fi
pass "hostkeeper provider package gives the mirror's hashes: $(paste -sd' ' "$root/hostkeeper-hashes.txt")"
common=0
while read -r hash; do
    if ! grep -qxF -- "$hash" "$root/mirror-hashes.txt"; then
        echo "note: the lock file's $hash is not one the mirror published for $platform"
        continue
    fi
    grep -qxF -- "$hash" "$root/hostkeeper-hashes.txt" || {
        show "$lock"
        show "$root/provider-package.json"
        fail "the lock file's $hash (published by the mirror) is not among hostkeeper's hashes"
    }
    common=$((common + 1))
done <"$root/lock-hashes.txt"
[[ $common -ge 1 ]] || { show "$lock"; show "$root/mirror-hashes.txt"; fail "no lock-file hash is one the mirror published for $platform"; }
pass "hostkeeper's hashes include the lock file's $common hash(es) that the mirror published for $platform"

# --- Credentials ------------------------------------------------------------------------
expect_requests "$hk_log" "/v1/modules/acme/hello/null/versions" 200 "Bearer $TOKEN" \
    "hostkeeper's module versions request carried the token for $host"
expect_requests "$hk_log" "/v1/modules/acme/hello/null/$hk_module_version/download" 204 "Bearer $TOKEN" \
    "hostkeeper's module download request carried the token for $host"
expect_requests "$hk_log" "$mirror_dir/index.json" 200 "Bearer $TOKEN" \
    "hostkeeper's mirror index request carried the token for $host"
expect_requests "$hk_log" "$mirror_dir/$hk_provider_version.json" 200 "Bearer $TOKEN" \
    "hostkeeper's mirror $hk_provider_version.json request carried the token for $host"
if grep -F '"path": "/mirror/' "$hk_log" | grep -qvF "\"authorization\": \"Bearer $TOKEN\""; then
    show "$hk_log"
    fail "a hostkeeper request to the mirror went without the token"
fi
pass "every hostkeeper request to the mirror ($(grep -cF '"path": "/mirror/' "$hk_log")) carried the token"
expect_requests "$tf_log" "$mirror_dir/index.json" 200 "Bearer $TOKEN" "terraform's mirror index request carried the token too"
expect_requests "$tf_log" "$mirror_dir/$tf_provider_version.json" 200 "Bearer $TOKEN" \
    "terraform's mirror $tf_provider_version.json request carried the token too"
expect_requests "$tf_log" "${tf_module_url#"https://$host"}" 200 null "terraform's module archive request carried no Authorization"
expect_requests "$tf_log" "${tf_provider_url#"https://$host"}" 200 null "terraform's provider archive request carried no Authorization"

# --- A prerelease, named exactly: the "./"-relative location ------------------
# Both take a prerelease only when the constraint names it exactly (a bare
# version is "="), and the registry answers its download with
# "./hello-VERSION.tar.gz", beside the download endpoint.
prerelease=1.3.0-beta.1
work2=$root/work-prerelease
mkdir -p "$work2"
cat >"$work2/main.tf" <<TF
module "hello" {
  source  = "$module"
  version = "$prerelease"
}
TF
start=$(wc -l <"$log")
if ! init "$work2" "$root/init-prerelease.out"; then
    show "$root/init-prerelease.out"
    show "$log"
    fail "terraform init of module version $prerelease failed"
fi
pass "terraform init installed module $module version \"$prerelease\""
tail -n "+$((start + 1))" "$log" >"$root/terraform-requests-prerelease.jsonl"
module_agrees "$work2" "$prerelease" "$root/terraform-requests-prerelease.jsonl" -prerelease
expect_requests "$log" "${tf_module_url#"https://$host"}" 200 null \
    "terraform's request for the \"./\"-relative archive carried no Authorization"

# --- hostkeeper provider fetch: the package terraform installed, same hashes ------
# Downloads the archive terraform installed and checks it against the
# mirror's hashes; the h1: it computes must be the one terraform wrote into the
# lock file (terraform computed it from the same archive).
fetched=$root/fetched
mkdir -p "$fetched"
"$bin/hostkeeper" provider fetch "$provider" "$tf_provider_version" --platform "$platform" --mirror "$mirror" \
    -o "$fetched" --json >"$root/fetch.json" || { show "$root/fetch.json"; fail "hostkeeper provider fetch exited with $?"; }
json "$root/fetch.json" 'd["computed"]' >"$root/fetch-computed.txt"
grep -qxF -f "$root/lock-hashes.txt" "$root/fetch-computed.txt" || {
    show "$root/fetch.json"
    show "$lock"
    fail "hostkeeper provider fetch computed none of the lock file's hashes"
}
pass "hostkeeper provider fetch verified $(json "$root/fetch.json" 'd["verified"]' | paste -sd' ') and computed the lock file's $(grep -xF -f "$root/lock-hashes.txt" "$root/fetch-computed.txt" | paste -sd' ')"
written=$(json "$root/fetch.json" 'd["written"]')
[[ -f $written && "zh:$(sha256sum "$written" | cut -d' ' -f1)" == "$(head -n1 "$root/fetch-computed.txt")" ]] ||
    fail "hostkeeper provider fetch did not write the archive it verified to $written"
pass "hostkeeper provider fetch wrote $written, the archive it verified"

# --- No archive request, of all, carried credentials -----------------------------
python3 - "$log" >"$root/archive-auth.txt" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    entry = json.loads(line)
    if entry["path"].endswith((".zip", ".tar.gz")) and entry["authorization"] is not None:
        print(line, end="")
PY
[[ ! -s $root/archive-auth.txt ]] || { show "$root/archive-auth.txt"; fail "an archive request carried an Authorization header"; }
pass "no archive request (of $(grep -cE '\.(zip|tar\.gz)"' "$log") in all) carried an Authorization header"

echo "PASS: terraform init and hostkeeper agree on the registry's versions and locations and the mirror's packages"
