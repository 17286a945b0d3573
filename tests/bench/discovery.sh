#!/usr/bin/env bash
# tests/bench/discovery.sh BIN_DIR OUT_DIR
#
# The remote service discovery benchmarks (issue 3, "Benchmarks"). run.sh runs
# this inside its keyring world after the credentials benchmarks and puts the
# rows it writes into its own table; run by hand, it re-runs itself inside
# tests/support/keyring-env.sh (BIN_DIR must hold built binaries: hostkeeperd,
# hostkeeper, hk_bench_socket_load).
#
# It starts, all in a private 0700 directory of the throw-away world:
#   - a throw-away CA and a server certificate for bench.localhost and
#     h1.localhost .. h20.localhost (tests/support/make_ca.sh); libcurl
#     resolves every *.localhost name to loopback itself;
#   - nginx from Debian, in the foreground (daemon off, master_process off),
#     with its own configuration, on two free ports of 127.0.0.1:
#       fast: a static terraform.json, served as fast as nginx can;
#       slow: the same services padded to HK_BENCH_SLOW_SECONDS × 64 KiB,
#             sent at limit_rate 64k, so that every response takes about
#             HK_BENCH_SLOW_SECONDS seconds (the lookups of a burst overlap);
#     its access log records port, host, status, bytes and $request_time;
#   - hostkeeperd in the foreground on OUT_DIR's private socket
#     (--ca-file the throw-away CA, --max-connections 512: the default 128
#     would refuse part of a 200-connection burst).
# and measures
#   1. `hostkeeper discover bench.localhost:PORT modules.v1` against a warm
#      cache, process start to exit, beside `curl -s --cacert CA
#      https://bench.localhost:PORT/.well-known/terraform.json` fetching the
#      same document from the same nginx: one hyperfine -N run, medians;
#   2. cached `discover` requests/s over the socket, 8 clients
#      (hk_bench_socket_load --op discover), HK_BENCH_REPEATS runs, median;
#      each run follows one of cached `get`s of the same host on the same
#      daemon, for a comparison under the same conditions;
#   3. bursts of 200 cold lookups, 20 hosts × 10, every one on its own socket
#      connection, all sent at once (hk_bench_socket_load --op discover
#      --clients 200 --requests 200), each against a freshly started daemon
#      that has answered one unrelated discover (keyring and libcurl set up,
#      nothing cached and no connection open for the 20 hosts);
#      HK_BENCH_BURSTS bursts against the slow server and as many against the
#      fast one. Upstream requests are counted by the daemon
#      (`status --json` .discovery.upstream_requests) and by nginx (its log).
#      Overlap: an answer fetched for a request, or for a concurrent one it
#      waited for, has source "network"; one that came after the fetch
#      finished would be "cache". All 200 "network" proves all 200 overlapped.
#
# Writes OUT_DIR/discovery-rows.md (rows of run.sh's table),
# OUT_DIR/discovery-notes.md (notes), and the raw data in OUT_DIR/discovery/.
# Exit status: 0 when every measurement ran, whether or not a target was met.
#
# Environment: HK_BENCH_RUNS (300), HK_BENCH_WARMUP (20), HK_BENCH_SECONDS (5),
# HK_BENCH_REPEATS (3), HK_BENCH_BURSTS (5), HK_BENCH_SLOW_SECONDS (1).
#
# Needs: nginx, curl, hyperfine, jq, openssl, python3 (a free port).

set -euo pipefail
shopt -s inherit_errexit
# log, number formatting, CPU accounting (phase_begin/phase_end): shared with the other benchmark script.
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# The processes of this benchmark besides this shell and what it waited for.
own_pids() { echo "${DAEMON_PID:-0}" "${NGINX_PID:-0}" "${HK_KEYRING_PID:-0}" "${HK_BUS_PID:-0}"; }

die() {
    echo "bench (discovery): $*" >&2
    exit 1
}

# As in run.sh: bash reads the whole function definitions before main runs.

BIN="" OUT="" DIR="" RAW="" SOCK="" CA=""
NGINX_PID="" NGINX_LOG="" DAEMON_PID="" DAEMON_LOG="" DAEMON_N=0
PORT_FAST="" PORT_SLOW=""

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---------------------------------------------------------------------------
# nginx

