# tests/e2e/lib.sh — sourced by the end-to-end scripts: finds terraform (exit
# 77 when absent), checks BIN_DIR ($1) and the keyring-env world, cleans the
# environment of TF_* settings, starts the loopback HTTPS registry that requires
# $TOKEN (at $host), and defines the helpers the scenarios share. Set
# e2e_name (the scenario's directory under $HK_TEST_ROOT) before sourcing.
# shellcheck shell=bash

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
support=$(cd "$here/../support" && pwd)
# shellcheck source=../support/script_lib.sh
source "$support/script_lib.sh"

if [[ -x /usr/local/bin/terraform ]]; then
    terraform=/usr/local/bin/terraform
elif terraform=$(command -v terraform); then
    :
else
    echo "SKIP: terraform is not installed; the end-to-end test needs it"
    exit 77
fi

[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
[[ -n "${HK_TEST_ROOT:-}" && -d "$HK_TEST_ROOT" ]] ||
    die "HK_TEST_ROOT is not set: run me through tests/support/keyring-env.sh"
bin_dir "$1" terraform-credentials-hostkeeper hostkeeperd hostkeeper
# shellcheck disable=SC2034  # read by the scripts that source this
helper=$bin/terraform-credentials-hostkeeper
need python3 openssl

root=$HK_TEST_ROOT/${e2e_name:?set e2e_name before sourcing lib.sh}
mkdir -p "$root"

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
# A scenario may set ca_names (an array) before sourcing: more names for the
# server certificate (names it maps to 127.0.0.1 itself).
# shellcheck disable=SC2154  # ca_names: set by the scenario, or not at all
"$support/make_ca.sh" "$root/tls" localhost 127.0.0.1 ${ca_names[@]+"${ca_names[@]}"}
# Go (terraform) trusts exactly this CA and nothing from the system.
mkdir -p "$root/no-system-certs"
export SSL_CERT_FILE=$root/tls/ca.pem SSL_CERT_DIR=$root/no-system-certs

TOKEN=hk-e2e-$(openssl rand -hex 24)
log=$root/requests.jsonl
: >"$log"
# A scenario may set registry_args (an array) before sourcing: more options for
# https_registry.py, such as --versions.
# shellcheck disable=SC2154  # registry_args: set by the scenario, or not at all
python3 "$support/https_registry.py" --port-file "$root/port" --cert "$root/tls/server.pem" \
    --key "$root/tls/server.key" --token "$TOKEN" --log "$log" ${registry_args[@]+"${registry_args[@]}"} \
    2>"$root/registry.stderr" &
server_pid=$!
extra_pids=()  # start_registry's servers
stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    local pid
    for pid in ${extra_pids[@]+"${extra_pids[@]}"}; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}
on_exit stop_server
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

# workdir DIR HOST MODULE PROVIDER VERSION: a configuration using HOST's
# MODULE (NS/NAME/SYSTEM, version 1.0.0) and provider PROVIDER (NS/TYPE) at VERSION.
workdir() {
    mkdir -p "$1"
    cat >"$1/main.tf" <<TF
terraform {
  required_providers {
    p = {
      source  = "$2/$4"
      version = "$5"
    }
  }
}

module "m" {
  source  = "$2/$3"
  version = "1.0.0"
}

output "greeting" {
  value = module.m.greeting
}
TF
}

# init DIR OUTFILE: runs terraform init in DIR; its status is init's.
init() {
    (cd "$1" && "$terraform" init -input=false -no-color) >"$2" 2>&1
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

# The registry's paths, for the scenarios' expect_requests.
# shellcheck disable=SC2034
discovery=/.well-known/terraform.json
# shellcheck disable=SC2034
versions=/v1/modules/acme/hello/null/versions
# shellcheck disable=SC2034
download=/v1/modules/acme/hello/null/1.0.0/download
# shellcheck disable=SC2034
archive=/archives/hello-1.0.0.tar.gz


# start_registry NAME TOKEN [ARGS...]: one more https_registry.py (same CA and
# certificate), requiring TOKEN, logging to $root/NAME.jsonl, with ARGS (such
# as --port P to come back where a stopped one was); stopped on exit. Sets
# registry_pid and registry_port.
start_registry() {
    local name=$1 token=$2 _
    shift 2
    rm -f "$root/$name.port"
    python3 "$support/https_registry.py" --port-file "$root/$name.port" --cert "$root/tls/server.pem" \
        --key "$root/tls/server.key" --token "$token" --log "$root/$name.jsonl" "$@" \
        2>>"$root/$name.stderr" &
    registry_pid=$!
    extra_pids+=("$registry_pid")
    for _ in $(seq 1 200); do
        [[ -s "$root/$name.port" ]] && break
        kill -0 "$registry_pid" 2>/dev/null || { cat "$root/$name.stderr"; fail "registry $name died at start-up"; }
        sleep 0.05
    done
    [[ -s "$root/$name.port" ]] || fail "registry $name did not write its port within 10s"
    # shellcheck disable=SC2034  # read by the scenario
    registry_port=$(<"$root/$name.port")
}

# tf_login HOST: `terraform login HOST` through its OAuth authorization-code
# flow (login.v1), non-interactively: "yes" on its stdin, then curl plays the
# browser, following the authorization URL terraform prints (the registry
# redirects it to terraform's callback on localhost). Output in
# $root/login-HOST.out (":" as "_"); fails the scenario unless login succeeds.
# curl's own result does not decide: terraform closes its callback server as
# soon as the handler has passed the code on, which can be before the handler
# has written its page, so under load the "browser" may see an empty reply
# (curl exit 52) from a login that goes on to succeed.
tf_login() {
    local out=$root/login-${1//:/_}.out fifo=$root/login-${1//:/_}.in url="" login_pid rc=0 _
    rm -f "$fifo"
    mkfifo "$fifo"
    (cd "$root" && exec "$terraform" login -no-color "$1" <"$fifo" >"$out" 2>&1) &
    login_pid=$!
    exec 3>"$fifo"
    echo yes >&3
    for _ in $(seq 1 200); do
        # Quotes excluded: where xdg-open is installed, terraform's output also
        # has its "no method available for opening 'URL'" line.
        url=$(grep -o "https://[^ ']*/app/oauth/authorize[^ ']*" "$out" | head -n1 || true)
        [[ -n $url ]] && break
        kill -0 "$login_pid" 2>/dev/null || break
        sleep 0.05
    done
    local curl_rc=0
    [[ -n $url ]] && { curl -sS -L --max-time 30 --cacert "$root/tls/ca.pem" -o "$out.html" "$url" || curl_rc=$?; }
    exec 3>&-
    # Without a callback, terraform login waits for one forever: 60 s bound.
    for _ in $(seq 1 600); do
        kill -0 "$login_pid" 2>/dev/null || break
        sleep 0.1
    done
    if [[ -z $url ]] || kill -0 "$login_pid" 2>/dev/null; then
        # terraform login waits for its callback and outlives a SIGTERM there.
        kill -KILL "$login_pid" 2>/dev/null || true
        wait "$login_pid" 2>/dev/null || true
        show "$out"
        fail "terraform login $1: ${url:+no callback reached terraform (curl exit $curl_rc)}${url:-no authorization URL}"
    fi
    wait "$login_pid" || rc=$?
    [[ $rc == 0 ]] || { show "$out"; fail "terraform login $1 exited with $rc (curl exit $curl_rc)"; }
    grep -q 'Success! Terraform has obtained and saved an API token' "$out" ||
        { show "$out"; fail "terraform login $1 did not report success"; }
}
