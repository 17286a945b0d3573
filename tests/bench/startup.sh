#!/usr/bin/env bash
# tests/bench/startup.sh BIN_DIR OUT_DIR
#
# The start-up benchmark: what one `terraform-credentials-hostkeeper get HOST`
# costs against a warm daemon, beside its peers, measured in ONE hyperfine -N
# run (no shell) so that all of them meet the same machine:
#   true          /bin/true: the cost of any process start here
#   raw-get       hk_bench_raw_get: a C program making the same request with
#                 nothing else (connect, one frame out, one in): the floor
#                 under any client of this daemon
#   helper        the helper as Terraform runs it (no options; the socket from
#                 $HOSTKEEPER_SOCKET), against a warm hostkeeperd
#   git           `git credential-cache get` against a warm
#                 git credential-cache--daemon holding one credential: git's
#                 own cache-daemon client, the same shape of work
#   secret-tool   `secret-tool lookup` of the same item in gnome-keyring
# Targets: the helper at most 1.3 × true, and faster than git.
# HK_BENCH_STARTUP_BASELINE=PATH adds another build's helper to the same runs
# ("baseline", e.g. the helper of an older commit), for a before/after.
#
# run.sh runs this inside its keyring world and puts the rows it writes into
# its own table; run by hand, it re-runs itself inside
# tests/support/keyring-env.sh (BIN_DIR must hold built binaries: hostkeeperd,
# hostkeeper, terraform-credentials-hostkeeper, hk_bench_raw_get; cmake
# --build BUILD --target bench builds them).
#
# Everything lives in a private 0700 directory of the throw-away world: the
# daemon's socket, git's socket, gnome-keyring's item. The helper stores a
# token for the host first, the daemon caches it; git's daemon is given a
# credential with `git credential-cache store`. hyperfine gives every command
# /dev/null as stdin: git then asks its daemon with an empty description and
# gets the one credential it holds (a round trip like the others, checked).
#
# HK_BENCH_STARTUP_ROUNDS (3) rounds, each one hyperfine run of HK_BENCH_RUNS
# (300) runs per command after HK_BENCH_WARMUP (20) warm-ups; the medians of
# every round are reported, and the targets judged on each round. Before each
# round, while the 1-minute load average is above HK_BENCH_MAX_LOAD (1.5), it
# waits HK_BENCH_LOAD_WAIT_SECONDS (60), at most HK_BENCH_LOAD_WAITS (3)
# times, then measures anyway; the notes say how busy the machine was.
#
# Writes OUT_DIR/startup-rows.md (rows of run.sh's table), OUT_DIR/startup-notes.md,
# OUT_DIR/startup.md (a table of its own) and the raw hyperfine JSON in
# OUT_DIR/startup/. Exit status 0 when every measurement ran, whether or not a
# target was met; non-zero when something broke.
#
# Needs: hyperfine, jq, git, secret-tool (./packaging/deps.sh bench).

set -euo pipefail
shopt -s inherit_errexit
# log, number formatting, CPU accounting (phase_begin/phase_end).
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
own_pids() { echo "${DAEMON_PID:-0}" "${GIT_DAEMON_PID:-0}" "${HK_KEYRING_PID:-0}" "${HK_BUS_PID:-0}"; }

# die (tests/support/script_lib.sh, through lib.sh): "bench (start-up): MSG", exit 1.
# shellcheck disable=SC2034  # read by die
script_name="bench (start-up)" die_status=1

BIN="" DIR="" SOCK="" GIT_SOCK="" DAEMON_PID="" DAEMON_LOG="" GIT_DAEMON_PID=""

lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# Waits for a quiet machine (see the top of this file); prints the load
# average it measured at.
quiet() {
    local max=$1 waits=$2 seconds=$3 n=0 load
    load=$(loadavg)
    while ! le "${load%% *}" "$max" && [[ $n -lt $waits ]]; do
        n=$(( n + 1 ))
        log "start-up: load average $load, above $max: waiting $seconds s ($n of $waits)"
        sleep "$seconds"
        load=$(loadavg)
    done
    echo "$load"
}