write_documents() {
    local slow_seconds=$1
    mkdir -p "$DIR/www/fast/.well-known" "$DIR/www/slow/.well-known"
    # Shaped like a real registry's document: relative and absolute URLs, login.v1.
    local services='"modules.v1":"/api/registry/v1/modules/","providers.v1":"/api/registry/v1/providers/","tfe.v2":"/api/v2/","state.v2":"/api/v2/","motd.v1":"/api/terraform/motd","login.v1":{"client":"terraform-cli","grant_types":["authz_code"],"authz":"/app/settings/tokens?source=terraform-login","token":"/api/v2/oauth/token","ports":[10000,10010]}'
    printf '{%s}\n' "$services" >"$DIR/www/fast/.well-known/terraform.json"
    # Padding under a key that is not a service id: the daemon ignores it.
    local pad=$(( slow_seconds * 65536 ))
    { printf '{%s,"x-bench-padding":"' "$services"; head -c "$pad" /dev/zero | tr '\0' x; printf '"}\n'; } \
        >"$DIR/www/slow/.well-known/terraform.json"
    jq -e 'type == "object"' "$DIR/www/slow/.well-known/terraform.json" >/dev/null || die "bad padded document"
}

start_nginx() {
    local nginx attempt
    nginx=$(command -v nginx || echo /usr/sbin/nginx)
    [[ -x "$nginx" ]] || die "nginx is missing (./packaging/deps.sh bench, or apt-get install nginx)"
    mkdir -p "$DIR/nginx/tmp"
    NGINX_LOG=$DIR/nginx/access.log
    for attempt in 1 2 3 4 5; do
        PORT_FAST=$(free_port)
        PORT_SLOW=$(free_port)
        [[ "$PORT_FAST" != "$PORT_SLOW" ]] || continue
        local n=$DIR/nginx
        # Root: master_process off keeps one process, so no worker needs
        # `user root;` to read the 0700 directory.
        cat >"$n/nginx.conf" <<CONF
daemon off;
master_process off;
pid $n/nginx.pid;
error_log $n/error.log warn;
events { worker_connections 1024; }
http {
    log_format bench '\$msec \$server_port \$host \$request_uri \$status \$body_bytes_sent \$request_time';
    access_log $n/access.log bench;
    client_body_temp_path $n/tmp/body;
    proxy_temp_path $n/tmp/proxy;
    fastcgi_temp_path $n/tmp/fastcgi;
    uwsgi_temp_path $n/tmp/uwsgi;
    scgi_temp_path $n/tmp/scgi;
    ssl_certificate $CA_DIR/server.pem;
    ssl_certificate_key $CA_DIR/server.key;
    server_tokens off;
    server {
        listen 127.0.0.1:$PORT_FAST ssl;
        root $DIR/www/fast;
        location = /.well-known/terraform.json {
            types { }
            default_type application/json;
        }
    }
    server {
        listen 127.0.0.1:$PORT_SLOW ssl;
        root $DIR/www/slow;
        location = /.well-known/terraform.json {
            types { }
            default_type application/json;
            limit_rate 64k;
        }
    }
}
CONF
        "$nginx" -t -q -p "$n" -c "$n/nginx.conf" -e "$n/error.log" >"$n/test.log" 2>&1 ||
            { cat "$n/test.log" >&2; die "nginx -t failed"; }
        "$nginx" -p "$n" -c "$n/nginx.conf" -e "$n/error.log" >"$n/stdout.log" 2>&1 &
        NGINX_PID=$!
        local _
        for _ in $(seq 1 200); do
            if curl -s -o /dev/null --cacert "$CA" "https://bench.localhost:$PORT_FAST/.well-known/terraform.json" 2>/dev/null; then
                log "nginx $("$nginx" -v 2>&1 | sed 's/.*nginx\///') pid $NGINX_PID on 127.0.0.1:$PORT_FAST (fast) and :$PORT_SLOW (slow)"
                return 0
            fi
            kill -0 "$NGINX_PID" 2>/dev/null || break
            sleep 0.02
        done
        kill "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
        NGINX_PID=
        log "nginx did not start on ports $PORT_FAST/$PORT_SLOW (attempt $attempt): $(tail -n 2 "$n/error.log" 2>/dev/null)"
    done
    die "nginx did not start"
}

stop_nginx() {
    [[ -n "$NGINX_PID" ]] || return 0
    kill "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
    NGINX_PID=
}

log_lines() { wc -l <"$NGINX_LOG"; }

# ---------------------------------------------------------------------------
# hostkeeperd

