#!/usr/bin/env bash
# with_pass_backend.sh SCENARIO BIN_DIR
#
# Runs an end-to-end SCENARIO (terraform_init.sh, terraform_login_providers.sh,
# ...; written for the Secret Service) with hostkeeper's pass backend instead:
# config.toml says keyring.backend = "pass" and the store is git-backed, so
# that afterwards its history proves the scenario's tokens went into pass
# (at least one "Add given password for hostkeeper/..." commit), not anywhere
# else. Run it inside tests/support/pass-env.sh (no D-Bus: nothing else could
# hold them):
#   tests/support/pass-env.sh tests/e2e/with_pass_backend.sh tests/e2e/terraform_init.sh BIN_DIR
# Exit status: the scenario's (77: skipped), or 1 when the store's history
# shows no entry added.
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: $0 SCENARIO BIN_DIR" >&2; exit 2; }
[[ -n "${HK_PASS_ROOT:-}" ]] || { echo "$0: run me through tests/support/pass-env.sh" >&2; exit 2; }
[[ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ]] || { echo "$0: this world has a D-Bus session bus" >&2; exit 2; }
store=$HOME/.password-store
[[ -f $store/.gpg-id ]] || { echo "$0: no pass store at $store" >&2; exit 2; }

mkdir -p "$XDG_CONFIG_HOME/hostkeeper"
printf '[keyring]\nbackend = "pass"\n' >"$XDG_CONFIG_HOME/hostkeeper/config.toml"
pass git init >/dev/null 2>&1 || { echo "$0: pass git init failed" >&2; exit 2; }

rc=0
"$1" "$2" || rc=$?
[[ $rc == 0 ]] || exit "$rc"

added=$(git -C "$store" log --format=%s | grep -c '^Add given password for hostkeeper/' || true)
if [[ $added -lt 1 ]]; then
    echo "FAIL: the scenario passed, but no token was added to the pass store:"
    git -C "$store" log --format=%s
    exit 1
fi
echo "PASS: with the pass backend ($added entr(y/ies) added to $store: $(git -C "$store" log --format=%s | grep '^Add given password' | head -n 3 | tr '\n' ' '))"
