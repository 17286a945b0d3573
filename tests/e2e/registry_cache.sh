#!/usr/bin/env bash
# registry_cache.sh BIN_DIR
#
# End to end: `hostkeeper setup --registry-cache` and the real terraform.
# Terraform's registry requests go through the registry port
# (http://127.0.0.1:PORT/v1/..., no secret in it, held by a real hostkeeper-portd in a
# private network namespace: support/port-env.sh) to hostkeeperd, and from
# it to the suite's HTTPS registry, which counts every request it gets (its
# JSON log: path, Authorization, User-Agent). The scenarios, in order:
#   1. setup writes registry-cache.json (0600, no secret, no port of its
#      own) and the daemon registers for the registry port; exec
#      --registry-cache then uses the registry port, unless
#      TF_CLI_CONFIG_FILE is set (a port of the run's own);
#   2. the first init learns the host: the helper's `get` names it, the
#      daemon discovers it and writes its block (modules.v1 and providers.v1
#      at the listener) into ~/.terraform.d/hostkeeper.tfrc;
#   3. a second init in another directory makes no discovery request and at
#      most one request per document upstream, a third none at all; the
#      provider archive is downloaded upstream once for the two directories;
#   4. ten concurrent inits of a configuration nothing has asked for yet make
#      one upstream request per document and one download per archive;
#   5. with the upstream stopped (and the cached documents expired), a
#      version installed before installs again; a never-seen one fails;
#   6. a second registry host with its own token: each host's upstream only
#      ever sees its own token; the listener refuses the other host's token,
#      a foreign Host header, a missing token, a web browser's request
#      (Origin, Sec-Fetch-*: 403) and an older setup's capability-prefixed
#      URL (410);
#   7. with the daemon stopped, the registry port answers 503 and the blocks
#      stay (no other user can bind the port: e2e/port_takeover.sh tries);
#      the next init starts the daemon through the helper and goes through
#      the cache again;
#   8. a TFE-like host named to setup: its block carries its other services
#      (tfe.v2, login.v1, ...) with real URLs; `terraform login` (OAuth flow,
#      driven by curl as the browser) and init with a cloud block and with a
#      remote backend still work;
#   9. `setup --registry-cache --undo` removes the blocks and terraform works
#      directly against the registry again.
# No TF_CLI_CONFIG_FILE: the cache's tfrc file is read only from
# ~/.terraform.d/, which TF_CLI_CONFIG_FILE turns off; ~/.terraformrc is the
# throw-away HOME's.
#
# Run it inside support/port-env.sh and support/keyring-env.sh:
#   tests/support/port-env.sh tests/support/keyring-env.sh tests/e2e/registry_cache.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no terraform,
# or terraform not on linux_amd64 or darwin_arm64, the registry's platforms).
set -euo pipefail

e2e_name=e2e-registry-cache  # read by lib.sh
# One signing key for every start of the registry (scenario 5 restarts it).
# shellcheck disable=SC2054  # the commas are https_registry.py's list syntax
registry_args=(--modules acme/hello/null,acme/two/null --providers acme/thing,acme/other
    --registry-provider-versions 1.0.0,1.2.0 --gpg-home "$HK_TEST_ROOT/e2e-registry-cache/gnupg")
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hk=$bin/hostkeeper
need curl
tf_platform=$("$terraform" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["platform"])')
case $tf_platform in
    linux_amd64 | darwin_arm64) ;;
    *) echo "SKIP: terraform runs on $tf_platform; the test registry serves linux_amd64 and darwin_arm64"; exit 77 ;;
esac

cache_config=$XDG_CONFIG_HOME/hostkeeper/registry-cache.json
tfrc=$HOME/.terraform.d/hostkeeper.tfrc
# Short metadata lifetimes, so that scenario 5 sees the documents expire.
ttl=20

# json FILE EXPRESSION: the Python EXPRESSION over the JSON document in FILE (d).
json() {
    python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
value = eval(sys.argv[2], {"d": d})
for item in value if isinstance(value, list) else [value]:
    print(item)
PY
}

# since LOG N OUT: LOG's lines after the first N into OUT.
since() { tail -n "+$(($2 + 1))" "$1" >"$3"; }
lines() { wc -l <"$1"; }

