#!/usr/bin/env bash
# registry_run.sh BIN_DIR
#
# End to end: `hostkeeper exec --registry-cache -- COMMAND`, the registry
# cache of one run, where there is no registry port (a CI job's container:
# support/container-env.sh, any user may bind any port), with the real
# terraform and the suite's HTTPS registry, which logs every request. No
# `setup` was ever run. The scenarios, in order:
#   1. a run's terraform init installs a private module and provider through
#      the run's own port (its TF_CLI_CONFIG_FILE names it, 0600, in a 0700
#      directory), with the user's own configuration (TF_CLI_CONFIG_FILE:
#      credentials, provider_installation and a host block of theirs) in it;
#      the run says that the user's host block wins; afterwards nothing of
#      the run is left;
#   2. a second run in another directory makes no upstream metadata request;
#      two runs at once each get a port and a configuration of their own; a
#      host the daemon learns during a run gets its block in the run's file,
#      and the run's later init goes through the port;
#   3. another uid, during a run, loops on binding the run's port and on
#      connecting to it: it never binds, never gets an answer;
#   4. the daemon killed during a run: a request then gets a 503 naming the
#      reason (or an answer from the daemon already started again), and a
#      terraform init after it installs through the restarted daemon;
#   5. SIGTERM to a run leaves no generated file; a run killed outright
#      leaves its directory, which the next run removes, or hostkeeper
#      doctor, which also lists a live run's hosts; one ^C on the terminal
#      reaches COMMAND once;
#   6. COMMAND not found: 127; a user configuration that does not scan:
#      exit 2 naming file and line, nothing run; no loopback port free to
#      bind: exit 1 saying so, nothing run.
#
#   tests/support/container-env.sh tests/support/keyring-env.sh tests/e2e/registry_run.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped.

# The sh -c scripts below expand in COMMAND's environment, not here.
# shellcheck disable=SC2016
set -euo pipefail

e2e_name=e2e-registry-run  # read by lib.sh
# shellcheck disable=SC2054  # the commas are https_registry.py's list syntax
registry_args=(--modules acme/hello/null --providers acme/thing
    --registry-provider-versions 1.0.0 --gpg-home "$HK_TEST_ROOT/e2e-registry-run/gnupg")
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hk=$bin/hostkeeper
need curl setpriv unshare ip sysctl
[[ ${HK_CONTAINER_NETNS:-} == 1 ]] || die "run me through tests/support/container-env.sh"
tf_platform=$("$terraform" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["platform"])')
case $tf_platform in
    linux_amd64 | darwin_arm64) ;;
    *) echo "SKIP: terraform runs on $tf_platform; the test registry serves linux_amd64 and darwin_arm64"; exit 77 ;;
esac
runs=$XDG_RUNTIME_DIR/hostkeeper/runs

# counts LOG: "COUNT PATH" for every path requested in LOG.
counts() {
    python3 - "$1" <<'PY'
import collections, json, sys
c = collections.Counter(json.loads(l)["path"] for l in open(sys.argv[1], encoding="utf-8"))
for path, n in sorted(c.items()):
    print(n, path)
PY
}
metadata_requests() { counts "$1" | awk '$2 !~ /\.(zip|tar\.gz)$/ { n += $1 } END { print n + 0 }'; }

# The user's own configuration, as a CI job would have it: the token in a
# credentials block, provider_installation, and a host block for a host of
# theirs, which must win over the run's.
user_config=$root/user.tfrc
cat >"$user_config" <<HCL
credentials "$host" {
  token = "$TOKEN"
}
provider_installation {
  direct {}
}
host "own.example.com" {
  services = {
    "modules.v1" = "https://own.example.com/modules/"
  }
}
HCL
export TF_CLI_CONFIG_FILE=$user_config
printf '{"token":"%s"}' "$TOKEN" | "$helper" store "$host" || fail "storing the token for $host failed"

