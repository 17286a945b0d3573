#!/usr/bin/env bash
# tests/bench/token_commands.sh BIN_DIR OUT_DIR
#
# Tokens from a command (config.toml's token_command), in a keyring world of
# its own (tests/support/keyring-env.sh), against one hostkeeperd started on
# the default socket with a config.toml of three command hosts:
#   1. warm `get`: ONE hyperfine -N run of terraform-credentials-hostkeeper
#      `get` for a token_command host (its token held), `get` for a host whose
#      token is in the keyring (cached), and `secret-tool lookup` of that
#      keyring item; the ratios. Target: the command host within noise of
#      the keyring host (≤ 1.1×).
#   2. a `get` that arrives during a refresh: a host whose command sleeps
#      HK_BENCH_REFRESH_SLEEP (2.5) s on every run after its first and gives
#      tokens of 40 s, so the refresh ahead of expiry is due at 36 s; once a
#      `get` has started it (hostkeeper status says "running"), ONE hyperfine
#      -N run of `get` for that host and `get` for the warm command host of 1.
#      Target: no `get` waits for the command (the slowest far below the
#      sleep), and the refresh was still running after the last one.
#   3. HK_BENCH_TF_CONCURRENT (10) real `terraform init` at once, each of a
#      module from a private registry on loopback (tests/support/
#      https_registry.py, TLS with a throw-away CA) whose token comes from the
#      host's token_command (60 s tokens, the same sleep), started when the
#      token has at most 5 s left, so inside the refresh-ahead window: every
#      init must succeed, and the command ran exactly once meanwhile (it
#      appends a line to a counter file on every run).
# Skipped (exit 77) without terraform: then 1 and 2 are not run either.
#
# Writes OUT_DIR/token-commands-rows.md (rows of run.sh's table),
# OUT_DIR/token-commands-notes.md and the raw data in OUT_DIR/token-commands/.
# Exit status: 0 when every measurement ran, whether or not a target was met;
# 77 without terraform; otherwise non-zero when something broke.
#
# Environment: HK_BENCH_RUNS (300), HK_BENCH_WARMUP (20),
# HK_BENCH_REFRESH_SLEEP (2.5), HK_BENCH_TF_CONCURRENT (10).
# Needs: terraform, hyperfine, jq, secret-tool, python3, openssl.

set -euo pipefail
shopt -s inherit_errexit
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# die (tests/support/script_lib.sh, through lib.sh): "bench (token commands): MSG", exit 1.
# shellcheck disable=SC2034  # read by die
script_name="bench (token commands)" die_status=1

BIN="" OUT="" DIR="" RAW="" TF="" SOCK="" DAEMON_PID="" DAEMON_LOG="" REG_PID="" REPO="" HOST=""
own_pids() { echo "${DAEMON_PID:-0}" "${REG_PID:-0}" "${HK_KEYRING_PID:-0}" "${HK_BUS_PID:-0}"; }

# shellcheck disable=SC2317  # run at exit
stop_bench() {
    hkd_stop
    if [[ -n "$REG_PID" ]]; then
        kill "$REG_PID" 2>/dev/null || true
        wait "$REG_PID" 2>/dev/null || true
    fi
    hkd_log_on_failure
}

get() { "$BIN/terraform-credentials-hostkeeper" get "$1"; }
# command_state HOST: the host's object in status's credentials.commands.
command_state() { hk status --json | jq -c --arg h "$1" '.credentials.commands[] | select(.host == $h)'; }
lines() { if [[ -f $1 ]]; then wc -l <"$1"; else echo 0; fi; }
median() { jq -r --arg n "$2" '.results[] | select(.command == $n) | .median' "$1"; }
slowest() { jq -r --arg n "$2" '.results[] | select(.command == $n) | .max' "$1"; }