# counts LOG: "COUNT PATH" for every path requested in LOG.
counts() {
    python3 - "$1" <<'PY'
import collections, json, sys
c = collections.Counter(json.loads(l)["path"] for l in open(sys.argv[1], encoding="utf-8"))
for path, n in sorted(c.items()):
    print(n, path)
PY
}
# count LOG PATH: how many requests for PATH.
count() { counts "$1" | awk -v p="$2" '$2 == p { n = $1 } END { print n + 0 }'; }
# count_matching LOG REGEX: how many requests for paths matching REGEX.
count_matching() { counts "$1" | awk -v r="$2" '$2 ~ r { n += $1 } END { print n + 0 }'; }

# auth_values LOG: every distinct Authorization value in LOG ("null": none).
auth_values() {
    python3 - "$1" <<'PY'
import json, sys
print("\n".join(sorted({json.loads(l)["authorization"] or "null" for l in open(sys.argv[1], encoding="utf-8")})))
PY
}

# hk_ok OUT ARGS...: hostkeeper ARGS, output in OUT; fails (showing it) unless it exits 0.
hk_ok() {
    local out=$1 rc=0
    shift
    "$hk" "$@" >"$out" 2>&1 || rc=$?
    [[ $rc == 0 ]] || { show "$out"; fail "hostkeeper $* exited with $rc"; }
}

# status_json OUT: hostkeeper status --json into OUT.
status_json() {
    local rc=0
    "$hk" status --json >"$1" 2>"$1.stderr" || rc=$?
    [[ $rc == 0 ]] || { show "$1.stderr"; fail "hostkeeper status --json exited with $rc"; }
}

# must_init DIR WHAT: terraform init in DIR succeeds (output in DIR.out).
must_init() {
    if ! init "$1" "$1.out"; then
        show "$1.out"
        fail "$2: terraform init in $1 failed"
    fi
}

# installed DIR TYPE VERSION: the provider package is installed in DIR.
installed() {
    local exe=$1/.terraform/providers/$host/acme/$2/$3/$tf_platform/terraform-provider-$2_v$3
    [[ -x $exe ]] || { show "$1.out"; fail "$exe is not installed"; }
}

# wait_block HOST: waits (15 s at most) for HOST's block in the tfrc file.
wait_block() {
    local _
    for _ in $(seq 1 150); do
        grep -qsF "host \"$1\"" "$tfrc" && return 0
        sleep 0.1
    done
    [[ -e $tfrc ]] && show "$tfrc"
    status_json "$root/status-noblock.json"
    show "$root/status-noblock.json"
    fail "no block for $1 in $tfrc within 15 s"
}

# expect_zero LOG REGEX WHAT: no request in LOG for a path matching REGEX.
expect_zero() {
    local n
    n=$(count_matching "$1" "$2")
    [[ $n == 0 ]] || { counts "$1"; fail "$3: $n upstream request(s) for paths matching $2 (counts above)"; }
}

# expect_at_most_one LOG WHAT: no path in LOG was requested more than once.
expect_at_most_one() {
    if counts "$1" | awk '$1 > 1 { bad = 1 } END { exit !bad }'; then
        counts "$1"
        fail "$2: some upstream document was requested more than once (counts above)"
    fi
}

# --- 1. set-up --------------------------------------------------------------------
printf '{"token":"%s"}' "$TOKEN" | "$helper" store "$host" || fail "storing the token for $host failed"
mkdir -p "$XDG_CONFIG_HOME/hostkeeper"
cat >"$XDG_CONFIG_HOME/hostkeeper/config.toml" <<TOML
[registry]
versions_ttl = $ttl
download_ttl = $ttl
TOML
"$hk" stop >/dev/null 2>&1 || true  # the next daemon reads config.toml

hk_ok "$root/setup.out" setup --registry-cache
show "$root/setup.out"
grep -qs 'credentials_helper "hostkeeper"' "$HOME/.terraformrc" ||
    { show "$HOME/.terraformrc"; fail "setup --registry-cache left no credentials_helper block in ~/.terraformrc"; }
[[ -f $cache_config ]] || fail "setup --registry-cache wrote no $cache_config"
[[ $(stat -c %a "$cache_config") == 600 ]] || fail "$cache_config has mode $(stat -c %a "$cache_config"), not 600"
[[ -n ${HK_REGISTRY_PORT:-} ]] || die "run me through tests/support/port-env.sh"
listen=127.0.0.1:$HK_REGISTRY_PORT
[[ $(json "$cache_config" '"listen" in d') == False ]] || { show "$cache_config"; fail "setup chose a port of its own"; }
[[ $(json "$cache_config" '" ".join(sorted(d))') == "hosts tfrc_files version" ]] ||
    { show "$cache_config"; fail "$cache_config holds more than version, tfrc_files and hosts (a secret?)"; }
