#!/usr/bin/env bash
# terraform_init.sh BIN_DIR
#
# End to end: `terraform init` installs a module from a private HTTPS registry
# on loopback, and the bearer token it needs comes from the OS keyring through
# BIN_DIR/terraform-credentials-hostkeeper (and the hostkeeperd it starts).
# Then, with the token forgotten, the same init must fail with a 401: the
# token came from the keyring and from nowhere else.
#
# Run it inside support/keyring-env.sh (which gives it a throw-away HOME, a
# private D-Bus session and an unlocked gnome-keyring-daemon):
#   tests/support/keyring-env.sh tests/e2e/terraform_init.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no terraform).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
support=$(cd "$here/../support" && pwd)

if [[ -x /usr/local/bin/terraform ]]; then
    terraform=/usr/local/bin/terraform
elif terraform=$(command -v terraform); then
    :
else
    echo "SKIP: terraform is not installed; the end-to-end test needs it"
    exit 77
fi

if [[ $# -ne 1 ]]; then
    echo "usage: $0 BIN_DIR" >&2
    exit 2
fi
if [[ -z "${HK_TEST_ROOT:-}" || ! -d "$HK_TEST_ROOT" ]]; then
    echo "$0: HK_TEST_ROOT is not set: run me through tests/support/keyring-env.sh" >&2
    exit 2
fi
bin=$(cd "$1" 2>/dev/null && pwd) || { echo "$0: BIN_DIR $1 is not a directory" >&2; exit 2; }
helper=$bin/terraform-credentials-hostkeeper
for program in "$helper" "$bin/hostkeeperd" "$bin/hostkeeper"; do
    [[ -x "$program" ]] || { echo "$0: $program is missing or not executable" >&2; exit 2; }
done
for tool in python3 openssl; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is missing" >&2; exit 2; }
done

root=$HK_TEST_ROOT/e2e-terraform
mkdir -p "$root"

pass() { echo "PASS: $*"; }
fail() {
    echo "FAIL: $*"
    exit 1
}

# --- A clean environment for terraform ----------------------------------------
# Nothing from the caller's terraform set-up (TF_TOKEN_* credentials above all,
# TF_CLI_ARGS*, TF_PLUGIN_CACHE_DIR...) may take part; TF_LOG* is kept for
# debugging. No proxies: everything here is on loopback.
while read -r name; do
    [[ $name == TF_LOG* ]] || unset "$name"
done < <(compgen -e | grep '^TF_' || true)
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1

# --- The registry ---------------------------------------------------------------
"$support/make_ca.sh" "$root/tls" localhost 127.0.0.1
# Go (terraform) trusts exactly this CA and nothing from the system.
mkdir -p "$root/no-system-certs"
export SSL_CERT_FILE=$root/tls/ca.pem SSL_CERT_DIR=$root/no-system-certs

TOKEN=hk-e2e-$(openssl rand -hex 24)
log=$root/requests.jsonl
: >"$log"
python3 "$support/https_registry.py" --port-file "$root/port" --cert "$root/tls/server.pem" \
    --key "$root/tls/server.key" --token "$TOKEN" --log "$log" 2>"$root/registry.stderr" &
server_pid=$!
stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for _ in $(seq 1 200); do
    [[ -s "$root/port" ]] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$root/registry.stderr"; fail "the registry server died at start-up"; }
    sleep 0.05
done
[[ -s "$root/port" ]] || { cat "$root/registry.stderr"; fail "the registry server did not write its port within 10s"; }
port=$(<"$root/port")
# Not localhost:PORT: terraform refuses a module registry hostname without a
# dot ("invalid module registry hostname: must contain at least one dot",
# terraform-registry-address ParseModuleSource). The IP literal is loopback,
# needs no name resolution, and the certificate lists it as an IP SAN.
host=127.0.0.1:$port
echo "registry at https://$host/ (log: $log)"

# --- The token goes into the keyring --------------------------------------------
printf '{"token":"%s"}' "$TOKEN" | "$helper" store "$host" ||
    fail "terraform-credentials-hostkeeper store $host exited with $?"
[[ $("$helper" get "$host") == "{\"token\":\"$TOKEN\"}" ]] ||
    fail "terraform-credentials-hostkeeper get $host does not give back the stored token"
pass "the helper stored the token for $host and gives it back"
# Stop the daemon the helper started: terraform's own helper run must start a
# fresh one (through the plugin-directory symlink) that reads the keyring, not
# a warm in-memory cache.
"$bin/hostkeeper" stop >/dev/null || fail "hostkeeper stop exited with $?"

# --- Terraform's configuration ----------------------------------------------------
# The helper is found in the per-user plugin directory by its name,
# terraform-credentials-<credentials_helper label>.
mkdir -p "$HOME/.terraform.d/plugins"
ln -sf "$helper" "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper"
export TF_CLI_CONFIG_FILE=$root/terraform.rc
cat >"$TF_CLI_CONFIG_FILE" <<'RC'
credentials_helper "hostkeeper" {
  args = ["--timeout=20"]
}
RC

# make_workdir DIR: a configuration that uses our registry's module.
make_workdir() {
    mkdir -p "$1"
    cat >"$1/main.tf" <<TF
module "hello" {
  source  = "$host/acme/hello/null"
  version = "1.0.0"
}

output "greeting" {
  value = module.hello.greeting
}
TF
}

# init DIR OUTFILE: runs terraform init in DIR; its status is init's.
init() {
    (cd "$1" && "$terraform" init -input=false -no-color) >"$2" 2>&1
}

show() {
    echo "---- $1 ----"
    cat "$1"
    echo "---- end of $1 ----"
}

# requests LOG PATH: "STATUS AUTHORIZATION" ("null" when there was none) for
# each logged request for PATH, one per line.
requests() {
    python3 - "$1" "$2" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    entry = json.loads(line)
    if entry["path"] == sys.argv[2]:
        auth = entry["authorization"]
        print(entry["status"], "null" if auth is None else auth)
PY
}

# expect_requests LOG PATH STATUS AUTH WHAT: PATH was requested, and every
# request for it got STATUS and had Authorization AUTH ("null": none).
expect_requests() {
    local seen
    seen=$(requests "$1" "$2")
    [[ -n "$seen" ]] || { show "$1"; fail "$5: the registry never saw a request for $2"; }
    if grep -qvxF -- "$3 $4" <<<"$seen"; then
        show "$1"
        fail "$5: a request for $2 did not get $3 with Authorization '$4'"
    fi
    pass "$5 ($(wc -l <<<"$seen") request(s) for $2, each $3)"
}

discovery=/.well-known/terraform.json
versions=/v1/modules/acme/hello/null/versions
download=/v1/modules/acme/hello/null/1.0.0/download
archive=/archives/hello-1.0.0.tar.gz

# --- terraform init with the token from the keyring ------------------------------
make_workdir "$root/work1"
if init "$root/work1" "$root/init1.out"; then
    pass "terraform init succeeded with module source $host/acme/hello/null"
else
    rc=$?
    show "$root/init1.out"
    show "$log"
    fail "terraform init exited with $rc"
fi
if ! grep -qs 'hello from the keyring' "$root/work1/.terraform/modules/hello/main.tf"; then
    show "$root/init1.out"
    fail "the module's main.tf was not installed into .terraform/modules/hello"
fi
pass "the module from the registry's archive is installed"

expect_requests "$log" "$discovery" 200 "Bearer $TOKEN" "service discovery carried the keyring's token"
expect_requests "$log" "$versions" 200 "Bearer $TOKEN" "the versions request carried the keyring's token"
expect_requests "$log" "$download" 204 "Bearer $TOKEN" "the download request carried the keyring's token"
expect_requests "$log" "$archive" 200 null "the archive request carried no Authorization header"

# We stopped the daemon after storing: a running one that looked the keyring
# up was started by terraform's run of the helper, through the symlink.
"$bin/hostkeeper" status --json >"$root/status.json" || fail "no hostkeeperd is running after terraform init"
lookups=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["credentials"]["keyring_lookups"])' <"$root/status.json")
[[ $lookups -ge 1 ]] || { show "$root/status.json"; fail "hostkeeperd made no keyring lookup during terraform init"; }
pass "terraform's helper run started hostkeeperd, which read the keyring ($lookups lookup(s))"

found=$(find "$HOME/.terraform.d" -name credentials.tfrc.json)
[[ -z "$found" ]] || fail "terraform wrote a plain-text credentials file: $found"
pass "no credentials.tfrc.json under \$HOME/.terraform.d"

# --- Negative: without the keyring entry, init must fail with a 401 -------------
"$helper" forget "$host" || fail "terraform-credentials-hostkeeper forget $host exited with $?"
[[ $("$helper" get "$host") == "{}" ]] || fail "terraform-credentials-hostkeeper get $host still answers after forget"
pass "the helper forgot the token for $host"

lines_before=$(wc -l <"$log")
make_workdir "$root/work2"
if init "$root/work2" "$root/init2.out"; then
    show "$root/init2.out"
    fail "terraform init succeeded without a token in the keyring"
fi
pass "terraform init fails once the token is forgotten"
tail -n "+$((lines_before + 1))" "$log" >"$root/requests2.jsonl"
expect_requests "$root/requests2.jsonl" "$discovery" 401 null \
    "without the keyring entry, service discovery went without a token and got 401"
if grep -qF '"authorization": "' "$root/requests2.jsonl"; then
    show "$root/requests2.jsonl"
    fail "after forget, a request still carried an Authorization header"
fi
pass "after forget, no request carried an Authorization header"
grep -q 401 "$root/init2.out" || { show "$root/init2.out"; fail "terraform's error does not mention the 401"; }
pass "terraform's error names the 401: $(grep -m1 -o '[^│]*401[^│]*' "$root/init2.out" | sed 's/^ *//')"

echo "PASS: terraform init got its registry token from the OS keyring through hostkeeper"