# run_init DIR OUT: hostkeeper exec --registry-cache -- terraform init in
# DIR, keeping a copy of the run's configuration in DIR.tfrc.
run_init() {
    (cd "$1" && TOKEN=$TOKEN "$hk" exec --registry-cache -- bash -c \
        'cp "$TF_CLI_CONFIG_FILE" "$0.tfrc" && stat -c %a "$TF_CLI_CONFIG_FILE" >"$0.mode" &&
         env | grep -c "^TF_TOKEN_.*=$TOKEN\$" >"$0.tokens";
         stat -c %a "$(dirname "$TF_CLI_CONFIG_FILE")" >>"$0.mode" &&
         exec "$1" init -input=false -no-color' "$1" "$terraform") >"$2" 2>&1
}

# --- 1. a run's init through its own port ---------------------------------------------
workdir "$root/one" "$host" acme/hello/null acme/thing 1.0.0
: >"$log"
run_init "$root/one" "$root/one.out" || { show "$root/one.out"; fail "the run's terraform init failed"; }
installed=$root/one/.terraform/providers/$host/acme/thing/1.0.0/$tf_platform/terraform-provider-thing_v1.0.0
[[ -x $installed ]] || { show "$root/one.out"; fail "the provider is not installed"; }
grep -qE "\"modules.v1\" *= *\"http://127\.0\.0\.1:[0-9]+/" "$root/one.tfrc" ||
    { show "$root/one.tfrc"; fail "the run's configuration names no port of its own"; }
! grep -qF "$TOKEN" "$root/one.tfrc" || fail "the run wrote the credentials block's token to its configuration"
grep -qF "# credentials \"$host\": its token is passed as a TF_TOKEN_ variable" "$root/one.tfrc" ||
    { show "$root/one.tfrc"; fail "the run's configuration does not say where the credentials block went"; }
[[ $(cat "$root/one.tokens") == 1 ]] || fail "COMMAND did not get the credentials block's token as TF_TOKEN_*"
grep -qF "credentials \"$host\": its token reaches COMMAND as TF_TOKEN_127_0_0_1:$port, a name a POSIX sh" "$root/one.out" ||
    { show "$root/one.out"; fail "the run did not say that dash drops the token's variable"; }
for kept in "provider_installation" "host \"own.example.com\""; do
    grep -qF "$kept" "$root/one.tfrc" || { show "$root/one.tfrc"; fail "the run's configuration lost the user's $kept"; }
done
[[ $(grep -c 'host "own.example.com"' "$root/one.tfrc") == 1 ]] ||
    { show "$root/one.tfrc"; fail "the run wrote a block of its own for the user's host"; }
grep -q "own.example.com keeps your own host block" "$root/one.out" ||
    { show "$root/one.out"; fail "the run did not say that the user's host block wins"; }
[[ $(tr '\n' ' ' <"$root/one.mode") == "600 700 " ]] ||
    fail "the run's configuration and directory have modes $(tr '\n' ' ' <"$root/one.mode"), not 600 700"
ua=$(python3 -c 'import json,sys; print(sorted({json.loads(l).get("user_agent") or "" for l in open(sys.argv[1])}))' "$log")
[[ $ua == *hostkeeper/* && $ua != *Terraform* ]] ||
    fail "the upstream saw user agents $ua: not only hostkeeperd's"
left=$(find "$runs" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
[[ $left == 0 ]] || { ls -la "$runs"; fail "the run left $left entries in $runs"; }
pass "a run's init installs through the run's own port, with the user's configuration kept"

# --- 2. a second run: from the cache ------------------------------------------------
workdir "$root/two" "$host" acme/hello/null acme/thing 1.0.0
: >"$log"
run_init "$root/two" "$root/two.out" || { show "$root/two.out"; fail "the second run's init failed"; }
n=$(metadata_requests "$log")
[[ $n == 0 ]] || { counts "$log"; fail "the second run made $n upstream metadata request(s)"; }
pass "a second run is served from the cache: 0 upstream metadata requests"

# run_port TFRC: the run's port, from its configuration.
run_port() { sed -nE 's|.*"modules.v1" *= *"http://127\.0\.0\.1:([0-9]+)/.*|\1|p' "$1" | head -n 1; }

# --- 2b. two runs at once: each its own port and configuration -------------------------
workdir "$root/twin-a" "$host" acme/hello/null acme/thing 1.0.0
workdir "$root/twin-b" "$host" acme/hello/null acme/thing 1.0.0
run_init "$root/twin-a" "$root/twin-a.out" &
twin_a=$!
run_init "$root/twin-b" "$root/twin-b.out" || { show "$root/twin-b.out"; fail "the second of two runs at once failed"; }
wait "$twin_a" || { show "$root/twin-a.out"; fail "the first of two runs at once failed"; }
port_a=$(run_port "$root/twin-a.tfrc") port_b=$(run_port "$root/twin-b.tfrc")
[[ -n $port_a && -n $port_b && $port_a != "$port_b" ]] ||
    fail "two runs at once did not get ports of their own ($port_a, $port_b)"
for twin in a b; do
    [[ -x $root/twin-$twin/.terraform/providers/$host/acme/thing/1.0.0/$tf_platform/terraform-provider-thing_v1.0.0 ]] ||
        { show "$root/twin-$twin.out"; fail "run $twin of two at once installed no provider"; }
done
pass "two runs at once: each its own port ($port_a, $port_b) and configuration, both install"

# --- 2c. a host learned during a run ------------------------------------------------
# A fresh daemon, and a configuration that names no token for the host: the
# run's file has no block for it. The credentials helper's get (what
# Terraform asks first) makes the daemon learn it; the run's file then gains
# its block, and a later terraform init of the same run (its token in a
# variable set only then) goes through the run's port: upstream sees only
# hostkeeperd.
"$hk" stop >/dev/null 2>&1 || true
printf 'provider_installation {\n  direct {}\n}\n' >"$root/learn.tfrc"
workdir "$root/learn" "$host" acme/hello/null acme/thing 1.0.0
: >"$log"
(cd "$root/learn" && TF_CLI_CONFIG_FILE=$root/learn.tfrc "$hk" exec --registry-cache -- bash -c '
    (grep -cF "host \"$1\"" "$TF_CLI_CONFIG_FILE" || true) >"$0.before"
    "$2" get "$1" >/dev/null || exit 8
    for _ in $(seq 1 100); do grep -qF "host \"$1\"" "$TF_CLI_CONFIG_FILE" && break; sleep 0.1; done
    cp "$TF_CLI_CONFIG_FILE" "$0.after" && stat -c %a "$TF_CLI_CONFIG_FILE" >"$0.mode"
    : >"$5"
    exec env "TF_TOKEN_${1//./_}=$4" "$3" init -input=false -no-color' \
    "$root/learn" "$host" "$helper" "$terraform" "$TOKEN" "$log") >"$root/learn.out" 2>&1 ||
    { show "$root/learn.out"; fail "the run that learns a host failed"; }
[[ $(cat "$root/learn.before") == 0 ]] || { show "$root/learn.out"; fail "the run's file had a block for $host before it was learned"; }
grep -qF "host \"$host\"" "$root/learn.after" || { show "$root/learn.out"; fail "the run's file did not gain a block for $host once it was learned"; }
[[ $(cat "$root/learn.mode") == 600 ]] || fail "the rewritten file has mode $(cat "$root/learn.mode"), not 600"
[[ -x $root/learn/.terraform/providers/$host/acme/thing/1.0.0/$tf_platform/terraform-provider-thing_v1.0.0 ]] ||
    { show "$root/learn.out"; fail "the init after the host was learned installed no provider"; }
ua=$(python3 -c 'import json,sys; print(sorted({json.loads(l).get("user_agent") or "" for l in open(sys.argv[1])}))' "$log")
[[ $ua != *Terraform* ]] || { show "$root/learn.out"; fail "the init after the host was learned went to the registry directly (user agents $ua)"; }
pass "a host learned during a run: its block is added to the run's file, and the run's next init goes through the port"

# --- 3. another uid against the run's port ----------------------------------------
# As nobody, for 3 s: bind the port (must fail) and ask it (must get nothing).
# In a directory of its own that nobody may enter (the test root is private).
outside=$(mktemp -d /tmp/hk-intruder.XXXXXX)
on_exit rm -rf "$outside"
chmod 1777 "$outside"
cat >"$outside/intruder.py" <<'PY'
import socket, sys, time
port, out = int(sys.argv[1]), sys.argv[2]
bound = answered = tries = 0
end = time.time() + 3
while time.time() < end:
    tries += 1
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", port)); b.listen(1); bound += 1
    except OSError:
        pass
    b.close()
    c = socket.socket()
    c.settimeout(1)
    try:
        c.connect(("127.0.0.1", port))
        c.sendall(b"GET /.well-known/terraform.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port)
        if c.recv(100):
            answered += 1
    except OSError:
        pass
    c.close()
open(out, "w").write("%d %d %d\n" % (tries, bound, answered))
PY
chmod 0755 "$outside/intruder.py"
workdir "$root/three" "$host" acme/hello/null acme/thing 1.0.0
(cd "$root/three" && "$hk" exec --registry-cache -- bash -c '
    port=$(sed -nE "s|.*\"modules.v1\" *= *\"http://127\.0\.0\.1:([0-9]+)/.*|\1|p" "$TF_CLI_CONFIG_FILE" | head -n 1)
    setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$0" "$port" "$1" 2>"$1.stderr" || exit 9
    exec "$2" init -input=false -no-color' "$outside/intruder.py" "$outside/intruder.txt" "$terraform") \
    >"$root/three.out" 2>&1 || { show "$root/three.out"; show "$outside/intruder.txt.stderr"; fail "the run beside another uid failed"; }
read -r tries bound answered <"$outside/intruder.txt"
[[ $tries -gt 10 && $bound == 0 && $answered == 0 ]] ||
    fail "another uid, in $tries tries, bound the run's port $bound time(s) and got $answered answer(s)"
pass "another uid never binds the run's port and gets no answer ($tries tries); the run's init still works"

# --- 4. the daemon killed during a run --------------------------------------------
# A copy of the programs, so the daemon can be kept from starting for a moment.
kill_bin=$root/kill-bin
mkdir -p "$kill_bin"
cp "$bin/hostkeeper" "$bin/hostkeeperd" "$bin/terraform-credentials-hostkeeper" "$kill_bin/"
"$hk" stop >/dev/null 2>&1 || true
workdir "$root/four" "$host" acme/hello/null acme/thing 1.0.0
cat >"$root/four.sh" <<'SH'
set -u
port=$(sed -nE 's|.*"modules.v1" *= *"http://127\.0\.0\.1:([0-9]+)/.*|\1|p' "$TF_CLI_CONFIG_FILE" | head -n 1)
pid=$("$KILL_BIN/hostkeeper" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["daemon"]["pid"])')
echo "$pid" >"$OUT.pid1"
chmod -x "$KILL_BIN/hostkeeperd"
kill -KILL "$pid"
sleep 1
curl -sS -o "$OUT.body" -w '%{http_code}\n' "http://127.0.0.1:$port/.well-known/terraform.json" >"$OUT.code" 2>&1
chmod +x "$KILL_BIN/hostkeeperd"
sleep 3
"$KILL_BIN/hostkeeper" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["daemon"]["pid"])' >"$OUT.pid2"
exec "$TERRAFORM" init -input=false -no-color
SH
: >"$log"
(cd "$root/four" && KILL_BIN=$kill_bin OUT=$root/four TERRAFORM=$terraform \
    "$kill_bin/hostkeeper" exec --registry-cache -- bash "$root/four.sh") >"$root/four.out" 2>&1 ||
    { show "$root/four.out"; fail "the run whose daemon was killed failed"; }
[[ $(cat "$root/four.code") == 503 ]] || { show "$root/four.code"; show "$root/four.body"; fail "while no daemon served the run, a request got $(cat "$root/four.code"), not 503"; }
grep -q "hostkeeperd is not serving this run" "$root/four.body" || { show "$root/four.body"; fail "the 503 does not say why"; }
[[ -s $root/four.pid2 && $(cat "$root/four.pid2") != "$(cat "$root/four.pid1")" ]] ||
    fail "no new daemon after the kill ($(cat "$root/four.pid1") then $(cat "$root/four.pid2" 2>/dev/null))"
grep -q "hostkeeperd has gone; starting it again" "$root/four.out" || { show "$root/four.out"; fail "the run did not say the daemon had gone"; }
pass "the daemon killed during a run: 503 naming the reason, then a new daemon serves the run's init"

# --- 5. SIGTERM, and a run killed outright ----------------------------------------
(cd "$root/one" && exec "$hk" exec --registry-cache -- sh -c 'echo "$TF_CLI_CONFIG_FILE" >"$0"; exec sleep 30' "$root/five.path") \
    >"$root/five.out" 2>&1 &
run_pid=$!
for _ in $(seq 1 100); do [[ -s $root/five.path ]] && break; sleep 0.1; done
generated=$(cat "$root/five.path")
[[ -f $generated ]] || fail "no generated configuration during the run"
kill -TERM "$run_pid"
rc=0
wait "$run_pid" || rc=$?
[[ $rc == 143 ]] || { show "$root/five.out"; fail "the run ended with $rc after SIGTERM, not 143 (its COMMAND's)"; }
[[ ! -e $generated && ! -e $(dirname "$generated") ]] || fail "SIGTERM left $(dirname "$generated")"
: >"$root/five.path"
(cd "$root/one" && exec "$hk" exec --registry-cache -- sh -c 'echo "$TF_CLI_CONFIG_FILE" >"$0"; exec sleep 30' "$root/five.path") \
    >"$root/five-kill.out" 2>&1 &
run_pid=$!
for _ in $(seq 1 100); do [[ -s $root/five.path ]] && break; sleep 0.1; done
generated=$(cat "$root/five.path")
kill -KILL "$run_pid"
wait "$run_pid" 2>/dev/null || true
pkill -KILL -f "sleep 30" || true
[[ -e $generated ]] || fail "the killed run's file is gone already (the test proves nothing)"
"$hk" exec --registry-cache -- true >"$root/five-next.out" 2>&1 || { show "$root/five-next.out"; fail "a run after a killed one failed"; }
[[ ! -e $(dirname "$generated") ]] || fail "the next run left the killed run's $(dirname "$generated")"
pass "SIGTERM leaves no generated file; the next run removes a killed run's directory"

# hostkeeper doctor, beside a live run and after a killed one: it lists the
# run and its hosts (the registry cache is off here), then removes only the
# killed run's directory. The live run starts first: a run starting removes
# the directories of runs killed before it.
# sleeping_run SECONDS NAME: a run of `sleep SECONDS` in the background;
# its pid in run_pid, its directory in run_dir.
sleeping_run() {
    : >"$root/five.path"
    (cd "$root/one" && exec "$hk" exec --registry-cache -- sh -c 'echo "$TF_CLI_CONFIG_FILE" >"$0"; exec sleep "$1"' \
        "$root/five.path" "$1") >"$root/five-$2.out" 2>&1 &
    run_pid=$!
    for _ in $(seq 1 100); do [[ -s $root/five.path ]] && break; sleep 0.1; done
    run_dir=$(dirname "$(cat "$root/five.path")")
}
sleeping_run 30 live
live_pid=$run_pid live=$run_dir
sleeping_run 29 killed
killed_pid=$run_pid killed=$run_dir
kill -KILL "$killed_pid"
wait "$killed_pid" 2>/dev/null || true
pkill -KILL -f "sleep 29" || true
[[ -d $killed && -d $live ]] || fail "the killed run's or the live run's directory is missing before doctor"
"$hk" doctor >"$root/five-doctor.out" 2>&1 || true
kill -TERM "$live_pid"
wait "$live_pid" 2>/dev/null || true
grep -q "registry cache: removed 1 directory(ies) of 'hostkeeper exec --registry-cache' runs killed outright" \
    "$root/five-doctor.out" || { show "$root/five-doctor.out"; fail "doctor did not say it removed the killed run's directory"; }
[[ ! -e $killed ]] || fail "doctor left the killed run's $killed"
grep -q "registry cache: hostkeeperd serves 1 run(s) of 'hostkeeper exec --registry-cache'" "$root/five-doctor.out" ||
    { show "$root/five-doctor.out"; fail "doctor does not list the live run"; }
grep -qF "registry cache: $host (" "$root/five-doctor.out" ||
    { show "$root/five-doctor.out"; fail "doctor does not list the live run's host $host"; }
pass "doctor lists a live run and its hosts, and removes only a killed run's directory"

# A terminal's ^C reaches COMMAND once (Terraform takes a second as "stop now").
cat >"$root/count_int.py" <<'PY'
import signal, sys, time
n = 0
def on_int(*_):
    global n
    n += 1
signal.signal(signal.SIGINT, on_int)
open(sys.argv[1], "w").write("ready\n")
end = time.time() + 3
while time.time() < end:
    time.sleep(0.05)
open(sys.argv[1], "w").write("%d\n" % n)
PY
python3 - "$hk" "$root/count_int.py" "$root/ints.txt" <<'PY' || fail "the terminal run failed"
import os, pty, sys, time
hk, script, out = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.execv(hk, [hk, "exec", "--registry-cache", "--", sys.executable, script, out])
for _ in range(200):
    if os.path.exists(out):
        break
    time.sleep(0.05)
time.sleep(0.3)
os.write(fd, b"\x03")
try:
    while os.read(fd, 1024):
        pass
except OSError:
    pass
os.waitpid(pid, 0)
PY
[[ $(cat "$root/ints.txt") == 1 ]] || fail "one ^C on the terminal reached COMMAND $(cat "$root/ints.txt") time(s)"
pass "a terminal's ^C reaches COMMAND once"

# --- 6. bad input -----------------------------------------------------------------
rc=0
"$hk" exec --registry-cache -- hk-no-such-command-x9 >"$root/six.out" 2>&1 || rc=$?
if [[ $rc != 127 ]] || ! grep -q "command not found" "$root/six.out"; then
    show "$root/six.out"
    fail "COMMAND not found: exit $rc"
fi
printf 'credentials "x.example" {\n  token = "unterminated\n}\n' >"$root/bad.tfrc"
rc=0
TF_CLI_CONFIG_FILE=$root/bad.tfrc "$hk" exec --registry-cache -- touch "$root/six.ran" >"$root/six-bad.out" 2>&1 || rc=$?
[[ $rc == 2 && ! -e $root/six.ran ]] || { show "$root/six-bad.out"; fail "a bad configuration: exit $rc, COMMAND ran: $([[ -e $root/six.ran ]] && echo yes || echo no)"; }
if ! grep -qF "$root/bad.tfrc" "$root/six-bad.out" || ! grep -q "line" "$root/six-bad.out"; then
    show "$root/six-bad.out"
    fail "the error does not name the file and line"
fi
pass "COMMAND not found: 127; a configuration that does not scan: 2, naming file and line, nothing run"

# A port that cannot be bound: a network namespace whose two ephemeral
# ports are both taken.
cat >"$root/unbound.sh" <<'SH'
# unbound.sh HOSTKEEPER RAN: in a new network namespace, exec --registry-cache
# with every ephemeral loopback port taken; its exit status.
ip link set lo up && sysctl -qw net.ipv4.ip_local_port_range="40000 40001" || exit 3
python3 -c '
import socket, sys, time
held = []
for port in (40000, 40001):
    s = socket.socket(); s.bind(("127.0.0.1", port)); s.listen(1); held.append(s)
open(sys.argv[1], "w").close()
time.sleep(60)' "$2.held" &
holder=$!
for _ in $(seq 1 50); do [ -e "$2.held" ] && break; sleep 0.1; done
[ -e "$2.held" ] || exit 3
rc=0
"$1" exec --registry-cache -- touch "$2" || rc=$?
kill "$holder"
exit "$rc"
SH
rc=0
unshare --net sh "$root/unbound.sh" "$hk" "$root/six-unbound.ran" >"$root/six-unbound.out" 2>&1 || rc=$?
[[ $rc == 1 && ! -e $root/six-unbound.ran ]] ||
    { show "$root/six-unbound.out"; fail "no loopback port free to bind: exit $rc, COMMAND ran: $([[ -e $root/six-unbound.ran ]] && echo yes || echo no)"; }
grep -q "the run's registry cache: binding a loopback port: Address already in use" "$root/six-unbound.out" ||
    { show "$root/six-unbound.out"; fail "the run does not say that it cannot bind a loopback port"; }
pass "a port that cannot be bound (every ephemeral port taken): exit 1, saying so, nothing run"