base=http://$listen
pass "setup --registry-cache: $cache_config (0600), no secret, no port of its own"

status_json "$root/status1.json"
[[ $(json "$root/status1.json" 'd["registry_cache"]["enabled"] and d["registry_cache"]["held"]') == True ]] ||
    { show "$root/status1.json"; fail "the daemon is not registered for the registry port"; }
[[ $(json "$root/status1.json" 'd["registry_cache"]["listen"] + " " + d["registry_cache"]["held_by"]') == "$listen hostkeeper-portd" ]] ||
    { show "$root/status1.json"; fail "status does not name the registry port and hostkeeper-portd"; }
pass "the daemon is registered with hostkeeper-portd for $listen"

# exec --registry-cache: where the registry port is set up, COMMAND runs as
# under plain exec (no configuration of the run's); where Terraform would not
# read setup's host blocks (TF_CLI_CONFIG_FILE names the user's own file),
# the run has a port of its own.
# shellcheck disable=SC2016  # expanded by COMMAND's shell
"$hk" exec --registry-cache -- sh -c 'printf "%s\n" "${TF_CLI_CONFIG_FILE-unset}"' >"$root/exec-port.out" 2>&1 ||
    { show "$root/exec-port.out"; fail "exec --registry-cache with the registry port set up failed"; }
[[ $(cat "$root/exec-port.out") == unset ]] ||
    { show "$root/exec-port.out"; fail "exec --registry-cache made a port of its own where the registry port is set up"; }
# shellcheck disable=SC2016  # expanded by COMMAND's shell
TF_CLI_CONFIG_FILE=$HOME/.terraformrc "$hk" exec --registry-cache -- sh -c 'printf "%s\n" "$TF_CLI_CONFIG_FILE"' \
    >"$root/exec-own.out" 2>&1 || { show "$root/exec-own.out"; fail "exec --registry-cache with TF_CLI_CONFIG_FILE failed"; }
grep -q "/hostkeeper/runs/run-[0-9]*-.*/" "$root/exec-own.out" ||
    { show "$root/exec-own.out"; fail "with TF_CLI_CONFIG_FILE set, exec --registry-cache did not give the run a port of its own"; }
pass "exec --registry-cache uses the registry port, or its own port where Terraform would not read setup's blocks"

# --- 2. the first init learns the host ---------------------------------------------
workdir "$root/w1" "$host" acme/hello/null acme/thing 1.0.0
n0=$(lines "$log")
must_init "$root/w1" "first init"
installed "$root/w1" thing 1.0.0
grep -qs 'hello from the keyring' "$root/w1/.terraform/modules/m/main.tf" || fail "the module was not installed in w1"
pass "first init (host not routed yet) installed module and provider"
wait_block "$host"
show "$tfrc"
[[ $(stat -c %a "$tfrc") == 600 ]] || fail "$tfrc has mode $(stat -c %a "$tfrc"), not 600"
grep -qF "$base/v1/$host/modules/" "$tfrc" ||
    fail "$host's modules.v1 does not point at $base/v1/$host/modules/"
grep -qF "$base/v1/$host/providers/" "$tfrc" || fail "$host's providers.v1 does not point at $base/v1/$host/providers/"
# Terraform prints these URLs: nothing but the listener and the route in them.
if grep -o "http://$listen/[^\"]*" "$tfrc" | grep -vE "^http://$listen/v1/[^/]+/(modules|providers)/\$"; then
    fail "$tfrc has a listener URL with more than the route in it"
fi
status_json "$root/status2.json"
[[ $(json "$root/status2.json" '[h["source"] + " " + str(h["routed"]) for h in d["registry_cache"]["hosts"] if h["host"] == "'"$host"'"]') == "learned True" ]] ||
    { show "$root/status2.json"; fail "status does not list $host as learned and routed"; }
pass "the first init's helper get taught the daemon $host: its block is in $tfrc"
since "$log" "$n0" "$root/up1.jsonl"
[[ $(count "$root/up1.jsonl" "$discovery") -ge 1 ]] || fail "the first init made no discovery request (was the host routed before?)"

