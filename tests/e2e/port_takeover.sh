#!/usr/bin/env bash
# port_takeover.sh BIN_DIR
#
# The registry port cannot be taken over by another local user, whatever
# hostkeeperd is doing. The victim is root with the keyring world
# (support/keyring-env.sh), the real terraform and the suite's HTTPS registry
# (a token-protected module and provider per scenario); hostkeeperd reaches
# Terraform only through the privileged registry port held by a real
# hostkeeper-portd (support/port-env.sh, a private network namespace). The
# attacker is a throw-away system user whose squatter
# (support/port_squatter.py) tries, for the whole test, to bind the port on
# 127.0.0.1, [::1], 0.0.0.0 and [::] (plainly, SO_REUSEADDR, SO_REUSEPORT,
# both); had it ever bound, it would serve a registry whose module's apply
# creates $root/pwned and it logs every request it got. After each gap:
# the victim's init went through hostkeeperd (the registry saw the /v1/
# requests from User-Agent hostkeeper/... with the host's own token, none
# from Terraform itself), the squatter tried (attempts grew) and never bound
# (errnos EACCES/EADDRINUSE only), received nothing, no marker, only portd
# listens on the port, and the token is in no file but the registry's logs.
# The gaps:
#   1. no daemon at all (hostkeeper stop): init starts it through the
#      helper; terraform apply once;
#   2. idle exit (idle_timeout = 3 in config.toml): the on-demand daemon
#      exits by itself, then init;
#   3. hostkeeper stop in the middle of a slow init (registry --delay-ms,
#      four modules, three providers): that init may fail, never reaching the
#      squatter (the 503 of portd is reported when the timing hits); the next
#      init succeeds;
#   4. an upgrade: the daemon stopped, its binary replaced (a new inode, as
#      dpkg does) in the installed copy whose helper terraform runs; init
#      starts the new binary;
#   5. copied blocks: TF_CLI_CONFIG_FILE holding credentials_helper and a
#      copy of ~/.terraform.d/hostkeeper.tfrc's host blocks, daemon stopped;
#   6. a flood: the attacker opens 2,000 connections to the port while the
#      victim inits and makes 50 curl requests to the listener (all must be
#      200; p50/p99 printed, not asserted).
#
# Run it inside support/port-env.sh and support/keyring-env.sh, as root:
#   tests/support/port-env.sh tests/support/keyring-env.sh tests/e2e/port_takeover.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 set-up error, 77 skipped (not root, no
# terraform, useradd/setpriv/curl/ss missing, terraform not on linux_amd64 or
# darwin_arm64).
set -euo pipefail

[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (a second user, the privileged registry port)"; exit 77; }
[[ -n ${HOSTKEEPER_PORT_SOCKET:-} && -n ${HK_REGISTRY_PORT:-} && -n ${HK_PORTD_PID:-} && -n ${HK_PORTD_LOG:-} ]] ||
    { echo "$0: run it under tests/support/port-env.sh" >&2; exit 2; }
for tool in useradd userdel setpriv curl ss timeout; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
# The system's Python: the attacker must be able to run it.
py=/usr/bin/python3
[[ -x $py ]] || { echo "SKIP: $py is not installed"; exit 77; }

e2e_name=e2e-port-takeover  # read by lib.sh
# Fresh modules and providers for each gap, so that each init makes upstream
# requests (through hostkeeperd) that the registry log can attribute.
gap_modules=(acme/g1/null acme/g2/null acme/g4/null acme/g5/null acme/g6/null)
slow_modules=(acme/s1/null acme/s2/null acme/s3/null acme/s4/null)
gap_providers=(acme/p1 acme/p2 acme/p4 acme/p5 acme/p6)
slow_providers=(acme/ps1 acme/ps2 acme/ps3)
all_modules=$(IFS=,; echo "acme/hello/null,${gap_modules[*]},${slow_modules[*]}")
all_providers=$(IFS=,; echo "acme/thing,${gap_providers[*]},${slow_providers[*]}")
# One signing key for every start of the registry (gap 3 restarts it).
registry_args=(--modules "$all_modules" --providers "$all_providers"
    --gpg-home "$HK_TEST_ROOT/$e2e_name/gnupg")
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tf_platform=$("$terraform" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["platform"])')
case $tf_platform in
    linux_amd64 | darwin_arm64) ;;
    *) echo "SKIP: terraform runs on $tf_platform; the test registry serves linux_amd64 and darwin_arm64"; exit 77 ;;
