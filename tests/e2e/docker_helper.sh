#!/usr/bin/env bash
# docker_helper.sh BIN_DIR
#
# End to end: BIN_DIR/docker-credential-hostkeeper run exactly as Docker,
# Podman and OpenTofu run a credential helper (one argument, the input on
# stdin, the answer or the error line on stdout), against the hostkeeperd it
# starts on demand and the real keyring: gnome-keyring on a private D-Bus
# (tests/support/keyring-env.sh) or pass (tests/support/pass-env.sh).
#   - version, --version, -v, --help, no or two arguments, an unknown action:
#     upstream's lines and exit statuses;
#   - store/get/list/erase; not-found's exact line; erase of nothing succeeds;
#     a store replaces; server URLs with a scheme and a path; get of
#     https://HOST finds HOST's credentials and the other way round;
#   - the keyring item: Secret Service schema io.hostkeeper.DockerCredentials
#     with its label, attributes and secret (secret-tool), or pass's
#     hostkeeper/docker/B64URL.gpg holding the JSON (pass show);
#   - a Docker item and a Terraform item for one host never touch each other
#     (terraform-credentials-hostkeeper store HOST vs a Docker store of HOST);
#   - bad input (malformed JSON, 70 KB, empty ServerURL or Username, JSON
#     that is not an object): the clients' lines or a clear error, exit 1,
#     and the item stored before unchanged;
#   - where Debian's docker-credential-secretservice or -pass is installed,
#     the same bytes on stdout as that peer for the same credentials;
#   - (Secret Service) a locked keyring is an error saying so, never the
#     not-found line.
# Exit status: 0 pass, 1 fail, 2 usage/set-up error.
set -euo pipefail

e2e_name=e2e-docker-helper
# shellcheck source-path=SCRIPTDIR
# shellcheck source=docker_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/docker_lib.sh"

version=$("$bin/hostkeeper" --version | awk '{print $2}')

# --- Arguments, as credentials.Serve takes them -------------------------------------
usage=$'Usage: docker-credential-hostkeeper <store|get|erase|list|version>\n'
for flag in version --version -v; do
    expect_dh "$flag prints the version line" 0 "docker-credential-hostkeeper (hostkeeper) $version"$'\n' "$flag" </dev/null
done
expect_dh "--help prints the usage line" 0 "$usage" --help </dev/null
expect_dh "no argument: the usage line, exit 1" 1 "$usage" </dev/null
expect_dh "two arguments: the usage line, exit 1" 1 "$usage" get extra </dev/null
expect_dh "an unknown action: upstream's line, exit 1" 1 \
    $'docker-credential-hostkeeper: unknown action: fetch\n' fetch <<<"r.example"

# --- store, get, list, erase ----------------------------------------------------------
s1=registry.example.com:5000
s2=https://index.docker.io/v1/
expect_dh "list with nothing stored is {}" 0 $'{}\n' list <<<"unused"
expect_absent "$s1" "get of a server with nothing stored: the clients' not-found line, exit 1"
[[ $(docker_items "$s1") == 0 ]] || fail "an item for $s1 exists before any store"

docker_store "$s1" alice 's3cret<&>'
# Go's encoder escapes <, > and &; so does the helper.
expect_dh "get prints the stored credentials as Go's encoder writes them" 0 \
    '{"ServerURL":"registry.example.com:5000","Username":"alice","Secret":"s3cret\u003c\u0026\u003e"}'$'\n' \
    get <<<"$s1"
expect_dh "get reads the server URL as upstream does (blanks and line ends dropped)" 0 \
    '{"ServerURL":"registry.example.com:5000","Username":"alice","Secret":"s3cret\u003c\u0026\u003e"}'$'\n' \
    get < <(printf '  %s\r\n' "$s1")
[[ $(docker_items "$s1") == 1 ]] || fail "store left $(docker_items "$s1") items for $s1, not 1"

if [[ $backend == secret-service ]]; then
    secret-tool search --all server "$s1" >"$root/item.txt" 2>&1 || { show "$root/item.txt"; fail "secret-tool search server $s1 failed"; }
    for line in "label = hostkeeper docker: $s1" "secret = s3cret<&>" "schema = io.hostkeeper.DockerCredentials" \
        "attribute.server = $s1" "attribute.username = alice"; do
        grep -qxF "$line" "$root/item.txt" || { show "$root/item.txt"; fail "the Secret Service item lacks '$line'"; }
    done
    pass "the Secret Service item: schema io.hostkeeper.DockerCredentials, label, server and username attributes, the secret"