# --- 3. second and third inits --------------------------------------------------------
zip_re='^/provider-files/acme/thing/1\.0\.0/.*linux_amd64\.zip$'
[[ $tf_platform == linux_amd64 ]] || zip_re='^/provider-files/acme/thing/1\.0\.0/.*darwin_arm64\.zip$'
workdir "$root/w2" "$host" acme/hello/null acme/thing 1.0.0
n0=$(lines "$log")
must_init "$root/w2" "second init"
installed "$root/w2" thing 1.0.0
grep -qs 'hello from the keyring' "$root/w2/.terraform/modules/m/main.tf" || fail "the module was not installed in w2"
grep -q 'self-signed, key ID' "$root/w2.out" || { show "$root/w2.out"; fail "terraform did not check the provider's signature through the cache"; }
since "$log" "$n0" "$root/up2.jsonl"
echo "upstream during the second init:"; counts "$root/up2.jsonl"
expect_zero "$root/up2.jsonl" '^/\.well-known/' "second init"
expect_at_most_one "$root/up2.jsonl" "second init"
diff <(grep -A20 'acme/thing' "$root/w1/.terraform.lock.hcl") <(grep -A20 'acme/thing' "$root/w2/.terraform.lock.hcl") ||
    fail "the lock file's hashes through the cache differ from those installed directly"
pass "second init: through the cache (signature checked, same lock hashes), no discovery, no document twice upstream"
if grep -v '"authorization": null' "$root/up2.jsonl" | grep -vF "\"authorization\": \"Bearer $TOKEN\"" | grep -q .; then
    show "$root/up2.jsonl"
    fail "an upstream request carried an Authorization other than $host's token"
fi

workdir "$root/w3" "$host" acme/hello/null acme/thing 1.0.0
n0=$(lines "$log")
must_init "$root/w3" "third init"
installed "$root/w3" thing 1.0.0
since "$log" "$n0" "$root/up3.jsonl"
expect_zero "$root/up3.jsonl" '^/\.well-known/' "third init"
expect_zero "$root/up3.jsonl" '^/v1/' "third init (metadata)"
expect_zero "$root/up3.jsonl" '^/(archives|provider-files)/' "third init (archives)"
pass "third init: no upstream request at all"
cat "$root/up2.jsonl" "$root/up3.jsonl" >"$root/up23.jsonl"
[[ $(count_matching "$root/up23.jsonl" "$zip_re") == 1 ]] ||
    { counts "$root/up23.jsonl"; fail "the provider archive was not downloaded upstream exactly once for w2 and w3"; }
pass "the provider archive was downloaded upstream once for two working directories"

# --- 4. ten concurrent inits ------------------------------------------------------
n0=$(lines "$log")
pids=()
for i in $(seq 1 10); do
    workdir "$root/c$i" "$host" acme/two/null acme/other 1.2.0
    init "$root/c$i" "$root/c$i.out" &
    pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { failed=1; show "$root/c$((i + 1)).out"; }
done
[[ $failed == 0 ]] || fail "a concurrent init failed"
since "$log" "$n0" "$root/up4.jsonl"
echo "upstream during ten concurrent inits:"; counts "$root/up4.jsonl"
expect_zero "$root/up4.jsonl" '^/\.well-known/' "concurrent inits"
expect_at_most_one "$root/up4.jsonl" "concurrent inits"
for path in /v1/modules/acme/two/null/versions /v1/modules/acme/two/null/1.0.0/download \
    /v1/providers/acme/other/versions "/v1/providers/acme/other/1.2.0/download/${tf_platform%_*}/${tf_platform#*_}" \
    "/provider-files/acme/other/1.2.0/terraform-provider-other_1.2.0_$tf_platform.zip" \
    /archives/acme-two-null-1.0.0.tar.gz; do
    [[ $(count "$root/up4.jsonl" "$path") == 1 ]] || fail "concurrent inits: $path was not requested upstream exactly once"
done
pass "ten concurrent inits: one upstream request per document, one download per archive"

