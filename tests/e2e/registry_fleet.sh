#!/usr/bin/env bash
# registry_fleet.sh BIN_DIR
#
# End to end: a fleet tier on a real OCI registry (Debian's docker-registry,
# distribution 2.8: TLS with the test's throw-away CA, htpasswd Basic auth),
# fed and read by ephemeral runners. Each runner is a fresh HOME (empty
# archive store, its own hostkeeperd, started by the run and stopped after
# it) running `hostkeeper exec --registry-cache -- terraform init` against
# the project's HTTPS test registry, with the fleet registry's credentials
# in DOCKER_CONFIG and no keyring backend. Both registries listen on the
# loopback of the test's network namespace (support/container-env.sh);
# each runner runs in a network namespace of its own and reaches their
# ports through support/netns_bridge.py (Unix sockets), so no runner sees
# another's ports or daemon.
#
#   1. a cold runner installs from upstream and fills the tier;
#   2. a fresh runner installs with 0 upstream archive requests, with
#      credentials in DOCKER_CONFIG's auths, then with a credential helper
#      it names (credHelpers), then with a token_command for the registry's
#      host; a helper that fails, one named by a configuration others may
#      change, and ours (credsStore "hostkeeper") give none: the archives
#      come from upstream and status says why;
#   3. a provider blob corrupted in the OCI registry's storage is refused
#      (digest) and the package comes from upstream;
#   4. fleet_push = false writes nothing;
#   5. wrong credentials, 6. the OCI registry stopped in the middle of a
#      run and 7. before one: init succeeds from upstream, and status names
#      the failure with its fix;
#   8. two runners pushing the same archives at once into an empty tier,
#      then a fresh runner served by the tier.
#
#   tests/support/container-env.sh tests/support/keyring-env.sh --no-keyring tests/e2e/registry_fleet.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped.
set -euo pipefail

e2e_name=e2e-registry-fleet  # read by lib.sh
registry_args=(--modules acme/hello/null --providers acme/thing
    --registry-provider-versions 1.0.0 --gpg-home "$HK_TEST_ROOT/e2e-registry-fleet/gnupg")
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hk=$bin/hostkeeper
[[ ${HK_CONTAINER_NETNS:-} == 1 ]] || die "run me through tests/support/container-env.sh"
[[ -z ${HK_KEYRING_PID:-} ]] || die "run me through keyring-env.sh --no-keyring"
for tool in docker-registry htpasswd curl; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (docker-registry, apache2-utils)"; exit 77; }
done
tf_platform=$("$terraform" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["platform"])')
case $tf_platform in
    linux_amd64 | darwin_arm64) ;;
    *) echo "SKIP: terraform runs on $tf_platform; the test registry serves linux_amd64 and darwin_arm64"; exit 77 ;;