# The token command: appends a line to COUNTER on every run, sleeps SLEEP
# seconds on every run after the first, and prints TOKEN with LIFETIME
# seconds (expires_in).
write_command() {
    cat >"$DIR/command.sh" <<'SH'
#!/bin/sh
counter=$1 token=$2 lifetime=$3 pause=$4
runs=$(cat "$counter" 2>/dev/null | wc -l)
echo "run $(date +%s.%N)" >>"$counter"
[ "$runs" -ge 1 ] && sleep "$pause"
printf '{"token":"%s","expires_in":%s}\n' "$token" "$lifetime"
SH
    chmod 700 "$DIR/command.sh"
}

start_registry() {
    local token=$1 _
    "$REPO/tests/support/make_ca.sh" "$DIR/tls" localhost 127.0.0.1 >/dev/null
    mkdir -p "$DIR/no-system-certs"
    export SSL_CERT_FILE=$DIR/tls/ca.pem SSL_CERT_DIR=$DIR/no-system-certs
    : >"$DIR/requests.jsonl"
    python3 "$REPO/tests/support/https_registry.py" --port-file "$DIR/port" --cert "$DIR/tls/server.pem" \
        --key "$DIR/tls/server.key" --token "$token" --log "$DIR/requests.jsonl" 2>"$DIR/registry.stderr" &
    REG_PID=$!
    for _ in $(seq 1 200); do [[ -s "$DIR/port" ]] && break; sleep 0.05; done
    [[ -s "$DIR/port" ]] || { cat "$DIR/registry.stderr" >&2; die "the registry did not start"; }
}

start_daemon() {
    hkd_launch "" "$DIR/hostkeeperd.log" --config "$XDG_CONFIG_HOME/hostkeeper/config.toml" \
        --credentials-ttl 2h --credentials-max-lifetime 4h
}

# many_inits N: N terraform init at once, each in a fresh directory; sets
# INITS_OK (how many succeeded and installed the module) and INITS_SECONDS
# (until the last ended). Their output is kept in $RAW.
INITS_OK=0 INITS_SECONDS=0
many_inits() {
    local n=$1 i t0 t1 pids=()
    for i in $(seq 1 "$n"); do
        mkdir -p "$DIR/work/$i"
        printf 'module "hello" {\n  source  = "%s/acme/hello/null"\n  version = "1.0.0"\n}\n' "$HOST" >"$DIR/work/$i/main.tf"
    done
    t0=$(date +%s.%N)
    for i in $(seq 1 "$n"); do
        (cd "$DIR/work/$i" && "$TF" init -input=false -no-color) >"$DIR/work/$i.out" 2>&1 &
        pids+=($!)
    done
    INITS_OK=0
    for i in "${!pids[@]}"; do
        if wait "${pids[$i]}" && grep -qs 'hello from the keyring' "$DIR/work/$((i + 1))/.terraform/modules/hello/main.tf"; then
            INITS_OK=$((INITS_OK + 1))
        else
            log "init $((i + 1)) failed: $(tail -n 5 "$DIR/work/$((i + 1)).out")"
        fi
    done
    t1=$(date +%s.%N)
    for i in $(seq 1 "$n"); do cp "$DIR/work/$i.out" "$RAW/init-$i.out"; done
    INITS_SECONDS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}

# The hosts: a command host whose token is held all along, one whose refresh
# the gets of 2 meet, the registry's, and a keyring host; the command's
# counter files; the settings.
WARM=cmd.bench.example.com DURING=refresh.bench.example.com KEYRING=keyring.bench.example.com
WARM_COUNT="" DURING_COUNT="" REG_COUNT="" REG_TOKEN="" T0="" RUNS=300 WARMUP=20 PAUSE=2.5 N=10

