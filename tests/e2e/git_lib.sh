# tests/e2e/git_lib.sh — sourced by the git credential helper's end-to-end
# scripts (git_helper.sh, git_terraform.sh): checks BIN_DIR ($1) and the
# world it runs in, chooses the keyring backend from that world, makes a
# throw-away CA and a bare repository, starts the real git smart-HTTP server
# (tests/support/git_https_server.py: git http-backend over TLS, Basic
# authentication whose password must be $TOKEN) and gives git a configuration
# of its own. Set e2e_name before sourcing; a scenario may set git_server_args
# (an array) for more server options.
#   tests/support/keyring-env.sh SCRIPT BIN_DIR   the Secret Service (gnome-keyring)
#   tests/support/pass-env.sh SCRIPT BIN_DIR      pass (no D-Bus)
# shellcheck shell=bash

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
support=$(cd "$here/../support" && pwd)
# shellcheck source=../support/script_lib.sh
source "$support/script_lib.sh"

[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
bin_dir "$1" git-credential-hostkeeper terraform-credentials-hostkeeper hostkeeperd hostkeeper
# shellcheck disable=SC2034  # read by the scripts that source this
git_helper=$bin/git-credential-hostkeeper
tf_helper=$bin/terraform-credentials-hostkeeper
need python3 openssl git

# --- The world and its backend -----------------------------------------------------
# shellcheck source=keyring_world.sh
source "$here/keyring_world.sh"

# --- git: the helper on PATH, a configuration of its own, no prompts ----------------
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
unset GIT_ASKPASS SSH_ASKPASS GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT
export PATH=$bin:$PATH
export GIT_TERMINAL_PROMPT=0 GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$root/gitconfig
"$support/make_ca.sh" "$root/tls" localhost 127.0.0.1
# Both ways git can be told to trust the throw-away CA: the variable for
# every git, and the configuration for the gits that read it only.
export GIT_SSL_CAINFO=$root/tls/ca.pem
cat >"$GIT_CONFIG_GLOBAL" <<CONFIG
[user]
	name = hostkeeper e2e
	email = e2e@hostkeeper.invalid
[http]
	sslCAInfo = $root/tls/ca.pem
[init]
	defaultBranch = main
CONFIG

# --- The repository and the server -------------------------------------------------
rm -rf "$root/repos" "$root/src"
git init -q --bare "$root/repos/net.git"
git init -q "$root/src"
printf 'output "greeting" {\n  value = "hello from git"\n}\n' >"$root/src/main.tf"
git -C "$root/src" add main.tf
git -C "$root/src" commit -qm "the module"
git -C "$root/src" tag v1.0.0
git -C "$root/src" push -q "$root/repos/net.git" HEAD:refs/heads/main v1.0.0
git -C "$root/repos/net.git" symbolic-ref HEAD refs/heads/main

TOKEN=hk-git-$(openssl rand -hex 20)
log=$root/requests.jsonl
: >"$log"
rm -f "$root/port" "$root/http-port"
# shellcheck disable=SC2154  # git_server_args: set by the scenario, or not at all
python3 "$support/git_https_server.py" --port-file "$root/port" --http-port-file "$root/http-port" \
    --cert "$root/tls/server.pem" --key "$root/tls/server.key" --token "$TOKEN" \
    --repos "$root/repos" --log "$log" ${git_server_args[@]+"${git_server_args[@]}"} \
    2>"$root/server.stderr" &
server_pid=$!
stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
}
on_exit stop_server
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq 1 200); do
    [[ -s "$root/port" && -s "$root/http-port" ]] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$root/server.stderr"; fail "the git server died at start-up"; }
    sleep 0.05
done
[[ -s "$root/port" && -s "$root/http-port" ]] || { cat "$root/server.stderr"; fail "the git server wrote no ports within 10s"; }
host=127.0.0.1:$(<"$root/port")
http_host=127.0.0.1:$(<"$root/http-port")
echo "git server at https://$host/ and http://$http_host/ (log: $log)"

# --- Helpers ------------------------------------------------------------------------
# tf_store HOST TOKEN: the Terraform token for HOST, through terraform-credentials-hostkeeper.
tf_store() {
    printf '{"token":"%s"}' "$2" | timeout 60 "$tf_helper" store "$1" || fail "terraform helper store $1 failed"
}
# tf_token HOST: the Terraform credentials of HOST as the helper prints them.
tf_token() { timeout 60 "$tf_helper" get "$1"; }

# requests WHERE: the log lines (JSON) whose scheme://host is WHERE, from
# line FIRST on (default 1), as "METHOD PATH STATUS AUTH USER TOKEN_OK".
requests() {
    python3 - "$log" "$1" "${2:-1}" <<'PY'
import json, sys
for number, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    e = json.loads(line)
    if number >= int(sys.argv[3]) and "%s://%s" % (e["scheme"], e["host"]) == sys.argv[2]:
        print(e["method"], e["path"], e["status"], e["auth"], e["user"], e["token_ok"])
PY
}
# log_mark: the number of the log's next line (for requests' FIRST).
log_mark() { echo $(($(wc -l <"$log") + 1)); }

# gitc WHAT OUT ARGS...: git ARGS with stdin from the caller; stdout and
# stderr in OUT; sets git_rc.
# shellcheck disable=SC2034  # git_rc: read by the scripts that source this
gitc() {
    local out=$1
    shift
    git_rc=0
    timeout 120 git "$@" >"$out" 2>&1 || git_rc=$?
}

# fill HOST [MORE LINES]: `git credential fill` for https://HOST through the
# helper only (paths passed on: useHttpPath); its output in $root/fill.out;
# sets git_rc.
fill() {
    gitc "$root/fill.out" -c credential.helper= -c credential.helper=hostkeeper -c credential.useHttpPath=true \
        credential fill \
        < <(printf 'protocol=https\nhost=%s\n%s\n' "$1" "${2:-}")
}

# git_items HOST: how many git credentials the keyring holds for HOST
# (Secret Service: schema io.hostkeeper.GitCredentials, attribute host;
# pass: the entries under hostkeeper/git/ whose key names HOST).
b64url_decode() { python3 -c 'import base64, sys; s = sys.argv[1]; print(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)).decode())' "$1"; }
git_items() {
    if [[ $backend == secret-service ]]; then
        # secret-tool says nothing for no match; anything else it says
        # without success is a failure, never a count of 0.
        local out status=0
        out=$(secret-tool search --all host "$1" 2>&1) || status=$?
        if ((status != 0)) && [[ -n $out ]]; then
            echo "FAIL: secret-tool search --all host $1: $out" >&2
            exit 1
        fi
        grep -c '^schema = io.hostkeeper.GitCredentials$' <<<"$out" || true
    else
        local file n=0 key
        for file in "$store"/hostkeeper/git/*.gpg; do
            [[ -f $file ]] || continue
            key=$(b64url_decode "$(basename "$file" .gpg)")
            [[ $key == *"@$1" || $key == *"@$1/"* ]] && n=$((n + 1))
        done
        echo "$n"
    fi
}
