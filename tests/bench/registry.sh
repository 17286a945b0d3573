#!/usr/bin/env bash
# tests/bench/registry.sh BIN_DIR OUT_DIR
#
# The registry benchmarks: `hostkeeper module versions` and `hostkeeper
# provider versions`. run.sh runs this inside its keyring world after
# discovery.sh and puts the rows it writes into its own table; run by hand, it
# re-runs itself inside tests/support/keyring-env.sh (BIN_DIR must hold built
# binaries: hostkeeperd, hostkeeper, terraform-credentials-hostkeeper,
# hk_bench_socket_load). Without nginx it says so and exits 77 (skipped).
#
# It starts, all in a private 0700 directory of the throw-away world, as
# discovery.sh does (the shared parts are in lib.sh):
#   - a throw-away CA and a server certificate for bench.localhost and
#     other.localhost (tests/support/make_ca.sh); libcurl resolves every
#     *.localhost name to loopback itself;
#   - nginx from Debian, in the foreground, on a free port of 127.0.0.1,
#     serving a static registry as application/json files:
#       /.well-known/terraform.json  {"modules.v1":"/v1/modules/","providers.v1":"/v1/providers/"}
#       /v1/modules/acme/net/aws/versions  100 versions (0.0.0 .. 4.4.3), each
#           with a root module's provider requirements, as the public
#           registry lists them; and the same for acme/m1/aws .. acme/mM/aws
#       /v1/providers/acme/big/versions  300 versions (3.0.0 .. 5.19.4) × 10
#           platforms, with protocols: the shape of a large real provider
#     its access log records port, host, URI, status, bytes and $request_time;
#   - hostkeeperd in the foreground on OUT_DIR's private socket (--ca-file the
#     throw-away CA), with a token stored for bench.localhost:PORT, as for a
#     private registry.
# and measures
#   1. process start to exit, one hyperfine -N run, medians:
#        hostkeeper module versions bench.localhost:PORT/acme/net/aws
#        the same with --constraint "~> 1.2" (12 of the 100 versions)
#        hostkeeper provider versions bench.localhost:PORT/acme/big
#      against a warm cache, beside `curl -s --cacert CA URL` fetching each
#      versions document from the same nginx (a new process and a new TLS
#      connection per run, as for hostkeeper a new process and connection to
#      the socket);
#   2. cached `module_versions` and `provider_versions` requests/s over the
#      socket, 8 clients (hk_bench_socket_load --request), HK_BENCH_REPEATS
#      runs, median; each repeat runs cached `get`s of the registry's host,
#      then module_versions, then provider_versions on the same daemon, for a
#      comparison under the same conditions; and the daemon's CPU per request
#      (utime + stime of hostkeeperd from /proc/PID/stat before and after each
#      run, divided by the requests answered). With HK_BENCH_BASELINE_BIN (a
#      directory holding another build's hostkeeperd, e.g. of the commit
#      before a change), a second daemon of that build runs beside the first
#      on a socket of its own, warmed the same way, and each repeat then also
#      runs module_versions and provider_versions against it, interleaved
#      with the runs of BIN's daemon: the rates, the CPU per request and
#      their ratios (BIN's over the baseline's) are reported for both;
#   3. HK_BENCH_BURSTS bursts of HK_BENCH_BURST_CLIENTS (200) cold
#      module_versions lookups of HK_BENCH_BURST_MODULES (M, 20) different
#      modules acme/m1/aws .. acme/mM/aws, every one on its own socket
#      connection, all sent at once, each burst against a freshly started
#      daemon that has answered one discover of other.localhost (keyring and
#      libcurl set up; nothing cached for bench.localhost, neither its
#      discovery document nor a versions list). Upstream requests are counted
#      by the daemon (`status --json` .registry.upstream_requests and
#      .discovery.upstream_requests) and by nginx (its log): M versions
#      documents and 1 discovery document expected.
#
# A busy machine: before each of the three measurements, when the 1-minute
# load average is above HK_BENCH_MAX_LOAD (1.5), it waits
# HK_BENCH_LOAD_WAIT_SECONDS (60) and looks again, at most HK_BENCH_LOAD_WAITS
# (3) times, then measures anyway. The load averages before and after each
# measurement, and the share of the CPU other processes used meanwhile, are
# in the notes (note that the benchmark's own load raises the load average
# too: 8 clients and the daemon make about 9 runnable threads).
#
# Writes OUT_DIR/registry-rows.md (rows of run.sh's table),
# OUT_DIR/registry-notes.md (notes), and the raw data in OUT_DIR/registry/.
# Exit status: 0 when every measurement ran, whether or not a target was met;
# 77 without nginx; otherwise non-zero when something broke.
#
# Environment: HK_BENCH_RUNS (300), HK_BENCH_WARMUP (20), HK_BENCH_SECONDS (5),
# HK_BENCH_REPEATS (3), HK_BENCH_BURSTS (5), HK_BENCH_BURST_CLIENTS (200),
# HK_BENCH_BURST_MODULES (20), HK_BENCH_MAX_LOAD (1.5), HK_BENCH_LOAD_WAITS (3),
# HK_BENCH_LOAD_WAIT_SECONDS (60), HK_BENCH_BASELINE_BIN (unset: no baseline).
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
own_pids() { echo "${DAEMON_PID:-0}" "${OTHER_PID:-0}" "${NGINX_PID:-0}" "${HK_KEYRING_PID:-0}" "${HK_BUS_PID:-0}"; }

# die (tests/support/script_lib.sh, through lib.sh): "bench (registry): MSG", exit 1.
# shellcheck disable=SC2034  # read by die
script_name="bench (registry)" die_status=1

# As in run.sh: bash reads the whole function definitions before main runs.

BIN="" OUT="" DIR="" RAW="" SOCK="" CA="" CA_DIR="" MOD="" PROV=""
DAEMON_PID="" DAEMON_LOG=""
PORT=""