# The registry, config.toml, hostkeeperd, a keyring token, and the first run
# of each command (T0: when the refreshing hosts' tokens began).
set_up() {
    REG_TOKEN=bench-$(openssl rand -hex 24)
    start_registry "$REG_TOKEN"
    HOST=127.0.0.1:$(<"$DIR/port")
    write_command
    WARM_COUNT=$DIR/warm.runs DURING_COUNT=$DIR/during.runs REG_COUNT=$DIR/registry.runs
    mkdir -p "$XDG_CONFIG_HOME/hostkeeper"
    cat >"$XDG_CONFIG_HOME/hostkeeper/config.toml" <<TOML
[hosts."$WARM"]
token_command = ["$DIR/command.sh", "$WARM_COUNT", "cmd-$(openssl rand -hex 16)", "7200", "0"]

[hosts."$DURING"]
token_command = ["$DIR/command.sh", "$DURING_COUNT", "refresh-$(openssl rand -hex 16)", "40", "$PAUSE"]

[hosts."$HOST"]
token_command = ["$DIR/command.sh", "$REG_COUNT", "$REG_TOKEN", "60", "$PAUSE"]
TOML
    chmod 600 "$XDG_CONFIG_HOME/hostkeeper/config.toml"
    SOCK=$XDG_RUNTIME_DIR/hostkeeper/socket  # the default: the helper finds it as Terraform runs it
    start_daemon
    log "hostkeeperd pid $DAEMON_PID; registry at https://$HOST/; terraform $("$TF" version -json | jq -r .terraform_version)"
    local creds
    creds="{\"token\":\"hkbench.atlasv1.$(printf 'x%.0s' $(seq 1 70))\"}"
    printf '%s' "$creds" | "$BIN/terraform-credentials-hostkeeper" store "$KEYRING"
    [[ "$(get "$KEYRING")" == "$creds" ]] || die "the keyring host's get gave something else"
    [[ "$(secret-tool lookup xdg:schema io.hostkeeper.Credentials host "$KEYRING")" == "$creds" ]] ||
        die "secret-tool lookup does not see the stored item"
    T0=$(date +%s.%N)
    get "$DURING" | jq -e '.token | startswith("refresh-")' >/dev/null || die "the refreshing host's get failed"
    get "$HOST" | jq -e --arg t "$REG_TOKEN" '.token == $t' >/dev/null || die "the registry host's get failed"
    get "$WARM" | jq -e '.token | startswith("cmd-")' >/dev/null || die "the command host's get failed"
}

# 1. Warm gets: the command host, the keyring host, secret-tool. Sets OTHERS_WARM.
OTHERS_WARM=""
measure_warm() {
    log "warm get: hyperfine -N, $RUNS runs"
    phase_begin
    hyperfine -N --style basic --warmup "$WARMUP" --runs "$RUNS" --export-json "$RAW/warm.json" \
        -n command "$BIN/terraform-credentials-hostkeeper get $WARM" \
        -n keyring "$BIN/terraform-credentials-hostkeeper get $KEYRING" \
        -n secret-tool "$(type -P secret-tool) lookup xdg:schema io.hostkeeper.Credentials host $KEYRING" >&2
    phase_end
    OTHERS_WARM=$PHASE_OTHERS
    [[ $(lines "$WARM_COUNT") == 1 ]] || die "the warm command host's command ran $(lines "$WARM_COUNT") times"
}

# 2. Gets while $DURING's refresh runs. Sets DURING_RUNS and STILL_RUNNING
# (whether the refresh was still under way after the last of them).
DURING_RUNS=0 STILL_RUNNING=""
measure_during() {
    until [[ $(command_state "$DURING" | jq -r .running) == true ]]; do
        get "$DURING" >/dev/null || die "a get for $DURING failed before its refresh"
        awk -v t0="$T0" -v t="$(date +%s.%N)" 'BEGIN { exit !(t - t0 < 45) }' || die "no refresh of $DURING started within 45 s"
        sleep 0.1
    done
    DURING_RUNS=$(( RUNS / 6 > 20 ? RUNS / 6 : 20 ))
    log "a refresh of $DURING runs (its command sleeps $PAUSE s): hyperfine -N, $DURING_RUNS runs"
    hyperfine -N --style basic --warmup 2 --runs "$DURING_RUNS" --export-json "$RAW/during.json" \
        -n during-refresh "$BIN/terraform-credentials-hostkeeper get $DURING" \
        -n warm "$BIN/terraform-credentials-hostkeeper get $WARM" >&2
    STILL_RUNNING=$(command_state "$DURING" | jq -r .running)
    local _
    for _ in $(seq 1 100); do [[ $(command_state "$DURING" | jq -r .running) == false ]] && break; sleep 0.1; done
    [[ $(lines "$DURING_COUNT") == 2 ]] || die "$DURING's command ran $(lines "$DURING_COUNT") times, expected 2"
}