else
    entry=hostkeeper/docker/$(b64url "$s1")
    [[ -f $store/$entry.gpg ]] || fail "no $entry.gpg in the password store"
    command pass show "$entry" >"$root/entry.json" 2>"$root/entry.err" || { show "$root/entry.err"; fail "pass show $entry failed"; }
    python3 - "$root/entry.json" "$s1" <<'PY' || { show "$root/entry.json"; fail "pass show $entry is not the JSON of the credentials"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d == {"ServerURL": sys.argv[2], "Username": "alice", "Secret": "s3cret<&>"}, d
PY
    pass "the pass entry $entry.gpg holds {\"ServerURL\",\"Username\",\"Secret\"}"
fi

# OpenTofu asks for https://HOST what Docker and Podman store as HOST.
expect_dh "get https://HOST finds what was stored as HOST (OpenTofu's spelling), ServerURL as asked" 0 \
    '{"ServerURL":"https://registry.example.com:5000","Username":"alice","Secret":"s3cret\u003c\u0026\u003e"}'$'\n' \
    get <<<"https://$s1"
docker_store https://spelled.example.com alice-s 'tok-s'
expect_get spelled.example.com alice-s tok-s "get HOST finds what was stored as https://HOST"
dh "$root/erase.out" erase <<<"https://spelled.example.com"
[[ $dh_rc == 0 ]] || fail "erase https://spelled.example.com exited with $dh_rc"

docker_store "$s2" 'bob@example.com' 'tok-2'
expect_get "$s2" 'bob@example.com' tok-2 "a server URL with a scheme and a path is its own key"
expect_dh "list: every server with its username, sorted, no secrets" 0 \
    '{"https://index.docker.io/v1/":"bob@example.com","registry.example.com:5000":"alice"}'$'\n' list <<<"unused"

docker_store "$s1" alice2 'second'
expect_get "$s1" alice2 second "a second store replaces the first"
[[ $(docker_items "$s1") == 1 ]] || fail "after a second store there are $(docker_items "$s1") items for $s1, not 1"

expect_dh "erase prints nothing and exits 0" 0 "" erase <<<"$s2"
expect_absent "$s2" "after erase, get says not found"
[[ $(docker_items "$s2") == 0 ]] || fail "the item for $s2 is still in the keyring after erase"
expect_dh "erase of a server with nothing stored succeeds (as docker-credential-secretservice and -pass)" 0 "" erase <<<"$s2"
expect_dh "list after erase" 0 '{"registry.example.com:5000":"alice2"}'$'\n' list <<<"unused"

# --- Docker and Terraform items for one host never overwrite each other --------------
host=shared.example.com
tf_get() { timeout 60 "$tf_helper" get "$host"; }
printf '{"token":"tf-token-1"}' | timeout 60 "$tf_helper" store "$host" || fail "terraform helper store $host failed"
expect_absent "$host" "a Terraform token for $host is not a Docker credential for $host"
docker_store "$host" carol docker-secret-1
[[ $(tf_get) == '{"token":"tf-token-1"}' ]] || fail "a Docker store of $host changed the Terraform token: $(tf_get)"
pass "a Docker store of $host leaves its Terraform token as it was"
printf '{"token":"tf-token-2"}' | timeout 60 "$tf_helper" store "$host" || fail "terraform helper store $host failed"
expect_get "$host" carol docker-secret-1 "a Terraform store of $host leaves its Docker credentials as they were"
dh "$root/erase.out" erase <<<"$host"
[[ $dh_rc == 0 ]] || fail "docker erase $host exited with $dh_rc"
[[ $(tf_get) == '{"token":"tf-token-2"}' ]] || fail "a Docker erase of $host removed or changed the Terraform token: $(tf_get)"
pass "a Docker erase of $host leaves its Terraform token"
docker_store "$host" carol docker-secret-2
timeout 60 "$tf_helper" forget "$host" || fail "terraform helper forget $host failed"
expect_get "$host" carol docker-secret-2 "a Terraform forget of $host leaves its Docker credentials"
if [[ $backend == secret-service ]]; then
    # The Terraform item is another schema: a search by the Docker attribute finds only the Docker item.
    [[ $(docker_items "$host") == 1 ]] || fail "$(docker_items "$host") Docker items for $host"
fi

# --- Bad input: a clear error, exit 1, nothing lost ----------------------------------
bad_store() {  # bad_store WHAT EXPECTED_LINE_REGEX FILE
    dh "$root/bad.out" store <"$3"
    [[ $dh_rc == 1 ]] || { show "$root/bad.out"; fail "$1: store exited with $dh_rc, not 1"; }
    grep -qE "$2" "$root/bad.out" || { show "$root/bad.out"; fail "$1: the error line does not match $2"; }
    [[ $(wc -l <"$root/bad.out") == 1 ]] || { show "$root/bad.out"; fail "$1: the error is not one line"; }
    ! grep -q 'bad-secret' "$root/bad.out" || { show "$root/bad.out"; fail "$1: the error line shows the secret"; }
    expect_get "$s1" alice2 second "$1: refused ($(head -c 70 "$root/bad.out")...), the item stored before is unchanged"
}
python3 -c 'import sys; sys.stdout.write("{\"ServerURL\":\"registry.example.com:5000\",\"Username\":\"alice2\",\"Secret\":\"bad-secret" + "x" * 70000 + "\"}")' >"$root/70k.json"
bad_store "a 70 KB store" '^the credentials on standard input are over 64 KiB; nothing was stored$' "$root/70k.json"
printf '{"ServerURL":"%s","Username":"alice2","Secret":"bad-secret"' "$s1" >"$root/malformed.json"
bad_store "malformed JSON" '^the credentials are not valid JSON \(syntax error at byte [0-9]+\); nothing was stored$' "$root/malformed.json"
printf '["%s","alice2","bad-secret"]' "$s1" >"$root/array.json"
bad_store "JSON that is not an object" '^the credentials must be a JSON object; nothing was stored$' "$root/array.json"
printf '{"ServerURL":"%s","Username":"alice2","Secret":7}' "$s1" >"$root/number.json"
bad_store "a Secret that is not a string" '^the "Secret" property must be a string; nothing was stored$' "$root/number.json"
printf '{"ServerURL":"","Username":"alice2","Secret":"bad-secret"}' >"$root/no-server.json"
bad_store "an empty ServerURL: the clients' line" '^no credentials server URL$' "$root/no-server.json"
printf '{"ServerURL":"%s","Username":"","Secret":"bad-secret"}' "$s1" >"$root/no-user.json"
bad_store "an empty Username: the clients' line" '^no credentials username$' "$root/no-user.json"
printf '{"ServerURL":"%s","Secret":"bad-secret"}' "$s1" >"$root/missing-user.json"
bad_store "a missing Username: the clients' line" '^no credentials username$' "$root/missing-user.json"
expect_dh "get with an empty server URL: the clients' line" 1 $'no credentials server URL\n' get </dev/null
expect_dh "erase with an empty server URL: the clients' line" 1 $'no credentials server URL\n' erase <<<"  "
[[ $(docker_items "$s1") == 1 ]] || fail "after the bad input there are $(docker_items "$s1") items for $s1, not 1"

# --- The same bytes as Debian's own helper for this keyring ---------------------------
peer=docker-credential-secretservice
[[ $backend == pass ]] && peer=docker-credential-pass
if command -v "$peer" >/dev/null; then
    s3=peer.example.com:443
    for tool in "$docker_helper" "$peer"; do
        creds "$s3" 'dave<x>' 'p&ss\"\u2028' | timeout 60 "$tool" store >"$root/peer-store.out" ||
            { show "$root/peer-store.out"; fail "$tool store failed"; }
    done
    timeout 60 "$peer" get <<<"$s3" >"$root/peer-get.out" || { show "$root/peer-get.out"; fail "$peer get failed"; }
    expect_dh "get prints the bytes $peer prints for the same credentials" 0 "$(cat "$root/peer-get.out")"$'\n' get <<<"$s3"
    cases=("get:" "erase:")
    # Debian's docker-credential-pass 0.6.4 answers a missing server with empty
    # credentials and exit 0; upstream's pass helper now says not found, as
    # its secretservice helper always did (and this helper does).
    [[ $backend == pass ]] || cases+=("get:not-there.example")
    for case in "${cases[@]}"; do
        verb=${case%%:*}
        input=${case#*:}
        rc=0
        printf '%s' "$input" | timeout 60 "$peer" "$verb" >"$root/peer.out" 2>/dev/null || rc=$?
        expect_dh "$verb '$input': the line and status $peer gives" "$rc" "$(cat "$root/peer.out")"$'\n' "$verb" < <(printf '%s' "$input")
    done
    rc=0
    printf '{"ServerURL":"%s","Username":"","Secret":"x"}' "$s3" | timeout 60 "$peer" store >"$root/peer.out" 2>/dev/null || rc=$?
    expect_dh "store without a Username: the line and status $peer gives" "$rc" "$(cat "$root/peer.out")"$'\n' store \
        < <(printf '{"ServerURL":"%s","Username":"","Secret":"x"}' "$s3")
    printf '%s' "$s3" | timeout 60 "$peer" erase >/dev/null 2>&1 || true
else
    echo "NOTE: $peer is not installed (golang-docker-credential-helpers): no byte-for-byte comparison with it"
fi

# --- A locked keyring is an error, never "not found" (last: it stays locked) ---------
if [[ $backend == secret-service ]]; then
    dbus-send --session --print-reply --dest=org.freedesktop.secrets /org/freedesktop/secrets \
        org.freedesktop.Secret.Service.Lock array:objpath:/org/freedesktop/secrets/collection/login >/dev/null ||
        fail "cannot lock the login collection"
    dh "$root/locked.out" get <<<"$s1"
    [[ $dh_rc == 1 ]] || { show "$root/locked.out"; fail "get from a locked keyring exited with $dh_rc, not 1"; }
    if grep -q 'credentials not found' "$root/locked.out" || ! grep -qi 'lock' "$root/locked.out"; then
        show "$root/locked.out"
        fail "get from a locked keyring does not say it is locked"
    fi
    pass "get from a locked keyring: exit 1, '$(head -c 80 "$root/locked.out")...', not the not-found line"
fi

echo "docker_helper.sh ($backend): all checks passed"