hk() { "$BIN/hostkeeper" --socket "$SOCK" "$@"; }
daemon_status() { hk status --json; }
upstream() { daemon_status | jq -r .discovery.upstream_requests; }

start_daemon() {
    DAEMON_N=$(( DAEMON_N + 1 ))
    DAEMON_LOG=$DIR/hostkeeperd-$DAEMON_N.log
    "$BIN/hostkeeperd" --socket "$SOCK" --ca-file "$CA" --log-level warn --idle-timeout 0 \
        --max-connections 512 >"$DAEMON_LOG" 2>&1 &
    DAEMON_PID=$!
    local _
    for _ in $(seq 1 500); do
        if hk --timeout 1 status >/dev/null 2>&1; then
            [[ "$(daemon_status | jq -r .daemon.pid)" == "$DAEMON_PID" ]] || die "another hostkeeperd answers on $SOCK"
            return 0
        fi
        kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$DAEMON_LOG" >&2; die "hostkeeperd exited at start-up"; }
        sleep 0.02
    done
    die "hostkeeperd did not answer within 10 s"
}

stop_daemon() {
    [[ -n "$DAEMON_PID" ]] || return 0
    hk stop >/dev/null 2>&1 || kill "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
    DAEMON_PID=
}

check_daemon() {
    kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$DAEMON_LOG" >&2; die "hostkeeperd (pid $DAEMON_PID) died"; }
    [[ "$(daemon_status | jq -r .daemon.pid)" == "$DAEMON_PID" ]] || die "another hostkeeperd answers on $SOCK"
}

on_exit() {
    local rc=$?
    stop_daemon
    stop_nginx
    if [[ $rc -ne 0 && -n "$DAEMON_LOG" && -s "$DAEMON_LOG" ]]; then
        echo "bench (discovery): last hostkeeperd log ($DAEMON_LOG):" >&2
        tail -n 20 "$DAEMON_LOG" >&2
    fi
    exit "$rc"
}

# Adds the daemon's CPU time per request (µs; from its utime + stime, in
# ticks of 10 ms, over the whole run) to a load line. It varies too (with how
# many requests each wake-up finds waiting), but compares `get` and
# `discover` run under the same conditions.
with_cpu() { jq -c --argjson t "$2" '. + {daemon_cpu_us_per_request: (if .requests > 0 then $t * 10000 / .requests else 0 end)}' <<<"$1"; }

load() {  # load LABEL ARGS... (with --op) -> JSON line on stdout, also kept in $RAW
    local label=$1
    shift
    local out
    out=$("$BIN/hk_bench_socket_load" --socket "$SOCK" --label "$label" "$@") ||
        { echo "$out" >&2; die "hk_bench_socket_load $label failed"; }
    echo "$out" >>"$RAW/socket-load.jsonl"
    echo "$out"
}

# ---------------------------------------------------------------------------
# One burst: a fresh daemon, one unrelated discover, then 200 lookups of
# h1..h20.localhost:PORT at once. Sets BURST_OUT to a JSON summary line.
# Not in a $(...) subshell: the daemon it starts must be the one on_exit stops.

CA_DIR="" BURST_OUT=""
burst() {
    local kind=$1 port=$2 i
    local -a hosts=()
    for i in $(seq 1 20); do hosts+=(--host "h$i.localhost:$port"); done
    start_daemon
    hk discover "bench.localhost:$PORT_FAST" modules.v1 >/dev/null || die "warming discover failed"
    local up0 lines0 out up1 lines1
    up0=$(upstream)
    lines0=$(log_lines)
    phase_begin
    out=$(load "burst-$kind-$DAEMON_N" --op discover --clients 200 --requests 200 "${hosts[@]}")
    phase_end
    check_daemon
    up1=$(upstream)
    # nginx writes a request's log line when it has finished sending it: the
    # answers are all in, so are the lines.
    lines1=$(log_lines)
    local server server_reqs server_t
    server=$(tail -n +$(( lines0 + 1 )) "$NGINX_LOG" | head -n $(( lines1 - lines0 )))
    echo "$server" >>"$RAW/burst-$kind-server.log"
    server_reqs=$(awk -v p="$port" '$2 == p && $3 ~ /^h[0-9]+\.localhost$/ && $4 == "/.well-known/terraform.json"' <<<"$server" | wc -l)
    server_t=$(awk -v p="$port" '$2 == p { if (min == "" || $7 < min) min = $7; if ($7 > max) max = $7 } END { printf "%s %s", min + 0, max + 0 }' <<<"$server")
    local distinct
    distinct=$(awk -v p="$port" '$2 == p { print $3 }' <<<"$server" | sort -u | wc -l)
    stop_daemon
    BURST_OUT=$(jq -c --argjson up $(( up1 - up0 )) --argjson srv "$server_reqs" --argjson distinct "$distinct" \
        --arg tmin "${server_t% *}" --arg tmax "${server_t#* }" --argjson others "$PHASE_OTHERS" \
        '{kind: "'"$kind"'", seconds, requests, found, errors, sources, latency_us,
          upstream_daemon: $up, upstream_server: $srv, server_hosts: $distinct,
          server_request_time_s: {min: ($tmin | tonumber), max: ($tmax | tonumber)},
          beyond_server_s: (.seconds - ($tmax | tonumber)), others_pct: $others}' <<<"$out")
}

