#!/usr/bin/env bash
# git_helper.sh BIN_DIR
#
# End to end: BIN_DIR/git-credential-hostkeeper as real git runs it
# (`credential.helper=hostkeeper`, the helper found on PATH), against the
# hostkeeperd it starts on demand, the real keyring (gnome-keyring on a
# private D-Bus, tests/support/keyring-env.sh, or pass,
# tests/support/pass-env.sh) and a real git smart-HTTP server over TLS on
# loopback (git http-backend; Basic authentication whose password must be the
# host's token):
#   - `git clone` with the Terraform token stored for the host through
#     terraform-credentials-hostkeeper succeeds, as user oauth2 (then as the
#     host's git_username from config.toml), and git's store of that answer
#     keeps nothing of its own;
#   - `hostkeeper check` and `doctor` on that host (its discovery document
#     answers 401 to the token: no Terraform services) say "not checked",
#     and git clone still gets the token;
#   - a wrong token fails, and git's erase of it leaves the Terraform token;
#   - a host with nothing stored fails without a prompt (GIT_TERMINAL_PROMPT=0);
#   - plain http:// never gets the token: the helper does not even ask the
#     daemon, and the server sees no credential;
#   - `git credential approve/fill/reject` round trips (store/get/erase):
#     the keyring item, a path kept with useHttpPath, a user name asked for,
#     a second store replacing the first, erase of what is not there;
#     expiry and refresh token through the helper itself (git 2.39 has
#     neither);
#   - a Terraform token survives `git credential reject`.
# Exit status: 0 pass, 1 fail, 2 usage/set-up error.
set -euo pipefail

e2e_name=e2e-git-helper
# shellcheck source-path=SCRIPTDIR
# shellcheck source=git_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/git_lib.sh"

clone() {  # clone URL DIR OUT [GIT OPTIONS...]: sets git_rc
    local url=$1 dir=$2 out=$3
    shift 3
    rm -rf "$dir"
    gitc "$out" -c credential.helper= -c credential.helper=hostkeeper "$@" clone "$url" "$dir"
}

# --- The version and an unknown action ----------------------------------------------
version=$("$bin/hostkeeper" --version | awk '{print $2}')
[[ $("$git_helper" --version) == "git-credential-hostkeeper $version" ]] ||
    fail "--version says '$("$git_helper" --version)'"
out=$("$git_helper" frobnicate 2>&1 < <(printf 'protocol=https\nhost=%s\n' "$host")) ||
    fail "an unknown action exited with $?"
[[ -z $out ]] || fail "an unknown action printed: $out"
pass "--version, and an unknown action does nothing and exits 0 (git's rule)"

# --- git clone with the host's Terraform token --------------------------------------
tf_store "$host" "$TOKEN"
mark=$(log_mark)
clone "https://$host/net.git" "$root/clone1" "$root/clone1.out"
[[ $git_rc == 0 ]] || { show "$root/clone1.out"; show "$log"; fail "git clone https://$host/net.git exited with $git_rc"; }
grep -q 'hello from git' "$root/clone1/main.tf" || fail "the clone has no main.tf from the repository"
seen=$(requests "https://$host" "$mark")
grep -q '^POST /net.git/git-upload-pack 200 basic oauth2 True$' <<<"$seen" ||
    { echo "$seen"; fail "the clone's fetch was not authenticated as oauth2 with the token"; }
if grep -q ' basic .* False$' <<<"$seen"; then
    echo "$seen"
    fail "git sent a credential that is not the token"
fi
pass "git clone through credential.helper=hostkeeper: the host's Terraform token as oauth2's password"
[[ $(git_items "$host") == 0 ]] ||
    fail "git's store of our own answer left $(git_items "$host") git item(s) for $host"
pass "git's store of the helper's own answer keeps nothing of its own"

# --- check and doctor on a host of git repositories (no Terraform services) ---------
# Its discovery document answers 401 to the token: no verdict on the token,
# which git goes on getting. hostkeeperd asks the host with the test CA.
printf '[discovery]\nca_file = "%s"\n' "$root/tls/ca.pem" >>"$config"
"$bin/hostkeeper" stop >/dev/null 2>&1 || true
rc=0
"$bin/hostkeeper" check "$host" >"$root/check-git.out" 2>&1 || rc=$?
[[ $rc == 0 ]] || { show "$root/check-git.out"; fail "check of a git host's token exited $rc, not 0"; }
grep -qF "$host: not checked (HTTP 401 from https://$host/.well-known/terraform.json)" "$root/check-git.out" ||
    { show "$root/check-git.out"; fail "check does not say the git host's token was not checked"; }
