# tests/bench/lib.sh: sourced by the benchmark scripts (run.sh and the ones
# it runs). Logging, number formatting, the CPU accounting that tells whether
# other processes competed with a phase, the load generator, starting and
# stopping hostkeeperd (hkd_launch, hkd_stop), and (discovery.sh,
# registry.sh) a private nginx and hostkeeperd over TLS on loopback; and
# tests/support/script_lib.sh (die, on_exit). The sourcing script sets
# script_name and die_status for die, and defines own_pids: the pids of its
# long-running processes (daemons), whose CPU counts as its own.
# shellcheck shell=bash

# shellcheck source-path=SCRIPTDIR source=../support/script_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/script_lib.sh"

log() { echo "bench: $*" >&2; }

# ms with 3 decimals from seconds
ms() { awk -v s="$1" 'BEGIN { printf "%.3f", s * 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "n/a" }'; }
# "N× faster" or "N× slower": hostkeeper time $2 against the alternative's $1.
speedup() { awk -v a="$1" -v b="$2" 'BEGIN { if (a <= 0 || b <= 0) print "n/a"; else if (a >= b) printf "%.1f× faster", a / b; else printf "%.1f× slower", b / a }'; }
# tsv_median VARIANT COLUMN and tsv_range VARIANT COLUMN: the median, and
# "lowest–highest", of COLUMN of $RAW/runs.tsv's lines for VARIANT (its
# first field); tsv_ratio A B: A / B to two places.
tsv_median() {
    awk -F'\t' -v v="$1" -v c="$2" '$1 == v { print $c }' "$RAW/runs.tsv" | sort -g |
        awk '{ a[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.6g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
tsv_range() { awk -F'\t' -v v="$1" -v c="$2" '$1 == v { print $c }' "$RAW/runs.tsv" | sort -g | sed -n '1p;$p' | paste -sd' ' | sed 's/ /–/'; }
tsv_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
yesno() { if "$@"; then echo yes; else echo no; fi; }
thousands() { awk -v x="$1" 'BEGIN { printf "%d", x + 0.5 }' | sed -E ':a;s/^([0-9]+)([0-9]{3})/\1,\2/;ta'; }

# CPU accounting: the whole machine's busy time (/proc/stat) minus what this
# benchmark's processes used: this shell and everything it has waited for
# (`times`), and own_pids (/proc/PID/stat). In ticks of 1/100 s.
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8; exit }' /proc/stat; }
proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
proc_user_ticks() { awk '{ print $14 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
OWN_TICKS=0
measure_own() {  # sets OWN_TICKS; must run in this shell, not in $(...)
    local f=$HK_TEST_ROOT/times.$$ waited pid
    times >"$f"  # a builtin: this shell and everything it has waited for
    waited=$(awk '{ for (i = 1; i <= NF; i++) { split($i, p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] } }
                  END { printf "%d", t * 100 }' "$f")
    OWN_TICKS=$waited
    for pid in $(own_pids); do OWN_TICKS=$(( OWN_TICKS + $(proc_ticks "$pid") )); done
}
PHASE_T0="" PHASE_MACHINE0="" PHASE_OWN0="" PHASE_OTHERS=""
phase_begin() {
    PHASE_T0=$(date +%s.%N)
    PHASE_MACHINE0=$(machine_ticks)
    measure_own
    PHASE_OWN0=$OWN_TICKS
}
# Sets PHASE_OTHERS: percent of the machine (all CPUs) that other processes
# used since phase_begin. The daemons must have run for the whole phase.
# shellcheck disable=SC2034  # PHASE_OTHERS is read by the sourcing script
phase_end() {
    local machine
    machine=$(machine_ticks)
    measure_own
    PHASE_OTHERS=$(awk -v t0="$PHASE_T0" -v t="$(date +%s.%N)" -v n="$(nproc)" -v m=$(( machine - PHASE_MACHINE0 )) \
        -v o=$(( OWN_TICKS - PHASE_OWN0 )) 'BEGIN { x = (m - o) / ((t - t0) * 100 * n) * 100; if (x < 0) x = 0; printf "%.0f", x }')
}

# ---------------------------------------------------------------------------
# Load generation: hk_bench_socket_load against $SOCK (run.sh, discovery.sh,
# registry.sh).

load() {  # load LABEL ARGS... -> JSON line on stdout, also kept in $RAW
    local label=$1
    shift
    local out
    out=$("$BIN/hk_bench_socket_load" --socket "$SOCK" --label "$label" "$@") ||
        { echo "$out" >&2; die "hk_bench_socket_load $label failed"; }
    echo "$out" >>"$RAW/socket-load.jsonl"
    echo "$out"
}

# ---------------------------------------------------------------------------
# A private nginx and hostkeeperd over TLS on loopback (discovery.sh,
# registry.sh). The sourcing script sets BIN (the built binaries), DIR (its
# 0700 directory in the throw-away world), SOCK (the daemon's socket there),
# CA_DIR (tests/support/make_ca.sh's output, with bench.localhost among the
# names) and CA (its ca.pem), RAW (raw results), and calls
# `on_exit private_on_exit`.

NGINX_PID="" NGINX_LAUNCHED="" NGINX_LOG="" NGINX_PORTS=() DAEMON_N=0

# Debian's nginx is in /usr/sbin, which a user's PATH may lack.
nginx_bin() {
    if command -v nginx; then return 0; fi
    [[ -x /usr/sbin/nginx ]] && echo /usr/sbin/nginx
}
nginx_version() { "$(nginx_bin)" -v 2>&1 | sed 's/.*nginx\///'; }

# nginx_launch DIR: nginx with DIR/nginx.conf (checked with nginx -t first),
# its prefix, logs and output in DIR, in the background; sets NGINX_LAUNCHED
# to its pid.
nginx_launch() {
    local n=$1 nginx
    nginx=$(nginx_bin) || die "nginx is missing (./packaging/deps.sh bench, or apt-get install nginx)"
    "$nginx" -t -q -p "$n" -c "$n/nginx.conf" -e "$n/error.log" >"$n/test.log" 2>&1 ||
        { cat "$n/test.log" >&2; die "nginx -t failed"; }
    "$nginx" -p "$n" -c "$n/nginx.conf" -e "$n/error.log" >"$n/stdout.log" 2>&1 &
    NGINX_LAUNCHED=$!
}

# nginx_ready PID DIR WHAT CURL_ARGS...: until `curl CURL_ARGS` gets an answer
# (at most 10 s) from nginx PID, launched with nginx_launch DIR; if it exits
# or never answers, its error log and die "WHAT did not start".
nginx_ready() {
    local pid=$1 n=$2 what=$3 _
    shift 3
    for _ in $(seq 1 200); do
        curl -s -o /dev/null "$@" && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    cat "$n/error.log" >&2
    die "$what did not start"
}

# nginx_start SERVERS COUNT: nginx from Debian in the foreground (daemon off,
# master_process off: one process, so no worker needs `user root;` to read the
# 0700 directory), with its own configuration in $DIR/nginx, on COUNT free
# ports of 127.0.0.1 (NGINX_PORTS). The function SERVERS, called with the
# ports, prints the server blocks; the first must serve
# https://bench.localhost:PORT/.well-known/terraform.json, which says when
# nginx is up. The access log records msec, port, host, URI, status, bytes and
# $request_time, space-separated.
nginx_start() {
    local servers=$1 count=$2 attempt _
    local n=$DIR/nginx
    mkdir -p "$n/tmp"
    NGINX_LOG=$n/access.log
    for attempt in 1 2 3 4 5; do
        NGINX_PORTS=()
        for _ in $(seq 1 "$count"); do NGINX_PORTS+=("$(free_port)"); done
        [[ "$(printf '%s\n' "${NGINX_PORTS[@]}" | sort -u | wc -l)" == "$count" ]] || continue
        {
            nginx_conf_head "$n"
            cat <<CONF
    log_format bench '\$msec \$server_port \$host \$request_uri \$status \$body_bytes_sent \$request_time';
    access_log $n/access.log bench;
    ssl_certificate $CA_DIR/server.pem;
    ssl_certificate_key $CA_DIR/server.key;
    server_tokens off;
CONF
            "$servers" "${NGINX_PORTS[@]}"
            echo "}"
        } >"$n/nginx.conf"
        nginx_launch "$n"
        NGINX_PID=$NGINX_LAUNCHED
        for _ in $(seq 1 200); do
            if curl -s -o /dev/null --cacert "$CA" "https://bench.localhost:${NGINX_PORTS[0]}/.well-known/terraform.json" 2>/dev/null; then
                log "nginx $(nginx_version) pid $NGINX_PID on 127.0.0.1, ports ${NGINX_PORTS[*]}"
                return 0
            fi
            kill -0 "$NGINX_PID" 2>/dev/null || break
            sleep 0.02
        done
        kill "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
        NGINX_PID=
        log "nginx did not start on ports ${NGINX_PORTS[*]} (attempt $attempt): $(tail -n 2 "$n/error.log" 2>/dev/null)"
    done
    die "nginx did not start"
}

nginx_stop() {
    [[ -n "$NGINX_PID" ]] || return 0
    kill "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
    NGINX_PID=
}

nginx_log_lines() { wc -l <"$NGINX_LOG"; }
# The access-log lines after the first $1. nginx writes a request's line when
# it has finished sending the response: once the answers are in, so are the lines.
nginx_log_since() { tail -n +$(( $1 + 1 )) "$NGINX_LOG"; }

# The 1-, 5- and 15-minute load averages.
loadavg() { cut -d" " -f1-3 /proc/loadavg; }

hk() { "$BIN/hostkeeper" --socket "$SOCK" "$@"; }
hk_status() { hk status --json; }

# Credential settings under which nothing expires or is evicted during a
# run (hkd_keeping).
HKD_KEEP_CREDENTIALS=(--credentials-ttl 2h --credentials-max-lifetime 4h --credentials-negative-ttl 2h)

# hkd_launch NAME LOG ARGS...: hostkeeperd in the foreground on $SOCK with
# --log-level warn, --idle-timeout 0 and ARGS, its output in LOG; sets
# DAEMON_PID and DAEMON_LOG and waits until it answers, and is the one that
# answers. NAME (may be empty) names it in the messages of a failed start.
hkd_launch() {
    local name=${1:+ ($1)} _
    DAEMON_LOG=$2
    shift 2
    "$BIN/hostkeeperd" --socket "$SOCK" --log-level warn --idle-timeout 0 "$@" >"$DAEMON_LOG" 2>&1 &
    DAEMON_PID=$!
    for _ in $(seq 1 500); do
        if hk --timeout 1 status >/dev/null 2>&1; then
            [[ "$(hk_status | jq -r .daemon.pid)" == "$DAEMON_PID" ]] || die "another hostkeeperd answers on $SOCK"
            return 0
        fi
        kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$DAEMON_LOG" >&2; die "hostkeeperd$name exited at start-up"; }
        sleep 0.02
    done
    die "hostkeeperd$name did not answer within 10 s"
}

# hkd_launch in $DIR, trusting $CA when set, with --max-connections 512 (the
# default 128 would refuse part of a 200-connection burst) and ARGS.
# shellcheck disable=SC2120  # ARGS are optional
hkd_start() {
    DAEMON_N=$(( DAEMON_N + 1 ))
    local ca=()
    [[ -n "${CA:-}" ]] && ca=(--ca-file "$CA")
    hkd_launch "" "$DIR/hostkeeperd-$DAEMON_N.log" "${ca[@]}" --max-connections 512 "$@"
}

hkd_stop() {
    [[ -n "$DAEMON_PID" ]] || return 0
    hk stop >/dev/null 2>&1 || kill "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
    DAEMON_PID=
}

hkd_check() {
    kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$DAEMON_LOG" >&2; die "hostkeeperd (pid $DAEMON_PID) died"; }
    [[ "$(hk_status | jq -r .daemon.pid)" == "$DAEMON_PID" ]] || die "another hostkeeperd answers on $SOCK"
}

# hkd_keeping NAME ARGS...: hkd_launch with NAME's log under $HK_TEST_ROOT
# and settings under which nothing expires (HKD_KEEP_CREDENTIALS), plus ARGS.
hkd_keeping() {
    local name=$1
    shift
    hkd_launch "$name" "$HK_TEST_ROOT/hostkeeperd-$name.log" "${HKD_KEEP_CREDENTIALS[@]}" "$@"
}

# At exit (on_exit): after a failed run, the last lines of the daemon's log.
hkd_log_on_failure() {
    if [[ $exit_status -ne 0 && -n "${DAEMON_LOG:-}" && -s "$DAEMON_LOG" ]]; then
        log "last hostkeeperd log ($DAEMON_LOG):"
        tail -n 20 "$DAEMON_LOG" >&2
    fi
}

private_on_exit() {
    hkd_stop
    nginx_stop
    hkd_log_on_failure
}

# Adds the daemon's CPU time per request (µs; from its utime + stime, in
# ticks of 10 ms, over the whole run) to a load line, and of it the time in
# user space (utime; the rest is the kernel's: system calls, copying replies
# into the socket, waking clients). It varies too (with how many requests
# each wake-up finds waiting), but compares requests of different kinds run
# under the same conditions. with_cpu LINE TICKS USER_TICKS
with_cpu() {
    jq -c --argjson t "$2" --argjson u "$3" '. + (if .requests > 0
        then {daemon_cpu_us_per_request: ($t * 10000 / .requests), daemon_user_us_per_request: ($u * 10000 / .requests)}
        else {daemon_cpu_us_per_request: 0, daemon_user_us_per_request: 0} end)' <<<"$1"
}

# One throughput run against $DAEMON_PID: load LABEL ARGS..., with the
# daemon's CPU per request (with_cpu) and the CPU share of other processes
# (phase_begin/phase_end), logged. Sets RUN_OUT (the JSON line) and raises
# RUN_OTHERS_MAX to PHASE_OTHERS when above. Not in a $(...) subshell.
RUN_OUT="" RUN_OTHERS_MAX=0
throughput_run() {
    local label=$1 t0 u0
    shift
    phase_begin
    t0=$(proc_ticks "$DAEMON_PID")
    u0=$(proc_user_ticks "$DAEMON_PID")
    RUN_OUT=$(load "$label" "$@")
    RUN_OUT=$(with_cpu "$RUN_OUT" $(( $(proc_ticks "$DAEMON_PID") - t0 )) $(( $(proc_user_ticks "$DAEMON_PID") - u0 )))
    phase_end
    le "$PHASE_OTHERS" "$RUN_OTHERS_MAX" || RUN_OTHERS_MAX=$PHASE_OTHERS
    log "  $(thousands "$(jq -r .requests_per_s <<<"$RUN_OUT")")/s, p50 $(jq -r '.latency_us.p50*10|round/10' <<<"$RUN_OUT") us," \
        "daemon CPU $(jq -r '.daemon_cpu_us_per_request*10|round/10' <<<"$RUN_OUT") us/request" \
        "(user $(jq -r '.daemon_user_us_per_request*10|round/10' <<<"$RUN_OUT") us); other processes used $PHASE_OTHERS% of the machine"
}

# Throughput runs (JSON lines on stdin, from throughput_run) -> one JSON
# object: the run with the median rate (rps, p50 and p99 in µs), the range of
# all (min, max), and the median daemon CPU per request (cpu, µs) and of
# that in user space (user, µs; the median of its own).
throughput_summary() {
    jq -s -c 'sort_by(.requests_per_s) as $s | $s[(length - 1) / 2 | floor] as $m
        | {rps: $m.requests_per_s, p50: ($m.latency_us.p50 * 10 | round / 10), p99: ($m.latency_us.p99 * 10 | round / 10),
           min: $s[0].requests_per_s, max: $s[-1].requests_per_s,
           cpu: (map(.daemon_cpu_us_per_request) | sort | .[(length - 1) / 2 | floor] * 10 | round / 10),
           user: (map(.daemon_user_us_per_request) | sort | .[(length - 1) / 2 | floor] * 10 | round / 10)}'
}
# "min–max" of a summary, with thousands separators.
throughput_range() { echo "$(thousands "$(jq -r .min <<<"$1")")–$(thousands "$(jq -r .max <<<"$1")")"; }