# --- 5. upstream stopped ------------------------------------------------------------
# The documents w2 fetched were fetched at most $ttl s ago: let them expire.
sleep $((ttl + 1))
stop_server
workdir "$root/off1" "$host" acme/hello/null acme/thing 1.0.0
must_init "$root/off1" "upstream stopped, a version installed before"
installed "$root/off1" thing 1.0.0
pass "with the upstream stopped and the documents expired, a version installed before installs again"
workdir "$root/off2" "$host" acme/hello/null acme/thing 1.2.0
if init "$root/off2" "$root/off2.out"; then show "$root/off2.out"; fail "a never-seen version installed with the upstream stopped"; fi
pass "a never-seen version fails with the upstream stopped: $(grep -m1 -i 'error' "$root/off2.out" | sed 's/^[│ ]*//')"
# hostkeeperd restarted during the outage (an idle exit, a reboot): its
# in-memory cache is gone, the answers it kept on disk still install what
# was installed before.
"$bin/hostkeeper" stop >/dev/null || fail "hostkeeper stop exited with $?"
workdir "$root/off3" "$host" acme/hello/null acme/thing 1.0.0
must_init "$root/off3" "upstream stopped, hostkeeperd restarted, a version installed before"
installed "$root/off3" thing 1.0.0
pass "with the upstream stopped and hostkeeperd restarted, a version installed before installs again"
# status counts those answers as the stale answers they are.
st=$("$bin/hostkeeper" status) || fail "hostkeeper status exited with $?"
grep -qE 'registry cache: .* [1-9][0-9]* stale answers \([1-9][0-9]* from the copies kept on disk\)' <<<"$st" ||
    { echo "$st"; fail "status does not count the answers kept on disk as stale"; }
pass "status: $(grep -oE '[0-9]+ stale answers \([^)]*\)' <<<"$st")"
# The registry comes back where it was: the routed host is 127.0.0.1:$port.
start_registry upstream "$TOKEN" --port "$port" "${registry_args[@]}"
log=$root/upstream.jsonl

# --- 6. a second host with its own token ---------------------------------------------
TOKEN2=hk-e2e-other-$(openssl rand -hex 24)
start_registry other "$TOKEN2"
host2=127.0.0.1:$registry_port
log2=$root/other.jsonl
printf '{"token":"%s"}' "$TOKEN2" | "$helper" store "$host2" || fail "storing the token for $host2 failed"
mkdir -p "$root/two"
cat >"$root/two/main.tf" <<TF
module "a" {
  source  = "$host/acme/hello/null"
  version = "1.0.0"
}

module "b" {
  source  = "$host2/acme/hello/null"
  version = "1.0.0"
}
TF
must_init "$root/two" "two hosts (first)"
wait_block "$host2"
rm -rf "$root/two/.terraform"
must_init "$root/two" "two hosts (second, both routed)"
foreign=$(auth_values "$log" | grep -vxF -e null -e "Bearer $TOKEN" || true)
[[ -z $foreign ]] || fail "$host's upstream saw an Authorization other than its own token: $foreign"
foreign=$(auth_values "$log2" | grep -vxF -e null -e "Bearer $TOKEN2" || true)
[[ -z $foreign ]] || fail "$host2's upstream saw an Authorization other than its own token: $foreign"
grep -F '"user_agent": "hostkeeper/' "$log2" | grep -qF "\"authorization\": \"Bearer $TOKEN2\"" ||
    { show "$log2"; fail "hostkeeperd never asked $host2 upstream with its token (was it routed?)"; }
pass "each registry only ever saw its own token (and requests without one); hostkeeperd used $host2's token for $host2"

# The listener itself: curl URL [CURL ARGS...] -> the HTTP status.
listener() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
versions_url=$base/v1/$host/modules/acme/hello/null/versions
n0=$(lines "$log")
[[ $(listener -H "Authorization: Bearer $TOKEN" "$versions_url") == 200 ]] || fail "the listener refused $host's own token"
[[ $(listener -H "Authorization: Bearer $TOKEN2" "$versions_url") == 401 ]] || fail "the listener did not answer 401 to $host2's token for $host"
[[ $(listener "$versions_url") == 401 ]] || fail "the listener did not answer 401 without a token"
old_url=http://$listen/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdE/v1/$host/modules/acme/hello/null/versions
[[ $(listener -H "Authorization: Bearer $TOKEN" "$old_url") == 410 ]] ||
    fail "the listener did not answer 410 to an older setup's capability-prefixed URL"