"$bin/hostkeeper" doctor >"$root/doctor-git.out" 2>&1 || true
grep -qF "skip  token for $host: not checked" "$root/doctor-git.out" ||
    { show "$root/doctor-git.out"; fail "doctor does not say the git host's token was not checked"; }
! grep -qF "terraform login $host" "$root/doctor-git.out" ||
    { show "$root/doctor-git.out"; fail "doctor advises terraform login for a host with no login service"; }
clone "https://$host/net.git" "$root/clone-after-doctor" "$root/clone-after-doctor.out"
[[ $git_rc == 0 ]] || { show "$root/clone-after-doctor.out"; fail "git clone after doctor and check exited with $git_rc"; }
pass "check and doctor on a git host: 'not checked', and git clone still gets the token"

# git_username from config.toml (the daemon reads it at start).
printf '[hosts."%s"]\ngit_username = "tf-alice"\n' "$host" >>"$config"
"$bin/hostkeeper" stop >/dev/null 2>&1 || true
mark=$(log_mark)
clone "https://$host/net.git" "$root/clone2" "$root/clone2.out"
[[ $git_rc == 0 ]] || { show "$root/clone2.out"; fail "git clone with git_username set exited with $git_rc"; }
grep -q '^POST /net.git/git-upload-pack 200 basic tf-alice True$' <<<"$(requests "https://$host" "$mark")" ||
    { requests "https://$host" "$mark"; fail "the clone did not authenticate as git_username tf-alice"; }
pass "the host's git_username from config.toml is the user name"

# --- A wrong token fails; git's erase leaves the Terraform token --------------------
tf_store "$host" "wrong-$TOKEN"
clone "https://$host/net.git" "$root/clone3" "$root/clone3.out"
[[ $git_rc != 0 ]] || { show "$root/clone3.out"; fail "git clone with a wrong token succeeded"; }
grep -qi 'Authentication failed' "$root/clone3.out" || { show "$root/clone3.out"; fail "git clone with a wrong token did not fail on authentication"; }
[[ $(tf_token "$host") == "{\"token\":\"wrong-$TOKEN\"}" ]] ||
    fail "git's erase after the refused token changed the Terraform token: $(tf_token "$host")"
pass "a wrong token: git clone fails with 'Authentication failed', and git's erase leaves the Terraform token"
tf_store "$host" "$TOKEN"