esac
unset DBUS_SESSION_BUS_ADDRESS
token_var=TF_TOKEN_${host//./_}

# --- The OCI registry --------------------------------------------------------
oci=$root/oci
mkdir -p "$oci"
htpasswd -Bbn fleet "fleet-secret" >"$oci/htpasswd" 2>/dev/null
oci_port=$(free_port)
oci_host=127.0.0.1:$oci_port
# shellcheck source-path=SCRIPTDIR source=../support/docker_registry.sh
source "$support/docker_registry.sh"
docker_registry_config "$oci/config.yml" "$oci/data" "$oci_host" "$root/tls/server.pem" \
    "$root/tls/server.key" "$oci/htpasswd"
oci_pid=
start_oci() {
    docker_registry_start "$oci/config.yml" "$oci/registry.log" "https://$oci_host" "$root/tls/ca.pem"
    oci_pid=$docker_registry_pid
    extra_pids+=("$oci_pid")
}
stop_oci() {
    kill "$oci_pid" 2>/dev/null || true
    wait "$oci_pid" 2>/dev/null || true
}
# It answers 401 without credentials: they are what lets a runner in.
start_oci

# Both registries' ports, for the runners' namespaces.
bridge=$root/bridge
mkdir -p "$bridge"
python3 "$support/netns_bridge.py" outside "$bridge" "$port" "$oci_port" 2>"$root/bridge.log" &
extra_pids+=("$!")
for _ in $(seq 1 100); do [[ -S $bridge/$port.sock && -S $bridge/$oci_port.sock ]] && break; sleep 0.05; done
[[ -S $bridge/$oci_port.sock ]] || { show "$root/bridge.log"; fail "the namespace bridge did not start"; }

# in_netns DIR: a network namespace of its own for a runner, with its
# loopback up and both registries' ports bridged into it; sets netns_pid
# (its holder) and bridge_pid.
in_netns() {
    local _
    unshare --net sleep infinity &
    netns_pid=$!
    for _ in $(seq 1 100); do
        [[ $(readlink "/proc/$netns_pid/ns/net") != "$(readlink /proc/$$/ns/net)" ]] && break
        sleep 0.02
    done
    [[ $(readlink "/proc/$netns_pid/ns/net") != "$(readlink /proc/$$/ns/net)" ]] ||
        fail "no network namespace of its own for the runner in $1"
    nsenter -t "$netns_pid" -n ip link set lo up
    nsenter -t "$netns_pid" -n python3 "$support/netns_bridge.py" inside "$bridge" "$port" "$oci_port" \
        2>"$1/bridge.log" &
    bridge_pid=$!
    for _ in $(seq 1 100); do [[ -e $bridge/inside-$bridge_pid.ready ]] && break; sleep 0.05; done
    [[ -e $bridge/inside-$bridge_pid.ready ]] || { show "$1/bridge.log"; fail "the runner's bridge did not start"; }
}

# docker_config DIR PASSWORD: a Docker client configuration for the fleet registry.
docker_config() {
    mkdir -p "$1"
    printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$oci_host" "$(printf 'fleet:%s' "$2" | base64 -w0)" >"$1/config.json"
}
docker_config "$root/docker-good" fleet-secret
docker_config "$root/docker-bad" wrong-secret
# A configuration that names a credential helper for the fleet registry (as
# ECR's or GCR's users have), and the helper: a program on PATH that reads
# the host on its standard input and answers with the credentials.
mkdir -p "$root/docker-helper/bin"
printf '{"auths": {"%s": {}}, "credHelpers": {"%s": "fleettest"}}\n' "$oci_host" "$oci_host" \
    >"$root/docker-helper/config.json"
cat >"$root/docker-helper/bin/docker-credential-fleettest" <<SH
#!/bin/sh
read -r server
echo "\$1 \$server" >>"$root/docker-helper/calls"
[ "\$1" = get ] && [ "\$server" = "$oci_host" ] || { echo "no credentials for \$server" >&2; exit 1; }
printf '{"ServerURL":"%s","Username":"fleet","Secret":"fleet-secret"}\n' "\$server"
SH
chmod 755 "$root/docker-helper/bin/docker-credential-fleettest"

# --- Runners -------------------------------------------------------------------
# runner NAME DOCKER_DIR [SETTING...]: a fresh HOME whose hostkeeperd has the
# fleet tier (and the extra registry_cache settings), in a network namespace
# of its own (in_netns), runs terraform init
# under exec --registry-cache, waits until the tier is idle, keeps the
# daemon's status in $root/NAME/status.json and stops the daemon. The
# upstream request log's lines during the run go to $root/NAME/requests.jsonl.
runner() {
    local name=$1 docker_dir=$2 dir=$root/$1
    shift 2
    mkdir -p "$dir/home" "$dir/config/hostkeeper" "$dir/cache" "$dir/state" "$dir/data"
    mkdir -p "$dir/run"
    chmod 700 "$dir/run"
    {
        echo "[registry_cache]"
        echo "fleet = \"oci://$oci_host/ci/terraform\""
        local setting
        for setting in "$@"; do echo "$setting"; done
    } >"$dir/config/hostkeeper/config.toml"
    workdir "$dir/work" "$host" acme/hello/null acme/thing 1.0.0
    local before netns_pid bridge_pid
    in_netns "$dir"
    before=$(wc -l <"$log")
    (
        export HOME=$dir/home XDG_CONFIG_HOME=$dir/config XDG_CACHE_HOME=$dir/cache
        export XDG_STATE_HOME=$dir/state XDG_DATA_HOME=$dir/data XDG_RUNTIME_DIR=$dir/run
        export DOCKER_CONFIG=$docker_dir
        # A credential helper it names is on PATH.
        [[ ! -d $docker_dir/bin ]] || export PATH=$docker_dir/bin:$PATH
        cd "$dir/work"
        nsenter -t "$netns_pid" -n env "$token_var=$TOKEN" "$hk" exec --registry-cache -- \
            "$terraform" init -input=false -no-color >"$dir/init.out" 2>&1 || { show "$dir/init.out"; exit 1; }
        # The tier is written in the background: wait until nothing is in flight.
        local _
        for _ in $(seq 1 300); do
            "$hk" status --json >"$dir/status.json"
            python3 - "$dir/status.json" <<'PY' && break
import json, sys
f = json.load(open(sys.argv[1]))["registry_cache"].get("fleet") or {}
sys.exit(0 if f.get("in_flight", 1) == 0 else 1)
PY
            sleep 0.1
        done
        "$hk" stop >/dev/null 2>&1 || true
    ) || { kill "$bridge_pid" "$netns_pid"; fail "runner $name: terraform init failed (above)"; }
    kill "$bridge_pid" "$netns_pid" 2>/dev/null || true
    wait "$bridge_pid" "$netns_pid" 2>/dev/null || true
    tail -n "+$((before + 1))" "$log" >"$dir/requests.jsonl"
    exe=$dir/work/.terraform/providers/$host/acme/thing/1.0.0/$tf_platform/terraform-provider-thing_v1.0.0
    [[ -x $exe ]] || { show "$dir/init.out"; fail "runner $name: the provider is not installed"; }
    [[ -f $dir/work/.terraform/modules/modules.json ]] || fail "runner $name: the module is not installed"
}

# archives NAME: how many upstream archive requests the runner's init made.
archives() {
    grep -cE '\.(zip|tar\.gz)' "$root/$1/requests.jsonl" || true
}

# fleet NAME FIELD: the runner's fleet status field.
fleet() {
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["registry_cache"]["fleet"][sys.argv[2]])' \
        "$root/$1/status.json" "$2"
}

