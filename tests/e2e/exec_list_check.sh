#!/usr/bin/env bash
# exec_list_check.sh BIN_DIR
#
# End to end, the command line against the real hostkeeperd, keyring
# and terraform: `terraform init` run under `hostkeeper exec` with NO
# credentials_helper configured gets each registry's token through a
# TF_TOKEN_* variable (an IDN host, a hyphenated host, an IP literal: all
# with a port), as the registries' request logs show. The IDN registry
# serves a provider, not a module: Terraform (1.11) cannot install a module
# from an IDN registry host at all, with any credentials source
# (regsrc.ModuleFromRegistryPackageAddr hands the punycode host to
# svchost.ForComparison, which refuses punycode: "hostname label
# xn--... specified in punycode format"); TFE_TOKEN/TFE_HOSTNAME
# reach a child for a TFE-like host; `check` against a TFE-like host with a
# good, a revoked and a missing token; `list` after store/forget with a
# credentials.tfrc.json, a credentials block and a TF_TOKEN_* variable
# shadowing; `token`; bad input (unknown hosts, hosts Terraform cannot
# encode) with clear errors and nothing run or lost.
#
# The IDN and hyphenated names resolve to 127.0.0.1 through a hosts file
# bind-mounted over /etc/hosts in a private mount namespace (unshare
# --mount), so the real /etc/hosts is never touched.
#
# Run it inside support/keyring-env.sh:
#   tests/support/keyring-env.sh tests/e2e/exec_list_check.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no
# terraform, or no private mount namespace here).
set -euo pipefail

idn_unicode=bücher.hk-e2e.test
idn_ascii=xn--bcher-kva.hk-e2e.test
hyphen=my-registry.hk-e2e.test

if [[ -z ${HK_E2E_IN_NAMESPACE:-} ]]; then
    if ! command -v unshare >/dev/null || ! unshare --mount --propagation private true 2>/dev/null; then
        echo "SKIP: no private mount namespace here (unshare --mount); the IDN and hyphenated hosts need one"
        exit 77
    fi
    HK_E2E_IN_NAMESPACE=1 exec unshare --mount --propagation private "$0" "$@"
fi
hosts_file=${HK_TEST_ROOT:?run me through tests/support/keyring-env.sh}/hosts
{ cat /etc/hosts; echo "127.0.0.1 $idn_ascii $hyphen"; } >"$hosts_file"
mount --bind "$hosts_file" /etc/hosts ||
    { echo "SKIP: cannot bind-mount a hosts file over /etc/hosts in this namespace"; exit 77; }

e2e_name=e2e-exec         # read by lib.sh
ca_names=("$idn_ascii" "$hyphen")
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
hk=$bin/hostkeeper

getent hosts "$idn_ascii" | grep -q '^127\.0\.0\.1' || fail "$idn_ascii does not resolve to 127.0.0.1 in the namespace"
pass "in a private mount namespace, $idn_unicode and $hyphen resolve to 127.0.0.1"

# Every token differs, so a request log shows which variable delivered it.
TOKEN_IDN=hk-e2e-idn-$(openssl rand -hex 16)
TOKEN_HYPHEN=hk-e2e-hyphen-$(openssl rand -hex 16)
start_registry idn "$TOKEN_IDN" --providers acme/thing
idn_port=$registry_port
start_registry hyphen "$TOKEN_HYPHEN"
hyphen_port=$registry_port
idn_host=$idn_unicode:$idn_port           # as a user writes it
idn_key=$idn_ascii:$idn_port              # as it is stored
hyphen_host=$hyphen:$hyphen_port

store() { printf '{"token":"%s"}' "$2" | "$helper" store "$1" || fail "helper store $1 exited with $?"; }
store "$host" "$TOKEN"
store "$idn_host" "$TOKEN_IDN"
store "$hyphen_host" "$TOKEN_HYPHEN"
pass "tokens stored for $host, $idn_host and $hyphen_host"