# ---------------------------------------------------------------------------
# The registry's documents and nginx

PLATFORMS='[["linux","amd64"],["linux","arm64"],["linux","386"],["linux","arm"],["darwin","amd64"],["darwin","arm64"],["windows","amd64"],["windows","386"],["freebsd","amd64"],["freebsd","386"]]'

# module_document SOURCE: 100 versions, 0.0.0 .. 4.4.3, not sorted (the
# public registry's are not either): 2.2.2 .. 4.4.3, then 0.0.0 .. 2.2.1.
module_document() {
    jq -n -c --arg source "$1" '{modules: [{source: $source, versions: ([
        range(0; 5) as $major | range(0; 5) as $minor | range(0; 4) as $patch
        | {version: "\($major).\($minor).\($patch)",
           root: {providers: [{name: "aws", namespace: "", source: "hashicorp/aws", version: ">= 4.0"}],
                  dependencies: []},
           submodules: []}] | .[50:] + .[0:50])}]}'
}

# provider_document ID: 300 versions (3.0.0 .. 5.19.4) × 10 platforms.
provider_document() {
    jq -n -c --arg id "$1" --argjson platforms "$PLATFORMS" '{id: $id, versions: [
        range(3; 6) as $major | range(0; 20) as $minor | range(0; 5) as $patch
        | {version: "\($major).\($minor).\($patch)",
           protocols: (if $major < 4 then ["4.0", "5.0"] else ["5.0"] end),
           platforms: ($platforms | map({os: .[0], arch: .[1]}))}], warnings: null}'
}

write_documents() {
    local modules=$1 www=$DIR/www i
    mkdir -p "$www/.well-known" "$www/v1/modules/acme/net/aws" "$www/v1/providers/acme/big"
    printf '%s\n' '{"modules.v1":"/v1/modules/","providers.v1":"/v1/providers/"}' >"$www/.well-known/terraform.json"
    module_document acme/net/aws >"$www/v1/modules/acme/net/aws/versions"
    for i in $(seq 1 "$modules"); do
        mkdir -p "$www/v1/modules/acme/m$i/aws"
        module_document "acme/m$i/aws" >"$www/v1/modules/acme/m$i/aws/versions"
    done
    provider_document acme/big >"$www/v1/providers/acme/big/versions"
    [[ "$(jq '.modules[0].versions | length' "$www/v1/modules/acme/net/aws/versions")" == 100 ]] || die "bad module document"
    [[ "$(jq '.versions | length' "$www/v1/providers/acme/big/versions")" == 300 ]] || die "bad provider document"
}

# nginx_start's server block: the registry, every document application/json.
# shellcheck disable=SC2317  # called by nginx_start
servers() {
    cat <<CONF
    server {
        listen 127.0.0.1:$1 ssl;
        root $DIR/www;
        location = /.well-known/terraform.json {
            types { }
            default_type application/json;
        }
        location /v1/ {
            types { }
            default_type application/json;
        }
    }
CONF
}

# ---------------------------------------------------------------------------
# The machine's load

MAX_LOAD="" LOAD_WAITS="" LOAD_WAIT_SECONDS="" LOAD_BEFORE="" LOAD_WAITED=0 LOADS=""

# Before a measurement: waits while the 1-minute load average is above
# MAX_LOAD, LOAD_WAIT_SECONDS at a time, at most LOAD_WAITS times. Sets
# LOAD_BEFORE and LOAD_WAITED.
quiet_before() {
    local what=$1
    LOAD_WAITED=0
    LOAD_BEFORE=$(loadavg)
    while ! le "${LOAD_BEFORE%% *}" "$MAX_LOAD" && [[ $LOAD_WAITED -lt $LOAD_WAITS ]]; do
        LOAD_WAITED=$(( LOAD_WAITED + 1 ))
        log "$what: load average $LOAD_BEFORE, above $MAX_LOAD: waiting ${LOAD_WAIT_SECONDS} s ($LOAD_WAITED of $LOAD_WAITS)"
        sleep "$LOAD_WAIT_SECONDS"
        LOAD_BEFORE=$(loadavg)
    done
    log "$what: load average before $LOAD_BEFORE"
}

# After it: records the load averages and the CPU share of other processes ($2).
loads_after() {
    local what=$1 others=$2 line
    line="$what: load average (1, 5, 15 min) before $LOAD_BEFORE"
    [[ $LOAD_WAITED -eq 0 ]] || line+=" (after waiting $(( LOAD_WAITED * LOAD_WAIT_SECONDS )) s$(le "${LOAD_BEFORE%% *}" "$MAX_LOAD" || echo ", still above $MAX_LOAD"))"
    line+=", after $(loadavg); other processes used $others% of the CPU"
    log "$line"
    echo "$line" >>"$RAW/loads.txt"
    LOADS+="$line; "
}

# ---------------------------------------------------------------------------
# The baseline daemon (HK_BENCH_BASELINE_BIN): a second hostkeeperd of another
# build, on a socket of its own, beside the first. lib.sh's functions act on
# SOCK, DAEMON_PID and DAEMON_LOG: swap_daemon trades them with the other
# daemon's (OTHER_*). The load generator and the CLI stay BIN's (the protocol
# is the same).

BASE_BIN="" OTHER_SOCK="" OTHER_PID="" OTHER_LOG=""

swap_daemon() {
    local sock=$SOCK pid=$DAEMON_PID log=$DAEMON_LOG
    SOCK=$OTHER_SOCK DAEMON_PID=$OTHER_PID DAEMON_LOG=$OTHER_LOG
    OTHER_SOCK=$sock OTHER_PID=$pid OTHER_LOG=$log
}

