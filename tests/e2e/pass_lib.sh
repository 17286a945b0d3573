# tests/e2e/pass_lib.sh — sourced by the pass backend's end-to-end scripts
# (pass_backend.sh, pass_migrate.sh): checks BIN_DIR ($1) and the
# tests/support/pass-env.sh world, and defines the helpers they share. Set
# e2e_name (the scenario's directory under $HK_PASS_ROOT) before sourcing.
# shellcheck shell=bash

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
support=$(cd "$here/../support" && pwd)
# shellcheck source=../support/script_lib.sh
source "$support/script_lib.sh"

[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
[[ -n "${HK_PASS_ROOT:-}" && -d "$HK_PASS_ROOT" && -n "${HK_PASS_KEY_PLAIN:-}" ]] ||
    die "HK_PASS_ROOT is not set: run me through tests/support/pass-env.sh"
bin_dir "$1" terraform-credentials-hostkeeper hostkeeperd hostkeeper
helper=$bin/terraform-credentials-hostkeeper
need python3
# shellcheck source=/dev/null
source "$HK_PASS_LIB"

root=$HK_PASS_ROOT/${e2e_name:?set e2e_name before sourcing pass_lib.sh}
mkdir -p "$root"
store=$HOME/.password-store
config=$XDG_CONFIG_HOME/hostkeeper/config.toml
# shellcheck disable=SC2034  # used by the sourcing scripts
request=$support/hk_request.py


# jq-like: json_get PATH <JSON (dots between keys; numbers index arrays);
# strings raw, everything else as JSON ("null" for null or a missing key).
json_get() {
    python3 -c 'import json, sys
d = json.load(sys.stdin)
for k in [k for k in sys.argv[1].split(".") if k]:
    if isinstance(d, list):
        d = d[int(k)]
    elif isinstance(d, dict):
        d = d.get(k)
    else:
        d = None
print(d if isinstance(d, str) else json.dumps(d))' "$1"
}

# stop_daemon: the running hostkeeperd (if any) exits; the next helper run
# starts a fresh one on demand, which reads config.toml again.
stop_daemon() { "$bin/hostkeeper" stop >/dev/null 2>&1 || true; }

# use_backend BACKEND [STORE_DIR]: config.toml's [keyring] says BACKEND (and
# password_store_dir STORE_DIR); the daemon is stopped so that the next
# helper run starts one with it.
use_backend() {
    mkdir -p "$(dirname "$config")"
    {
        echo "[keyring]"
        echo "backend = \"$1\""
        [[ -z "${2:-}" ]] || echo "password_store_dir = \"$2\""
    } >"$config"
    stop_daemon
}

# run_helper OUT ARGS...: runs the helper (60 s at most) with ARGS, stdin from
# the caller (a redirection, not a pipe: helper_rc must be set in this
# shell); stdout in $OUT, stderr in $OUT.err; sets helper_rc.
run_helper() {
    local out=$1
    shift
    helper_rc=0
    timeout 60 "$helper" "$@" >"$out" 2>"$out.err" || helper_rc=$?
}

# store_token HOST TOKEN: through the helper; fails the scenario unless it worked.
store_token() {
    run_helper "$root/store.out" store "$1" <<<"{\"token\":\"$2\"}"
    [[ $helper_rc == 0 ]] || { show "$root/store.out.err"; fail "helper store $1 exited with $helper_rc"; }
}

# expect_get HOST TOKEN WHAT: the helper's get prints exactly {"token":"TOKEN"}
# (TOKEN empty: exactly {}) and exits 0.
expect_get() {
    local want='{}'
    [[ -z "$2" ]] || want="{\"token\":\"$2\"}"
    run_helper "$root/get.out" get "$1"
    [[ $helper_rc == 0 ]] || { show "$root/get.out.err"; fail "$3: helper get $1 exited with $helper_rc"; }
    [[ "$(<"$root/get.out")" == "$want" ]] || { show "$root/get.out"; fail "$3: helper get $1 did not print $want"; }
    pass "$3"
}

# entry HOST: the store file of HOST (a port H:P is H_P).
entry() { echo "$store/hostkeeper/${1//:/_}.gpg"; }

# decrypted FILE: FILE's plain text, byte for byte (a trailing "." is added
# and must be stripped by the caller, so that trailing newlines survive $(...)).
decrypted() {
    gpg --batch --quiet --decrypt "$1" 2>/dev/null
    echo .
}

# recipients FILE: the key ids FILE is encrypted to, one per line.
recipients() {
    gpg --batch --list-packets --pinentry-mode cancel "$1" 2>/dev/null |
        sed -n 's/.*:pubkey enc packet:.* keyid \([0-9A-F]*\).*/\1/p'
}

status_json() { "$bin/hostkeeper" status --json; }