esac

reg_port=$HK_REGISTRY_PORT
listen=127.0.0.1:$reg_port
unprivileged_start=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)
if [[ $reg_port -ge $unprivileged_start ]]; then
    echo "SETUP: the registry port $reg_port is not privileged here (ip_unprivileged_port_start=$unprivileged_start)" >&2
    exit 2
fi

failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
setup_error() { echo "SETUP: $*" >&2; exit 2; }

# --- clean-up -------------------------------------------------------------------
work=
attacker=
squatter_pid=
flood_pid=
hk=
# shellcheck disable=SC2317  # run at exit
cleanup() {
    [[ -n $flood_pid ]] && kill -TERM "$flood_pid" 2>/dev/null && wait "$flood_pid" 2>/dev/null
    if [[ -n $squatter_pid ]]; then
        kill -TERM "$squatter_pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$squatter_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$squatter_pid" 2>/dev/null
        wait "$squatter_pid" 2>/dev/null
    fi
    # The daemon the helper started on demand (keyring-env.sh kills leftovers).
    [[ -n $hk && -x $hk ]] && timeout 20 "$hk" stop >/dev/null 2>&1
    [[ -n $attacker ]] && userdel "$attacker" 2>/dev/null
    [[ -n $work ]] && rm -rf "$work"
}
on_exit cleanup

# --- the installed copy -----------------------------------------------------------
# Terraform runs the helper through the link setup makes to it, and the helper
# starts the hostkeeperd beside it: a copy of BIN_DIR's programs, so that gap
# 4 can replace the daemon's binary as a package upgrade would.
inst=$root/install
mkdir -p "$inst"
for program in hostkeeper hostkeeperd terraform-credentials-hostkeeper; do
    cp -p "$bin/$program" "$inst/$program" || setup_error "cannot copy $bin/$program"
done
hk=$inst/hostkeeper
hk_helper=$inst/terraform-credentials-hostkeeper

# --- the attacker ---------------------------------------------------------------------
work=$(mktemp -d /tmp/hk-takeover.XXXXXX)
chmod 0755 "$work"
attacker=hk-squat-$$
if ! useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$attacker"; then
    attacker=
    setup_error "useradd failed"
fi
attacker_uid=$(id -u "$attacker")
attacker_gid=$(id -g "$attacker")
[[ $attacker_uid != 0 ]] || setup_error "the attacker got uid 0"
cp "$support/port_squatter.py" "$work/port_squatter.py"
chmod 0644 "$work/port_squatter.py"
adir=$work/attacker
mkdir -m 0755 "$adir"
chown "$attacker_uid:$attacker_gid" "$adir"
marker=$root/pwned
# Background jobs exec setpriv, which execs python: $! is the attacker's process.
start_as_attacker() { exec setpriv --reuid="$attacker_uid" --regid="$attacker_gid" --clear-groups "$@"; }