curl -s -o /dev/null -D "$root/old.head" -H "Authorization: Bearer $TOKEN" "$old_url"
grep -qF 'run `terraform init` again' "$root/old.head" || { show "$root/old.head"; fail "the 410 does not say to run terraform init again"; }
[[ $(listener -H "Authorization: Bearer $TOKEN" -H "Origin: http://evil.example.com" "$versions_url") == 403 ]] ||
    fail "the listener did not answer 403 to a request with an Origin header (a web page's)"
[[ $(listener -H "Authorization: Bearer $TOKEN" -H "Sec-Fetch-Site: cross-site" "$versions_url") == 403 ]] ||
    fail "the listener did not answer 403 to a request with a Sec-Fetch-Site header (a browser's)"
[[ $(listener -H "Authorization: Bearer $TOKEN" -H "Host: evil.example.com" "$versions_url") == 403 ]] ||
    fail "the listener did not answer 403 to a foreign Host header"
[[ $(listener -X POST -H "Authorization: Bearer $TOKEN" "$versions_url") =~ ^40[05]$ ]] ||
    fail "the listener accepted a POST"
since "$log" "$n0" "$root/up6.jsonl"
if grep -qF "$TOKEN2" "$root/up6.jsonl" "$log"; then fail "$host2's token reached $host's upstream"; fi
pass "the listener: 200 with the host's token; 401 with another host's or none; 403 for a foreign Host or a browser's request; 410 for an old capability URL"

# --- 7. the daemon stopped ---------------------------------------------------------------
"$hk" stop >/dev/null || fail "hostkeeper stop exited with $?"
for _ in $(seq 1 100); do "$hk" status >/dev/null 2>&1 || break; sleep 0.1; done
# hostkeeper-portd keeps the port and answers for a user without a daemon.
head=$(curl -s -D - -o /dev/null -H "Authorization: Bearer $TOKEN" "$versions_url" | head -1 | tr -d '\r')
[[ $head == "HTTP/1.1 503 hostkeeperd is not running for this user"* ]] ||
    fail "with hostkeeperd stopped the registry port answered '$head', not hostkeeper-portd's 503"
grep -q "^host \"$host\"" "$tfrc" || { show "$tfrc"; fail "the blocks went with the daemon (they name a port no one else can hold)"; }
pass "with hostkeeperd stopped, the registry port answers: $head"
# The next init asks the helper first, which starts hostkeeperd; it registers
# before it answers, so the init goes through the cache.
workdir "$root/after-stop" "$host" acme/hello/null acme/thing 1.0.0
n0=$(lines "$log")
must_init "$root/after-stop" "the first init after hostkeeper stop"
since "$log" "$n0" "$root/up7.jsonl"
if grep -F '"user_agent": "Terraform' "$root/up7.jsonl" | grep -q '"/v1/'; then
    show "$root/up7.jsonl"
    fail "terraform asked the registry itself after the stop: the cache was not in the way"
fi
pass "the first init after a stop started hostkeeperd through the helper and went through the cache"
"$hk" stop >/dev/null 2>&1 || true

# A typo in config.toml, no user manager: the helper starts hostkeeperd, which
# cannot run; it stays to answer with the reason, so Terraform's requests on
# the registry port name the file and line too, and doctor says it once.
cp "$XDG_CONFIG_HOME/hostkeeper/config.toml" "$root/config.toml.good"
printf '[credentials]\nttl = "soon"\n' >>"$XDG_CONFIG_HOME/hostkeeper/config.toml"
workdir "$root/typo" "$host" acme/hello/null acme/thing 1.0.0
if init "$root/typo" "$root/typo.out"; then show "$root/typo.out"; fail "init succeeded with a typo in config.toml"; fi
grep -q 'config.toml:5' "$root/typo.out" ||
    { show "$root/typo.out"; fail "terraform's output does not name config.toml and the typo's line"; }
grep -q 'is not running for this user' "$root/typo.out" &&
    { show "$root/typo.out"; fail "terraform heard hostkeeper-portd's 'not running', not the reason"; }
pass "a typo in config.toml: terraform says: $(grep -m1 'config.toml:5' "$root/typo.out" | sed 's/^[│ ]*//' | head -c 200)"
rc=0
"$hk" doctor >"$root/typo-doctor.out" 2>&1 || rc=$?
[[ $rc != 0 ]] || { show "$root/typo-doctor.out"; fail "doctor passed with a typo in config.toml"; }
grep -q '^FAIL.*config.toml:5' "$root/typo-doctor.out" ||
    { show "$root/typo-doctor.out"; fail "doctor does not name config.toml:5"; }
