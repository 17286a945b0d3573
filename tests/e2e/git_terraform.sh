#!/usr/bin/env bash
# git_terraform.sh BIN_DIR
#
# End to end: real `terraform init` of a root module with two module calls
# that both end at the real git smart-HTTP server over TLS on loopback
# (tests/support/git_https_server.py, Basic authentication whose password
# must be the host's token):
#   - source = "git::https://HOST/net.git?ref=v1.0.0": terraform runs git,
#     git asks git-credential-hostkeeper (credential.helper = hostkeeper in
#     git's global configuration, the helper on PATH), which answers the
#     Terraform token kept for HOST;
#   - source = "HOST/acme/net/git", a registry module on the same host, whose
#     download answer (X-Terraform-Get) is git::https://HOST/net.git?ref=v1.0.0:
#     the registry's requests carry the token as a bearer token (through
#     terraform-credentials-hostkeeper), git's the same token as a password.
# Then, with the token forgotten, init of the git source alone fails: the
# password came from the keyring and from nowhere else.
# Run inside tests/support/keyring-env.sh (or pass-env.sh).
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no terraform).
set -euo pipefail

if [[ -x /usr/local/bin/terraform ]]; then
    terraform=/usr/local/bin/terraform
elif terraform=$(command -v terraform); then
    :
else
    echo "SKIP: terraform is not installed; this end-to-end test needs it"
    exit 77
fi

e2e_name=e2e-git-terraform
git_server_args=(--registry acme/net/git --registry-repo net.git)
# shellcheck source-path=SCRIPTDIR
# shellcheck source=git_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/git_lib.sh"

# --- terraform's and git's configuration ------------------------------------------
while read -r name; do
    [[ $name == TF_LOG* ]] || unset "$name"
done < <(compgen -e | grep '^TF_' || true)
export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
# terraform (Go) trusts exactly the throw-away CA; git trusts it through
# GIT_SSL_CAINFO and http.sslCAInfo (git_lib.sh).
mkdir -p "$root/no-system-certs"
export SSL_CERT_FILE=$root/tls/ca.pem SSL_CERT_DIR=$root/no-system-certs
mkdir -p "$HOME/.terraform.d/plugins"
ln -sf "$tf_helper" "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper"
export TF_CLI_CONFIG_FILE=$root/terraform.rc
printf 'credentials_helper "hostkeeper" {\n  args = ["--timeout=20"]\n}\n' >"$TF_CLI_CONFIG_FILE"
# What `git config --global credential.helper hostkeeper` writes, in the
# global configuration terraform's git reads (GIT_CONFIG_GLOBAL).
git config --global credential.helper hostkeeper
[[ $(git config --global credential.helper) == hostkeeper ]] || fail "git's global configuration has no credential.helper"

tf_store "$host" "$TOKEN"
"$bin/hostkeeper" stop >/dev/null 2>&1 || true

init() {  # init DIR OUT: terraform init in DIR; sets tf_rc
    tf_rc=0
    (cd "$1" && timeout 240 "$terraform" init -input=false -no-color) >"$2" 2>&1 || tf_rc=$?
}

# --- Both module calls, through the helpers -----------------------------------------
mkdir -p "$root/work1"
cat >"$root/work1/main.tf" <<TF
module "from_git" {
  source = "git::https://$host/net.git?ref=v1.0.0"
}

module "from_registry" {
  source  = "$host/acme/net/git"
  version = "1.0.0"
}

output "greetings" {
  value = [module.from_git.greeting, module.from_registry.greeting]
}
TF
mark=$(log_mark)
init "$root/work1" "$root/init1.out"
[[ $tf_rc == 0 ]] || { show "$root/init1.out"; show "$log"; fail "terraform init exited with $tf_rc"; }
for module in from_git from_registry; do
    grep -qs 'hello from git' "$root/work1/.terraform/modules/$module/main.tf" ||
        { show "$root/init1.out"; fail "module $module was not installed from the git repository"; }
done
pass "terraform init installed the git::https source and the registry module (X-Terraform-Get: git::https://$host/net.git)"

seen=$(requests "https://$host" "$mark")
grep -q '^GET /v1/modules/acme/net/git/1.0.0/download 204 bearer None True$' <<<"$seen" ||
    { echo "$seen"; fail "the registry's download request did not carry the token"; }
grep -q '^POST /net.git/git-upload-pack 200 basic oauth2 True$' <<<"$seen" ||
    { echo "$seen"; fail "git's fetch was not authenticated as oauth2 with the token"; }
if grep -q ' basic .* False$' <<<"$seen"; then
    echo "$seen"
    fail "git sent a credential that is not the token"
fi
pass "one token for both: the registry's requests as a bearer token, git's fetches as oauth2's password ($(grep -c ' basic oauth2 True$' <<<"$seen") git request(s))"
(cd "$root/work1" && timeout 120 "$terraform" apply -auto-approve -input=false -no-color) >"$root/apply.out" 2>&1 ||
    { show "$root/apply.out"; fail "terraform apply exited with $?"; }
grep -q 'hello from git' "$root/apply.out" || { show "$root/apply.out"; fail "the outputs do not greet from git"; }
pass "terraform apply: both modules' outputs"

# --- Without the token, the git source fails ----------------------------------------
timeout 60 "$tf_helper" forget "$host" || fail "terraform helper forget $host failed"
mkdir -p "$root/work2"
printf 'module "from_git" {\n  source = "git::https://%s/net.git?ref=v1.0.0"\n}\n' "$host" >"$root/work2/main.tf"
init "$root/work2" "$root/init2.out"
[[ $tf_rc != 0 ]] || { show "$root/init2.out"; fail "terraform init of the git source succeeded without a token"; }
grep -qE 'terminal prompts disabled|Authentication failed|could not read Username' "$root/init2.out" ||
    { show "$root/init2.out"; fail "terraform init failed, but not for git's missing credential"; }
pass "with the token forgotten, init of the git source fails on git's credential: it came from the keyring"

echo "git_terraform.sh ($backend): all checks passed"