# Starts the baseline's hostkeeperd with ARGS on $DIR/run-baseline/socket and
# warms it as the main daemon was warmed: both versions lists fetched, then
# answered from its cache.
baseline_start() {
    mkdir -p "$DIR/run-baseline"
    chmod 700 "$DIR/run-baseline"
    OTHER_SOCK=$DIR/run-baseline/socket
    swap_daemon
    local bin=$BIN
    BIN=$BASE_BIN
    hkd_start "$@"
    BIN=$bin
    local what answer
    for what in "module versions $MOD" "provider versions $PROV"; do
        # shellcheck disable=SC2086  # what: the subcommand and its address
        hk $what >/dev/null || die "baseline: hostkeeper $what failed"
        # shellcheck disable=SC2086
        answer=$(hk $what --json) || die "baseline: hostkeeper $what failed"
        [[ "$(jq -r .source <<<"$answer")" == cache ]] || die "baseline: $what was not answered from the cache"
    done
    log "baseline hostkeeperd ($BASE_BIN) pid $DAEMON_PID on $SOCK"
    swap_daemon
}

baseline_stop() {
    [[ -n "$OTHER_PID" ]] || return 0
    swap_daemon
    hkd_stop
    swap_daemon
}

# shellcheck disable=SC2317  # called by on_exit
registry_on_exit() {
    baseline_stop
    private_on_exit
}

# ---------------------------------------------------------------------------
# hostkeeperd's counters

counter() { hk_status | jq -r ".$1.upstream_requests"; }

# ---------------------------------------------------------------------------
# One burst: a fresh daemon, one discover of another host, then CLIENTS
# module_versions lookups of acme/m1..mM/aws at once. Sets BURST_OUT to a JSON
# summary line. Not in a $(...) subshell: the daemon it starts must be the one
# private_on_exit stops.

BURST_OUT=""
burst() {
    local clients=$1 modules=$2 i
    local -a requests=()
    for i in $(seq 1 "$modules"); do
        requests+=(--request "{\"op\":\"module_versions\",\"module\":\"bench.localhost:$PORT/acme/m$i/aws\"}")
    done
    hkd_start
    hk discover "other.localhost:$PORT" modules.v1 >/dev/null || die "warming discover failed"
    local reg0 disc0 lines0 out reg1 disc1 lines1
    reg0=$(counter registry)
    disc0=$(counter discovery)
    lines0=$(nginx_log_lines)
    phase_begin
    out=$(load "burst-$DAEMON_N" --clients "$clients" --requests "$clients" "${requests[@]}")
    phase_end
    hkd_check
    reg1=$(counter registry)
    disc1=$(counter discovery)
    lines1=$(nginx_log_lines)
    local server versions_reqs versions_distinct discovery_reqs
    server=$(nginx_log_since "$lines0" | head -n $(( lines1 - lines0 )))
    echo "$server" >>"$RAW/burst-server.log"
    versions_reqs=$(awk '$3 == "bench.localhost" && $4 ~ /^\/v1\/modules\/acme\/m[0-9]+\/aws\/versions$/' <<<"$server" | wc -l)
    versions_distinct=$(awk '$3 == "bench.localhost" && $4 ~ /^\/v1\/modules\/acme\/m[0-9]+\/aws\/versions$/ { print $4 }' <<<"$server" | sort -u | wc -l)
    discovery_reqs=$(awk '$3 == "bench.localhost" && $4 == "/.well-known/terraform.json"' <<<"$server" | wc -l)
    hkd_stop
    BURST_OUT=$(jq -c --argjson reg $(( reg1 - reg0 )) --argjson disc $(( disc1 - disc0 )) \
        --argjson srv "$versions_reqs" --argjson distinct "$versions_distinct" --argjson srv_disc "$discovery_reqs" \
        --argjson others "$PHASE_OTHERS" \
        '{seconds, requests, found, not_found, errors, sources, latency_us,
          upstream_registry_daemon: $reg, upstream_registry_server: $srv, server_modules: $distinct,
          upstream_discovery_daemon: $disc, upstream_discovery_server: $srv_disc, others_pct: $others}' <<<"$out")
}

# ---------------------------------------------------------------------------
# One repeat's cached module_versions and provider_versions runs against the
# current daemon (throughput_run), each answer checked to come from the cache.
# TAG ("" or "baseline ") prefixes the log and labels. Sets VERSIONS_MOD and
# VERSIONS_PROV to the runs' JSON lines; without TAG, also VERSIONS_PASSED to
# that of provider_versions asked with "document_fd" (the list passed by
# reference, as `hostkeeper provider versions` asks for it).