# --- A host with nothing stored: no answer, no prompt -------------------------------
other=localhost:${host##*:}
mark=$(log_mark)
clone "https://$other/net.git" "$root/clone4" "$root/clone4.out"
[[ $git_rc != 0 ]] || { show "$root/clone4.out"; fail "git clone of a host with nothing stored succeeded"; }
grep -q 'terminal prompts disabled' "$root/clone4.out" || { show "$root/clone4.out"; fail "git did not get to its prompt"; }
! grep -q 'git-credential-hostkeeper:' "$root/clone4.out" || { show "$root/clone4.out"; fail "the helper reported an error"; }
[[ -z $(requests "https://$other" "$mark" | grep -v ' None None False$' || true) ]] ||
    { requests "https://$other" "$mark"; fail "git sent a credential to $other"; }
pass "a host with nothing stored: the helper answers nothing, git fails without a prompt, no credential sent"

# --- Plain http: never the token, the daemon not even asked -------------------------
tf_store "$http_host" "$TOKEN"
mark=$(log_mark)
# An unusable socket: had the helper asked the daemon, it would have said so on stderr.
HOSTKEEPER_SOCKET=$root/no-such-dir/socket clone "http://$http_host/net.git" "$root/clone5" "$root/clone5.out"
[[ $git_rc != 0 ]] || { show "$root/clone5.out"; fail "git clone over plain http succeeded"; }
! grep -q 'git-credential-hostkeeper' "$root/clone5.out" ||
    { show "$root/clone5.out"; fail "the helper tried to ask the daemon about plain http"; }
seen=$(requests "http://$http_host" "$mark")
[[ -n $seen ]] || fail "the plain-http server saw no request"
if grep -qv ' None None False$' <<<"$seen"; then
    echo "$seen"
    fail "a credential was sent over plain http"
fi
out=$("$git_helper" get 2>&1 < <(printf 'protocol=http\nhost=%s\n' "$http_host")) || fail "get for http exited with $?"
[[ -z $out ]] || fail "get for http printed: $out"
pass "plain http://: the helper answers nothing without asking the daemon, the server sees no credential ($(wc -l <<<"$seen") request(s))"

# --- git credential approve / fill / reject ----------------------------------------
g=git.example.com
approve() {  # approve LINES...
    gitc "$root/approve.out" -c credential.helper= -c credential.helper=hostkeeper -c credential.useHttpPath=true \
        credential approve \
        < <(printf '%s\n' "$@")
    [[ $git_rc == 0 ]] || { show "$root/approve.out"; fail "git credential approve $* exited with $git_rc"; }
}
reject() {  # reject LINES...
    gitc "$root/reject.out" -c credential.helper= -c credential.helper=hostkeeper -c credential.useHttpPath=true \
        credential reject \
        < <(printf '%s\n' "$@")
    [[ $git_rc == 0 ]] || { show "$root/reject.out"; fail "git credential reject $* exited with $git_rc"; }
}
expect_fill() {  # expect_fill HOST USER PASSWORD WHAT [MORE LINES]
    fill "$1" "${5:-}"
    [[ $git_rc == 0 ]] || { show "$root/fill.out"; fail "$4: git credential fill exited with $git_rc"; }
    if ! grep -qxF "username=$2" "$root/fill.out" || ! grep -qxF "password=$3" "$root/fill.out"; then
        show "$root/fill.out"
        fail "$4: fill did not answer $2 with its password"
    fi
    pass "$4"
}
expect_no_fill() {  # expect_no_fill HOST WHAT [MORE LINES]
    fill "$1" "${3:-}"
    if [[ $git_rc == 0 ]] || ! grep -q 'terminal prompts disabled' "$root/fill.out"; then
        show "$root/fill.out"
        fail "$2: fill answered (exit $git_rc)"
    fi
    pass "$2"
}

expect_no_fill "$g" "fill with nothing stored: no answer (git would prompt)"
approve protocol=https "host=$g" username=alice password=pw-alice-1
expect_fill "$g" alice pw-alice-1 "approve then fill: git's credential back from the keyring"
[[ $(git_items "$g") == 1 ]] || fail "approve left $(git_items "$g") git items for $g, not 1"
if [[ $backend == secret-service ]]; then
    secret-tool search --all host "$g" >"$root/item.txt" 2>&1
    for line in "schema = io.hostkeeper.GitCredentials" "attribute.protocol = https" "attribute.host = $g" \
        "attribute.username = alice" "attribute.path = "; do
        grep -qxF "$line" "$root/item.txt" || { show "$root/item.txt"; fail "the Secret Service item lacks '$line'"; }
    done
    grep -q '^secret = .*pw-alice-1' "$root/item.txt" || { show "$root/item.txt"; fail "the item's secret does not hold the password"; }
    pass "the Secret Service item: schema io.hostkeeper.GitCredentials, protocol, host, path and username attributes"
else
    entry=hostkeeper/git/$(printf '%s' "https://alice@$g" | base64 -w0 | tr '+/' '-_' | tr -d '=')
    command pass show "$entry" >"$root/entry.json" 2>"$root/entry.err" || { show "$root/entry.err"; fail "pass show $entry failed"; }
    python3 - "$root/entry.json" "https://alice@$g" <<'PY' || { show "$root/entry.json"; fail "pass show $entry is not the git credential's JSON"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["url"] == sys.argv[2] and d["password"] == "pw-alice-1", d
PY
    pass "the pass entry $entry.gpg holds {\"url\",\"password\"}"
fi
approve protocol=https "host=$g" username=alice password=pw-alice-2
expect_fill "$g" alice pw-alice-2 "a second approve for the same user replaces the first"
[[ $(git_items "$g") == 1 ]] || fail "after a second approve there are $(git_items "$g") git items for $g"
expect_fill "$g" alice pw-alice-2 "fill for the user asked for" "username=alice"
expect_no_fill "$g" "fill for another user name: no answer" "username=bob"

# A path, kept with credential.useHttpPath.
approve protocol=https "host=$g" path=group/private.git username=carol password=pw-carol
fill "$g" "path=group/private.git"
grep -qxF 'password=pw-carol' "$root/fill.out" || { show "$root/fill.out"; fail "fill for the stored path did not answer its credential"; }
pass "a credential kept with a path answers for that path (the most specific)"
expect_fill "$g" alice pw-alice-2 "another path gets the host's credential without a path" "path=group/other.git"

reject protocol=https "host=$g" path=group/private.git username=carol
expect_fill "$g" alice pw-alice-2 "reject of the path's credential: the path falls back to the host's" "path=group/private.git"
reject protocol=https "host=$g" username=alice password=not-the-password
expect_fill "$g" alice pw-alice-2 "reject naming another password leaves the credential"
reject protocol=https "host=$g" username=alice
expect_no_fill "$g" "reject, then fill: nothing left"
[[ $(git_items "$g") == 0 ]] || fail "after reject $(git_items "$g") git items for $g are left"
reject protocol=https "host=$g" username=alice
pass "reject of what is not there succeeds"

# Expiry and refresh token (git 2.41+ passes them; here the helper directly).
future=$(($(date +%s) + 3600))
printf 'protocol=https\nhost=%s\nusername=dave\npassword=pw-dave\npassword_expiry_utc=%s\noauth_refresh_token=rt-dave\n' \
    "$g" "$future" | "$git_helper" store || fail "store with an expiry exited with $?"
out=$(printf 'protocol=https\nhost=%s\nusername=dave\n' "$g" | "$git_helper" get) || fail "get exited with $?"
[[ $out == "username=dave"$'\n'"password=pw-dave"$'\n'"password_expiry_utc=$future"$'\n'"oauth_refresh_token=rt-dave" ]] ||
    fail "get did not answer the expiry and the refresh token: $out"
printf 'protocol=https\nhost=%s\nusername=erin\npassword=pw-erin\npassword_expiry_utc=1000\n' "$g" | "$git_helper" store ||
    fail "store with a past expiry exited with $?"
out=$(printf 'protocol=https\nhost=%s\nusername=erin\n' "$g" | "$git_helper" get) || fail "get exited with $?"
[[ -z $out ]] || fail "a credential whose expiry has passed was answered: $out"
pass "password_expiry_utc and oauth_refresh_token kept and answered; a passed expiry never answered"
printf 'protocol=https\nhost=%s\n' "$g" | "$git_helper" erase || fail "erase of every user of $g exited with $?"

# --- A Terraform token survives git credential reject -------------------------------
t=tf.example.com
tf_store "$t" tf-token-1
expect_fill "$t" oauth2 tf-token-1 "fill of a host with a Terraform token: oauth2 and the token"
reject protocol=https "host=$t" username=oauth2 password=tf-token-1
reject protocol=https "host=$t"
[[ $(tf_token "$t") == '{"token":"tf-token-1"}' ]] || fail "git credential reject changed the Terraform token: $(tf_token "$t")"
expect_fill "$t" oauth2 tf-token-1 "a Terraform token survives git credential reject (and still answers)"
approve protocol=https "host=$t" username=oauth2 password=tf-token-1
[[ $(git_items "$t") == 0 ]] || fail "approve of the Terraform token's own answer stored a git item"
pass "approve of the Terraform token's own answer stores nothing"
approve protocol=https "host=$t" username=frank password=typed-pw
expect_fill "$t" frank typed-pw "a git credential for the host is answered before its Terraform token"
reject protocol=https "host=$t" username=frank
expect_fill "$t" oauth2 tf-token-1 "after its reject, the Terraform token answers again"

# --- A locked keyring is an error, never an empty answer (last: it stays locked) ----
if [[ $backend == secret-service ]]; then
    "$bin/hostkeeper" flush >/dev/null 2>&1 || true
    dbus-send --session --print-reply --dest=org.freedesktop.secrets /org/freedesktop/secrets \
        org.freedesktop.Secret.Service.Lock array:objpath:/org/freedesktop/secrets/collection/login >/dev/null ||
        fail "cannot lock the login collection"
    rc=0
    printf 'protocol=https\nhost=%s\n' "$t" | "$git_helper" get >"$root/locked.out" 2>"$root/locked.err" || rc=$?
    [[ $rc == 1 && ! -s "$root/locked.out" ]] || { show "$root/locked.out"; fail "get from a locked keyring exited with $rc"; }
    grep -q '^git-credential-hostkeeper: .*lock' "$root/locked.err" || { show "$root/locked.err"; fail "get from a locked keyring does not say it is locked"; }
    pass "get from a locked keyring: exit 1, '$(head -c 80 "$root/locked.err")...'"
fi

echo "git_helper.sh ($backend): all checks passed"