start_daemons() {
    hkd_start --credentials-ttl 2h --credentials-max-lifetime 4h

    # git's daemon in the foreground of its own; the client does not start
    # another while this one answers.
    git credential-cache--daemon "$GIT_SOCK" >"$DIR/git-daemon.log" 2>&1 &
    GIT_DAEMON_PID=$!
    for _ in $(seq 1 500); do
        [[ -S "$GIT_SOCK" ]] && break
        kill -0 "$GIT_DAEMON_PID" 2>/dev/null || { cat "$DIR/git-daemon.log" >&2; die "git credential-cache--daemon exited"; }
        sleep 0.02
    done
    [[ -S "$GIT_SOCK" ]] || die "git credential-cache--daemon did not listen within 10 s"
}

stop_daemons() {
    hkd_stop
    if [[ -n "$GIT_DAEMON_PID" ]]; then
        git credential-cache --socket "$GIT_SOCK" exit 2>/dev/null || kill "$GIT_DAEMON_PID" 2>/dev/null || true
        wait "$GIT_DAEMON_PID" 2>/dev/null || true
        GIT_DAEMON_PID=
    fi
}

stop_bench() {
    stop_daemons
    hkd_log_on_failure
}

# median NAME FILE: the median of command NAME in a hyperfine JSON, seconds.
median() { jq -r --arg n "$1" '.results[] | select(.command == $n) | .median' "$2"; }
# The middle of the numbers on stdin.
middle() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