# No transcript may ever hold a token.
no_tokens_in() {
    local file token
    for file in "$@"; do
        for token in "$TOKEN" "$TOKEN_IDN" "$TOKEN_HYPHEN" ${more_tokens[@]+"${more_tokens[@]}"}; do
            if grep -qF -- "$token" "$file"; then fail "$file holds a token"; fi
        done
    done
}
more_tokens=()

# --- terraform init under hostkeeper exec, without the credentials helper -------
export TF_CLI_CONFIG_FILE=$root/terraform.rc
echo '# no credentials_helper: tokens come only from TF_TOKEN_* variables' >"$TF_CLI_CONFIG_FILE"
[[ ! -e $HOME/.terraform.d/plugins ]] || fail "a plugin directory exists in the throw-away HOME"

work=$root/work-all
mkdir -p "$work"
cat >"$work/main.tf" <<TF
module "ip" {
  source  = "$host/acme/hello/null"
  version = "1.0.0"
}
module "hyphen" {
  source  = "$hyphen_host/acme/hello/null"
  version = "1.0.0"
}
terraform {
  required_providers {
    thing = {
      source  = "$idn_host/acme/thing"
      version = "1.0.0"
    }
  }
}
TF
tf_platform=$("$terraform" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["platform"])')
if init "$work" "$root/init-bare.out"; then
    show "$root/init-bare.out"
    fail "terraform init succeeded without hostkeeper exec and without a credentials helper"
fi
grep -q 401 "$root/init-bare.out" || { show "$root/init-bare.out"; fail "the bare init did not fail with a 401"; }
pass "without hostkeeper exec, terraform init gets no token (401)"
: >"$log"; : >"$root/idn.jsonl"; : >"$root/hyphen.jsonl"
rm -rf "$work/.terraform"

if ! (cd "$work" && "$hk" exec -- "$terraform" init -input=false -no-color) >"$root/init-exec.out" 2>"$root/init-exec.err"; then
    show "$root/init-exec.out"; show "$root/init-exec.err"
    fail "terraform init under hostkeeper exec failed"
fi
grep -q "Installed $idn_unicode:$idn_port/acme/thing v1.0.0 (self-signed" "$root/init-exec.out" ||
    { show "$root/init-exec.out"; fail "terraform did not install the provider from $idn_host"; }
pass "terraform init under hostkeeper exec installed two modules and a provider from three registries"
expect_requests "$log" "$versions" 200 "Bearer $TOKEN" "$host got its token through TF_TOKEN_127_0_0_1:$port"
expect_requests "$root/idn.jsonl" /v1/providers/acme/thing/versions 200 "Bearer $TOKEN_IDN" \
    "$idn_unicode got its own token through TF_TOKEN_xn____bcher__kva_hk__e2e_test:$idn_port"
expect_requests "$root/idn.jsonl" "/v1/providers/acme/thing/1.0.0/download/${tf_platform%_*}/${tf_platform#*_}" 200 \
    "Bearer $TOKEN_IDN" "the IDN host's package document request carried its token"
expect_requests "$root/hyphen.jsonl" "$versions" 200 "Bearer $TOKEN_HYPHEN" \
    "$hyphen got its own token through TF_TOKEN_my__registry_hk__e2e_test:$hyphen_port"
grep -qF "not a shell name" "$root/init-exec.err" &&
    { show "$root/init-exec.err"; fail "exec warned about names dash drops, but terraform is not run by dash"; }
pass "exec ran terraform directly without warning about names dash would drop"
"$hk" exec -- sh -c true 2>"$root/exec-sh.err" || fail "hostkeeper exec -- sh -c true exited with $?"
[[ $(grep -c "shell name" "$root/exec-sh.err") -eq 1 ]] ||
    { show "$root/exec-sh.err"; fail "exec -- sh did not warn exactly once about names dash drops"; }
