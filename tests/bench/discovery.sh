#!/usr/bin/env bash
# tests/bench/discovery.sh BIN_DIR OUT_DIR
#
# The remote service discovery benchmarks. run.sh runs
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
# log, number formatting, CPU accounting (phase_begin/phase_end), the load
# generator, nginx and hostkeeperd (nginx_start, hkd_start, ...): shared with
# the other benchmark scripts.
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# The processes of this benchmark besides this shell and what it waited for.
own_pids() { echo "${DAEMON_PID:-0}" "${NGINX_PID:-0}" "${HK_KEYRING_PID:-0}" "${HK_BUS_PID:-0}"; }

# die (tests/support/script_lib.sh, through lib.sh): "bench (discovery): MSG", exit 1.
# shellcheck disable=SC2034  # read by die
script_name="bench (discovery)" die_status=1

# As in run.sh: bash reads the whole function definitions before main runs.

BIN="" OUT="" DIR="" RAW="" SOCK="" CA="" CA_DIR=""
DAEMON_PID="" DAEMON_LOG=""
PORT_FAST="" PORT_SLOW=""

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

# nginx_start's server blocks: fast and slow (see the top of this file).
# shellcheck disable=SC2317  # called by nginx_start
servers() {
    cat <<CONF
    server {
        listen 127.0.0.1:$1 ssl;
        root $DIR/www/fast;
        location = /.well-known/terraform.json {
            types { }
            default_type application/json;
        }
    }
    server {
        listen 127.0.0.1:$2 ssl;
        root $DIR/www/slow;
        location = /.well-known/terraform.json {
            types { }
            default_type application/json;
            limit_rate 64k;
        }
    }
CONF
}

# ---------------------------------------------------------------------------
# hostkeeperd

upstream() { hk_status | jq -r .discovery.upstream_requests; }

# ---------------------------------------------------------------------------
# One burst: a fresh daemon, one unrelated discover, then 200 lookups of
# h1..h20.localhost:PORT at once. Sets BURST_OUT to a JSON summary line.
# Not in a $(...) subshell: the daemon it starts must be the one private_on_exit stops.

BURST_OUT=""
burst() {
    local kind=$1 port=$2 i
    local -a hosts=()
    for i in $(seq 1 20); do hosts+=(--host "h$i.localhost:$port"); done
    hkd_start
    hk discover "bench.localhost:$PORT_FAST" modules.v1 >/dev/null || die "warming discover failed"
    local up0 lines0 out up1 lines1
    up0=$(upstream)
    lines0=$(nginx_log_lines)
    phase_begin
    out=$(load "burst-$kind-$DAEMON_N" --op discover --clients 200 --requests 200 "${hosts[@]}")
    phase_end
    hkd_check
    up1=$(upstream)
    # nginx writes a request's log line when it has finished sending it: the
    # answers are all in, so are the lines.
    lines1=$(nginx_log_lines)
    local server server_reqs server_t
    server=$(nginx_log_since "$lines0" | head -n $(( lines1 - lines0 )))
    echo "$server" >>"$RAW/burst-$kind-server.log"
    server_reqs=$(awk -v p="$port" '$2 == p && $3 ~ /^h[0-9]+\.localhost$/ && $4 == "/.well-known/terraform.json"' <<<"$server" | wc -l)
    server_t=$(awk -v p="$port" '$2 == p { if (min == "" || $7 < min) min = $7; if ($7 > max) max = $7 } END { printf "%s %s", min + 0, max + 0 }' <<<"$server")
    local distinct
    distinct=$(awk -v p="$port" '$2 == p { print $3 }' <<<"$server" | sort -u | wc -l)
    hkd_stop
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
    on_exit private_on_exit

    local -a names=(bench.localhost)
    local i
    for i in $(seq 1 20); do names+=("h$i.localhost"); done
    CA_DIR=$DIR/ca
    "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../support/make_ca.sh" "$CA_DIR" "${names[@]}"
    CA=$CA_DIR/ca.pem
    write_documents "$slow_seconds"
    nginx_start servers 2
    PORT_FAST=${NGINX_PORTS[0]} PORT_SLOW=${NGINX_PORTS[1]}
    log "  fast server on port $PORT_FAST, slow on $PORT_SLOW"
    hkd_start
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
    lines0=$(nginx_log_lines)
    log "discover latency: hostkeeper discover (warm cache) vs curl, hyperfine -N, $runs runs after $warmup warm-ups"
    phase_begin
    hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$RAW/latency.json" \
        -n hostkeeper-discover "$BIN/hostkeeper --socket $SOCK discover $host modules.v1" \
        -n curl "curl -s --cacert $CA https://$host/.well-known/terraform.json" >&2
    phase_end
    local others_latency=$PHASE_OTHERS
    hkd_check
    local up1 lines1 curl_reqs
    up1=$(upstream)
    lines1=$(nginx_log_lines)
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
    local creds r out runs_json="" get_json=""
    creds="{\"token\":\"hkbench.atlasv1.$(head -c 70 /dev/zero | tr '\0' x)\"}"
    printf '%s' "$creds" | "$BIN/terraform-credentials-hostkeeper" --socket="$SOCK" store "$host" ||
        die "storing a token for $host failed"
    up0=$(upstream)
    RUN_OTHERS_MAX=0
    for r in $(seq 1 "$repeats"); do
        log "get throughput (for comparison): 8 clients, ${seconds} s, run $r of $repeats"
        throughput_run "get-throughput-8-$r" --op get --clients 8 --seconds "$seconds" --host "$host"
        get_json+="$RUN_OUT"$'\n'
        log "discover throughput: 8 clients, ${seconds} s, run $r of $repeats"
        throughput_run "discover-throughput-8-$r" --op discover --clients 8 --seconds "$seconds" --host "$host"
        [[ "$(jq -r '.sources.cache == .requests' <<<"$RUN_OUT")" == true ]] ||
            die "not every answer came from the cache: $(jq -c .sources <<<"$RUN_OUT")"
        runs_json+="$RUN_OUT"$'\n'
    done
    local others_tp=$RUN_OTHERS_MAX
    hkd_check
    [[ "$(upstream)" == "$up0" ]] || die "the daemon went upstream during the throughput runs"
    local tp get_tp rps p50 p99 range get_rps get_range cpu_d cpu_g
    tp=$(throughput_summary <<<"$runs_json")
    get_tp=$(throughput_summary <<<"$get_json")
    rps=$(jq -r .rps <<<"$tp")
    p50=$(jq -r .p50 <<<"$tp")
    p99=$(jq -r .p99 <<<"$tp")
    range=$(throughput_range "$tp")
    cpu_d=$(jq -r .cpu <<<"$tp")
    get_rps=$(jq -r .rps <<<"$get_tp")
    get_range=$(throughput_range "$get_tp")
    cpu_g=$(jq -r .cpu <<<"$get_tp")
    hkd_stop

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
        echo "- Discovery: nginx $(nginx_version) from Debian on 127.0.0.1 (TLS, throw-away CA;" \
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
    nginx_stop
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
