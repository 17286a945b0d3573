# tests/e2e/docker_lib.sh — sourced by the Docker credential helper's
# end-to-end scripts (docker_helper.sh, podman_login.sh): checks BIN_DIR ($1)
# and the world it runs in, chooses the keyring backend from that world, and
# defines the helpers they share. Set e2e_name before sourcing.
#   tests/support/keyring-env.sh SCRIPT BIN_DIR   the Secret Service (gnome-keyring)
#   tests/support/pass-env.sh SCRIPT BIN_DIR      pass (no D-Bus)
# shellcheck shell=bash

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
support=$(cd "$here/../support" && pwd)
# shellcheck source=../support/script_lib.sh
source "$support/script_lib.sh"

[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
bin_dir "$1" docker-credential-hostkeeper terraform-credentials-hostkeeper hostkeeperd hostkeeper
docker_helper=$bin/docker-credential-hostkeeper
# shellcheck disable=SC2034  # read by the scripts that source this
tf_helper=$bin/terraform-credentials-hostkeeper
need python3

# --- The world and its backend -----------------------------------------------------
# shellcheck source=keyring_world.sh
source "$here/keyring_world.sh"

# dh OUT VERB [ARGS...]: the Docker helper as the clients run it, standard
# input from the caller (a redirection, so that dh_rc is set in this shell);
# stdout in OUT, stderr in OUT.err; sets dh_rc.
dh() {
    local out=$1
    shift
    dh_rc=0
    timeout 60 "$docker_helper" "$@" >"$out" 2>"$out.err" || dh_rc=$?
}

# expect_dh WHAT RC EXPECTED_STDOUT VERB [ARGS...] <INPUT: the helper exits
# RC and prints exactly EXPECTED_STDOUT (a final newline included).
expect_dh() {
    local what=$1 rc=$2 want=$3
    shift 3
    dh "$root/dh.out" "$@"
    if [[ $dh_rc != "$rc" ]]; then
        show "$root/dh.out"
        show "$root/dh.out.err"
        fail "$what: docker-credential-hostkeeper $* exited with $dh_rc, not $rc"
    fi
    if [[ "$(cat "$root/dh.out"; echo .)" != "$want." ]]; then
        show "$root/dh.out"
        fail "$what: docker-credential-hostkeeper $* printed the above, not: $want"
    fi
    pass "$what"
}

# creds SERVER USERNAME SECRET: the JSON the clients write to `store` and
# read from `get`.
creds() { printf '{"ServerURL":"%s","Username":"%s","Secret":"%s"}' "$1" "$2" "$3"; }

# docker_store SERVER USERNAME SECRET: fails the scenario unless it worked.
docker_store() {
    dh "$root/store.out" store < <(creds "$1" "$2" "$3")
    [[ $dh_rc == 0 && ! -s "$root/store.out" ]] ||
        { show "$root/store.out"; fail "docker-credential-hostkeeper store $1 exited with $dh_rc"; }
}

# expect_get SERVER USERNAME SECRET WHAT
expect_get() {
    expect_dh "$4" 0 "$(creds "$1" "$2" "$3")"$'\n' get <<<"$1"
}

# expect_absent SERVER WHAT: get says the clients' not-found line.
expect_absent() {
    expect_dh "$2" 1 $'credentials not found in native keychain\n' get <<<"$1"
}

# --- What the keyring holds ---------------------------------------------------------
# b64url TEXT: unpadded base64url, as the pass entries are named.
b64url() { printf '%s' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='; }

# docker_items SERVER: the number of keyring items holding Docker credentials
# for SERVER (Secret Service: schema io.hostkeeper.DockerCredentials,
# attribute server; pass: hostkeeper/docker/B64URL.gpg).
docker_items() {
    if [[ $backend == secret-service ]]; then
        secret-tool search --all server "$1" 2>&1 | grep -c '^schema = io.hostkeeper.DockerCredentials$' || true
    else
        local file
        file=$store/hostkeeper/docker/$(b64url "$1").gpg
        if [[ -f $file ]]; then echo 1; else echo 0; fi
    fi
}