# 3. $N terraform init at once once the registry host's refresh is due. Sets
# LEFT (seconds left on its token then), DURING_INITS (command runs meanwhile),
# OTHERS_INITS, WITH_TOKEN and REFUSED (the registry's versions requests with
# the token, and its refusals).
LEFT="" DURING_INITS="" OTHERS_INITS="" WITH_TOKEN="" REFUSED=""
measure_inits() {
    mkdir -p "$HOME/.terraform.d/plugins"
    ln -sf "$BIN/terraform-credentials-hostkeeper" "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper"
    export TF_CLI_CONFIG_FILE=$DIR/terraform.rc
    printf 'credentials_helper "hostkeeper" {\n  args = ["--timeout=30"]\n}\n' >"$TF_CLI_CONFIG_FILE"
    while :; do
        LEFT=$(command_state "$HOST" | jq -r '.expires_in_s // 0')
        (( LEFT <= 5 )) && break
        sleep 0.2
    done
    local before _
    before=$(lines "$REG_COUNT")
    log "$N terraform init at once, $LEFT s left on the registry host's token (refresh ahead due)"
    phase_begin
    many_inits "$N"
    phase_end
    OTHERS_INITS=$PHASE_OTHERS
    for _ in $(seq 1 100); do [[ $(command_state "$HOST" | jq -r .running) == false ]] && break; sleep 0.1; done
    DURING_INITS=$(( $(lines "$REG_COUNT") - before ))
    cp "$DIR/requests.jsonl" "$RAW/registry-requests.jsonl"
    REFUSED=$(jq -s 'map(select(.status == 401)) | length' "$DIR/requests.jsonl")
    WITH_TOKEN=$(jq -s --arg a "Bearer $REG_TOKEN" \
        'map(select(.path == "/v1/modules/acme/hello/null/versions" and .status == 200 and .authorization == $a)) | length' \
        "$DIR/requests.jsonl")
    log "  $INITS_OK of $N inits succeeded in $INITS_SECONDS s; the command ran $DURING_INITS time(s) meanwhile;" \
        "$WITH_TOKEN versions request(s) with the token, $REFUSED refused"
}