grep -qF "TF_TOKEN_xn____bcher__kva_hk__e2e_test:$idn_port (for $idn_key)" "$root/exec-sh.err" ||
    { show "$root/exec-sh.err"; fail "the warning does not name the variable with a port"; }
pass "exec warned once, naming each variable, when dash (sh) runs the command"
no_tokens_in "$root/init-exec.out" "$root/init-exec.err"
pass "neither terraform's output nor hostkeeper's stderr holds a token"

# --- --host: only the named host's variable ------------------------------------
child_env=$root/child-env
names_only='env | sed -n "s/^\(TF_TOKEN_[^=]*\)=.*/\1/p"'  # names, never values
"$hk" exec --host "$idn_host" -- bash -c "$names_only" >"$child_env" 2>/dev/null ||
    fail "hostkeeper exec --host $idn_host exited with $?"
[[ $(cat "$child_env") == "TF_TOKEN_xn____bcher__kva_hk__e2e_test:$idn_port" ]] ||
    { show "$child_env"; fail "exec --host $idn_host gave other variables than that host's"; }
# The caller's own variable for that host (another spelling) is replaced, with a note.
# shellcheck disable=SC2016  # expanded by the child
env "TF_TOKEN_xn--bcher-kva_hk-e2e_test:$idn_port=stale-token-from-the-shell" \
    "$hk" exec --host "$idn_host" -- bash -c "$names_only"'; [[ $(printenv "$1") == "$2" ]] && echo stored-one-wins' _ \
    "TF_TOKEN_xn____bcher__kva_hk__e2e_test:$idn_port" "$TOKEN_IDN" >"$root/replace.out" 2>"$root/replace.err" ||
    { show "$root/replace.out"; show "$root/replace.err"; fail "exec with a stale caller variable failed"; }
[[ $(cat "$root/replace.out") == "TF_TOKEN_xn____bcher__kva_hk__e2e_test:$idn_port"$'\n'"stored-one-wins" ]] ||
    { show "$root/replace.out"; fail "the caller's variable for the host was not replaced by the stored token"; }
grep -qF "TF_TOKEN_xn--bcher-kva_hk-e2e_test:$idn_port from the environment is replaced by the keyring's token for $idn_key" "$root/replace.err" ||
    { show "$root/replace.err"; fail "exec did not say it replaced the caller's variable"; }
pass "exec --host gives only that host's variable; the caller's spelling of it is replaced, with a note"

# --- exit status and signals pass through ---------------------------------------
rc=0; "$hk" exec -- sh -c 'exit 7' 2>/dev/null || rc=$?
[[ $rc == 7 ]] || fail "exec -- sh -c 'exit 7' exited $rc"
# (in a bash of its own, which would print "Terminated")
# shellcheck disable=SC2016  # expanded by that bash
rc=$(bash -c '"$1" exec -- sh -c "kill -TERM \$\$"; echo $?' _ "$hk" 2>/dev/null)
[[ $rc == 143 ]] || fail "a child killed by SIGTERM: exec exited $rc, not 143"
rc=0; "$hk" exec -- hk-e2e-no-such-command 2>"$root/nocmd.err" || rc=$?
if [[ $rc != 127 ]] || ! grep -q 'hk-e2e-no-such-command: command not found' "$root/nocmd.err"; then
    show "$root/nocmd.err"
    fail "a missing command: exit $rc"
fi
printf '#!/bin/sh\n' >"$root/not-executable"
rc=0; "$hk" exec -- "$root/not-executable" 2>/dev/null || rc=$?
[[ $rc == 126 ]] || fail "a non-executable command: exit $rc"
pass "exit statuses pass through (7, 143 for SIGTERM), 127 not found, 126 not executable"

# --- bad input: clear errors, nothing run ----------------------------------------
marker=$root/ran
rc=0; "$hk" exec --host unknown.hk-e2e.test -- touch "$marker" 2>"$root/unknown.err" || rc=$?
[[ $rc == 3 && ! -e $marker ]] || fail "exec --host with no credentials: exit $rc, or the command ran"
grep -qF 'no credentials are stored for unknown.hk-e2e.test; nothing was run' "$root/unknown.err" ||
    { show "$root/unknown.err"; fail "exec --host unknown: unclear error"; }