VERSIONS_MOD="" VERSIONS_PROV="" VERSIONS_PASSED=""
versions_runs() {
    local tag=$1 r=$2 repeats=$3 seconds=$4 label=${1// /-}
    local mod_req="{\"op\":\"module_versions\",\"module\":\"$MOD\"}"
    local prov_req="{\"op\":\"provider_versions\",\"provider\":\"$PROV\"}"
    local passed_req="{\"op\":\"provider_versions\",\"provider\":\"$PROV\",\"document_fd\":true}"
    log "${tag}module_versions throughput: 8 clients, ${seconds} s, run $r of $repeats"
    throughput_run "${label}module-throughput-8-$r" --clients 8 --seconds "$seconds" --request "$mod_req"
    [[ "$(jq -r '.sources.cache == .requests' <<<"$RUN_OUT")" == true ]] ||
        die "${tag}not every module_versions answer came from the cache: $(jq -c .sources <<<"$RUN_OUT")"
    VERSIONS_MOD=$RUN_OUT
    log "${tag}provider_versions throughput: 8 clients, ${seconds} s, run $r of $repeats"
    throughput_run "${label}provider-throughput-8-$r" --clients 8 --seconds "$seconds" --request "$prov_req"
    [[ "$(jq -r '.sources.cache == .requests' <<<"$RUN_OUT")" == true ]] ||
        die "${tag}not every provider_versions answer came from the cache: $(jq -c .sources <<<"$RUN_OUT")"
    VERSIONS_PROV=$RUN_OUT
    [[ -z $tag ]] || return 0
    log "provider_versions passed by reference throughput: 8 clients, ${seconds} s, run $r of $repeats"
    throughput_run "passed-throughput-8-$r" --clients 8 --seconds "$seconds" --receive-fds --request "$passed_req"
    [[ "$(jq -r '.sources.cache == .requests' <<<"$RUN_OUT")" == true ]] ||
        die "not every passed provider_versions answer came from the cache: $(jq -c .sources <<<"$RUN_OUT")"
    VERSIONS_PASSED=$RUN_OUT
}

# One repeat's runs against hk_bench_floor_server, which answers every
# request with a fixed reply of the daemon's module_versions answer's size,
# then of its provider_versions answer's, and does nothing else: the same load
# generator and CPU accounting as for the daemon, so the floor under any
# server that sends those replies through a Unix socket on this machine;
# then the provider's passed by reference (a sealed memfd with each reply).
# Sets FLOOR_MOD, FLOOR_PROV and FLOOR_PASSED to the runs' JSON lines.

FLOOR_MOD="" FLOOR_PROV="" FLOOR_PASSED=""
floor_runs() {
    local r=$1 repeats=$2 seconds=$3 which bytes pid passing=()
    local sock=$SOCK daemon=$DAEMON_PID
    mkdir -p "$DIR/run-floor"
    chmod 700 "$DIR/run-floor"
    SOCK=$DIR/run-floor/socket
    for which in module provider passed; do
        bytes=$mod_answer_bytes
        [[ $which == module ]] || bytes=$prov_answer_bytes
        passing=()
        [[ $which != passed ]] || passing=(--receive-fds)
        rm -f "$SOCK"
        "$BIN/hk_bench_floor_server" "$SOCK" "$bytes" ${passing:+memfd} &
        pid=$!
        for _ in $(seq 1 50); do
            [[ -S "$SOCK" ]] && break
            sleep 0.1
        done
        [[ -S "$SOCK" ]] || die "hk_bench_floor_server did not listen on $SOCK"
        DAEMON_PID=$pid
        log "floor ($bytes-byte replies${passing:+ passed by reference}) throughput: 8 clients, ${seconds} s, run $r of $repeats"
        throughput_run "floor-$which-throughput-8-$r" --clients 8 --seconds "$seconds" "${passing[@]}" \
            --request '{"op":"module_versions","module":"floor.localhost/acme/net/aws"}'
        kill "$pid"
        wait "$pid" || die "hk_bench_floor_server exited with status $?"
        case $which in
            module) FLOOR_MOD=$RUN_OUT ;;
            provider) FLOOR_PROV=$RUN_OUT ;;
            passed) FLOOR_PASSED=$RUN_OUT ;;
        esac
    done
    SOCK=$sock DAEMON_PID=$daemon
}

# ---------------------------------------------------------------------------

