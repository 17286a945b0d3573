#!/usr/bin/env bash
# registry_run_ci.sh BIN_DIR
#
# End to end: a CI job's script under `hostkeeper exec --registry-cache`, on
# a runner with no keyring backend at all (no D-Bus session, no pass store)
# and no registry port (support/container-env.sh): the job's token arrives
# as a TF_TOKEN_* variable, as CI systems hand it out. The script runs
# terraform init twice (two working directories) and terraform providers;
# the private module and provider install through the run's port, the
# registry sees only the job's token and only hostkeeperd, the second init
# makes no upstream metadata request, and `hostkeeper status` during the
# run says which source serves the host's token. After the job, nothing of
# the run is left and no file holds the token.
#
#   tests/support/container-env.sh tests/support/keyring-env.sh --no-keyring tests/e2e/registry_run_ci.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped.

# The job's script expands in COMMAND's environment, not here.
# shellcheck disable=SC2016
set -euo pipefail

e2e_name=e2e-registry-run-ci  # read by lib.sh
# shellcheck disable=SC2054  # the commas are https_registry.py's list syntax
registry_args=(--modules acme/hello/null --providers acme/thing
    --registry-provider-versions 1.0.0 --gpg-home "$HK_TEST_ROOT/e2e-registry-run-ci/gnupg")
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hk=$bin/hostkeeper
[[ ${HK_CONTAINER_NETNS:-} == 1 ]] || die "run me through tests/support/container-env.sh"
[[ -z ${HK_KEYRING_PID:-} ]] || die "run me through keyring-env.sh --no-keyring"
tf_platform=$("$terraform" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["platform"])')
case $tf_platform in
    linux_amd64 | darwin_arm64) ;;
    *) echo "SKIP: terraform runs on $tf_platform; the test registry serves linux_amd64 and darwin_arm64"; exit 77 ;;
esac
# No session bus, no pass store: nothing a keyring backend could use.
unset DBUS_SESSION_BUS_ADDRESS
[[ ! -e $HOME/.password-store ]] || die "a pass store exists in the throw-away HOME"

# The job's token, as a CI system hands it: TF_TOKEN_ plus the host with
# . as _ (the port keeps its :, so env(1) sets it: it is no shell name).
token_var=TF_TOKEN_${host//./_}

workdir "$root/a" "$host" acme/hello/null acme/thing 1.0.0
workdir "$root/b" "$host" acme/hello/null acme/thing 1.0.0
cat >"$root/job.sh" <<'SH'
set -eu
cd "$ROOT/a"
"$TERRAFORM" init -input=false -no-color
cp "$ROOT/requests.jsonl" "$ROOT/after-first.jsonl"
"$HK" status --json >"$ROOT/status.json"
cd "$ROOT/b"
"$TERRAFORM" init -input=false -no-color
"$TERRAFORM" providers -no-color
echo "$TF_CLI_CONFIG_FILE" >"$ROOT/config.path"
SH
: >"$log"
env "$token_var=$TOKEN" ROOT="$root" TERRAFORM="$terraform" HK="$hk" "$hk" exec --registry-cache -- bash "$root/job.sh" >"$root/job.out" 2>&1 ||
    { show "$root/job.out"; fail "the CI job under exec --registry-cache failed"; }
for dir in a b; do
    exe=$root/$dir/.terraform/providers/$host/acme/thing/1.0.0/$tf_platform/terraform-provider-thing_v1.0.0
    [[ -x $exe ]] || { show "$root/job.out"; fail "the provider is not installed in $dir"; }
done
pass "a CI job's two inits install through the run's port with no keyring backend"

python3 - "$log" "$TOKEN" <<'PY' || fail "the registry saw other clients or other tokens (above)"
import json, sys
bad = []
for line in open(sys.argv[1], encoding="utf-8"):
    e = json.loads(line)
    if "hostkeeper/" not in (e.get("user_agent") or ""):
        bad.append("client %s for %s" % (e.get("user_agent"), e["path"]))
    if e["authorization"] not in (None, "Bearer " + sys.argv[2]):
        bad.append("another token for %s" % e["path"])
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
authorized=$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["authorization"]))' "$log")
[[ $authorized -gt 0 ]] || fail "no upstream request carried the job's token (the test proves nothing)"
first=$(wc -l <"$root/after-first.jsonl")
second=$(tail -n "+$((first + 1))" "$log" | grep -vcE '\.(zip|tar\.gz)"' || true)
[[ $second == 0 ]] || fail "the second init made $second upstream metadata request(s)"
pass "upstream saw only hostkeeperd, with the job's token; the second init made no metadata request"

python3 - "$root/status.json" "$host" <<'PY' || { show "$root/status.json"; fail "status does not say the run's token serves $host"; }
import json, sys
d = json.load(open(sys.argv[1]))
sources = {h["host"]: h.get("token_source") for h in d["registry_cache"].get("hosts", [])}
print(sources)
sys.exit(0 if sources.get(sys.argv[2]) == "run" else 1)
PY
pass "status names the run's token as the source for $host"

generated=$(cat "$root/config.path")
[[ ! -e $generated && ! -e $(dirname "$generated") ]] || fail "the run left $(dirname "$generated")"
if grep -rlsF "$TOKEN" "$HOME" "$XDG_RUNTIME_DIR" 2>/dev/null | grep -v "^$root/" | head -3 | grep -q .; then
    grep -rlsF "$TOKEN" "$HOME" "$XDG_RUNTIME_DIR" | grep -v "^$root/"
    fail "files outside the test's own hold the job's token (above)"
fi
pass "nothing of the run is left, and no file of hostkeeper's holds the token"