for bad in 'ab--cd.hk-e2e.test' 'a.-b.hk-e2e.test' 'under_score.hk-e2e.test' 'https://x.hk-e2e.test'; do
    rc=0; "$hk" exec --host "$bad" -- touch "$marker" 2>"$root/bad.err" || rc=$?
    [[ $rc == 2 && ! -e $marker ]] || fail "exec --host $bad: exit $rc, or the command ran"
    grep -qF "invalid hostname \"$bad\"" "$root/bad.err" || { show "$root/bad.err"; fail "exec --host $bad: unclear error"; }
done
rc=0; "$hk" exec --tfe unknown.hk-e2e.test -- touch "$marker" 2>"$root/tfe-unknown.err" || rc=$?
[[ $rc == 3 && ! -e $marker ]] || fail "exec --tfe with no credentials: exit $rc, or the command ran"
[[ $("$helper" get "$idn_host") == "{\"token\":\"$TOKEN_IDN\"}" ]] || fail "a failed exec lost a stored token"
pass "unknown hosts (exit 3) and hosts Terraform cannot read back (exit 2) are clear errors; nothing ran, nothing lost"

# --- token ------------------------------------------------------------------------
[[ $("$hk" token "$idn_host") == "$TOKEN_IDN" ]] || fail "hostkeeper token $idn_host gave something else"
rc=0; "$hk" token unknown.hk-e2e.test >/dev/null 2>"$root/token-unknown.err" || rc=$?
[[ $rc == 3 ]] || fail "hostkeeper token for a host without credentials exited $rc"
script -qec "$hk token $hyphen_host" /dev/null >"$root/token-tty.out" 2>&1 && rc=0 || rc=$?
[[ $rc == 2 ]] || { show "$root/token-tty.out"; fail "hostkeeper token to a terminal exited $rc, not 2"; }
grep -q 'standard output is a terminal' "$root/token-tty.out" || { show "$root/token-tty.out"; fail "no refusal message"; }
no_tokens_in "$root/token-tty.out"
script -qec "$hk token --force $hyphen_host" /dev/null >"$root/token-force.out" 2>&1 ||
    fail "hostkeeper token --force to a terminal failed"
grep -qF "$TOKEN_HYPHEN" "$root/token-force.out" || fail "hostkeeper token --force printed no token to the terminal"
rm -f "$root/token-force.out"
pass "token prints to a pipe, refuses a terminal (exit 2) unless --force, exit 3 without credentials"

# --- TFE: TFE_TOKEN and TFE_HOSTNAME reach the child --------------------------------
TOKEN_TFE=hk-e2e-tfe-$(openssl rand -hex 16)
more_tokens+=("$TOKEN_TFE")
start_registry tfe "$TOKEN_TFE" --tfe --tfe-user hk-e2e-tfe-user
tfe_host=127.0.0.1:$registry_port
store "$tfe_host" "$TOKEN_TFE"
# The child says only whether it got them, and asks the TFE API with them.
# shellcheck disable=SC2016  # expanded by the child
"$hk" exec --host "$tfe_host" --tfe "$tfe_host" -- bash -c '
    [[ $TFE_TOKEN == "$1" ]] && echo "TFE_TOKEN: the stored token"
    echo "TFE_HOSTNAME: $TFE_HOSTNAME"
    echo "TFE_ADDRESS: $TFE_ADDRESS"
    curl -sS --cacert "$SSL_CERT_FILE" -H "Authorization: Bearer $TFE_TOKEN" \
        "$TFE_ADDRESS/api/v2/account/details" | python3 -c "import json,sys; print(\"user:\", json.load(sys.stdin)[\"data\"][\"attributes\"][\"username\"])"
