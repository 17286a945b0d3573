#!/usr/bin/env bash
# terraform_locked_tty.sh BIN_DIR
#
# End to end: when the keyring cannot give a token, Terraform logs the
# credentials helper's failure only at TF_LOG=WARN and goes on without
# credentials, so the user sees a bare "401 Unauthorized". The helper also
# writes its reason to the controlling terminal: this test runs the real
# `terraform init` under a pseudo-terminal (util-linux `script`), with the
# pass backend and a gpg key whose passphrase gpg-agent has forgotten (as
# after default-cache-ttl), and checks that what the terminal shows (no
# TF_LOG, no log file) names the host and the fix, `hostkeeper unlock`:
#   - the token is stored and terraform init works while the passphrase is
#     cached;
#   - gpg-agent forgets it (reloadagent), the daemon is restarted (no warm
#     cache): init fails, and the terminal shows "hostkeeper: no credentials
#     for HOST: ... hostkeeper unlock ...";
#   - HOSTKEEPER_NO_TTY=1: the same init, and the line is not on the terminal;
#   - without a controlling terminal (setsid) the helper fails as before:
#     exit 1, the reason on stderr, nothing on stdout;
#   - the passphrase cached again (as `hostkeeper unlock` does), init works.
#
# Run it inside tests/support/pass-env.sh (a headless world, its own
# gpg-agent and keys):
#   tests/support/pass-env.sh tests/e2e/terraform_locked_tty.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no
# terraform, no script(1), no pass or gpg).
set -euo pipefail

e2e_name=e2e-locked-tty  # read by lib.sh
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

for tool in script setsid; do
    command -v "$tool" >/dev/null ||
        { echo "SKIP: $tool (util-linux) is missing; the test needs a pseudo-terminal"; exit 77; }
done
if [[ -z "${HK_PASS_ROOT:-}" || -z "${HK_PASS_KEY_LOCKED:-}" ]]; then
    echo "$0: HK_PASS_ROOT is not set: run me through tests/support/pass-env.sh" >&2
    exit 2
fi
# shellcheck source=/dev/null
source "$HK_PASS_LIB"
unset TF_LOG TF_LOG_PATH TF_LOG_CORE TF_LOG_PROVIDER HOSTKEEPER_NO_TTY

# --- The pass backend, hostkeeper's entries for a key with a passphrase ------------
mkdir -p "$XDG_CONFIG_HOME/hostkeeper"
printf '[keyring]\nbackend = "pass"\n' >"$XDG_CONFIG_HOME/hostkeeper/config.toml"
command pass init -p hostkeeper "$HK_PASS_KEY_LOCKED" >/dev/null || fail "pass init -p hostkeeper failed"
"$bin/hostkeeper" stop >/dev/null 2>&1 || true
hk_pass_preset "$HK_PASS_KEY_LOCKED" "$HK_PASS_LOCKED_PASSPHRASE"

printf '{"token":"%s"}' "$TOKEN" | "$helper" store "$host" ||
    fail "terraform-credentials-hostkeeper store $host exited with $?"
[[ $("$helper" get "$host") == "{\"token\":\"$TOKEN\"}" ]] ||
    fail "with the passphrase cached, the helper does not give back the stored token"
gpg --batch --list-packets --pinentry-mode cancel "$HOME/.password-store/hostkeeper/${host//:/_}.gpg" 2>/dev/null |
    grep -q "keyid $HK_PASS_SUBKEY_LOCKED" || fail "hostkeeper/${host//:/_} is not encrypted to the key with a passphrase"
pass "the token for $host is in pass, encrypted to a key with a passphrase"

mkdir -p "$HOME/.terraform.d/plugins"
ln -sf "$helper" "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper"
export TF_CLI_CONFIG_FILE=$root/terraform.rc
printf 'credentials_helper "hostkeeper" {\n  args = ["--timeout=20"]\n}\n' >"$TF_CLI_CONFIG_FILE"