inner() {
    BIN=$1
    OUT=$2
    local runs=${HK_BENCH_RUNS:-300} warmup=${HK_BENCH_WARMUP:-20} seconds=${HK_BENCH_SECONDS:-5}
    local repeats=${HK_BENCH_REPEATS:-3} bursts=${HK_BENCH_BURSTS:-5}
    local burst_clients=${HK_BENCH_BURST_CLIENTS:-200} burst_modules=${HK_BENCH_BURST_MODULES:-20}
    MAX_LOAD=${HK_BENCH_MAX_LOAD:-1.5} LOAD_WAITS=${HK_BENCH_LOAD_WAITS:-3} LOAD_WAIT_SECONDS=${HK_BENCH_LOAD_WAIT_SECONDS:-60}
    [[ "$burst_modules" =~ ^[1-9][0-9]*$ && "$burst_clients" =~ ^[1-9][0-9]*$ && $burst_clients -le 500 ]] ||
        die "HK_BENCH_BURST_MODULES must be a positive number and HK_BENCH_BURST_CLIENTS one of at most 500"
    local tool
    for tool in curl hyperfine jq openssl python3; do
        command -v "$tool" >/dev/null || die "missing: $tool (./packaging/deps.sh bench)"
    done
    for tool in hostkeeperd hostkeeper terraform-credentials-hostkeeper hk_bench_socket_load hk_bench_floor_server; do
        [[ -x "$BIN/$tool" ]] || die "$BIN/$tool was not built"
    done
    BASE_BIN=${HK_BENCH_BASELINE_BIN:-}
    if [[ -n "$BASE_BIN" ]]; then
        [[ -x "$BASE_BIN/hostkeeperd" ]] || die "HK_BENCH_BASELINE_BIN: $BASE_BIN/hostkeeperd was not built"
        BASE_BIN=$(cd "$BASE_BIN" && pwd)
    fi
    [[ -n "${HK_TEST_ROOT:-}" && -d "$HK_TEST_ROOT" ]] || die "not inside keyring-env.sh"
    export LC_NUMERIC=C
    # Loopback only: no proxy for curl or for the daemon's libcurl.
    unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY SSL_CERT_FILE SSL_CERT_DIR

    DIR=$HK_TEST_ROOT/registry
    mkdir -p "$DIR"
    chmod 700 "$DIR"
    mkdir -p "$DIR/run"
    chmod 700 "$DIR/run"
    SOCK=$DIR/run/socket
    mkdir -p "$OUT"
    RAW=$OUT/registry
    rm -rf "$RAW"
    mkdir -p "$RAW"
    on_exit registry_on_exit

    CA_DIR=$DIR/ca
    "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../support/make_ca.sh" "$CA_DIR" bench.localhost other.localhost
    CA=$CA_DIR/ca.pem
    write_documents "$burst_modules"
    nginx_start servers 1
    PORT=${NGINX_PORTS[0]}
    # The warm daemon keeps what it fetched for 2 h: nothing expires while
    # the script waits for a quiet machine (the default would be 5 min for
    # version lists, 15 min for discovery). The answers measured are hits.
    hkd_start --discovery-ttl 2h --registry-versions-ttl 2h
    log "hostkeeperd pid $DAEMON_PID on $SOCK (--ca-file $CA)"

    local host=bench.localhost:$PORT
    local mod=$host/acme/net/aws prov=$host/acme/big
    MOD=$mod PROV=$prov
    local mod_url=https://$host/v1/modules/acme/net/aws/versions prov_url=https://$host/v1/providers/acme/big/versions
    local mod_file=$DIR/www/v1/modules/acme/net/aws/versions prov_file=$DIR/www/v1/providers/acme/big/versions
    local creds
    creds="{\"token\":\"hkbench.atlasv1.$(head -c 70 /dev/zero | tr '\0' x)\"}"
    printf '%s' "$creds" | "$BIN/terraform-credentials-hostkeeper" --socket="$SOCK" store "$host" ||
        die "storing a token for $host failed"

    # -- the answers, first from the network, then from the cache -----------
    local answer
    answer=$(hk module versions --json "$mod") || die "hostkeeper module versions $mod failed"
    [[ "$(jq -r '"\(.source) \(.versions | length)"' <<<"$answer")" == "network 100" ]] ||
        die "the first module versions was not 100 versions from the network: $(head -c 300 <<<"$answer")"
    answer=$(hk module versions --json "$mod") || die "hostkeeper module versions $mod failed"
    [[ "$(jq -r '"\(.source) \(.versions | length) \(.versions[0].version) \(.versions[-1].version)"' <<<"$answer")" == "cache 100 4.4.3 0.0.0" ]] ||
        die "the second module versions was not 100 versions, newest first, from the cache: $(head -c 300 <<<"$answer")"
    answer=$(hk module versions --json "$mod" --constraint "~> 1.2") || die "hostkeeper module versions --constraint failed"
    [[ "$(jq -r '"\(.source) \(.versions | length) \(.total) \(.versions[0].version) \(.versions[-1].version)"' <<<"$answer")" == "cache 12 100 1.4.3 1.2.0" ]] ||
        die "module versions --constraint \"~> 1.2\" did not list 1.4.3 .. 1.2.0 (12 of 100) from the cache: $(head -c 300 <<<"$answer")"
    answer=$(hk provider versions --json "$prov") || die "hostkeeper provider versions $prov failed"
    [[ "$(jq -r '"\(.source) \(.versions | length)"' <<<"$answer")" == "network 300" ]] ||
        die "the first provider versions was not 300 versions from the network: $(head -c 300 <<<"$answer")"
    answer=$(hk provider versions --json "$prov") || die "hostkeeper provider versions $prov failed"
    [[ "$(jq -r '"\(.source) \(.versions | length) \([.versions[].platforms | length] | unique)"' <<<"$answer")" == "cache 300 [10]" ]] ||
        die "the second provider versions was not 300 versions of 10 platforms from the cache: $(head -c 300 <<<"$answer")"
    local lines
    lines=$(hk module versions "$mod" | wc -l)
    [[ "$lines" == 101 ]] || die "hostkeeper module versions printed $lines lines, expected a heading and 100 versions"
    lines=$(hk provider versions "$prov" | wc -l)
    [[ "$lines" -ge 301 ]] || die "hostkeeper provider versions printed $lines lines, expected at least 301"
    cmp -s <(curl -s --cacert "$CA" "$mod_url") "$mod_file" || die "curl did not fetch the module document"
    cmp -s <(curl -s --cacert "$CA" "$prov_url") "$prov_file" || die "curl did not fetch the provider document"
    local mod_bytes prov_bytes mod_answer_bytes prov_answer_bytes
    mod_bytes=$(stat -c %s "$mod_file")
    prov_bytes=$(stat -c %s "$prov_file")
    mod_answer_bytes=$(hk module versions --json "$mod" | jq -c . | wc -c)
    prov_answer_bytes=$(hk provider versions --json "$prov" | jq -c . | wc -c)
    log "documents: module $mod_bytes bytes (the daemon's answer $mod_answer_bytes), provider $prov_bytes bytes (answer $prov_answer_bytes)"

    # -- 1. latency: hostkeeper vs curl ---------------------------------------
    local reg0 disc0 lines0
    quiet_before latency
    reg0=$(counter registry)
    disc0=$(counter discovery)
    lines0=$(nginx_log_lines)
    log "latency: hostkeeper module/provider versions (warm cache) vs curl, hyperfine -N, $runs runs after $warmup warm-ups"
    phase_begin
    hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$RAW/latency.json" \
        -n hostkeeper-module "$BIN/hostkeeper --socket $SOCK module versions $mod" \
        -n curl-module "curl -s --cacert $CA $mod_url" \
        -n hostkeeper-module-constraint "$BIN/hostkeeper --socket $SOCK module versions $mod --constraint '~> 1.2'" \
        -n hostkeeper-provider "$BIN/hostkeeper --socket $SOCK provider versions $prov" \
        -n curl-provider "curl -s --cacert $CA $prov_url" >&2
    phase_end
    local others_latency=$PHASE_OTHERS
    loads_after latency "$others_latency"
    hkd_check
    [[ "$(counter registry)" == "$reg0" && "$(counter discovery)" == "$disc0" ]] ||
        die "the daemon went upstream during the warm-cache runs"
    local curl_reqs
    curl_reqs=$(( $(nginx_log_lines) - lines0 ))
    [[ "$curl_reqs" == $(( 2 * (runs + warmup) )) ]] ||
        die "nginx logged $curl_reqs requests, expected $(( 2 * (runs + warmup) )) from curl"
    local -A med
    local name
    for name in hostkeeper-module curl-module hostkeeper-module-constraint hostkeeper-provider curl-provider; do
        med[$name]=$(jq -r --arg n "$name" '.results[] | select(.command == $n) | .median' "$RAW/latency.json")
    done
    log "  module: hostkeeper $(ms "${med[hostkeeper-module]}") ms, with --constraint $(ms "${med[hostkeeper-module-constraint]}") ms," \
        "curl $(ms "${med[curl-module]}") ms; provider: hostkeeper $(ms "${med[hostkeeper-provider]}") ms, curl $(ms "${med[curl-provider]}") ms"

    # -- 2. cached throughput, 8 clients ------------------------------------
    # Each repeat: `get` of the registry's host, then module_versions, then
    # provider_versions, on the same daemon (the machine may be busy, see the
    # CPU share of other processes); then, with a baseline, module_versions
    # and provider_versions on the baseline's daemon.
    local r get_json="" mod_json="" prov_json="" base_mod_json="" base_prov_json="" floor_mod_json="" floor_prov_json="" floor_passed_json="" passed_json=""
    [[ -z "$BASE_BIN" ]] || baseline_start --discovery-ttl 2h --registry-versions-ttl 2h
    quiet_before throughput
    reg0=$(counter registry)
    disc0=$(counter discovery)
    RUN_OTHERS_MAX=0
    for r in $(seq 1 "$repeats"); do
        log "get throughput (for comparison): 8 clients, ${seconds} s, run $r of $repeats"
        throughput_run "get-throughput-8-$r" --op get --clients 8 --seconds "$seconds" --host "$host"
        get_json+="$RUN_OUT"$'\n'
        versions_runs "" "$r" "$repeats" "$seconds"
        mod_json+="$VERSIONS_MOD"$'\n'
        prov_json+="$VERSIONS_PROV"$'\n'
        passed_json+="$VERSIONS_PASSED"$'\n'
        floor_runs "$r" "$repeats" "$seconds"
        floor_mod_json+="$FLOOR_MOD"$'\n'
        floor_prov_json+="$FLOOR_PROV"$'\n'
        floor_passed_json+="$FLOOR_PASSED"$'\n'
        [[ -n "$BASE_BIN" ]] || continue
        swap_daemon
        versions_runs "baseline " "$r" "$repeats" "$seconds"
        swap_daemon
        base_mod_json+="$VERSIONS_MOD"$'\n'
        base_prov_json+="$VERSIONS_PROV"$'\n'
    done
    local others_tp=$RUN_OTHERS_MAX
    loads_after throughput "$others_tp"
    hkd_check
    [[ "$(counter registry)" == "$reg0" && "$(counter discovery)" == "$disc0" ]] ||
        die "the daemon went upstream during the throughput runs"
    local get_tp mod_tp prov_tp
    get_tp=$(throughput_summary <<<"$get_json")
    mod_tp=$(throughput_summary <<<"$mod_json")
    prov_tp=$(throughput_summary <<<"$prov_json")
    local floor_mod_tp floor_prov_tp floor_passed_tp passed_tp
    floor_passed_tp=$(throughput_summary <<<"$floor_passed_json")
    passed_tp=$(throughput_summary <<<"$passed_json")
    floor_mod_tp=$(throughput_summary <<<"$floor_mod_json")
    floor_prov_tp=$(throughput_summary <<<"$floor_prov_json")
    hkd_stop
    local base_mod_tp="" base_prov_tp=""
    if [[ -n "$BASE_BIN" ]]; then
        base_mod_tp=$(throughput_summary <<<"$base_mod_json")
        base_prov_tp=$(throughput_summary <<<"$base_prov_json")
        baseline_stop
    fi

    # -- 3. cold lookups of M modules at once -------------------------------
    local b out all=""
    quiet_before bursts
    local others_b=0
    for b in $(seq 1 "$bursts"); do
        burst "$burst_clients" "$burst_modules"
        out=$BURST_OUT
        echo "$out" >>"$RAW/bursts.jsonl"
        log "burst $b of $bursts: $(jq -r '"\(.seconds*1000|round) ms, upstream registry \(.upstream_registry_daemon) (daemon) / \(.upstream_registry_server) (nginx), discovery \(.upstream_discovery_daemon) / \(.upstream_discovery_server), sources \(.sources|tojson), errors \(.errors)"' <<<"$out")"
        [[ "$(jq -r --argjson n "$burst_clients" '.errors == 0 and .found == $n' <<<"$out")" == true ]] ||
            die "burst: not every lookup succeeded: $out"
        le "$(jq -r .others_pct <<<"$out")" "$others_b" || others_b=$(jq -r .others_pct <<<"$out")
        all+="$out"$'\n'
    done
    loads_after bursts "$others_b"
    local wall wall_range up_reg up_disc net_range p50b maxb met
    out=$(jq -s -c 'sort_by(.seconds) | .[(length - 1) / 2 | floor]' <<<"$all")
    wall=$(jq -r .seconds <<<"$out")
    wall_range=$(jq -s -r 'map(.seconds * 1000 | round) | "\(min)–\(max)"' <<<"$all")
    up_reg=$(jq -s -r '"\(map(.upstream_registry_daemon) | unique | map(tostring) | join("/")) / \(map(.upstream_registry_server) | unique | map(tostring) | join("/"))"' <<<"$all")
    up_disc=$(jq -s -r '"\(map(.upstream_discovery_daemon) | unique | map(tostring) | join("/")) / \(map(.upstream_discovery_server) | unique | map(tostring) | join("/"))"' <<<"$all")
    net_range=$(jq -s -r 'map(.sources.network) | if min == max then "\(min)" else "\(min)–\(max)" end' <<<"$all")
    p50b=$(jq -r '.latency_us.p50/1000|round' <<<"$out")
    maxb=$(jq -r '.latency_us.max/1000|round' <<<"$out")
    met=$(jq -s -r --argjson m "$burst_modules" 'if all(.upstream_registry_daemon == $m and .upstream_registry_server == $m
        and .server_modules == $m and .upstream_discovery_daemon == 1 and .upstream_discovery_server == 1) then "yes" else "no" end' <<<"$all")

    # -- rows for run.sh's table ----------------------------------------------
    local mod_kib prov_kib
    mod_kib=$(awk -v b="$mod_bytes" 'BEGIN { printf "%.0f", b / 1024 }')
    prov_kib=$(awk -v b="$prov_bytes" 'BEGIN { printf "%.0f", b / 1024 }')
    row_latency() {  # LABEL HK CURL CURL_TEXT
        echo "| $1, process start to exit, warm cache, median of $runs | $(ms "$2") ms | $4 $(ms "$3") ms | $(speedup "$3" "$2") | ≥ 3× | $(yesno ge "$(ratio "$3" "$2")" 3) |"
    }
    row_baseline() {  # OP SUMMARY BASELINE_SUMMARY
        echo "| cached \`$1\`, 8 clients, this build vs the baseline ($BASE_BIN), runs interleaved, medians of $repeats | $(thousands "$(jq -r .rps <<<"$2")")/s, daemon CPU $(jq -r .cpu <<<"$2") µs per request (user $(jq -r .user <<<"$2") µs) | baseline $(thousands "$(jq -r .rps <<<"$3")")/s (range $(throughput_range "$3")/s), daemon CPU $(jq -r .cpu <<<"$3") µs per request (user $(jq -r .user <<<"$3") µs) | rate $(ratio "$(jq -r .rps <<<"$2")" "$(jq -r .rps <<<"$3")")×, CPU per request $(ratio "$(jq -r .cpu <<<"$2")" "$(jq -r .cpu <<<"$3")")× | — | — |"
    }
    row_throughput() {  # OP SUMMARY [NOTE]
        echo "| cached \`$1\`${3:+ $3} throughput, 8 clients | $(thousands "$(jq -r .rps <<<"$2")")/s (median of $repeats, range $(throughput_range "$2")/s; p50 $(jq -r .p50 <<<"$2") µs, p99 $(jq -r .p99 <<<"$2") µs; daemon CPU $(jq -r .cpu <<<"$2") µs per request) | cached \`get\` of the registry's host, same daemon, runs interleaved: $(thousands "$(jq -r .rps <<<"$get_tp")")/s (range $(throughput_range "$get_tp")/s; daemon CPU $(jq -r .cpu <<<"$get_tp") µs per request) | $(awk -v a="$(jq -r .rps <<<"$2")" -v b="$(jq -r .rps <<<"$get_tp")" 'BEGIN { printf "%.0f%% of get", 100 * a / b }') | — | — |"
    }
    {
        row_latency "\`hostkeeper module versions HOST/acme/net/aws\` (100 versions)" "${med[hostkeeper-module]}" "${med[curl-module]}" \
            "\`curl -s --cacert CA https://HOST/v1/modules/acme/net/aws/versions\` (same nginx, $mod_kib KiB)"
        row_latency "same, \`--constraint \"~> 1.2\"\` (12 of 100)" "${med[hostkeeper-module-constraint]}" "${med[curl-module]}" \
            "the same curl"
        row_latency "\`hostkeeper provider versions HOST/acme/big\` (300 versions × 10 platforms)" "${med[hostkeeper-provider]}" "${med[curl-provider]}" \
            "\`curl -s --cacert CA https://HOST/v1/providers/acme/big/versions\` (same nginx, $prov_kib KiB)"
        row_throughput module_versions "$mod_tp"
        row_throughput provider_versions "$prov_tp" "inline (the list in the frame)"
        row_throughput provider_versions "$passed_tp" "passed by reference (\`\"document_fd\":true\`: the list in a sealed memfd, read whole by the client with pread)"
        echo "| cached \`provider_versions\` throughput, 8 clients, passed by reference as \`hostkeeper provider versions\` asks, median of $repeats | $(thousands "$(jq -r .rps <<<"$passed_tp")")/s | inline, same runs: $(thousands "$(jq -r .rps <<<"$prov_tp")")/s | — | ≥ 60,000/s | $(yesno ge "$(jq -r .rps <<<"$passed_tp")" 60000) |"
        echo "| daemon CPU per cached \`provider_versions\` ($prov_answer_bytes bytes) passed by reference, over \`module_versions\`'s ($mod_answer_bytes bytes, inline), same daemon, medians of $repeats | $(jq -r .cpu <<<"$passed_tp") µs (user $(jq -r .user <<<"$passed_tp") µs) | $(jq -r .cpu <<<"$mod_tp") µs (user $(jq -r .user <<<"$mod_tp") µs) | $(ratio "$(jq -r .cpu <<<"$passed_tp")" "$(jq -r .cpu <<<"$mod_tp")")× | ≤ 1.5× | $(yesno le "$(ratio "$(jq -r .cpu <<<"$passed_tp")" "$(jq -r .cpu <<<"$mod_tp")")" 1.5) |"
        echo "| same, inline | $(jq -r .cpu <<<"$prov_tp") µs (user $(jq -r .user <<<"$prov_tp") µs) | $(jq -r .cpu <<<"$mod_tp") µs | $(ratio "$(jq -r .cpu <<<"$prov_tp")" "$(jq -r .cpu <<<"$mod_tp")")× | — | — |"
        echo "| the floor: hk_bench_floor_server (one thread, epoll, each request frame read whole and answered with one writev of a fixed reply, nothing parsed or looked up), same load generator, runs interleaved with the daemon's, medians of $repeats | replies of $prov_answer_bytes bytes: $(thousands "$(jq -r .rps <<<"$floor_prov_tp")")/s (range $(throughput_range "$floor_prov_tp")/s), server CPU $(jq -r .cpu <<<"$floor_prov_tp") µs per request | replies of $mod_answer_bytes bytes: $(thousands "$(jq -r .rps <<<"$floor_mod_tp")")/s (range $(throughput_range "$floor_mod_tp")/s), server CPU $(jq -r .cpu <<<"$floor_mod_tp") µs per request | CPU per request $(ratio "$(jq -r .cpu <<<"$floor_prov_tp")" "$(jq -r .cpu <<<"$floor_mod_tp")")× | — | — |"
        echo "| the floor, the provider-size reply passed by reference (\`hk_bench_floor_server SOCKET BYTES memfd\`: a small frame with a sealed memfd; the client reads it whole with pread), medians of $repeats | $(thousands "$(jq -r .rps <<<"$floor_passed_tp")")/s (range $(throughput_range "$floor_passed_tp")/s), server CPU $(jq -r .cpu <<<"$floor_passed_tp") µs per request | by copy, above: $(thousands "$(jq -r .rps <<<"$floor_prov_tp")")/s, $(jq -r .cpu <<<"$floor_prov_tp") µs | rate $(ratio "$(jq -r .rps <<<"$floor_passed_tp")" "$(jq -r .rps <<<"$floor_prov_tp")")×, CPU per request $(ratio "$(jq -r .cpu <<<"$floor_passed_tp")" "$(jq -r .cpu <<<"$floor_prov_tp")")× | — | — |"
        echo "| daemon CPU per cached request above the floor's for the same reply size, medians of $repeats | \`provider_versions\` $(awk -v a="$(jq -r .cpu <<<"$prov_tp")" -v b="$(jq -r .cpu <<<"$floor_prov_tp")" 'BEGIN { printf "%.1f", a - b }') µs | \`module_versions\` $(awk -v a="$(jq -r .cpu <<<"$mod_tp")" -v b="$(jq -r .cpu <<<"$floor_mod_tp")" 'BEGIN { printf "%.1f", a - b }') µs | — | — | — |"
        if [[ -n "$BASE_BIN" ]]; then
            row_baseline module_versions "$mod_tp" "$base_mod_tp"
            row_baseline provider_versions "$prov_tp" "$base_prov_tp"
        fi
        echo "| $burst_clients cold \`module_versions\` lookups of $burst_modules modules at once: upstream requests per burst for versions documents, daemon (\`registry.upstream_requests\`) / nginx log; for the discovery document | $up_reg (each of $bursts bursts); discovery $up_disc | $burst_clients without single flight | — | = $burst_modules; discovery = 1 | $met |"
        echo "| same, total wall time (first request sent to last answer), median of $bursts | $(printf %.0f "$(ms "$wall")") ms (range $wall_range ms; answers p50 $p50b ms, max $maxb ms; $net_range of $burst_clients answers \`network\`) | — | — | — | — |"
    } >"$OUT/registry-rows.md"
    {
        echo "- Registries: nginx $(nginx_version) from Debian on 127.0.0.1 (TLS, throw-away CA; one process)" \
             "serving static application/json files: a module versions document of 100 versions ($mod_bytes bytes)," \
             "a provider versions document of 300 versions × 10 platforms ($prov_bytes bytes); hostkeeperd on a" \
             "private socket with \`--ca-file\`, a token in the keyring for the registry's host. The daemon's answers" \
             "(\`--json\`, compact): module $mod_answer_bytes bytes, provider $prov_answer_bytes bytes; the CLI prints" \
             "them as text (a heading and one line per version). Every hostkeeper run a new process and socket" \
             "connection, every curl run a new process and TLS connection; hostkeeper's runs sent nothing upstream" \
             "(daemon counters unchanged), nginx logged exactly the $(( 2 * (runs + warmup) )) curl requests. The" \
             "warm daemon ran with \`--discovery-ttl 2h --registry-versions-ttl 2h\`, so that nothing expired while" \
             "the script waited for a quiet machine; the bursts' daemons with the defaults."
        echo "- Registry throughput: hk_bench_socket_load --request, 8 persistent connections, every answer checked" \
             "(ok, \`source\` cache); daemon CPU per request as for discovery. Registry bursts: $burst_clients threads" \
             "each with its own connection, client i asks for acme/m(i mod $burst_modules + 1)/aws; each burst against" \
             "a freshly started hostkeeperd that has answered one discover of another host (other.localhost), so the" \
             "registry host's discovery document and every versions list are fetched, and its token read from the" \
             "keyring, during the burst;" \
             "upstream counts from \`status --json\` (\`registry\` and \`discovery\` \`upstream_requests\`) and the nginx" \
             "access-log lines for bench.localhost. An answer is \`network\` when its request arrived while the fetch" \
             "was in flight, \`cache\` after it."
        [[ -z "$BASE_BIN" ]] || echo "- Baseline: hostkeeperd of $BASE_BIN ran beside this build's on a socket of its own," \
             "warmed the same way (both versions lists cached); each repeat ran this build's module_versions and" \
             "provider_versions, then the baseline's, with the same load generator; the daemon idle between its runs."
        echo "- Registry measurements and the machine's load (load averages from /proc/loadavg; a measurement waits" \
             "up to $LOAD_WAITS × $LOAD_WAIT_SECONDS s for a 1-minute load average ≤ $MAX_LOAD; this benchmark's own" \
             "clients and daemon raise it too): ${LOADS%; }."
    } >"$OUT/registry-notes.md"
    nginx_stop
    log "registry rows written to $OUT/registry-rows.md"
}

main() {
    [[ $# -eq 2 ]] || { echo "usage: $0 BIN_DIR OUT_DIR" >&2; exit 2; }
    if ! nginx_bin >/dev/null; then
        echo "bench (registry): nginx is missing (./packaging/deps.sh bench, or apt-get install nginx): skipped" >&2
        exit 77
    fi
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
    cat "$out/registry-rows.md"
    cat "$out/registry-notes.md"
}

main "$@"; exit