' _ "$TOKEN_TFE" >"$root/tfe-child.out" 2>"$root/tfe-child.err" || { show "$root/tfe-child.err"; fail "the TFE child failed"; }
expected="TFE_TOKEN: the stored token
TFE_HOSTNAME: $tfe_host
TFE_ADDRESS: https://$tfe_host
user: hk-e2e-tfe-user"
[[ $(cat "$root/tfe-child.out") == "$expected" ]] || { show "$root/tfe-child.out"; fail "the child did not get TFE_TOKEN/TFE_HOSTNAME/TFE_ADDRESS"; }
no_tokens_in "$root/tfe-child.out" "$root/tfe-child.err"
pass "exec --tfe gave the child TFE_TOKEN, TFE_HOSTNAME and TFE_ADDRESS, and the TFE API accepted the token"

# --- check: good, revoked, missing, and a registry without tfe.v2 ----------------
start_registry tfe-revoked "hk-e2e-other-token-$(openssl rand -hex 8)" --tfe
revoked_host=127.0.0.1:$registry_port
TOKEN_REVOKED=hk-e2e-revoked-$(openssl rand -hex 16)
more_tokens+=("$TOKEN_REVOKED")
store "$revoked_host" "$TOKEN_REVOKED"
start_registry tfe-missing "hk-e2e-unused-$(openssl rand -hex 8)" --tfe
missing_host=127.0.0.1:$registry_port

rc=0; "$hk" check "$tfe_host" >"$root/check-good.out" 2>&1 || rc=$?
[[ $rc == 0 && $(cat "$root/check-good.out") == "$tfe_host: valid (user hk-e2e-tfe-user); expires 2099-01-01T00:00:00Z (from the host's API)" ]] ||
    { show "$root/check-good.out"; fail "check of a good TFE token: exit $rc"; }
rc=0; "$hk" check "$revoked_host" >"$root/check-revoked.out" 2>&1 || rc=$?
[[ $rc == 7 ]] || { show "$root/check-revoked.out"; fail "check of a revoked token exited $rc, not 7"; }
grep -qF "$revoked_host: rejected (HTTP 401 from https://$revoked_host/api/v2/account/details): expired or revoked: run terraform login $revoked_host" \
    "$root/check-revoked.out" || { show "$root/check-revoked.out"; fail "check of a revoked token: unclear"; }
lines_before=$(wc -l <"$root/tfe-missing.jsonl" 2>/dev/null || echo 0)
rc=0; "$hk" check "$missing_host" >"$root/check-missing.out" 2>&1 || rc=$?
[[ $rc == 0 && $(cat "$root/check-missing.out") == "$missing_host: no credentials stored" ]] ||
    { show "$root/check-missing.out"; fail "check of a host without a token: exit $rc"; }
[[ $(wc -l <"$root/tfe-missing.jsonl" 2>/dev/null || echo 0) == "$lines_before" ]] ||
    fail "check of a host without a token sent it a request"
rc=0; "$hk" check --json >"$root/check-all.json" 2>"$root/check-all.err" || rc=$?
[[ $rc == 7 ]] || { show "$root/check-all.json"; fail "check of every host exited $rc, not 7 (one is revoked)"; }
python3 - "$root/check-all.json" "$host" "$idn_key" "$hyphen_host" "$tfe_host" "$revoked_host" <<'PY' || fail "check --json of every host"
import json, sys
results = {r["host"]: r["result"] for r in json.load(open(sys.argv[1]))["results"]}
want = {sys.argv[2]: "accepted", sys.argv[3]: "accepted", sys.argv[4]: "accepted",
        sys.argv[5]: "valid", sys.argv[6]: "rejected"}
assert results == want, results
PY
no_tokens_in "$root/check-good.out" "$root/check-revoked.out" "$root/check-all.json" "$root/check-all.err"
pass "check: valid (user), rejected (exit 7, run terraform login), no credentials (nothing sent), accepted without tfe.v2"