runner cold "$root/docker-good"
[[ $(archives cold) -ge 2 ]] || fail "the cold runner made $(archives cold) upstream archive requests (the test proves nothing)"
[[ $(fleet cold pushes) == 2 ]] ||
    { show "$root/cold/status.json"; fail "the cold runner wrote $(fleet cold pushes) archives to the tier, not 2"; }
[[ $(fleet cold problem) == None ]] || fail "the cold runner's tier has a problem: $(fleet cold problem)"
grep -q 'PUT /v2/ci/terraform/providers/127.0.0.1__'"$port"'/acme/thing/manifests/1.0.0_' "$oci/registry.log" ||
    { show "$oci/registry.log"; fail "no platform manifest was written in OpenTofu's provider layout"; }
for p in "$port" "$oci_port"; do
    grep -q "to port $p\$" "$root/bridge.log" || fail "no connection of the cold runner's crossed the bridge to port $p"
done
pass "a cold runner installs from upstream and writes the provider package and module archive to the tier"

runner warm "$root/docker-good"
[[ $(archives warm) == 0 ]] || { show "$root/warm/requests.jsonl"; fail "the warm runner made $(archives warm) upstream archive requests"; }
[[ $(fleet warm hits) == 2 ]] || fail "the warm runner took $(fleet warm hits) archives from the tier, not 2"
[[ $(fleet warm pushes) == 0 ]] || fail "the warm runner wrote $(fleet warm pushes) archives"
pass "a fresh runner installs with 0 upstream archive requests: both archives from the tier"

runner helped "$root/docker-helper"
[[ $(archives helped) == 0 && $(fleet helped hits) == 2 ]] ||
    { show "$root/helped/status.json"; fail "with a credential helper the runner did not take both archives from the tier"; }
grep -qx "get $oci_host" "$root/docker-helper/calls" ||
    fail "docker-credential-fleettest was not asked for $oci_host"
pass "credentials from the credential helper DOCKER_CONFIG names (credHelpers) let a runner in"