inner() {
    BIN=$1
    local out=$2
    local runs=${HK_BENCH_RUNS:-300} warmup=${HK_BENCH_WARMUP:-20} rounds=${HK_BENCH_STARTUP_ROUNDS:-3}
    local max_load=${HK_BENCH_MAX_LOAD:-1.5} load_waits=${HK_BENCH_LOAD_WAITS:-3}
    local load_wait_seconds=${HK_BENCH_LOAD_WAIT_SECONDS:-60}
    local tool
    for tool in hyperfine jq git secret-tool; do
        command -v "$tool" >/dev/null || die "missing: $tool (./packaging/deps.sh bench)"
    done
    for tool in hostkeeperd hostkeeper terraform-credentials-hostkeeper hk_bench_raw_get; do
        [[ -x "$BIN/$tool" ]] || die "$BIN/$tool was not built"
    done
    [[ -n "${HK_TEST_ROOT:-}" && -d "$HK_TEST_ROOT" ]] || die "not inside keyring-env.sh"
    export LC_NUMERIC=C

    DIR=$HK_TEST_ROOT/startup
    mkdir -p "$DIR/run" "$DIR/git"
    chmod 700 "$DIR" "$DIR/run" "$DIR/git"
    SOCK=$DIR/run/socket
    GIT_SOCK=$DIR/git/socket
    local raw=$out/startup
    rm -rf "$raw"
    mkdir -p "$raw"
    on_exit stop_bench
    cd "$DIR"

    start_daemons
    local host=app.bench.example.com token creds
    token="startup.atlasv1.$(printf 'x%.0s' $(seq 1 70))"
    creds="{\"token\":\"$token\"}"
    # The helper as Terraform runs it: no options; the socket from the environment.
    export HOSTKEEPER_SOCKET=$SOCK
    printf '%s' "$creds" | "$BIN/terraform-credentials-hostkeeper" store "$host" || die "helper store failed"
    [[ "$("$BIN/terraform-credentials-hostkeeper" get "$host")" == "$creds" ]] || die "helper get returned something else"
    "$BIN/hk_bench_raw_get" "$SOCK" "$host" | grep -qF "$token" || die "hk_bench_raw_get did not get the token"
    [[ "$(secret-tool lookup xdg:schema io.hostkeeper.Credentials host "$host")" == "$creds" ]] ||
        die "secret-tool lookup does not see the stored item"
    printf 'protocol=https\nhost=%s\nusername=x\npassword=%s\n\n' "$host" "$token" |
        git credential-cache --socket "$GIT_SOCK" --timeout 14400 store || die "git credential-cache store failed"
    [[ "$(git credential-cache --socket "$GIT_SOCK" get </dev/null)" == *"password=$token"* ]] ||
        die "git credential-cache get (empty description, as hyperfine runs it) does not answer the credential"

    local lookups0 hits0
    lookups0=$(hk status --json | jq -r .credentials.keyring_lookups)
    hits0=$(hk status --json | jq -r .credentials.hits)
    local true_bin
    true_bin=$(type -P true)
    local baseline=${HK_BENCH_STARTUP_BASELINE:-}
    local -a extra=()
    if [[ -n "$baseline" ]]; then
        [[ "$("$baseline" get "$host")" == "$creds" ]] || die "the baseline helper $baseline does not get the token"
        extra=(-n baseline "$baseline get $host")
    fi
    local r load_before load_after others_max=0 loads=""
    local -a m_true=() m_raw=() m_helper=() m_git=() m_st=() m_base=()
    for r in $(seq 1 "$rounds"); do
        load_before=$(quiet "$max_load" "$load_waits" "$load_wait_seconds")
        log "start-up: round $r of $rounds, hyperfine -N --warmup $warmup --runs $runs (load average $load_before)"
        phase_begin
        hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$raw/round-$r.json" \
            -n true "$true_bin" \
            -n raw-get "$BIN/hk_bench_raw_get $SOCK $host" \
            -n helper "$BIN/terraform-credentials-hostkeeper get $host" \
            -n git "git credential-cache --socket $GIT_SOCK get" \
            -n secret-tool "secret-tool lookup xdg:schema io.hostkeeper.Credentials host $host" "${extra[@]}" >&2
        phase_end
        load_after=$(loadavg)
        le "$PHASE_OTHERS" "$others_max" || others_max=$PHASE_OTHERS
        loads+="round $r: load average $load_before before, $load_after after, other processes $PHASE_OTHERS% of the machine; "
        m_true+=("$(median true "$raw/round-$r.json")")
        m_raw+=("$(median raw-get "$raw/round-$r.json")")
        m_helper+=("$(median helper "$raw/round-$r.json")")
        m_git+=("$(median git "$raw/round-$r.json")")
        m_st+=("$(median secret-tool "$raw/round-$r.json")")
        [[ -z "$baseline" ]] || m_base+=("$(median baseline "$raw/round-$r.json")")
    done
    kill -0 "$DAEMON_PID" 2>/dev/null || die "hostkeeperd died"
    local lookups1 hits1
    lookups1=$(hk status --json | jq -r .credentials.keyring_lookups)
    hits1=$(hk status --json | jq -r .credentials.hits)
    [[ "$lookups1" == "$lookups0" ]] || die "the helper's gets reached the keyring ($lookups0 -> $lookups1 lookups): not warm"
    local getters=2
    [[ -z "$baseline" ]] || getters=3
    (( hits1 - hits0 >= getters * rounds * (runs + warmup) )) ||
        die "hostkeeperd answered $(( hits1 - hits0 )) gets from its cache, expected at least $(( getters * rounds * (runs + warmup) ))"

    # One row per round, and the targets judged on each.
    local i per_true per_git met_true=0 met_git=0 table
    table="| round | \`/bin/true\` | raw-get (C floor) | helper \`get\` | \`git credential-cache get\` | \`secret-tool lookup\` | helper / true | helper / git |"
    [[ -z "$baseline" ]] || table+=" baseline helper | baseline / true |"
    table+=$'\n'"|---|---|---|---|---|---|---|---|"
    [[ -z "$baseline" ]] || table+="---|---|"
    table+=$'\n'
    for i in "${!m_helper[@]}"; do
        per_true=$(awk -v a="${m_helper[$i]}" -v b="${m_true[$i]}" 'BEGIN { printf "%.2f", a / b }')
        per_git=$(awk -v a="${m_helper[$i]}" -v b="${m_git[$i]}" 'BEGIN { printf "%.2f", a / b }')
        le "$per_true" 1.3 && met_true=$(( met_true + 1 ))
        lt "$per_git" 1 && met_git=$(( met_git + 1 ))
        table+="| $(( i + 1 )) | $(ms "${m_true[$i]}") ms | $(ms "${m_raw[$i]}") ms | $(ms "${m_helper[$i]}") ms | $(ms "${m_git[$i]}") ms | $(ms "${m_st[$i]}") ms | $per_true | $per_git |"
        [[ -z "$baseline" ]] ||
            table+=" $(ms "${m_base[$i]}") ms | $(awk -v a="${m_base[$i]}" -v b="${m_true[$i]}" 'BEGIN { printf "%.2f", a / b }') |"
        table+=$'\n'
    done
    # The round with the median helper/true ratio stands for the run.
    local ratios_true ratios_git mid_true mid_git
    ratios_true=$(for i in "${!m_helper[@]}"; do awk -v a="${m_helper[$i]}" -v b="${m_true[$i]}" 'BEGIN { printf "%.2f\n", a / b }'; done)
    ratios_git=$(for i in "${!m_helper[@]}"; do awk -v a="${m_helper[$i]}" -v b="${m_git[$i]}" 'BEGIN { printf "%.2f\n", a / b }'; done)
    mid_true=$(middle <<<"$ratios_true")
    mid_git=$(middle <<<"$ratios_git")
    local span_true span_git
    span_true="$(sort -g <<<"$ratios_true" | head -n1)–$(sort -g <<<"$ratios_true" | tail -n1)"
    span_git="$(sort -g <<<"$ratios_git" | head -n1)–$(sort -g <<<"$ratios_git" | tail -n1)"
    local h t g
    h=$(ms "$(printf '%s\n' "${m_helper[@]}" | middle)")
    t=$(ms "$(printf '%s\n' "${m_true[@]}" | middle)")
    g=$(ms "$(printf '%s\n' "${m_git[@]}" | middle)")

    {
        echo "| helper \`get\` start to exit vs \`/bin/true\` (start-up), median of $runs, middle of $rounds rounds | $h ms | $t ms | helper/true $mid_true (rounds: $span_true) | ≤ 1.3 | $(yesno le "$mid_true" 1.3) ($met_true of $rounds rounds) |"
        echo "| helper \`get\` vs \`git credential-cache get\` (both against their warm cache daemon), same runs | $h ms | $g ms | helper/git $mid_git (rounds: $span_git) | < 1 | $(yesno lt "$mid_git" 1) ($met_git of $rounds rounds) |"
    } >"$out/startup-rows.md"
    {
        echo "- Start-up (tests/bench/startup.sh): $rounds rounds, each ONE hyperfine -N run of /bin/true, hk_bench_raw_get" \
             "(C, libc only: connect, one frame each way; the floor under any client of the daemon), the helper as" \
             "Terraform runs it (no options, \`HOSTKEEPER_SOCKET\` set), \`git credential-cache get\` against a" \
             "\`git credential-cache--daemon\` holding one credential (stdin /dev/null: an empty description, which" \
             "matches it; checked), and \`secret-tool lookup\`; $warmup warm-ups, $runs runs each. Every helper and" \
             "raw-get run was answered from hostkeeperd's cache (keyring lookups unchanged, cache hits counted)." \
             "Medians per round:"
        echo
        printf '%s' "$table" | sed 's/^/  /'
        echo
        echo "- Start-up and the machine's load: ${loads%; }."
    } >"$out/startup-notes.md"
    {
        echo "## Start-up: terraform-credentials-hostkeeper get, warm daemon"
        echo
        echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo); $(uname -sr); $(git --version)"
        echo
        printf '%s' "$table"
        echo
        [[ -z "$baseline" ]] || echo "Baseline helper: $baseline."
        echo "Targets: helper/true ≤ 1.3 in $met_true of $rounds rounds (middle $mid_true); helper/git < 1 in $met_git of $rounds rounds (middle $mid_git)."
        echo "Other processes used at most $others_max% of the machine during a round; ${loads%; }."
    } >"$out/startup.md"
    log "start-up results in $out/startup.md"
}

main() {
    [[ $# -eq 2 ]] || { echo "usage: $0 BIN_DIR OUT_DIR" >&2; exit 2; }
    local bin out
    bin=$(cd "$1" && pwd)
    mkdir -p "$2"
    out=$(cd "$2" && pwd)
    if [[ -z "${HK_TEST_ROOT:-}" ]]; then
        local self
        self=$(readlink -f "${BASH_SOURCE[0]}")
        exec "$(dirname "$self")/../support/keyring-env.sh" bash "$self" "$bin" "$out"
    fi
    inner "$bin" "$out"
    cat "$out/startup.md"
}

main "$@"; exit