"$hk" doctor >"$root/doctor.out" 2>&1 || true
if ! grep -qF "ok    token for $tfe_host: valid (user hk-e2e-tfe-user)" "$root/doctor.out" ||
    ! grep -qF "FAIL  token for $revoked_host: rejected" "$root/doctor.out"; then
    show "$root/doctor.out"
    fail "doctor has no line per stored host from check"
fi
no_tokens_in "$root/doctor.out"
pass "doctor reports each stored host's check"

# --- list: after store/forget, with shadowing sources -------------------------------
"$helper" forget "$revoked_host" || fail "helper forget $revoked_host exited with $?"
mkdir -p "$HOME/.terraform.d"
printf '{"credentials":{"%s":{"token":"file-token-%s"}}}' "$hyphen_host" "$(openssl rand -hex 4)" \
    >"$HOME/.terraform.d/credentials.tfrc.json"
cat >>"$TF_CLI_CONFIG_FILE" <<RC
credentials "$idn_host" {
  token = "block-token"
}
RC
env "TF_TOKEN_127_0_0_1:$port=env-token" "$hk" list --json >"$root/list.json" 2>"$root/list.err" ||
    { show "$root/list.err"; fail "hostkeeper list --json exited with $?"; }
python3 - "$root/list.json" "$host" "$idn_key" "$hyphen_host" "$tfe_host" "$revoked_host" "$port" \
    "$HOME/.terraform.d/credentials.tfrc.json" "$TF_CLI_CONFIG_FILE" "$idn_unicode:$idn_port" <<'PY' || { show "$root/list.json"; fail "list --json"; }
import json, sys
doc = json.load(open(sys.argv[1]))
ip, idn, hyphen, tfe, revoked, port, tfrc, rc, idn_unicode = sys.argv[2:]
hosts = {h["host"]: h for h in doc["hosts"]}
assert sorted(hosts) == sorted([ip, idn, hyphen, tfe]), sorted(hosts)      # revoked is forgotten
assert hosts[idn]["display"] == idn_unicode, hosts[idn]
assert hosts[idn]["token_variable"] == "TF_TOKEN_xn____bcher__kva_hk__e2e_test:" + idn.split(":")[1]
assert hosts[hyphen]["token_variable"] == "TF_TOKEN_my__registry_hk__e2e_test:" + hyphen.split(":")[1]
for h in hosts.values():
    assert h["fields"] == ["token"] and h["locked"] is False, h
    assert h["label"], h
assert hosts[ip]["shadowed_by"] == [{"source": "environment", "where": "TF_TOKEN_127_0_0_1:" + port}], hosts[ip]
assert hosts[hyphen]["shadowed_by"] == [{"source": "credentials.tfrc.json", "where": tfrc}], hosts[hyphen]
assert hosts[idn]["shadowed_by"] == [{"source": "credentials block", "where": rc + ":2"}], hosts[idn]
assert hosts[tfe]["shadowed_by"] == [], hosts[tfe]
assert doc["warnings"] == [], doc["warnings"]
PY
if grep -qE 'file-token|block-token|env-token' "$root/list.json"; then fail "list --json holds a token"; fi
no_tokens_in "$root/list.json" "$root/list.err"
"$hk" list >"$root/list.out" 2>&1 || fail "hostkeeper list exited with $?"
grep -qF "$idn_unicode:$idn_port ($idn_key)  backend " "$root/list.out" ||
    { show "$root/list.out"; fail "list does not show the IDN host in both forms"; }
grep -qF "  shadowed: the credentials block at $TF_CLI_CONFIG_FILE:2 wins over the keyring" "$root/list.out" ||
    { show "$root/list.out"; fail "list does not show the credentials block shadowing"; }
if grep -qE 'file-token|block-token|env-token' "$root/list.out"; then fail "list printed a token"; fi
pass "list after store/forget: four hosts, both forms, field names only, each shadowing source named"

echo "PASS: list, check, exec and token serve Terraform, a TFE-like host and scripts from the keyring"