report() {
    local load_before=$1 w=$RAW/warm.json d=$RAW/during.json cmd kr st dr dw dmax tf
    cmd=$(median "$w" command) kr=$(median "$w" keyring) st=$(median "$w" secret-tool)
    dr=$(median "$d" during-refresh) dw=$(median "$d" warm) dmax=$(slowest "$d" during-refresh)
    tf=$("$TF" version -json | jq -r .terraform_version)
    {
        echo "| \`get\` of a token_command host (token held) vs a keyring host (cached), warm daemon, median of $RUNS | $(ms "$cmd") ms | $(ms "$kr") ms (keyring host) | $(ratio "$cmd" "$kr")× | ≤ 1.1× (within noise) | $(yesno le "$(ratio "$cmd" "$kr")" 1.1) |"
        echo "| same, token_command host vs \`secret-tool lookup\` | $(ms "$cmd") ms | $(ms "$st") ms (\`secret-tool lookup\`) | $(speedup "$st" "$cmd") | — | — |"
        echo "| \`get\` while the host's refresh runs (command sleeping $PAUSE s), median of $DURING_RUNS, slowest $(ms "$dmax") ms | $(ms "$dr") ms | $(ms "$dw") ms (warm command host, same run) | $(ratio "$dr" "$dw")× | no wait for the command (slowest < $PAUSE s; still running after: $STILL_RUNNING) | $(yesno test "$(yesno le "$dmax" "$PAUSE")-$STILL_RUNNING" = yes-true) |"
        echo "| $N concurrent \`terraform init\` (a private module, token from token_command) while the token refreshes: inits that succeeded, command runs during them | $INITS_OK of $N, $DURING_INITS run(s) ($INITS_SECONDS s) | — | — | all, exactly 1 | $(yesno test "$INITS_OK-$DURING_INITS" = "$N-1") |"
    } >"$OUT/token-commands-rows.md"
    {
        echo "- Token commands (tests/bench/token_commands.sh): one hostkeeperd with three token_command hosts" \
             "(a shell script that counts its runs, sleeps $PAUSE s on each run after its first, prints" \
             "{\"token\",\"expires_in\"}) and one keyring host. Warm gets in ONE hyperfine -N run of $RUNS" \
             "(helper for the command host, helper for the keyring host, \`secret-tool lookup\`); other processes used" \
             "$OTHERS_WARM% of the machine meanwhile. The refresh run: started by a \`get\` once 36 s of a 40 s token" \
             "had passed, then ONE hyperfine -N run of $DURING_RUNS gets for that host and for the warm command host." \
             "$N real terraform init ($tf) of a module from tests/support/https_registry.py, started with $LEFT s" \
             "left on a 60 s token (refresh ahead due); other processes used $OTHERS_INITS% of the machine meanwhile;" \
             "the registry saw $WITH_TOKEN versions requests with the command's token and refused $REFUSED." \
             "Load average before: $load_before; after: $(loadavg). Raw: $RAW."
    } >"$OUT/token-commands-notes.md"
}

inner() {
    BIN=$1 OUT=$2
    RUNS=${HK_BENCH_RUNS:-300} WARMUP=${HK_BENCH_WARMUP:-20} PAUSE=${HK_BENCH_REFRESH_SLEEP:-2.5}
    N=${HK_BENCH_TF_CONCURRENT:-10}
    DIR=$HK_TEST_ROOT/bench-token-commands
    RAW=$OUT/token-commands
    rm -rf "$RAW"
    mkdir -p "$DIR" "$RAW"
    chmod 700 "$DIR"
    on_exit stop_bench
    cd "$HK_TEST_ROOT"
    export LC_NUMERIC=C
    local load_before name
    load_before=$(loadavg)
    while read -r name; do unset "$name"; done < <(compgen -e | grep '^TF_' || true)
    unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
    export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
    set_up
    measure_warm
    measure_during
    measure_inits
    report "$load_before"
}

main() {
    [[ $# -eq 2 ]] || { echo "usage: $0 BIN_DIR OUT_DIR" >&2; exit 2; }
    if [[ -x /usr/local/bin/terraform ]]; then
        TF=/usr/local/bin/terraform
    elif ! TF=$(command -v terraform); then
        echo "bench (token commands): terraform is not installed: skipped" >&2
        exit 77
    fi
    local bin out self tool b
    bin=$(cd "$1" && pwd)
    mkdir -p "$2"
    out=$(cd "$2" && pwd)
    for b in hostkeeperd hostkeeper terraform-credentials-hostkeeper; do
        [[ -x $bin/$b ]] || die "$bin/$b is missing (cmake --build BUILD --target bench)"
    done
    for tool in hyperfine jq secret-tool python3 openssl; do
        command -v "$tool" >/dev/null || die "$tool is missing (./packaging/deps.sh bench)"
    done
    self=$(readlink -f "${BASH_SOURCE[0]}")
    REPO=$(cd "$(dirname "$self")/../.." && pwd)
    if [[ -z "${HK_TEST_ROOT:-}" ]]; then
        exec "$REPO/tests/support/keyring-env.sh" bash "$self" "$bin" "$out"
    fi
    inner "$bin" "$out"
    cat "$out/token-commands-rows.md"
    cat "$out/token-commands-notes.md"
}

main "$@"; exit
