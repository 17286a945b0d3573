#!/usr/bin/env bash
# registry_http2.sh BIN_DIR
#
# End to end: a registry that offers HTTP/2, as registries behind a CDN or
# a modern reverse proxy do. Debian's nginx (TLS, http2, on loopback)
# stands in front of the test registry and names its own port in every
# absolute URL (https_registry.py --public-port-file), so that every upstream
# request of a cold terraform init under `hostkeeper exec --registry-cache`
# goes through it. nginx's access log (protocol, connection serial number)
# shows that hostkeeperd's requests are HTTP/2 and all share one
# connection, those it makes at once too (a provider's archive is fetched
# as soon as its download metadata is answered, while Terraform asks for
# SHA256SUMS and the signature), where HTTP/1.1 would open a connection
# for each request in flight.
#
#   tests/support/container-env.sh tests/support/keyring-env.sh --no-keyring tests/e2e/registry_http2.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped.
set -euo pipefail

e2e_name=e2e-registry-http2  # read by lib.sh
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $nginx ]] || { echo "SKIP: nginx is not installed (./packaging/deps.sh test installs it)"; exit 77; }
# nginx's port, chosen before lib.sh starts the registry: the registry names it.
# shellcheck source-path=SCRIPTDIR source=../support/script_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/script_lib.sh"
front_port=$(free_port)
mkdir -p "$HK_TEST_ROOT/$e2e_name"
echo "$front_port" >"$HK_TEST_ROOT/$e2e_name/front.port"
registry_args=(--modules acme/hello/null --providers acme/thing --registry-provider-versions 1.0.0
    --public-port-file "$HK_TEST_ROOT/$e2e_name/front.port" --gpg-home "$HK_TEST_ROOT/$e2e_name/gnupg")
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hk=$bin/hostkeeper
[[ ${HK_CONTAINER_NETNS:-} == 1 ]] || die "run me through tests/support/container-env.sh"
unset DBUS_SESSION_BUS_ADDRESS

# --- nginx, HTTP/2 over TLS, in front of the registry --------------------------------
n=$root/nginx
mkdir -p "$n/tmp"
# The readiness probes name themselves: nginx may log a request after
# curl has its answer, so the check below leaves them out by name.
probe=hostkeeper-test-probe
{
    nginx_conf_head "$n"
    cat <<CONF
    log_format streams '\$connection \$connection_requests \$server_protocol \$status "\$request_uri" "\$http_user_agent"';
    access_log $n/access.log streams;
    server {
        listen 127.0.0.1:$front_port ssl http2;
        ssl_certificate $root/tls/server.pem;
        ssl_certificate_key $root/tls/server.key;
        location / {
            proxy_pass https://127.0.0.1:$port;
            proxy_http_version 1.1;
            proxy_buffering off;
        }
    }
}
CONF
} >"$n/nginx.conf"
"$nginx" -p "$n" -c "$n/nginx.conf" -e "$n/error.log" >"$n/stdout.log" 2>&1 &
nginx_pid=$!
extra_pids+=("$nginx_pid")
for _ in $(seq 1 200); do
    curl -s -o /dev/null -A "$probe" --cacert "$root/tls/ca.pem" "https://127.0.0.1:$front_port/.well-known/terraform.json" && break
    kill -0 "$nginx_pid" 2>/dev/null || { show "$n/error.log"; fail "nginx did not start"; }
    sleep 0.05
done
[[ $(curl -s -o /dev/null -A "$probe" -w '%{http_version}' --http2 --cacert "$root/tls/ca.pem" \
    "https://127.0.0.1:$front_port/.well-known/terraform.json") == 2 ]] ||
    { show "$n/error.log"; fail "nginx does not answer HTTP/2 on $front_port"; }
pass "nginx answers HTTP/2 on 127.0.0.1:$front_port, in front of the registry on $port"

# --- A cold init through the run's port --------------------------------------------
front=127.0.0.1:$front_port
workdir "$root/w" "$front" acme/hello/null acme/thing 1.0.0
token_var=TF_TOKEN_${front//./_}
(cd "$root/w" && env "$token_var=$TOKEN" "$hk" exec --registry-cache -- "$terraform" init -input=false -no-color) \
    >"$root/init.out" 2>&1 || { show "$root/init.out"; show "$n/error.log"; fail "terraform init through nginx failed"; }
[[ -d $root/w/.terraform/providers/$front/acme/thing/1.0.0 ]] || { show "$root/init.out"; fail "the provider is not installed"; }
pass "a cold terraform init through the run's port, every upstream request through nginx"

python3 - "$n/access.log" "$probe" <<'PY' || { show "$n/access.log"; fail "hostkeeperd's upstream requests did not share one HTTP/2 connection (above)"; }
import re, sys
pattern = re.compile(r'^(\d+) (\d+) (\S+) (\d+) "([^"]*)" "([^"]*)"$')
ours, others = [], []
for line in open(sys.argv[1], encoding="utf-8"):
    m = pattern.match(line.rstrip("\n"))
    if not m:
        sys.exit("an access-log line not understood: " + line)
    if m.group(6) == sys.argv[2]:
        continue
    (ours if m.group(6).startswith("hostkeeper/") else others).append(m)
problems = []
if others:
    problems.append("%d request(s) from another client: %s" % (len(others), others[0].group(6)))
if len(ours) < 6:
    problems.append("only %d request(s) from hostkeeperd: too few to show anything" % len(ours))
protocols = {m.group(3) for m in ours}
if protocols != {"HTTP/2.0"}:
    problems.append("protocols %s, not HTTP/2.0 alone" % sorted(protocols))
connections = {m.group(1) for m in ours}
if len(connections) != 1:
    problems.append("%d connections, not one" % len(connections))
paths = [m.group(5) for m in ours]
for wanted in ("/provider-files/", "SHA256SUMS"):
    if not any(wanted in p for p in paths):
        problems.append("no request for %s" % wanted)
print("hostkeeperd: %d requests, protocols %s, connections %s; streams on the last: %s"
      % (len(ours), sorted(protocols), sorted(connections), max(int(m.group(2)) for m in ours) if ours else 0))
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
pass "hostkeeperd's upstream requests are HTTP/2, all on one connection"
