#!/usr/bin/env bash
# terraform_login_providers.sh BIN_DIR
#
# End to end, without the registry cache: the real terraform against the
# suite's HTTPS registry in its provider-registry and TFE-like modes
# (tests/support/https_registry.py --providers ... --tfe), with hostkeeper's
# credentials helper configured in the throw-away HOME's ~/.terraformrc:
#   1. `terraform login HOST` runs the OAuth authorization-code flow (login.v1;
#      curl plays the browser, following the authorization endpoint's redirect
#      to terraform's callback) and stores the token through
#      terraform-credentials-hostkeeper: the keyring then holds it;
#   2. `terraform init` installs two providers from the provider registry
#      (versions, package documents, SHA256SUMS and its signature by a
#      throw-away gpg key: terraform reports them "self-signed") and a module,
#      every metadata request carrying the token;
#   3. `terraform init` with a `cloud` block and with a `remote` backend on the
#      same host succeeds (ping, entitlements, workspace), with the token;
#   4. a token the host refuses (`hostkeeper check` gets a 401) is no longer
#      handed to terraform (the helper answers {}), and `terraform login`
#      again, with no file edited, stores a new one that is served at once.
# This is the baseline registry_cache.sh's scenarios rely on.
#
# Run it inside support/keyring-env.sh:
#   tests/support/keyring-env.sh tests/e2e/terraform_login_providers.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no terraform,
# or terraform not on linux_amd64 or darwin_arm64, the registry's platforms).
set -euo pipefail

e2e_name=e2e-login-providers  # read by lib.sh
# shellcheck disable=SC2054  # the commas are https_registry.py's list syntax
registry_args=(--tfe --providers acme/thing,acme/other --registry-provider-versions 1.0.0,1.2.0)
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need curl
tf_platform=$("$terraform" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["platform"])')
case $tf_platform in
    linux_amd64 | darwin_arm64) ;;
    *) echo "SKIP: terraform runs on $tf_platform; the test registry serves linux_amd64 and darwin_arm64"; exit 77 ;;
esac

mkdir -p "$HOME/.terraform.d/plugins"
ln -sf "$helper" "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper"
printf 'credentials_helper "hostkeeper" {\n  args = ["--timeout=20"]\n}\n' >"$HOME/.terraformrc"

# --- 1. terraform login -------------------------------------------------------------
[[ $("$helper" get "$host") == "{}" ]] || fail "the keyring holds a token for $host before login"
tf_login "$host"
[[ $("$helper" get "$host") == "{\"token\":\"$TOKEN\"}" ]] || fail "the keyring does not hold the token terraform login obtained"
expect_requests "$log" /oauth/token 200 null "terraform exchanged the code (PKCE) for the token"
pass "terraform login (OAuth, curl as the browser) stored the token through the helper"
if grep -rlF "$TOKEN" "$HOME" 2>/dev/null; then fail "a file under \$HOME holds the token (above)"; fi
pass "no file under \$HOME holds the token"

# --- 2. providers and a module ---------------------------------------------------------
make_workdir "$root/w1"
cat >>"$root/w1/main.tf" <<TF

terraform {
  required_providers {
    thing = {
      source  = "$host/acme/thing"
      version = "~> 1.0"
    }
    other = {
      source  = "$host/acme/other"
      version = "1.0.0"
    }
  }
}
TF
: >"$log"
init "$root/w1" "$root/init1.out" || { show "$root/init1.out"; fail "terraform init with the providers failed"; }
for p in thing/1.2.0 other/1.0.0; do
    exe=$root/w1/.terraform/providers/$host/acme/${p%/*}/${p#*/}/$tf_platform/terraform-provider-${p%/*}_v${p#*/}
    [[ -x $exe ]] || { show "$root/init1.out"; fail "$exe is not installed"; }
    grep -q "Installed $host/acme/${p%/*} v${p#*/} (self-signed, key ID " "$root/init1.out" ||
        { show "$root/init1.out"; fail "terraform did not verify acme/${p%/*}'s signature"; }
done
pass "terraform installed acme/thing 1.2.0 (\"~> 1.0\") and acme/other 1.0.0, signatures verified (self-signed)"
expect_requests "$log" /v1/providers/acme/thing/versions 200 "Bearer $TOKEN" "the provider versions request carried the token"
expect_requests "$log" "/v1/providers/acme/thing/1.2.0/download/${tf_platform%_*}/${tf_platform#*_}" 200 "Bearer $TOKEN" \
    "the package document request carried the token"
expect_requests "$log" "/provider-files/acme/thing/1.2.0/terraform-provider-thing_1.2.0_SHA256SUMS.sig" 200 null \
    "the signature was fetched without credentials"
expect_requests "$log" "/provider-files/acme/thing/1.2.0/terraform-provider-thing_1.2.0_$tf_platform.zip" 200 null \
    "the package was fetched without credentials"
expect_requests "$log" "$versions" 200 "Bearer $TOKEN" "the module versions request carried the token"

# --- 3. cloud block and remote backend ---------------------------------------------------
for kind in cloud remote; do
    mkdir -p "$root/$kind"
    if [[ $kind == cloud ]]; then
        block="cloud {"
    else
        block="backend \"remote\" {"
    fi
    cat >"$root/$kind/main.tf" <<TF
terraform {
  $block
    hostname     = "$host"
    organization = "acme"
    workspaces {
      name = "ws1"
    }
  }
}
TF
    : >"$log"
    init "$root/$kind" "$root/$kind.out" || { show "$root/$kind.out"; show "$log"; fail "terraform init with a $kind block failed"; }
    expect_requests "$log" /api/v2/organizations/acme/workspaces/ws1 200 "Bearer $TOKEN" \
        "init with a $kind block read the workspace with the token"
    pass "terraform init with a $kind block on $host succeeded"
done

# --- 4. a refused token, and terraform login again -------------------------------------
printf '{"token":"hk-e2e-revoked"}' | "$helper" store "$host" || fail "cannot store the revoked token"
rc=0
"$bin/hostkeeper" check "$host" >"$root/check-revoked.out" 2>&1 || rc=$?
[[ $rc == 7 ]] || { show "$root/check-revoked.out"; fail "check of a revoked token exited $rc, not 7"; }
[[ $("$helper" get "$host") == "{}" ]] || fail "the helper still hands out the refused token"
"$bin/hostkeeper" status >"$root/status-revoked.out" 2>&1
grep -qF "token refused: $host" "$root/status-revoked.out" && grep -qF "hostkeeper check $host" "$root/status-revoked.out" ||
    { show "$root/status-revoked.out"; fail "status does not say the token was refused and what to run"; }
pass "a refused token is not handed to terraform; status says so and what to run"
tf_login "$host"
[[ $("$helper" get "$host") == "{\"token\":\"$TOKEN\"}" ]] || fail "the token of the second login is not served"
"$bin/hostkeeper" status --json | python3 -c 'import json, sys; sys.exit(1 if json.load(sys.stdin)["credentials"]["rejected"] else 0)' ||
    fail "the refusal outlived the new token"
pass "terraform login after the refusal stored a new token, served at once (no file edited)"

echo "PASS: terraform login, signed providers and the cloud/remote backends against the test registry"
