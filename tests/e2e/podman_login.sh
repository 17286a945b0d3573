#!/usr/bin/env bash
# podman_login.sh BIN_DIR
#
# End to end with a real client: Debian's podman logs in to and out of a real
# registry on loopback (Debian's docker-registry, htpasswd auth, TLS from the
# suite's throw-away CA) with `credHelpers` naming hostkeeper in its
# --authfile, so that the credentials go through BIN_DIR/docker-credential-hostkeeper
# and hostkeeperd into the keyring of the world it runs in (keyring-env.sh:
# gnome-keyring; pass-env.sh: pass):
#   - podman login stores the credential in the keyring, and nothing in the
#     authfile; `podman login --get-login` reads the user name back from it,
#     and so does the helper asked as OpenTofu asks (https://HOST);
#   - podman search is authorised by it (the registry logs the user; it
#     refuses anonymous requests);
#   - a wrong password is refused by the registry, and the stored credential
#     stays as it was;
#   - podman logout removes it from the keyring; search is then refused and
#     --get-login says it is not logged in;
#   - podman wrote nothing in /etc/containers, /etc/cni, /run/containers or
#     /var/lib/containers.
# Everything podman keeps (storage, run state, configuration, the authfile)
# is under this test's throw-away directory. Only loopback addresses.
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no podman,
# docker-registry, htpasswd or curl). The registry and podman's directories:
# podman_lib.sh.
set -euo pipefail

e2e_name=e2e-podman
# shellcheck source-path=SCRIPTDIR
# shellcheck source=podman_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/podman_lib.sh"

printf 'unqualified-search-registries = []\n' >"$p/registries.conf"
export CONTAINERS_REGISTRIES_CONF=$p/registries.conf REGISTRY_AUTH_FILE=$p/auth.json
authfile=$p/auth.json
printf '{"credHelpers":{"%s":"hostkeeper"}}\n' "$registry" >"$authfile"

# --- login ------------------------------------------------------------------------
podman login --authfile "$authfile" --cert-dir "$p/certs" -u "$user" --password-stdin "$registry" \
    <<<"$password" >"$root/login.out" 2>&1 || { show "$root/login.out"; fail "podman login failed"; }
grep -q 'Login Succeeded' "$root/login.out" || { show "$root/login.out"; fail "podman login did not say Login Succeeded"; }
expect_get "$registry" "$user" "$password" "podman login stored the credential in the $backend keyring through the helper"
[[ $(docker_items "$registry") == 1 ]] || fail "$(docker_items "$registry") keyring items for $registry after login, not 1"
expect_get "https://$registry" "$user" "$password" "get https://$registry, as OpenTofu asks, finds what podman login stored"
! grep -qF "$password" "$authfile" || { show "$authfile"; fail "the password is in the authfile"; }
python3 -c 'import json, sys; sys.exit(1 if json.load(open(sys.argv[1])).get("auths") else 0)' "$authfile" ||
    { show "$authfile"; fail "podman login wrote an auths entry to the authfile"; }
pass "the authfile holds no credential (only credHelpers)"
got=$(podman login --authfile "$authfile" --get-login "$registry" 2>&1) || fail "podman login --get-login failed: $got"
[[ $got == "$user" ]] || fail "podman login --get-login printed '$got', not $user"
pass "podman login --get-login reads the user name through the helper"

# --- The registry accepts what the helper gives podman ----------------------------
# podman search asks the registry's catalog, which wants credentials: podman
# takes them from the helper, and the registry logs the request as authorized.
podman_search --authfile "$authfile" >"$root/search.out" 2>&1 ||
    { show "$root/search.out"; show "$root/registry.log"; fail "podman search with the helper's credential failed"; }
expect_authorized_search "podman search is authorised by the credential from the keyring (the registry logged /v2/_catalog as authorized)"

# --- A wrong password is refused and changes nothing ------------------------------
rc=0
podman login --authfile "$authfile" --cert-dir "$p/certs" -u "$user" --password-stdin "$registry" \
    <<<"not-$password" >"$root/wrong.out" 2>&1 || rc=$?
[[ $rc != 0 ]] || { show "$root/wrong.out"; fail "podman login with a wrong password succeeded"; }
grep -qiE 'unauthorized|invalid username/password|authentication required' "$root/wrong.out" ||
    { show "$root/wrong.out"; fail "podman login with a wrong password failed for another reason than the registry's refusal"; }
expect_get "$registry" "$user" "$password" "the registry refused a wrong password (podman login exit $rc) and the stored credential is unchanged"

# --- logout ----------------------------------------------------------------------
podman logout --authfile "$authfile" "$registry" >"$root/logout.out" 2>&1 || { show "$root/logout.out"; fail "podman logout failed"; }
grep -q "Removed login credentials for $registry" "$root/logout.out" || { show "$root/logout.out"; fail "podman logout did not say it removed them"; }
expect_absent "$registry" "podman logout removed the credential from the keyring"
[[ $(docker_items "$registry") == 0 ]] || fail "a keyring item for $registry is left after logout"
rc=0
got=$(podman login --authfile "$authfile" --get-login "$registry" 2>&1) || rc=$?
if [[ $rc == 0 ]] || ! grep -qi 'not logged into' <<<"$got"; then
    fail "podman login --get-login after logout: exit $rc, '$got'"
fi
pass "podman login --get-login after logout: not logged in"
rc=0
podman_search --authfile "$authfile" >"$root/search2.out" 2>&1 || rc=$?
if [[ $rc == 0 ]] || ! grep -qiE 'unauthorized|authentication required' "$root/search2.out"; then
    show "$root/search2.out"
    fail "podman search without credentials: exit $rc, not the registry's refusal"
fi
pass "without the credential the registry refuses podman search"

expect_nothing_written_outside

echo "podman_login.sh ($backend): all checks passed"