grep -q 'log-level debug' "$root/typo-doctor.out" &&
    { show "$root/typo-doctor.out"; fail "doctor sends the user to --log-level debug for a known cause"; }
pass "doctor names the typo once: $(grep -c '^FAIL' "$root/typo-doctor.out") FAIL line(s)"
cp "$root/config.toml.good" "$XDG_CONFIG_HOME/hostkeeper/config.toml"
"$hk" stop >/dev/null 2>&1 || true
for _ in $(seq 1 150); do "$hk" status >/dev/null 2>&1 || break; sleep 0.1; done

# --- 8. a TFE-like host named to setup ------------------------------------------------
start_registry tfe "$TOKEN" --tfe
tfe_host=127.0.0.1:$registry_port
tfe_log=$root/tfe.jsonl
hk_ok "$root/setup-tfe.out" setup --registry-cache "$tfe_host"
wait_block "$tfe_host"
show "$tfrc"
grep -qF "https://$tfe_host/api/v2/" "$tfrc" || fail "$tfe_host's block lacks tfe.v2 with its real URL"
# Forced services replace the whole discovery document: every service it
# offers must be in the block (Terraform asks for tfe.v2.1 and tfe.v2.2 too).
curl -sS --cacert "$root/tls/ca.pem" -o "$root/tfe-discovery.json" "https://$tfe_host/.well-known/terraform.json" ||
    fail "fetching $tfe_host's discovery document failed"
block=$(sed -n "/^host \"$tfe_host\" {/,/^}/p" "$tfrc")
missing=()
for service in $(json "$root/tfe-discovery.json" 'sorted(d)'); do
    grep -qF "\"$service\" =" <<<"$block" || missing+=("$service")
done
[[ ${#missing[@]} == 0 ]] || fail "$tfe_host's block lacks services its discovery document offers: ${missing[*]}"
pass "the TFE-like host's block carries its other services with real URLs"
n0=$(lines "$tfe_log")
tf_login "$tfe_host"
[[ $("$helper" get "$tfe_host") == "{\"token\":\"$TOKEN\"}" ]] || fail "terraform login did not store the token through the helper"
since "$tfe_log" "$n0" "$root/up8.jsonl"
grep -q '"user_agent": "Terraform' "$root/up8.jsonl" && expect_zero <(grep '"user_agent": "Terraform' "$root/up8.jsonl") '^/\.well-known/' "terraform login (terraform's own requests)"
pass "terraform login through the forced services stored the OAuth token in the keyring"
# The cloud block asks for tfe.v2, the remote backend for tfe.v2.1.
for kind in cloud remote; do
    mkdir -p "$root/$kind"
    if [[ $kind == cloud ]]; then block="cloud {"; else block="backend \"remote\" {"; fi
    cat >"$root/$kind/main.tf" <<TF
terraform {
  $block
    hostname     = "$tfe_host"
    organization = "acme"
    workspaces {
      name = "ws1"
    }
  }
}
TF
    must_init "$root/$kind" "init with a $kind block on the TFE-like host"
done
foreign=$(auth_values "$tfe_log" | grep -vxF -e null -e "Bearer $TOKEN" || true)
[[ -z $foreign ]] || fail "the TFE-like host saw an unexpected Authorization: $foreign"
pass "init with a cloud block and with a remote backend on the routed TFE-like host works"

# --- 9. undo ----------------------------------------------------------------------
hk_ok "$root/undo.out" setup --registry-cache --undo
[[ ! -e $tfrc ]] || { show "$tfrc"; fail "$tfrc is still there after --undo"; }
[[ ! -e $cache_config ]] || fail "$cache_config is still there after --undo"
workdir "$root/u1" "$host" acme/hello/null acme/thing 1.0.0
n0=$(lines "$log")
must_init "$root/u1" "after --undo"
installed "$root/u1" thing 1.0.0
since "$log" "$n0" "$root/up9.jsonl"
[[ $(count "$root/up9.jsonl" "$discovery") -ge 1 ]] || { counts "$root/up9.jsonl"; fail "after --undo, terraform did not discover $host itself"; }
pass "after --undo terraform works directly against the registry (it discovered $host itself)"

echo "PASS: terraform init through hostkeeperd's registry cache"
