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
# docker-registry or htpasswd).
set -euo pipefail

for tool in podman docker-registry htpasswd curl; do
    command -v "$tool" >/dev/null ||
        { echo "SKIP: $tool is not installed (packaging/deps.sh test: podman, docker-registry, apache2-utils, curl)"; exit 77; }
done

e2e_name=e2e-podman
# shellcheck source-path=SCRIPTDIR
# shellcheck source=docker_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/docker_lib.sh"

# --- The registry: htpasswd auth, TLS from a throw-away CA, loopback only -----------
"$support/make_ca.sh" "$root/tls" localhost 127.0.0.1
user=hk-user
password=hk-pw-$(openssl rand -hex 12)
htpasswd -Bbn "$user" "$password" >"$root/htpasswd"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
registry=localhost:$port
mkdir -p "$root/registry-data"
cat >"$root/registry.yml" <<YML
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $root/registry-data
http:
  addr: 127.0.0.1:$port
  secret: hk-test-$(openssl rand -hex 8)
  tls:
    certificate: $root/tls/server.pem
    key: $root/tls/server.key
auth:
  htpasswd:
    realm: hostkeeper-test
    path: $root/htpasswd
YML
docker-registry serve "$root/registry.yml" >"$root/registry.log" 2>&1 &
registry_pid=$!
on_exit 'kill "$registry_pid" 2>/dev/null; wait "$registry_pid" 2>/dev/null'
# Until it answers (401: it wants credentials) or dies; 20 s at most.
up=0
for _ in $(seq 1 200); do
    kill -0 "$registry_pid" 2>/dev/null || { show "$root/registry.log"; fail "docker-registry died at start-up"; }
    code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$root/tls/ca.pem" "https://$registry/v2/" || true)
    [[ $code == 401 ]] && { up=1; break; }
    sleep 0.1
done
[[ $up == 1 ]] || { show "$root/registry.log"; fail "docker-registry did not answer 401 on https://$registry/v2/"; }
pass "docker-registry at https://$registry/ wants credentials (401)"

# --- Podman, kept inside $root ---------------------------------------------------
touch "$root/start-marker"
p=$root/podman
mkdir -p "$p/root" "$p/runroot" "$p/tmp" "$p/certs" "$p/networks"
cp "$root/tls/ca.pem" "$p/certs/ca.crt"
# The CNI backend with its configuration here: netavark, as root, would keep
# its state in /run/containers/networks whatever podman is told.
printf '[engine]\nevents_logger = "none"\ncgroup_manager = "cgroupfs"\n[network]\nnetwork_backend = "cni"\nnetwork_config_dir = "%s"\n' \
    "$p/networks" >"$p/containers.conf"
printf 'unqualified-search-registries = []\n' >"$p/registries.conf"
printf '[storage]\ndriver = "vfs"\nrunroot = "%s"\ngraphroot = "%s"\n' "$p/runroot" "$p/root" >"$p/storage.conf"
printf '{"default":[{"type":"insecureAcceptAnything"}]}\n' >"$p/policy.json"
export CONTAINERS_CONF=$p/containers.conf CONTAINERS_REGISTRIES_CONF=$p/registries.conf
export CONTAINERS_STORAGE_CONF=$p/storage.conf REGISTRY_AUTH_FILE=$p/auth.json
# The clients find docker-credential-hostkeeper on PATH.
export PATH=$bin:$PATH
authfile=$p/auth.json
printf '{"credHelpers":{"%s":"hostkeeper"}}\n' "$registry" >"$authfile"
podman_bin=$(type -P podman)
podman() {
    timeout 180 "$podman_bin" --root "$p/root" --runroot "$p/runroot" --tmpdir "$p/tmp" \
        --storage-driver vfs --events-backend none --cgroup-manager cgroupfs --network-config-dir "$p/networks" "$@"
}

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
# podman search asks the registry's catalog (GET /v2/_catalog), which wants
# credentials: podman takes them from the helper, and the registry logs the
# request as authorized. (Not push or pull: as root, containers/image keeps a
# blob-info cache in /var/lib/containers whatever podman is told.)
lines_before=$(wc -l <"$root/registry.log")
# search has no --cert-dir: Go's TLS trusts SSL_CERT_FILE's CA, and only it.
mkdir -p "$p/no-system-certs"
search() { SSL_CERT_FILE=$root/tls/ca.pem SSL_CERT_DIR=$p/no-system-certs podman search --authfile "$authfile" "$registry/"; }
search >"$root/search.out" 2>&1 ||
    { show "$root/search.out"; show "$root/registry.log"; fail "podman search with the helper's credential failed"; }
tail -n +"$((lines_before + 1))" "$root/registry.log" | grep 'msg="authorized request"' | grep -q 'http.request.uri=/v2/_catalog' ||
    { show "$root/registry.log"; fail "the registry did not log an authorized /v2/_catalog request"; }
pass "podman search is authorised by the credential from the keyring (the registry logged /v2/_catalog as authorized)"

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
search >"$root/search2.out" 2>&1 || rc=$?
if [[ $rc == 0 ]] || ! grep -qiE 'unauthorized|authentication required' "$root/search2.out"; then
    show "$root/search2.out"
    fail "podman search without credentials: exit $rc, not the registry's refusal"
fi
pass "without the credential the registry refuses podman search"

# Nothing of podman's outside $root (the system's own files there are older).
written=$(find /etc/containers /etc/cni /run/containers /run/libpod /var/lib/containers /var/lib/cni \
    -newer "$root/start-marker" 2>/dev/null || true)
[[ -z $written ]] || fail "podman wrote outside the test's directory: $written"
pass "podman wrote nothing in /etc/containers, /etc/cni, /run/containers or /var/lib/containers"

echo "podman_login.sh ($backend): all checks passed"