# A control: the attacker binds an unprivileged loopback port at will, so the
# squatter's failures below are the registry port's privilege, not a sandbox.
control=$(setpriv --reuid="$attacker_uid" --regid="$attacker_gid" --clear-groups "$py" -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print("bound", s.getsockname()[1])' 2>&1) || true
[[ $control == "bound "* ]] || setup_error "the attacker cannot even bind an unprivileged port: $control"
echo "control: the attacker binds an unprivileged port at will ($control)"
start_as_attacker "$py" "$work/port_squatter.py" squat "$reg_port" "$adir" "$marker" &
squatter_pid=$!

# squatter_field EXPR: a Python expression over the squatter's report (r).
squatter_field() {
    "$py" - "$adir/report.json" "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(eval(sys.argv[2], {"r": r}))
PY
}
for _ in $(seq 100); do
    [[ -s $adir/report.json ]] && [[ $(squatter_field 'r["attempts"]' 2>/dev/null || echo 0) -gt 0 ]] && break
    kill -0 "$squatter_pid" 2>/dev/null || setup_error "the squatter died at start-up"
    sleep 0.1
done
[[ -s $adir/report.json ]] || setup_error "the squatter wrote no report within 10 s"
echo "attacker: $attacker (uid $attacker_uid), squatter pid $squatter_pid, trying $(squatter_field 'r["attempts"]') binds so far"

# --- helpers -----------------------------------------------------------------------------
cache_config=$XDG_CONFIG_HOME/hostkeeper/registry-cache.json
tfrc=$HOME/.terraform.d/hostkeeper.tfrc
registry_logs=("$log")  # every registry log: the only files the token may be in
lines() { wc -l <"$1"; }

# json FILE EXPRESSION: the Python EXPRESSION over the JSON document in FILE (d).
json() {
    python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
print(eval(sys.argv[2], {"d": d}))
PY
}

# workdir DIR "MODULE..." "PROVIDER...": a configuration using $host's
# modules (NS/NAME/SYSTEM, 1.0.0) and providers (NS/TYPE, 1.0.0); its output
# greeting is the first module's.
workdir() {
    local dir=$1 m p first=
    mkdir -p "$dir"
    {
        echo "terraform {"
        echo "  required_providers {"
        for p in $3; do
            printf '    %s = {\n      source  = "%s/%s"\n      version = "1.0.0"\n    }\n' "${p##*/}" "$host" "$p"
        done
        echo "  }"
        echo "}"
        for m in $2; do
            m_name=${m#*/}
            m_name=${m_name%%/*}
            printf '\nmodule "%s" {\n  source  = "%s/%s"\n  version = "1.0.0"\n}\n' "m_$m_name" "$host" "$m"
            [[ -n $first ]] || first=m_$m_name
        done
        printf '\noutput "greeting" {\n  value = module.%s.greeting\n}\n' "$first"
    } >"$dir/main.tf"
}

# tf_init DIR [ENV=VALUE...]: terraform init in DIR (output in DIR.out),
# bounded in time; its status is init's.
tf_init() {
    local dir=$1
    shift
    (cd "$dir" && env "$@" timeout -k 5 120 "$terraform" init -input=false -no-color) >"$dir.out" 2>&1
}

# must_init DIR WHAT [ENV=VALUE...]: init succeeds, else FAIL (with its output).
must_init() {
    local dir=$1 what=$2
    shift 2
    if tf_init "$dir" "$@"; then
        return 0
    fi
    show "$dir.out"
    bad "$what: terraform init in $dir failed"
    return 1
}

# through_cache LOG N0 WHAT: the requests LOG got after its first N0 lines
# came from hostkeeperd: at least one /v1/ request from User-Agent
# hostkeeper/... with the host's token, no registry API request (/v1/ or
# discovery) from anything else, no Authorization but the host's token.
through_cache() {
    local out
    out=$(python3 - "$1" "$2" "$TOKEN" <<'PY'
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8").readlines()[int(sys.argv[2]):]]
token = "Bearer " + sys.argv[3]
api = [e for e in entries if e["path"].startswith(("/v1/", "/.well-known/"))]
ours = [e for e in api if (e.get("user_agent") or "").startswith("hostkeeper/") and e["authorization"] == token]
direct = [e for e in api if not (e.get("user_agent") or "").startswith("hostkeeper/")]
foreign = [e for e in entries if e["authorization"] not in (None, token)]
problems = []
if not ours:
    problems.append("no registry API request from hostkeeperd with the host's token")
if direct:
    problems.append("%d registry API request(s) not from hostkeeperd, e.g. %s from %r"
                    % (len(direct), direct[0]["path"], direct[0].get("user_agent")))
if foreign:
    problems.append("%d request(s) with another Authorization" % len(foreign))
if problems:
    print("BAD " + "; ".join(problems))
else:
    print("OK %d registry API requests upstream, all from hostkeeperd (%s) with the host's token; %d requests in all"
          % (len(api), ours[0]["user_agent"], len(entries)))
PY
)
    if [[ $out == OK* ]]; then
        pass "$3: ${out#OK }"
    else
        tail -n "+$(($2 + 1))" "$1"
        bad "$3: ${out#BAD }"
    fi
}

# daemon_pid: the running hostkeeperd's pid (empty when none answers).
daemon_pid() {
    local out=$root/status-pid.json
    if timeout 20 "$hk" status --json >"$out" 2>/dev/null; then
        json "$out" 'd["daemon"]["pid"]'
    fi
}

# stop_daemon: hostkeeper stop, then nothing answers (10 s at most).
stop_daemon() {
    timeout 30 "$hk" stop >/dev/null 2>&1 || true
    for _ in $(seq 100); do
        timeout 20 "$hk" status >/dev/null 2>&1 || return 0
        sleep 0.1
    done
    bad "hostkeeperd still answers 10 s after hostkeeper stop"
}

# check_attacker WHAT: the attacker got nowhere during the gap just passed.
last_attempts=0
check_attacker() {
    local what=$1 attempts binds requests errnos odd listeners others leaks ok=1
    if ! kill -0 "$squatter_pid" 2>/dev/null; then
        bad "$what: the squatter is no longer running (it would prove nothing)"
        return
    fi
    sleep 0.3  # one more report from the squatter
    read -r attempts binds requests < <(squatter_field '"%d %d %d" % (r["attempts"], r["binds"], r["requests"])')
    errnos=$(squatter_field '" ".join("%s=%d" % kv for kv in sorted(r["errnos"].items()))')
    odd=$(squatter_field '" ".join(sorted(set(r["errnos"]) - {"EACCES", "EADDRINUSE"}))')
    if [[ $attempts -le $last_attempts ]]; then
        bad "$what: the squatter made no bind attempt during this gap ($attempts in all)"
        ok=0
    fi
    if [[ $binds != 0 ]]; then
        bad "$what: the squatter BOUND the registry port: $(squatter_field 'r["bound"]')"
        ok=0
    fi
    [[ -z $odd ]] || { bad "$what: the squatter's binds failed with unexpected errnos: $odd"; ok=0; }
    if [[ $requests != 0 || -s $adir/requests.jsonl ]]; then
        [[ -s $adir/requests.jsonl ]] && show "$adir/requests.jsonl"
        bad "$what: the squatter received $requests request(s)"
        ok=0
    fi
    if [[ -e $marker ]]; then
        bad "$what: $marker exists: the squatter's module ran"
        ok=0
    fi
    # The kernel's view: every listener on the port is portd's, none the attacker's.
    listeners=$(ss -Hltnp "sport = :$reg_port" 2>/dev/null || true)
    others=$(grep -v "pid=$HK_PORTD_PID," <<<"$listeners" || true)
    if [[ -z $listeners || -n $others ]]; then
        bad "$what: the port's listeners are not (only) portd's (pid $HK_PORTD_PID): ${listeners:-none}"
        ok=0
    fi
    if ss -Hltnp 2>/dev/null | grep -q "pid=$squatter_pid,"; then
        bad "$what: the squatter listens somewhere: $(ss -Hltnp | grep "pid=$squatter_pid,")"
        ok=0
    fi
    # The token: only in the registries' own logs.
    leaks=$(grep -rlF -- "$TOKEN" "$HK_TEST_ROOT" "$work" "$HK_PORTD_LOG" 2>/dev/null |
        grep -vxF "${registry_logs[@]/#/-e}" || true)
    if [[ -n $leaks ]]; then
        bad "$what: the token is in files other than the registry logs: $(tr '\n' ' ' <<<"$leaks")"
        ok=0
    fi
    [[ $ok == 1 ]] && pass "$what: the squatter made $((attempts - last_attempts)) more bind attempts ($attempts in all: $errnos), bound nothing, received nothing; no marker; only portd (pid $HK_PORTD_PID) listens on :$reg_port; the token is in the registry logs only"
    last_attempts=$attempts
}

# wait_block HOST: waits (15 s at most) for HOST's block in the tfrc file.
wait_block() {
    for _ in $(seq 150); do
        grep -qsF "host \"$1\"" "$tfrc" && return 0
        sleep 0.1
    done
    [[ -e $tfrc ]] && show "$tfrc"
    fail "no block for $1 in $tfrc within 15 s"
}

# --- set-up: the token, setup --registry-cache, the first init learns the host ------------
echo "== set-up"
printf '{"token":"%s"}' "$TOKEN" | "$hk_helper" store "$host" || fail "storing the token for $host failed"
stop_daemon
"$hk" setup --registry-cache >"$root/setup.out" 2>&1 || { show "$root/setup.out"; fail "hostkeeper setup --registry-cache failed"; }
[[ -f $cache_config ]] || fail "setup --registry-cache wrote no $cache_config"
[[ $(json "$cache_config" '"capability" in d') == False ]] || { show "$cache_config"; fail "setup wrote a capability into $cache_config"; }
workdir "$root/w0" acme/hello/null acme/thing
must_init "$root/w0" "the first init (learns the host)" || fail "the set-up init failed"
wait_block "$host"
grep -qF "http://$listen/v1/$host/modules/" "$tfrc" ||
    { show "$tfrc"; fail "$host's block does not point at the registry port $listen"; }
timeout 20 "$hk" status --json >"$root/status0.json" || fail "hostkeeper status --json failed"
[[ $(json "$root/status0.json" 'd["registry_cache"]["held"] and d["registry_cache"]["held_by"] == "hostkeeper-portd" and d["registry_cache"]["listen"]') == "$listen" ]] ||
    { show "$root/status0.json"; fail "the daemon is not registered with hostkeeper-portd for $listen"; }
pass "set-up: $host routed to $listen (held by hostkeeper-portd)"
check_attacker "set-up"

# --- 1. no daemon at all ---------------------------------------------------------------
echo "== 1. no daemon at all"
stop_daemon
workdir "$root/g1" "acme/g1/null" "acme/p1"
n0=$(lines "$log")
if must_init "$root/g1" "gap 1: init with no daemon running"; then
    through_cache "$log" "$n0" "gap 1: init with no daemon running started one through the helper"
fi
# terraform apply once, where the squatter's module would have run its
# local-exec: in a configuration of the module alone (the test providers are
# scripts that fail when terraform loads their schema), with no daemon again.
stop_daemon
workdir "$root/g1-apply" "acme/g1/null" ""
if must_init "$root/g1-apply" "gap 1: init for apply with no daemon running"; then
    if (cd "$root/g1-apply" && timeout -k 5 120 "$terraform" apply -auto-approve -input=false -no-color) >"$root/g1-apply.apply" 2>&1 &&
        grep -q 'greeting = "hello from acme/g1/null 1.0.0"' "$root/g1-apply.apply"; then
        pass "gap 1: terraform apply ran the module installed through the cache (greeting: hello from acme/g1/null 1.0.0)"
    else
        show "$root/g1-apply.apply"
        bad "gap 1: terraform apply failed or printed another greeting"
    fi
fi
check_attacker "gap 1 (no daemon)"

# --- 2. idle exit ----------------------------------------------------------------------------
echo "== 2. idle exit"
mkdir -p "$XDG_CONFIG_HOME/hostkeeper"
printf 'idle_timeout = 3\n' >"$XDG_CONFIG_HOME/hostkeeper/config.toml"
stop_daemon  # the next daemon reads config.toml
timeout 30 "$hk" start >/dev/null || fail "hostkeeper start failed"
timeout 20 "$hk" status --json >"$root/status2.json" || fail "hostkeeper status --json failed"
pid=$(json "$root/status2.json" 'd["daemon"]["pid"]')
[[ $(json "$root/status2.json" '(d["daemon"]["on_demand"], d["daemon"]["idle_timeout_s"], d["registry_cache"]["held"])') == "(True, 3, True)" ]] ||
    { show "$root/status2.json"; bad "gap 2: the daemon is not on demand with a 3 s idle timeout and the port"; }
# Not polled through its socket (a client would keep it busy): by its pid.
started=$SECONDS
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
    bad "gap 2: hostkeeperd (pid $pid) did not exit by itself within 30 s of a 3 s idle timeout"
    stop_daemon
else
    pass "gap 2: hostkeeperd (pid $pid) exited by itself after about $((SECONDS - started)) s idle"
fi
# Every registration portd logged has ended: the exited daemon's too. (Not
# counted from before the exit: on a busy machine the daemon may be gone
# before this script reads the log.)
registrations_ended() {
    (($(grep -c "registration of uid 0 ended" "$HK_PORTD_LOG" || true) >= \
        $(grep -c "registered the daemon of uid 0 " "$HK_PORTD_LOG" || true)))
}
for _ in $(seq 50); do
    registrations_ended && break
    sleep 0.1
done
registrations_ended || bad "gap 2: portd did not log the end of the exited daemon's registration"
workdir "$root/g2" "acme/g2/null" "acme/p2"
n0=$(lines "$log")
must_init "$root/g2" "gap 2: init after the idle exit" &&
    through_cache "$log" "$n0" "gap 2: init after the idle exit"
rm -f "$XDG_CONFIG_HOME/hostkeeper/config.toml"
stop_daemon
check_attacker "gap 2 (idle exit)"

# --- 3. hostkeeper stop in the middle of a slow init -----------------------------------------
echo "== 3. hostkeeper stop during a slow init"
kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
start_registry slow "$TOKEN" --port "$port" "${registry_args[@]}" --delay-ms 300
slow_pid=$registry_pid
log=$root/slow.jsonl
registry_logs+=("$log")
touch "$log"
workdir "$root/g3" "${slow_modules[*]}" "${slow_providers[*]}"
tf_init "$root/g3" &
init_pid=$!
# Stopped once hostkeeperd has made two requests upstream for this init.
for _ in $(seq 300); do
    [[ $(grep -c '"user_agent": "hostkeeper/' "$log" || true) -ge 2 ]] && break
    kill -0 "$init_pid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$init_pid" 2>/dev/null; then
    in_flight="still running ($(grep -c '"user_agent": "hostkeeper/' "$log" || true) upstream requests so far)"
else
    in_flight="already over (the timing missed)"
fi
stop_started=$SECONDS
timeout 30 "$hk" stop >/dev/null 2>&1 || bad "gap 3: hostkeeper stop during the init failed"
echo "hostkeeper stop took $((SECONDS - stop_started)) s; the init was $in_flight"
rc=0
wait "$init_pid" || rc=$?
if [[ $rc == 0 ]]; then
    echo "note: the init interrupted by hostkeeper stop succeeded anyway"
else
    echo "the init interrupted by hostkeeper stop exited with $rc; its errors:"
    grep -E 'Error|hostkeeperd|503' "$root/g3.out" | sed 's/^[│ ]*/    /' | sort -u | head -10
fi
if grep -q "hostkeeperd is not running" "$root/g3.out"; then
    pass "gap 3: a request after the stop got portd's 503 (\"hostkeeperd is not running ...\")"
else
    echo "note: no request of the interrupted init reached portd's 503 (the timing did not hit)"
fi
check_attacker "gap 3 (stopped during a slow init)"
n0=$(lines "$log")
must_init "$root/g3" "gap 3: the next init after the stop" &&
    through_cache "$log" "$n0" "gap 3: the next init after the stop"
check_attacker "gap 3 (the next init)"
# The fast registry again, where it was.
kill "$slow_pid" 2>/dev/null || true
wait "$slow_pid" 2>/dev/null || true
start_registry upstream "$TOKEN" --port "$port" "${registry_args[@]}"
log=$root/upstream.jsonl
registry_logs+=("$log")
touch "$log"

# --- 4. an upgrade ------------------------------------------------------------------------
echo "== 4. the daemon's binary replaced while it is stopped"
stop_daemon
old_inode=$(stat -c %i "$inst/hostkeeperd")
cp -p "$bin/hostkeeperd" "$inst/.hostkeeperd.new"
mv -f "$inst/.hostkeeperd.new" "$inst/hostkeeperd"
new_inode=$(stat -c %i "$inst/hostkeeperd")
[[ $new_inode != "$old_inode" ]] || setup_error "replacing $inst/hostkeeperd kept its inode"
workdir "$root/g4" "acme/g4/null" "acme/p4"
n0=$(lines "$log")
if must_init "$root/g4" "gap 4: init after the upgrade"; then
    through_cache "$log" "$n0" "gap 4: init after the upgrade"
    pid=$(daemon_pid)
    if [[ -n $pid && $(stat -L -c %i "/proc/$pid/exe" 2>/dev/null) == "$new_inode" ]]; then
        pass "gap 4: the init started the new binary (pid $pid, inode $new_inode, was $old_inode)"
    else
        bad "gap 4: the running daemon (pid ${pid:-none}) is not the new binary: $(readlink "/proc/$pid/exe" 2>&1)"
    fi
fi
check_attacker "gap 4 (upgrade)"

# --- 5. copied blocks ----------------------------------------------------------------------
echo "== 5. copied host blocks in TF_CLI_CONFIG_FILE"
copied=$root/copied.tfrc
{
    echo 'credentials_helper "hostkeeper" {}'
    cat "$tfrc"
} >"$copied"
grep -qF "host \"$host\"" "$copied" || fail "the copied file has no block for $host"
stop_daemon
workdir "$root/g5" "acme/g5/null" "acme/p5"
n0=$(lines "$log")
must_init "$root/g5" "gap 5: init with TF_CLI_CONFIG_FILE holding copied blocks" "TF_CLI_CONFIG_FILE=$copied" &&
    through_cache "$log" "$n0" "gap 5: init with copied blocks and the daemon stopped"
check_attacker "gap 5 (copied blocks)"

# --- 6. a flood -----------------------------------------------------------------------------
echo "== 6. the attacker floods the port"
timeout 30 "$hk" start >/dev/null || fail "hostkeeper start failed"
versions_url=http://$listen/v1/$host/modules/acme/hello/null/versions
[[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "Authorization: Bearer $TOKEN" "$versions_url") == 200 ]] ||
    bad "gap 6: the listener does not answer 200 before the flood"
workdir "$root/g6" "acme/g6/null" "acme/p6"
n0=$(lines "$log")
flood_out=$adir/flood.out
# 2,000 connections, 100 every 100 ms, followed for 20 s at most.
start_as_attacker "$py" "$work/port_squatter.py" flood "$reg_port" 2000 100 100 20 "$flood_out" &
flood_pid=$!
for _ in $(seq 50); do [[ -e $flood_out.started ]] && break; sleep 0.1; done
[[ -e $flood_out.started ]] || bad "gap 6: the flood did not start within 5 s"
tf_init "$root/g6" &
init_pid=$!
probes=$root/probes.txt
: >"$probes"
for _ in $(seq 50); do
    curl -s -o /dev/null -w '%{http_code} %{time_total}\n' --max-time 10 \
        -H "Authorization: Bearer $TOKEN" "$versions_url" >>"$probes" || echo "curl-failed 0" >>"$probes"
    sleep 0.02
done
rc=0
wait "$init_pid" || rc=$?
wait "$flood_pid" || true
flood_pid=
if [[ $rc == 0 ]]; then
    through_cache "$log" "$n0" "gap 6: init during the flood"
else
    show "$root/g6.out"
    bad "gap 6: terraform init during the flood failed ($rc)"
fi
flood_result=$(cat "$flood_out" 2>/dev/null || echo "no result")
echo "the attacker's flood: $flood_result"
opened=$(grep -o 'opened=[0-9]*' <<<"$flood_result" | cut -d= -f2)
not_ok=$(awk '$1 != 200' "$probes" | wc -l)
if [[ $not_ok == 0 && $(lines "$probes") == 50 ]]; then
    pass "gap 6: all 50 probes answered 200 during the flood"
else
    bad "gap 6: $not_ok of the 50 probes did not get 200: $(awk '$1 != 200 { print $1 }' "$probes" | sort | uniq -c | tr '\n' ' ')"
fi
python3 - "$probes" "${opened:-0}" <<'PY'
import sys
values = sorted(float(line.split()[1]) * 1000 for line in open(sys.argv[1]) if line.startswith("200 "))
if values:
    def pct(p):
        return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]
    print("flood: p50 %.1f ms, p99 %.1f ms, %s attacker connections" % (pct(50), pct(99), sys.argv[2]))
else:
    print("flood: no probe answered, %s attacker connections" % sys.argv[2])
PY
check_attacker "gap 6 (flood)"

# --- the end ------------------------------------------------------------------------------
kill -TERM "$squatter_pid" 2>/dev/null || true
wait "$squatter_pid" 2>/dev/null || true
squatter_pid=
if [[ $(squatter_field 'r["final"] and r["binds"] == 0 and r["requests"] == 0') == True ]]; then
    pass "the squatter's final report: $(squatter_field '"%d attempts in %d rounds, 0 binds, 0 requests, errnos %s" % (r["attempts"], r["rounds"], r["errnos"])')"
else
    bad "the squatter's final report: $(cat "$adir/report.json")"
fi
# portd logs its counters on SIGUSR1.
kill -USR1 "$HK_PORTD_PID" 2>/dev/null && sleep 0.3
echo "portd: $(grep 'connections:' "$HK_PORTD_LOG" | tail -1 | sed 's/^.*connections:/connections:/')"
if [[ $failures -ne 0 ]]; then
    echo "port_takeover.sh: $failures failure(s)"
    exit 1
fi
echo "PASS: no other user took the registry port over, in any gap"
exit 0