# A token_command for the fleet registry's host, its token the password of
# token_username (as `aws ecr get-login-password` with AWS), and no Docker
# configuration at all.
mkdir -p "$root/docker-none" "$root/commanded-bin"
cat >"$root/commanded-bin/fleet-password" <<SH
#!/bin/sh
echo run >>"$root/commanded-bin/calls"
echo fleet-secret
SH
chmod 755 "$root/commanded-bin/fleet-password"
runner commanded "$root/docker-none" "[hosts.\"$oci_host\"]" \
    "token_command = [\"$root/commanded-bin/fleet-password\"]" 'token_username = "fleet"'
[[ $(archives commanded) == 0 && $(fleet commanded hits) == 2 ]] ||
    { show "$root/commanded/status.json"; fail "with a token_command the runner did not take both archives from the tier"; }
[[ -s $root/commanded-bin/calls ]] || fail "the token_command for $oci_host was not run"
pass "a token_command for the fleet registry's host, with its token_username, lets a runner in"

# says_why NAME TEXT WHAT: the runner's status names TEXT as why the tier
# had no credentials; else fails with "status does not say WHAT".
says_why() {
    local problem
    problem=$(fleet "$1" problem)
    [[ $problem == *"$2"* ]] || { show "$root/$1/status.json"; fail "status does not say $3"; }
    echo "status: $problem"
}

# helper_runner NAME HELPER CONFIG: a runner whose DOCKER_CONFIG (CONFIG, a
# config.json text) names docker-credential-HELPER, a program on its PATH
# that notes each call in $root/NAME.calls, then answers as `answer` says.
helper_runner() {
    local name=$1 helper=$2 dir=$root/docker-$1
    mkdir -p "$dir/bin"
    printf '%s\n' "$3" >"$dir/config.json"
    cat >"$dir/bin/docker-credential-$helper" <<SH
#!/bin/sh
echo "\$1" >>"$root/$name.calls"
$answer
SH
    chmod 755 "$dir/bin/docker-credential-$helper"
    runner "$name" "$dir"
    [[ $(archives "$name") -ge 2 ]] || fail "runner $name: the archives did not come from upstream"
}

# A helper that fails: status carries its exit status and the first line of
# its standard error.
answer='echo "credentials not found in native keychain" >&2; exit 1'
helper_runner failing fleetfail "{\"credHelpers\": {\"$oci_host\": \"fleetfail\"}}"
[[ -s $root/failing.calls ]] || fail "docker-credential-fleetfail was not run"
says_why failing "docker-credential-fleetfail get for $oci_host failed (exit 1): credentials not found in native keychain" \
    "why the credential helper gave nothing"
pass "a credential helper that fails: init succeeds from upstream; status carries the helper's error"

# A configuration another user could change names no program we run.
answer="printf '{\"Username\":\"fleet\",\"Secret\":\"fleet-secret\"}'"
mkdir -p "$root/docker-open"
chmod 0777 "$root/docker-open"
helper_runner open fleettest "{\"credHelpers\": {\"$oci_host\": \"fleettest\"}}"
[[ ! -e $root/open.calls ]] || fail "a credential helper named by a configuration others may change was run"
says_why open "docker-credential-fleettest not run, named by $root/docker-open/config.json" \
    "why the credential helper was not run"
pass "a credential helper named by a world-writable configuration is not run; status says why"

# credsStore "hostkeeper" is ours, whose keyring items were asked first: not run.
helper_runner ours hostkeeper '{"credsStore": "hostkeeper"}'
[[ ! -e $root/ours.calls ]] || fail "docker-credential-hostkeeper was run for the tier's credentials"
says_why ours "none are configured" "that no credentials are configured"
pass "credsStore \"hostkeeper\" is not run for the tier (its keyring items come first)"

