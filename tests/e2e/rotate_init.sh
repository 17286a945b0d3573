#!/usr/bin/env bash
# rotate_init.sh BIN_DIR
#
# End to end: real `terraform init` before and after `hostkeeper rotate`,
# against the suite's HTTPS registry in its TFE-like mode
# (tests/support/https_registry.py --tfe: account/details and the
# authentication-token API, a private module registry that accepts only live
# tokens):
#   1. the keyring holds the registry's token; terraform init installs the
#      module with it;
#   2. `hostkeeper rotate HOST` makes a new token with the stored one (which
#      it leaves alone: hostkeeper did not make it); terraform init works
#      with the new token, and only with it;
#   3. a second rotation revokes the token the first one made: the server
#      refuses it from then on, and terraform init works with the newest.
#
# Run it inside support/keyring-env.sh:
#   tests/support/keyring-env.sh tests/e2e/rotate_init.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no terraform).
set -euo pipefail

e2e_name=e2e-rotate  # read by lib.sh
registry_args=(--tfe)
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need curl

mkdir -p "$HOME/.terraform.d/plugins"
ln -sf "$helper" "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper"
export TF_CLI_CONFIG_FILE=$root/terraform.rc
printf 'credentials_helper "hostkeeper" {\n  args = ["--timeout=20"]\n}\n' >"$TF_CLI_CONFIG_FILE"

# stored_token: the token the helper hands out for $host.
stored_token() {
    "$helper" get "$host" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("token", ""))'
}

# init_with TOKEN N: terraform init in a fresh directory; every metadata
# request carried TOKEN and got its success status.
init_with() {
    local token=$1 n=$2
    : >"$log"
    make_workdir "$root/work$n"
    init "$root/work$n" "$root/init$n.out" || { show "$root/init$n.out"; show "$log"; fail "terraform init $n failed"; }
    grep -qs 'hello from the keyring' "$root/work$n/.terraform/modules/hello/main.tf" ||
        { show "$root/init$n.out"; fail "terraform init $n did not install the module"; }
    expect_requests "$log" "$versions" 200 "Bearer $token" "init $n: the versions request carried the token in the keyring"
    expect_requests "$log" "$download" 204 "Bearer $token" "init $n: the download request carried the token in the keyring"
}

# http_status TOKEN: the registry's answer to a versions request with TOKEN.
http_status() {
    curl -s -o /dev/null -w '%{http_code}' --cacert "$root/tls/ca.pem" \
        -H "Authorization: Bearer $1" "https://$host$versions"
}

# rotate N: hostkeeper rotate HOST --json into $root/rotate-N.json; exit 0 required.
rotate() {
    "$bin/hostkeeper" rotate "$host" --json >"$root/rotate-$1.json" 2>"$root/rotate-$1.err" ||
        { show "$root/rotate-$1.json"; show "$root/rotate-$1.err"; fail "hostkeeper rotate $host ($1) failed"; }
}
field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$1" "$2"; }

# --- 1. before rotation -------------------------------------------------------------
printf '{"token":"%s"}' "$TOKEN" | "$helper" store "$host" || fail "storing the token failed"
init_with "$TOKEN" 1
pass "terraform init works with the stored token"

# --- 2. the first rotation: a new token; the stored one was not hostkeeper's ----------
rotate 1
[[ $(field "$root/rotate-1.json" result) == rotated ]] || { show "$root/rotate-1.json"; fail "the first rotation did not rotate"; }
first_id=$(field "$root/rotate-1.json" token_id)
[[ -z $(field "$root/rotate-1.json" revoked) ]] || { show "$root/rotate-1.json"; fail "the first rotation revoked a token hostkeeper did not make"; }
first=$(stored_token)
[[ -n $first && $first != "$TOKEN" ]] || fail "after the first rotation the keyring does not hold a new token"
[[ $(http_status "$first") == 200 ]] || fail "the server does not accept the rotated token"
grep -rqF "$first" "$HOME" 2>/dev/null && fail "a file under \$HOME holds the rotated token"
pass "hostkeeper rotate stored a new token ($first_id); the previous one, not made by hostkeeper, stays"
# A token just made, for rotate_lifetime (30 days): shown with its expiry,
# not warned of (the warning window never covers most of its life).
"$bin/hostkeeper" list >"$root/list-1.out" 2>&1 || { show "$root/list-1.out"; fail "hostkeeper list failed"; }
grep -q "expires 20" "$root/list-1.out" || { show "$root/list-1.out"; fail "list shows no expiry for the rotated token"; }
if grep -q "token expires soon" "$root/list-1.out"; then
    show "$root/list-1.out"
    fail "list warns of the token hostkeeper rotate has just made"
fi
pass "list shows the rotated token's expiry without warning of it"
init_with "$first" 2
pass "terraform init works after rotation, with the new token"

# --- 3. the second rotation revokes the first's token ---------------------------------------
rotate 2
[[ $(field "$root/rotate-2.json" revoked) == "$first_id" ]] ||
    { show "$root/rotate-2.json"; fail "the second rotation did not revoke $first_id"; }
second=$(stored_token)
[[ -n $second && $second != "$first" ]] || fail "after the second rotation the keyring does not hold a newer token"
[[ $(http_status "$first") == 401 ]] || fail "the server still accepts the revoked token $first_id"
[[ $(http_status "$second") == 200 ]] || fail "the server does not accept the newest token"
pass "the second rotation revoked $first_id on the server, which refuses it now"
init_with "$second" 3
pass "terraform init works after the revoke, with the newest token"

echo "PASS: terraform init before and after hostkeeper rotate"
