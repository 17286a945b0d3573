#!/usr/bin/env bash
# registry_cache_downloads.sh BIN_DIR
#
# End to end: a registry that protects its downloads, with the real
# terraform through the registry cache. The protected registry
# (https_registry.py --protect-downloads) wants the token on its module
# archive, provider zip, SHA256SUMS and signature, which terraform alone never
# sends (terraform#29349); one module's archive lives on a second loopback
# origin, and the signature is a redirect from the registry's origin to it.
# The second origin is lib.sh's registry: the same modules and provider,
# signed with the same key, every download open, and it must never see an
# Authorization header. Checks:
#   1. the premise: the protected registry refuses a download without the token;
#   2. `terraform init` through the cache installs both modules and the
#      provider (signature checked);
#   3. the protected registry got the token on each of its downloads, and the
#      second origin got no Authorization header at all.
#
# Run it inside support/port-env.sh and support/keyring-env.sh:
#   tests/support/port-env.sh tests/support/keyring-env.sh tests/e2e/registry_cache_downloads.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no terraform,
# or terraform not on linux_amd64 or darwin_arm64, the registry's platforms).
set -euo pipefail

e2e_name=e2e-registry-cache-downloads  # read by lib.sh
gpg_home=$HK_TEST_ROOT/$e2e_name/gnupg
# shellcheck disable=SC2054  # the commas are https_registry.py's list syntax
serves=(--modules acme/hello/null,acme/two/null --providers acme/thing --gpg-home "$gpg_home")
registry_args=("${serves[@]}")  # lib.sh's registry: the second origin
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hk=$bin/hostkeeper
need curl
tf_platform=$("$terraform" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["platform"])')
case $tf_platform in
    linux_amd64 | darwin_arm64) ;;
    *) echo "SKIP: terraform runs on $tf_platform; the test registry serves linux_amd64 and darwin_arm64"; exit 77 ;;
esac
[[ -n ${HK_REGISTRY_PORT:-} ]] || die "run me through tests/support/port-env.sh"

other=$host
other_log=$log
start_registry protected "$TOKEN" --protect-downloads --other-origin "https://$other" "${serves[@]}"
registry=127.0.0.1:$registry_port
registry_log=$root/protected.jsonl
files=/provider-files/acme/thing/1.0.0
zip=$files/terraform-provider-thing_1.0.0_$tf_platform.zip
sums=$files/terraform-provider-thing_1.0.0_SHA256SUMS

# --- 1. the premise -------------------------------------------------------------------
for path in /archives/hello-1.0.0.tar.gz "$zip" "$sums"; do
    code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$root/tls/ca.pem" "https://$registry$path")
    [[ $code == 401 ]] || fail "the protected registry answered $code, not 401, to $path without the token"
done
pass "the protected registry refuses its downloads without the token"

# --- 2. terraform init through the cache ---------------------------------------------------
printf '{"token":"%s"}' "$TOKEN" | "$helper" store "$registry" || fail "storing the token for $registry failed"
"$hk" setup --registry-cache "$registry" >"$root/setup.out" 2>&1 || { show "$root/setup.out"; fail "setup --registry-cache failed"; }
tfrc=$HOME/.terraform.d/hostkeeper.tfrc
for _ in $(seq 1 150); do
    grep -qsF "host \"$registry\"" "$tfrc" && break
    sleep 0.1
done
grep -qsF "http://127.0.0.1:$HK_REGISTRY_PORT/v1/$registry/providers/" "$tfrc" ||
    { [[ -e $tfrc ]] && show "$tfrc"; fail "no block routing $registry through the cache within 15 s"; }

w=$root/w
mkdir -p "$w"
cat >"$w/main.tf" <<TF
terraform {
  required_providers {
    thing = {
      source  = "$registry/acme/thing"
      version = "1.0.0"
    }
  }
}

module "hello" {
  source  = "$registry/acme/hello/null"
  version = "1.0.0"
}

module "two" {
  source  = "$registry/acme/two/null"
  version = "1.0.0"
}

output "greetings" {
  value = [module.hello.greeting, module.two.greeting]
}
TF
n0=$(wc -l <"$registry_log")
init "$w" "$w.out" || { show "$w.out"; fail "terraform init through the cache failed"; }
exe=$w/.terraform/providers/$registry/acme/thing/1.0.0/$tf_platform/terraform-provider-thing_v1.0.0
[[ -x $exe ]] || { show "$w.out"; fail "the provider was not installed"; }
grep -q 'self-signed, key ID' "$w.out" || { show "$w.out"; fail "terraform did not check the provider's signature"; }
grep -qs 'hello from the keyring' "$w/.terraform/modules/hello/main.tf" || fail "module hello was not installed"
grep -qs 'hello from acme/two/null 1.0.0' "$w/.terraform/modules/two/main.tf" || fail "module two was not installed"
pass "terraform init through the cache installed both modules and the provider (signature checked)"

# --- 3. who got the token -------------------------------------------------------------------
# The registry's requests during init (not the premise's above).
tail -n "+$((n0 + 1))" "$registry_log" >"$root/init.jsonl"
registry_log=$root/init.jsonl
expect_requests "$registry_log" /archives/hello-1.0.0.tar.gz 200 "Bearer $TOKEN" "the module archive on the registry's origin"
expect_requests "$registry_log" "$zip" 200 "Bearer $TOKEN" "the provider package on the registry's origin"
expect_requests "$registry_log" "$sums" 200 "Bearer $TOKEN" "SHA256SUMS on the registry's origin"
expect_requests "$registry_log" "/redirect$sums.sig" 302 "Bearer $TOKEN" "the signature's redirect on the registry's origin"
expect_requests "$other_log" "$sums.sig" 200 null "the signature on the other origin, after the redirect"
expect_requests "$other_log" /archives/acme-two-null-1.0.0.tar.gz 200 null "module two's archive on the other origin"
if grep -v '"authorization": null' "$other_log" | grep -q .; then
    show "$other_log"
    fail "the other origin received an Authorization header"
fi
pass "the other origin received no Authorization header ($(wc -l <"$other_log") requests)"