# The OCI registry stopped mid-run: killed as soon as the runner has asked
# it for the module (the provider package, asked for after the module is
# installed, then finds it gone).
seen=$(wc -l <"$oci/registry.log")
(
    for _ in $(seq 1 3000); do
        if tail -n "+$((seen + 1))" "$oci/registry.log" | grep -q 'GET /v2/ci/terraform/modules/'; then
            touch "$root/midway.killed"
            break
        fi
        sleep 0.01
    done
    kill "$oci_pid"
) &
watcher=$!
runner midway "$root/docker-good"
wait "$watcher" || true
[[ -e $root/midway.killed ]] || fail "the runner never asked the OCI registry for the module"
[[ $(archives midway) -ge 1 ]] || fail "with the OCI registry stopped mid-run no archive came from upstream"
fleet midway problem | grep -q "reachable" ||
    { show "$root/midway/status.json"; fail "status does not say the tier became unreachable"; }
[[ $(fleet midway hits) -le 1 ]] || fail "the runner took both archives from a stopped OCI registry"
echo "midway: $(fleet midway hits) archive(s) from the tier, $(archives midway) from upstream"
pass "the OCI registry stopped mid-run: init succeeds, the rest from upstream; status says so"
start_oci

# A provider blob altered in the registry's own storage (the registry does
# not check what it serves).
blob=$(python3 - "$oci/data" <<'PY'
import os, sys
best = None
for dirpath, _, files in os.walk(os.path.join(sys.argv[1], "docker/registry/v2/blobs")):
    for f in files:
        p = os.path.join(dirpath, f)
        size = os.path.getsize(p)
        with open(p, "rb") as fh:
            zip_ = fh.read(2) == b"PK"
        if zip_ and (best is None or size > best[0]):
            best = (size, p)
print(best[1] if best else "")
PY
)
[[ -n $blob ]] || fail "no zip blob found in the OCI registry's storage"
python3 - "$blob" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 0xFF
open(sys.argv[1], "wb").write(bytes(data))
PY
runner tampered "$root/docker-good" "fleet_push = false"
[[ $(fleet tampered refusals) -ge 1 ]] || { show "$root/tampered/status.json"; fail "a tampered blob was not refused"; }
[[ $(archives tampered) -ge 1 ]] || fail "the tampered archive was not fetched from upstream"
[[ $(fleet tampered pushes) == 0 && $(fleet tampered present) == 0 ]] ||
    fail "fleet_push = false still wrote to the tier (pushes $(fleet tampered pushes), present $(fleet tampered present))"
pass "a blob altered in the registry's storage is refused and fetched upstream; fleet_push = false writes nothing"

runner refused "$root/docker-bad"
[[ $(archives refused) -ge 2 ]] || fail "with wrong credentials the archives did not come from upstream"
fleet refused problem | grep -q "credentials" || { show "$root/refused/status.json"; fail "status does not name the credentials"; }
pass "wrong credentials: init succeeds from upstream; status names the credentials"

stop_oci
runner down "$root/docker-good"
[[ $(archives down) -ge 2 ]] || fail "with the tier down the archives did not come from upstream"
fleet down problem | grep -q "reachable" || { show "$root/down/status.json"; fail "status does not say the tier is unreachable"; }
pass "the OCI registry down: init succeeds from upstream; status says so with the fix"

# Two runners filling an empty tier at once.
rm -rf "$oci/data"
start_oci
runner racer1 "$root/docker-good" &
racer1=$!
runner racer2 "$root/docker-good" &
racer2=$!
wait "$racer1" || fail "racer 1 failed"
wait "$racer2" || fail "racer 2 failed"
for r in racer1 racer2; do
    [[ $(fleet $r failures) == 0 ]] || { show "$root/$r/status.json"; fail "$r's writes failed"; }
    # Each archive was taken from the tier (the other racer wrote it
    # first), written, or found there when about to be written.
    seen=$(($(fleet $r hits) + $(fleet $r pushes) + $(fleet $r present)))
    [[ $seen == 2 ]] || { show "$root/$r/status.json"; fail "$r took, wrote or found $seen archives in the tier, not 2"; }
done
runner after "$root/docker-good"
[[ $(archives after) == 0 ]] || fail "after two racing writers, a fresh runner made $(archives after) upstream archive requests"
[[ $(fleet after hits) == 2 ]] || fail "after two racing writers, a fresh runner took $(fleet after hits) archives from the tier"
pass "two runners writing the same archives at once leave a tier that serves both"