# ---------------------------------------------------------------------------

inner() {
    BIN=$1
    OUT=$2
    local runs=${HK_BENCH_RUNS:-300} warmup=${HK_BENCH_WARMUP:-20} seconds=${HK_BENCH_SECONDS:-5}
    local repeats=${HK_BENCH_REPEATS:-3} bursts=${HK_BENCH_BURSTS:-5} slow_seconds=${HK_BENCH_SLOW_SECONDS:-1}
    [[ "$slow_seconds" =~ ^[1-9][0-9]?$ ]] || die "HK_BENCH_SLOW_SECONDS must be a whole number of seconds, 1..99"
    local tool
    for tool in curl hyperfine jq openssl python3; do
        command -v "$tool" >/dev/null || die "missing: $tool (./packaging/deps.sh bench)"
    done
    for tool in hostkeeperd hostkeeper hk_bench_socket_load; do
        [[ -x "$BIN/$tool" ]] || die "$BIN/$tool was not built"
    done
    [[ -n "${HK_TEST_ROOT:-}" && -d "$HK_TEST_ROOT" ]] || die "not inside keyring-env.sh"
    export LC_NUMERIC=C
    # Loopback only: no proxy for curl or for the daemon's libcurl.
    unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY SSL_CERT_FILE SSL_CERT_DIR

    DIR=$HK_TEST_ROOT/discovery
    mkdir -p "$DIR"
    chmod 700 "$DIR"
    mkdir -p "$DIR/run"
    chmod 700 "$DIR/run"
    SOCK=$DIR/run/socket
    mkdir -p "$OUT"
    RAW=$OUT/discovery
    rm -rf "$RAW"
    mkdir -p "$RAW"
    trap on_exit EXIT

    local -a names=(bench.localhost)
    local i
    for i in $(seq 1 20); do names+=("h$i.localhost"); done
    CA_DIR=$DIR/ca
    "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../support/make_ca.sh" "$CA_DIR" "${names[@]}"
    CA=$CA_DIR/ca.pem
    write_documents "$slow_seconds"
    start_nginx
    start_daemon
    log "hostkeeperd pid $DAEMON_PID on $SOCK (--ca-file $CA)"

    # -- 1. latency: hostkeeper discover vs curl ----------------------------
    local host=bench.localhost:$PORT_FAST want doc
    want="https://$host/api/registry/v1/modules/"
    [[ "$(hk discover "$host" modules.v1)" == "$want" ]] || die "hostkeeper discover $host modules.v1 did not print $want"
    [[ "$(hk discover --json "$host" modules.v1 | jq -r .source)" == cache ]] || die "the second discover was not from the cache"
    doc=$(curl -s --cacert "$CA" "https://$host/.well-known/terraform.json")
    [[ "$doc" == "$(cat "$DIR/www/fast/.well-known/terraform.json")" ]] || die "curl did not fetch the document"
    local up0 lines0
    up0=$(upstream)
    lines0=$(log_lines)
    log "discover latency: hostkeeper discover (warm cache) vs curl, hyperfine -N, $runs runs after $warmup warm-ups"
    phase_begin
    hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$RAW/latency.json" \
        -n hostkeeper-discover "$BIN/hostkeeper --socket $SOCK discover $host modules.v1" \
        -n curl "curl -s --cacert $CA https://$host/.well-known/terraform.json" >&2
    phase_end
    local others_latency=$PHASE_OTHERS
    check_daemon
    local up1 lines1 curl_reqs
    up1=$(upstream)
    lines1=$(log_lines)
    [[ "$up1" == "$up0" ]] || die "the daemon went upstream $(( up1 - up0 )) times during the warm-cache runs"
    curl_reqs=$(( lines1 - lines0 ))
    [[ "$curl_reqs" == $(( runs + warmup )) ]] || die "nginx logged $curl_reqs requests, expected $(( runs + warmup )) from curl"
    local med_hk med_curl
    med_hk=$(jq -r '.results[] | select(.command == "hostkeeper-discover") | .median' "$RAW/latency.json")
    med_curl=$(jq -r '.results[] | select(.command == "curl") | .median' "$RAW/latency.json")
    log "  hostkeeper $(ms "$med_hk") ms, curl $(ms "$med_curl") ms: $(speedup "$med_curl" "$med_hk");" \
        "other processes used $others_latency% of the machine"

    # -- 2. cached discover throughput, 8 clients ---------------------------
    # Each discover run follows a `get` run of the same host on the same
    # daemon, for a comparison under the same conditions (the machine may be
    # busy, see the CPU share of other processes). The host has a token, so
    # that both answers are the whole thing: credentials, and services.
    local creds r t0 out runs_json="" get_json="" others_tp=0
    creds="{\"token\":\"hkbench.atlasv1.$(head -c 70 /dev/zero | tr '\0' x)\"}"
    printf '%s' "$creds" | "$BIN/terraform-credentials-hostkeeper" --socket="$SOCK" store "$host" ||
        die "storing a token for $host failed"
    up0=$(upstream)
    for r in $(seq 1 "$repeats"); do
        log "get throughput (for comparison): 8 clients, ${seconds} s, run $r of $repeats"
        phase_begin
        t0=$(proc_ticks "$DAEMON_PID")
        out=$(load "get-throughput-8-$r" --op get --clients 8 --seconds "$seconds" --host "$host")
        out=$(with_cpu "$out" $(( $(proc_ticks "$DAEMON_PID") - t0 )))
        phase_end
        le "$PHASE_OTHERS" "$others_tp" || others_tp=$PHASE_OTHERS
        log "  $(thousands "$(jq -r .requests_per_s <<<"$out")")/s, p50 $(jq -r '.latency_us.p50*10|round/10' <<<"$out") us," \
            "daemon CPU $(jq -r '.daemon_cpu_us_per_request*10|round/10' <<<"$out") us/request; other processes used $PHASE_OTHERS% of the machine"
        get_json+="$out"$'\n'
        log "discover throughput: 8 clients, ${seconds} s, run $r of $repeats"
        phase_begin
        t0=$(proc_ticks "$DAEMON_PID")
        out=$(load "discover-throughput-8-$r" --op discover --clients 8 --seconds "$seconds" --host "$host")
        out=$(with_cpu "$out" $(( $(proc_ticks "$DAEMON_PID") - t0 )))
        phase_end
        le "$PHASE_OTHERS" "$others_tp" || others_tp=$PHASE_OTHERS
        [[ "$(jq -r '.sources.cache == .requests' <<<"$out")" == true ]] ||
            die "not every answer came from the cache: $(jq -c .sources <<<"$out")"
        log "  $(thousands "$(jq -r .requests_per_s <<<"$out")")/s, p50 $(jq -r '.latency_us.p50*10|round/10' <<<"$out") us," \
            "daemon CPU $(jq -r '.daemon_cpu_us_per_request*10|round/10' <<<"$out") us/request; other processes used $PHASE_OTHERS% of the machine"
        runs_json+="$out"$'\n'
    done
    check_daemon
    [[ "$(upstream)" == "$up0" ]] || die "the daemon went upstream during the throughput runs"
    out=$(jq -s -c 'sort_by(.requests_per_s) | .[(length - 1) / 2 | floor]' <<<"$runs_json")
    local rps p50 p99 range
    rps=$(jq -r .requests_per_s <<<"$out")
    p50=$(jq -r '.latency_us.p50*10|round/10' <<<"$out")
    p99=$(jq -r '.latency_us.p99*10|round/10' <<<"$out")
    range="$(thousands "$(jq -s 'map(.requests_per_s) | min' <<<"$runs_json")")–$(thousands "$(jq -s 'map(.requests_per_s) | max' <<<"$runs_json")")"
    local get_rps get_range cpu_d cpu_g
    cpu_d=$(jq -s -r 'map(.daemon_cpu_us_per_request) | sort | .[(length - 1) / 2 | floor] * 10 | round / 10' <<<"$runs_json")
    cpu_g=$(jq -s -r 'map(.daemon_cpu_us_per_request) | sort | .[(length - 1) / 2 | floor] * 10 | round / 10' <<<"$get_json")
    get_rps=$(jq -s -r 'sort_by(.requests_per_s) | .[(length - 1) / 2 | floor] | .requests_per_s' <<<"$get_json")
    get_range="$(thousands "$(jq -s 'map(.requests_per_s) | min' <<<"$get_json")")–$(thousands "$(jq -s 'map(.requests_per_s) | max' <<<"$get_json")")"
    stop_daemon

    # -- 3. 200 concurrent cold lookups of 20 hosts ---------------------------
    local kind port b all=""
    for kind in slow fast; do
        [[ $kind == slow ]] && port=$PORT_SLOW || port=$PORT_FAST
        for b in $(seq 1 "$bursts"); do
            burst "$kind" "$port"
            out=$BURST_OUT
            echo "$out" >>"$RAW/bursts.jsonl"
            log "burst ($kind server) $b of $bursts: $(jq -r '"\(.seconds*1000|round) ms, upstream \(.upstream_daemon) (daemon) / \(.upstream_server) (nginx), sources \(.sources|tojson), errors \(.errors), server time \(.server_request_time_s.min)–\(.server_request_time_s.max) s"' <<<"$out")"
            [[ "$(jq -r '.errors == 0 and .found == 200' <<<"$out")" == true ]] || die "burst: not every lookup succeeded: $out"
            all+="$out"$'\n'
        done
    done
    # Per kind: median wall time, ranges, upstream counts of every burst.
    local -A beyond wall wall_range up_d up_s net_range srv_t p50b maxb others_b
    for kind in slow fast; do
        local sel
        sel=$(jq -c --arg k "$kind" 'select(.kind == $k)' <<<"$all")
        out=$(jq -s -c 'sort_by(.seconds) | .[(length - 1) / 2 | floor]' <<<"$sel")
        wall[$kind]=$(jq -r .seconds <<<"$out")
        wall_range[$kind]=$(jq -s -r 'map(.seconds * 1000 | round) | "\(min)–\(max)"' <<<"$sel")
        up_d[$kind]=$(jq -s -r 'map(.upstream_daemon) | unique | map(tostring) | join("/")' <<<"$sel")
        up_s[$kind]=$(jq -s -r 'map(.upstream_server) | unique | map(tostring) | join("/")' <<<"$sel")
        net_range[$kind]=$(jq -s -r 'map(.sources.network) | if min == max then "\(min)" else "\(min)–\(max)" end' <<<"$sel")
        srv_t[$kind]=$(jq -s -r 'map(.server_request_time_s) | "\(map(.min) | min)–\(map(.max) | max)"' <<<"$sel")
        p50b[$kind]=$(jq -r '.latency_us.p50/1000|round' <<<"$out")
        maxb[$kind]=$(jq -r '.latency_us.max/1000|round' <<<"$out")
        others_b[$kind]=$(jq -s -r 'map(.others_pct) | max' <<<"$sel")
        beyond[$kind]=$(jq -s -r 'map(.beyond_server_s) | sort | .[(length - 1) / 2 | floor] * 1000 | round' <<<"$sel")
    done
    local up_ok=yes
    local -A met
    for kind in slow fast; do
        met[$kind]=$(jq -s -r --arg k "$kind" 'map(select(.kind == $k))
            | if all(.upstream_daemon == 20 and .upstream_server == 20 and .server_hosts == 20) then "yes" else "no" end' <<<"$all")
        [[ ${met[$kind]} == yes ]] || up_ok=no
    done

    # -- rows for run.sh's table ----------------------------------------------
    local speed
    speed=$(ratio "$med_curl" "$med_hk")
    local slow_net_all
    slow_net_all=$(jq -s -r 'map(select(.kind == "slow")) | all(.sources.network == 200)' <<<"$all")
    {
        echo "| \`hostkeeper discover HOST modules.v1\`, process start to exit, warm cache, median of $runs | $(ms "$med_hk") ms | \`curl -s --cacert CA https://HOST/.well-known/terraform.json\` (same nginx) $(ms "$med_curl") ms | $(speedup "$med_curl" "$med_hk") | ≥ 3× | $(yesno ge "$speed" 3) |"
        echo "| cached \`discover\` throughput, 8 clients | $(thousands "$rps")/s (median of $repeats, range $range/s; p50 $p50 µs, p99 $p99 µs; daemon CPU $cpu_d µs per request) | cached \`get\` of the same host, same daemon, runs interleaved: $(thousands "$get_rps")/s (range $get_range/s; daemon CPU $cpu_g µs per request) | $(awk -v a="$rps" -v b="$get_rps" 'BEGIN { printf "%.0f%% of get", 100 * a / b }') | ≥ 50,000/s | $(yesno ge "$rps" 50000) |"
        echo "| 200 cold lookups (20 hosts × 10) at once, slow server (nginx \`limit_rate\`): upstream requests per burst, daemon / nginx log | ${up_d[slow]} / ${up_s[slow]} (each of $bursts bursts) | 200 without single flight | — | = 20 | ${met[slow]} |"
        echo "| same, total wall time (first request sent to last answer), median of $bursts | $(printf %.0f "$(ms "${wall[slow]}")") ms (range ${wall_range[slow]} ms; nginx's time per response ${srv_t[slow]} s, the wall time beyond the slowest of them ${beyond[slow]} ms (median); ${net_range[slow]} of 200 answers \`network\`) | — | — | — | — |"
        echo "| 200 cold lookups (20 hosts × 10) at once, fast server: upstream requests per burst, daemon / nginx log | ${up_d[fast]} / ${up_s[fast]} (each of $bursts bursts) | 200 without single flight | — | = 20 | ${met[fast]} |"
        echo "| same, total wall time (first request sent to last answer), median of $bursts | $(printf %.0f "$(ms "${wall[fast]}")") ms (range ${wall_range[fast]} ms; answers p50 ${p50b[fast]} ms, max ${maxb[fast]} ms; ${net_range[fast]} of 200 answers \`network\`) | — | — | — | — |"
    } >"$OUT/discovery-rows.md"
    {
        echo "- Discovery: nginx $(nginx -v 2>&1 | sed 's/.*nginx\///') from Debian on 127.0.0.1 (TLS, throw-away CA;" \
             "\`daemon off; master_process off;\`, one process), hostkeeperd on a private socket with \`--ca-file\`." \
             "Names \`*.localhost\`, which libcurl resolves to loopback itself. Both clients make a new process and" \
             "(curl) a new TLS connection per run; hostkeeper's runs sent nothing upstream (daemon counter unchanged)," \
             "nginx logged exactly the $(( runs + warmup )) curl requests. CPU used by other processes: latency" \
             "$others_latency%, throughput $others_tp%, bursts slow ${others_b[slow]}% / fast ${others_b[fast]}% (the most of any run)."
        echo "- Discovery bursts: hk_bench_socket_load, 200 threads each with its own connection (all connected" \
             "first, then released at once), client i asks for h(i mod 20 + 1).localhost:PORT; each burst against a" \
             "freshly started hostkeeperd (\`--max-connections 512\`: the default 128 refuses part of the burst) that" \
             "has answered one discover of another host. Upstream requests: the daemon's" \
             "\`discovery.upstream_requests\` before and after, and the nginx access-log lines for the 20 hosts" \
             "(20 from each, and all 20 hosts in the log, in every burst: $up_ok). Overlap on the slow server: a ${slow_seconds}×64 KiB-padded document sent at" \
             "nginx \`limit_rate 64k\`; an answer is \`network\` only if its request arrived while the fetch was in" \
             "flight (after it, it would be \`cache\`): all 200 \`network\` in every slow burst: $slow_net_all."
        echo "- Discovery throughput: 8 persistent connections to one host, every answer checked (ok, services" \
             "listed, \`source\` cache; the daemon's upstream counter unchanged). \"daemon CPU per request\" is" \
             "hostkeeperd's utime + stime over the run divided by the requests answered (median of the runs); it" \
             "varies with how many requests each wake-up of the daemon finds (more when it has a CPU to itself)," \
             "so compare it between the interleaved \`get\` and \`discover\` runs, not across runs."
    } >"$OUT/discovery-notes.md"
    stop_nginx
    log "discovery rows written to $OUT/discovery-rows.md"
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
    cat "$out/discovery-rows.md"
}

main "$@"; exit