# tty_init DIR OUT: terraform init in DIR under a new pseudo-terminal, which is
# the controlling terminal of terraform and of the helpers it runs; OUT is what
# the terminal showed. Its status is init's.
tty_init() {
    make_workdir "$1"
    (cd "$1" && script -qec "$(printf '%q ' "$terraform" init -input=false -no-color)" /dev/null) \
        </dev/null >"$2" 2>&1
}

make_workdir "$root/work-cached"
init "$root/work-cached" "$root/init-cached.out" ||
    { show "$root/init-cached.out"; fail "terraform init failed while the passphrase was cached"; }
pass "terraform init works while gpg-agent holds the passphrase"

# --- gpg-agent forgets the passphrase: the terminal says why -----------------------
hk_pass_forget_passphrases
"$bin/hostkeeper" stop >/dev/null 2>&1 || true
"$helper" get "$host" >/dev/null 2>"$root/helper.err" && fail "the helper's get worked without the passphrase"
grep -q 'hostkeeper unlock' "$root/helper.err" || { show "$root/helper.err"; fail "the helper's error does not name hostkeeper unlock"; }

if tty_init "$root/work-locked" "$root/tty-locked.out"; then
    show "$root/tty-locked.out"
    fail "terraform init succeeded without the passphrase"
fi
grep -q '401' "$root/tty-locked.out" || { show "$root/tty-locked.out"; fail "terraform's error does not mention the 401"; }
line=$(grep -m1 -F "hostkeeper: no credentials for $host: " "$root/tty-locked.out" | tr -d '\r' || true)
[[ -n $line ]] || { show "$root/tty-locked.out"; fail "the terminal does not show the helper's reason for $host"; }
grep -qF 'hostkeeper unlock' <<<"$line" || { show "$root/tty-locked.out"; fail "the terminal line does not name the fix, hostkeeper unlock"; }
grep -qF "$TOKEN" "$root/tty-locked.out" && fail "the terminal output holds the token"
pass "terraform init's terminal shows ($(grep -c -F "hostkeeper: no credentials for $host: " "$root/tty-locked.out") time(s)): $line"

HOSTKEEPER_NO_TTY=1 tty_init "$root/work-quiet" "$root/tty-quiet.out" && fail "terraform init succeeded without the passphrase"
grep -q '401' "$root/tty-quiet.out" || { show "$root/tty-quiet.out"; fail "HOSTKEEPER_NO_TTY=1: terraform's error does not mention the 401"; }
if grep -qF 'hostkeeper: no credentials for' "$root/tty-quiet.out"; then
    show "$root/tty-quiet.out"
    fail "HOSTKEEPER_NO_TTY=1: the helper still wrote to the terminal"
fi
pass "HOSTKEEPER_NO_TTY=1 keeps the line off the terminal"

# --- No controlling terminal: the helper fails as it always did ---------------------
rc=0
setsid -w "$helper" get "$host" </dev/null >"$root/setsid.out" 2>"$root/setsid.err" || rc=$?
[[ $rc == 1 ]] || { show "$root/setsid.err"; fail "without a terminal, the helper exited $rc, not 1"; }
[[ ! -s "$root/setsid.out" ]] || { show "$root/setsid.out"; fail "without a terminal, the helper printed on stdout"; }
grep -q 'hostkeeper unlock' "$root/setsid.err" || { show "$root/setsid.err"; fail "without a terminal, stderr does not name hostkeeper unlock"; }
pass "without a controlling terminal: exit 1, the reason on stderr, nothing else"

# --- The passphrase cached again: init works -----------------------------------------
hk_pass_preset "$HK_PASS_KEY_LOCKED" "$HK_PASS_LOCKED_PASSPHRASE"
"$bin/hostkeeper" flush >/dev/null 2>&1 || true
tty_init "$root/work-unlocked" "$root/tty-unlocked.out" ||
    { show "$root/tty-unlocked.out"; fail "terraform init failed once the passphrase was cached again"; }
grep -qF 'hostkeeper: no credentials for' "$root/tty-unlocked.out" &&
    { show "$root/tty-unlocked.out"; fail "a successful init showed the helper's failure line"; }
pass "with the passphrase cached again, terraform init works and the terminal shows no helper line"

echo "PASS: terraform init under a terminal shows why the keyring gave no token"
