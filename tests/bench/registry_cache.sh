#!/usr/bin/env bash
# tests/bench/registry_cache.sh BIN_DIR OUT_DIR
#
# The registry cache benchmark: `terraform init` of one configuration with
# 4 modules and 3 providers from a registry on loopback reached through
# tests/support/latency_proxy.py, which makes every connection cost what it
# costs on a WAN (half a round trip each way, the TCP handshake, a shared
# link of HK_BENCH_TF_RATE_MBIT (100) Mbit/s each way), at each round trip
# of HK_BENCH_TF_RTTS ("40 120" ms), for each registry of HK_BENCH_TF_HTTP
# ("1.1"): 1.1 is the test registry itself, which speaks HTTP/1.1 with
# keep-alive; 2 puts nginx in front of it (between the proxy and the
# registry, proxy_buffering off), offering HTTP/2 and HTTP/1.1 by ALPN as a
# registry behind a CDN does. At each, in a fresh working directory
# per init (no .terraform, no lock file), HK_BENCH_TF_RUNS (3) times each,
# interleaved:
#   plain     terraform with only the credentials helper (TF_CLI_CONFIG_FILE);
#   plugin    the same plus plugin_cache_dir, warm (filled by one earlier init),
#             and plugin_cache_may_break_dependency_lock_file = true (else
#             terraform downloads the providers again without a lock file);
#   cold      hostkeeper's registry cache (hostkeeper setup --registry-cache; no
#             TF_CLI_CONFIG_FILE, so terraform reads ~/.terraform.d/hostkeeper.tfrc),
#             hostkeeperd stopped and its archives removed before each run;
#   warm      the registry cache with the daemon warm;
#   run       `hostkeeper exec --registry-cache -- terraform init` with
#             TF_CLI_CONFIG_FILE naming the plain variant's file, as a CI job
#             has it: the run binds a port of its own, hands it to the warm
#             daemon and writes its own configuration;
#   static    the warm cache's answers for the configuration copied into
#             files (tests/bench/static_registry.py) and served by nginx on
#             loopback, hostkeeperd's host block pointed at it: what
#             Terraform's own registry protocol costs, without the cache;
#   floor     Terraform's own floor: every provider in a local
#             filesystem_mirror (made by `terraform providers mirror`) and
#             the modules already in .terraform/modules: no network at all.
#   warm-base with HK_BENCH_TF_BASELINE_BIN (a directory holding another
#             build's hostkeeperd and terraform-credentials-hostkeeper, e.g.
#             of the commit before a change): this build's daemon stopped,
#             the plugin link pointed at the baseline's helper, whose daemon
#             one init (warm-base-fill, not reported) warms, then the warm
#             init measured against it; then this build's again.
# Then, HK_BENCH_TF_RUNS times each, interleaved: HK_BENCH_TF_CONCURRENT (10)
# inits at once, each in its own fresh directory, timed until the last ends:
#   plainxN   plain terraform;
#   coldxN    the registry cache, hostkeeperd stopped and its archives removed
#             before (archives stream to every init as they arrive, one
#             download each).
# Then, once: exec's own overhead, `hostkeeper exec --registry-cache -- true`
# (the run variant's set-up) against `true`, HK_BENCH_TF_EXEC_RUNS (20) times
# each, interleaved.
# Rows and runs.tsv labels name the world as RTT (HTTP/1.1) or RTTh2.
# Per run: wall time (date, around `terraform init`), the upstream requests
# from the registry's own log (tests/support/https_registry.py --log):
# metadata (discovery, /v1/...) and archives, and the upstream connections
# opened (the proxy's log). Targets: warm makes zero upstream metadata
# requests, is at least 3× faster than plain and within 1.5× of the floor;
# cold takes at most 0.7× plain for one init and 0.5× for N at once; run
# makes zero upstream metadata requests, as warm, and exec's overhead is at
# most 20 ms.
#
# run.sh runs it and puts the rows it writes into its own table. It re-runs
# itself inside tests/support/port-env.sh (a hostkeeper-portd on the registry
# port of a private network namespace; root only) and
# tests/support/keyring-env.sh. BIN_DIR must hold hostkeeperd, hostkeeper and
# terraform-credentials-hostkeeper. Without terraform it says so and exits 77.
#
# Writes OUT_DIR/registry-cache-rows.md (rows of run.sh's table),
# OUT_DIR/registry-cache-notes.md and the raw data in OUT_DIR/registry-cache/
# (runs.tsv: variant@RTT, run, seconds, metadata requests, archive requests,
# connections opened).
# Exit status: 0 when every measurement ran, whether or not a target was met;
# 77 without terraform; otherwise non-zero when something broke.
#
# Environment: HK_BENCH_TF_RUNS (3), HK_BENCH_TF_RTTS ("40 120"),
# HK_BENCH_TF_RATE_MBIT (100), HK_BENCH_TF_DELAY_MS (0: milliseconds the
# registry itself adds to each answer), HK_BENCH_TF_CONCURRENT (10),
# HK_BENCH_TF_EXEC_RUNS (20), HK_BENCH_TF_BASELINE_BIN (unset: no baseline).
# Needs: terraform, python3, openssl, gpg; nginx and curl for HK_BENCH_TF_HTTP=2.

set -euo pipefail
shopt -s inherit_errexit
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# die (tests/support/script_lib.sh, through lib.sh): "bench (registry cache): MSG", exit 1.
# shellcheck disable=SC2034  # read by die
script_name="bench (registry cache)" die_status=1

BIN="" BASE_BIN="" OUT="" DIR="" RAW="" TF="" REG_PID="" REG_LOG="" HOST="" PROXY_PID="" CONN_LOG="" RTT="" REPO=""
HTTP="" WORLD="" FRONT_PID="" STATIC_PID="" REG_TOKEN=""
# The configuration's modules (acme/NAME/null) and providers (acme/TYPE), each at 1.0.0.
MODULES=(hello m2 m3 m4) PROVIDERS=(thing p2 p3)

# shellcheck disable=SC2317  # stop_registry and stop_bench run at exit
stop_registry() {
    local pid
    for pid in "$REG_PID" "$PROXY_PID" "$FRONT_PID" "$STATIC_PID"; do
        [[ -n "$pid" ]] || continue
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    REG_PID="" PROXY_PID="" FRONT_PID="" STATIC_PID=""
}
# shellcheck disable=SC2317
stop_bench() {
    "$BIN/hostkeeper" stop >/dev/null 2>&1 || true
    stop_registry
}

# listed FORMAT NAME...: each NAME through printf's FORMAT, joined with commas.
listed() {
    local format=$1
    shift
    printf "$format\n" "$@" | paste -sd,
}

# The configuration: 4 modules, 3 providers, all from $HOST.
write_config() {
    mkdir -p "$1"
    {
        echo 'terraform {'
        echo '  required_providers {'
        local p
        for p in "${PROVIDERS[@]}"; do
            printf '    %s = {\n      source  = "%s/acme/%s"\n      version = "1.0.0"\n    }\n' "$p" "$HOST" "$p"
        done
        echo '  }'
        echo '}'
        local m
        for m in "${MODULES[@]}"; do
            printf '\nmodule "%s" {\n  source  = "%s/acme/%s/null"\n  version = "1.0.0"\n}\n' "$m" "$HOST" "$m"
        done
    } >"$1/main.tf"
}

# record LABEL RUN T0 T1 REQUESTS CONNECTIONS_BEFORE: one line of runs.tsv,
# the upstream requests counted in the REQUESTS file (JSON lines) and the
# connections the proxy opened since CONNECTIONS_BEFORE lines of its log.
record() {
    local label=$1 run=$2 t0=$3 t1=$4 requests=$5 conns_before=$6 meta arch conns
    meta=$(grep -c -e '"path": "/v1/' -e '"path": "/.well-known/' "$requests" || true)
    arch=$(grep -c -e '"path": "/archives/' -e '"path": "/provider-files/' "$requests" || true)
    conns=$(tail -n "+$((conns_before + 1))" "$CONN_LOG" | grep -c '"event": "open"' || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$run" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" \
        "$meta" "$arch" "$conns" >>"$RAW/runs.tsv"
    log "  $label run $run: $(tail -n1 "$RAW/runs.tsv" | cut -f3) s, upstream: $meta metadata, $arch archive request(s), $conns connection(s)"
}

# one_init VARIANT RUN: terraform init in a fresh copy of the configuration,
# with VARIANT's CLI configuration; appends a line to runs.tsv.
one_init() {
    local variant=$1 run=$2 work=$DIR/work/$1-$WORLD-$2 before conns t0 t1 env=() prefix=()
    rm -rf "$work"
    write_config "$work"
    case $variant in
        plain) env=(TF_CLI_CONFIG_FILE="$DIR/plain.rc") ;;
        run)
            env=(TF_CLI_CONFIG_FILE="$DIR/plain.rc")
            prefix=("$BIN/hostkeeper" exec --registry-cache --)
            ;;
        plugin) env=(TF_CLI_CONFIG_FILE="$DIR/plugin.rc") ;;
        static) env=(TF_CLI_CONFIG_FILE="$DIR/static-$WORLD.rc") ;;
        floor)
            env=(TF_CLI_CONFIG_FILE="$DIR/floor.rc")
            mkdir -p "$work/.terraform"
            cp -a "$DIR/floor-modules" "$work/.terraform/modules"
            ;;
        cold)
            "$BIN/hostkeeper" stop >/dev/null 2>&1 || true
            rm -rf "$XDG_CACHE_HOME/hostkeeper/archives"
            ;;
        warm | warm-base | warm-base-fill) ;;
    esac
    before=$(wc -l <"$REG_LOG") conns=$(wc -l <"$CONN_LOG")
    t0=$(date +%s.%N)
    (cd "$work" && env ${env[@]+"${env[@]}"} ${prefix[@]+"${prefix[@]}"} "$TF" init -input=false -no-color) >"$work.out" 2>&1 ||
        { cat "$work.out" >&2; die "terraform init ($variant at $WORLD, run $run) failed"; }
    t1=$(date +%s.%N)
    tail -n "+$((before + 1))" "$REG_LOG" >"$work.requests.jsonl"
    record "$variant@$WORLD" "$run" "$t0" "$t1" "$work.requests.jsonl" "$conns"
}

# many_inits VARIANT RUN: HK_BENCH_TF_CONCURRENT inits at once with
# VARIANT's set-up (plain or cold), each in a fresh directory; one line in
# runs.tsv (variant VARIANTxN@RTT): the wall time until the last ended, and
# the upstream requests and connections of all of them.
many_inits() {
    local variant=$1 run=$2 n=${HK_BENCH_TF_CONCURRENT:-10} env=() before conns t0 t1 i failed=0 pids=()
    case $variant in
        plain) env=(TF_CLI_CONFIG_FILE="$DIR/plain.rc") ;;
        cold)
            "$BIN/hostkeeper" stop >/dev/null 2>&1 || true
            rm -rf "$XDG_CACHE_HOME/hostkeeper/archives"
            ;;
    esac
    local work=$DIR/work/$variant-x$n-$WORLD-$run
    for i in $(seq 1 "$n"); do
        rm -rf "$work-$i"
        write_config "$work-$i"
    done
    before=$(wc -l <"$REG_LOG") conns=$(wc -l <"$CONN_LOG")
    t0=$(date +%s.%N)
    for i in $(seq 1 "$n"); do
        (cd "$work-$i" && env ${env[@]+"${env[@]}"} "$TF" init -input=false -no-color) >"$work-$i.out" 2>&1 &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || { failed=1; cat "$work-$((i + 1)).out" >&2; }
    done
    t1=$(date +%s.%N)
    ((failed == 0)) || die "terraform init ($variant x$n at $WORLD, run $run) failed"
    tail -n "+$((before + 1))" "$REG_LOG" >"$work.requests.jsonl"
    record "${variant}x$n@$WORLD" "$run" "$t0" "$t1" "$work.requests.jsonl" "$conns"
}

# exec_overhead RUNS: `hostkeeper exec --registry-cache -- true` (a port of
# the run's own: TF_CLI_CONFIG_FILE is set) and `true`, RUNS times each,
# interleaved; lines "exec" and "true" in runs.tsv.
exec_overhead() {
    local i t0 t1 variant
    for i in $(seq 1 "$1"); do
        for variant in exec true; do
            t0=$(date +%s.%N)
            if [[ $variant == exec ]]; then
                TF_CLI_CONFIG_FILE=$DIR/plain.rc "$BIN/hostkeeper" exec --registry-cache -- true ||
                    die "hostkeeper exec --registry-cache -- true failed"
            else
                TF_CLI_CONFIG_FILE=$DIR/plain.rc true
            fi
            t1=$(date +%s.%N)
            printf '%s\t%s\t%s\t0\t0\t0\n' "$variant" "$i" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')" \
                >>"$RAW/runs.tsv"
        done
    done
}

# start_front WORLD_DIR: nginx offering HTTP/2 and HTTP/1.1 (ALPN) on a free
# port of 127.0.0.1 (WORLD_DIR/front-port, which the latency proxy forwards
# to), passing every request on to the test registry (WORLD_DIR/port) over
# kept-alive TLS connections, unbuffered, with the Host the clients used
# (the proxy's address); sets FRONT_PID.
start_front() {
    local world=$1 n=$1/nginx port _
    mkdir -p "$n/tmp"
    port=$(free_port)
    {
        nginx_conf_head "$n"
        cat <<CONF
    access_log off;
    server_tokens off;
    upstream registry {
        server 127.0.0.1:$(<"$world/port");
        keepalive 64;
    }
    server {
        listen 127.0.0.1:$port ssl http2;
        ssl_certificate $DIR/tls/server.pem;
        ssl_certificate_key $DIR/tls/server.key;
        location / {
            proxy_pass https://registry;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $HOST;
            proxy_ssl_session_reuse on;
            proxy_buffering off;
            proxy_request_buffering off;
        }
    }
}
CONF
    } >"$n/nginx.conf"
    nginx_launch "$n"
    FRONT_PID=$NGINX_LAUNCHED
    nginx_ready "$FRONT_PID" "$n" "nginx in front of the registry" \
        --http2 --cacert "$DIR/tls/ca.pem" "https://127.0.0.1:$port/.well-known/terraform.json"
    echo "$port" >"$world/front-port"
}

# start_registry: the test registry behind a latency proxy of RTT ms (and,
# for HTTP/2, behind nginx: start_front); sets HOST, REG_LOG and CONN_LOG,
# and stores the registry's token for HOST.
start_registry() {
    local world=$DIR/rtt-$WORLD upstream=port _
    mkdir -p "$world"
    REG_LOG=$world/requests.jsonl CONN_LOG=$world/connections.jsonl
    : >"$REG_LOG"
    : >"$CONN_LOG"
    [[ $HTTP == 1.1 ]] || upstream=front-port
    python3 "$REPO/tests/support/latency_proxy.py" --port-file "$world/proxy-port" --upstream-port-file "$world/$upstream" \
        --rtt-ms "$RTT" --rate-mbit "${HK_BENCH_TF_RATE_MBIT:-100}" --log "$CONN_LOG" 2>"$world/proxy.stderr" &
    PROXY_PID=$!
    for _ in $(seq 1 200); do [[ -s "$world/proxy-port" ]] && break; sleep 0.05; done
    [[ -s "$world/proxy-port" ]] || { cat "$world/proxy.stderr" >&2; die "the latency proxy did not start"; }
    HOST=127.0.0.1:$(<"$world/proxy-port")
    REG_TOKEN=bench-$(openssl rand -hex 24)
    python3 "$REPO/tests/support/https_registry.py" --port-file "$world/port" --public-port-file "$world/proxy-port" \
        --cert "$DIR/tls/server.pem" --key "$DIR/tls/server.key" --token "$REG_TOKEN" --log "$REG_LOG" \
        --delay-ms "${HK_BENCH_TF_DELAY_MS:-0}" \
        --modules "$(listed 'acme/%s/null' "${MODULES[@]}")" --providers "$(listed 'acme/%s' "${PROVIDERS[@]}")" \
        --registry-provider-versions 1.0.0 --gpg-home "$DIR/gnupg" 2>"$world/registry.stderr" &
    REG_PID=$!
    for _ in $(seq 1 200); do [[ -s "$world/port" ]] && break; sleep 0.05; done
    [[ -s "$world/port" ]] || { cat "$world/registry.stderr" >&2; die "the registry did not start"; }
    if [[ $HTTP == 1.1 ]]; then
        log "round trip $RTT ms: registry (HTTP/1.1) at https://$HOST/ (through the latency proxy)"
    else
        start_front "$world"
        log "round trip $RTT ms: nginx (HTTP/2) in front of the registry at https://$HOST/ (through the latency proxy)"
    fi
    printf '{"token":"%s"}' "$REG_TOKEN" | "$BIN/terraform-credentials-hostkeeper" store "$HOST" ||
        die "storing the registry's token failed"
}

# prepare_static: the static variant's registry: the answers of the warm
# cache for the configuration, copied into files (static_registry.py) and
# served by nginx on a free port of 127.0.0.1 (plain HTTP, as the registry
# port), and a CLI configuration with hostkeeperd's host block pointed at it.
prepare_static() {
    local n=$DIR/rtt-$WORLD/static port
    rm -rf "$n"
    mkdir -p "$n/tmp"
    port=$(free_port)
    python3 "$REPO/tests/bench/static_registry.py" --tfrc "$HOME/.terraform.d/hostkeeper.tfrc" --host "$HOST" \
        --token "$REG_TOKEN" --public "http://127.0.0.1:$port" --rc "$DIR/static-$WORLD.rc" --platform linux_amd64 --out "$n" \
        --modules "$(listed 'acme/%s/null@1.0.0' "${MODULES[@]}")" \
        --providers "$(listed 'acme/%s@1.0.0' "${PROVIDERS[@]}")" || die "copying the cache's answers failed"
    {
        nginx_conf_head "$n"
        printf '    access_log off;\n    server_tokens off;\n    server {\n        listen 127.0.0.1:%s;\n' "$port"
        printf '        include %s;\n        location / { return 404; }\n    }\n}\n' "$n/locations.conf"
    } >"$n/nginx.conf"
    if ! grep -qF "http://127.0.0.1:$port/" "$DIR/static-$WORLD.rc" ||
        grep -qF "http://127.0.0.1:$HK_REGISTRY_PORT/" "$DIR/static-$WORLD.rc"; then
        die "static-$WORLD.rc does not name the copy, or still names the registry port"
    fi
    nginx_launch "$n"
    STATIC_PID=$NGINX_LAUNCHED
    nginx_ready "$STATIC_PID" "$n" "nginx with the static registry" "http://127.0.0.1:$port/"
}

# prepare_floor: the floor variant's filesystem mirror and modules, from
# one plain init and `terraform providers mirror`.
prepare_floor() {
    local work=$DIR/work/floor-source-$WORLD
    rm -rf "$work" "$DIR/floor-mirror" "$DIR/floor-modules"
    write_config "$work"
    (cd "$work" && TF_CLI_CONFIG_FILE=$DIR/plain.rc "$TF" init -input=false -no-color &&
        TF_CLI_CONFIG_FILE=$DIR/plain.rc "$TF" providers mirror -platform=linux_amd64 "$DIR/floor-mirror") \
        >"$work.out" 2>&1 || { cat "$work.out" >&2; die "preparing the floor variant failed"; }
    cp -a "$work/.terraform/modules" "$DIR/floor-modules"
    printf 'provider_installation {\n  filesystem_mirror {\n    path = "%s"\n  }\n}\n' "$DIR/floor-mirror" >"$DIR/floor.rc"
}

# use_build BIN_DIR: the daemon stopped, and the next init's helper (the
# plugin link) and so the daemon it starts are BIN_DIR's.
use_build() {
    "$BIN/hostkeeper" stop >/dev/null 2>&1 || true
    ln -sf "$1/terraform-credentials-hostkeeper" "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper"
}

# measure: every variant at RTT, then N at once.
measure() {
    local runs=$1 run variant _
    start_registry
    log "learning the host (one init), filling the plugin cache (one init), the floor's mirror"
    one_init warm 0
    for _ in $(seq 1 150); do grep -qsF "host \"$HOST\"" "$HOME/.terraform.d/hostkeeper.tfrc" && break; sleep 0.1; done
    grep -qsF "host \"$HOST\"" "$HOME/.terraform.d/hostkeeper.tfrc" || die "the daemon wrote no block for $HOST"
    rm -rf "$DIR/plugin-cache"
    mkdir -p "$DIR/plugin-cache"
    one_init plugin 0
    prepare_floor
    prepare_static
    sed -i "/^warm@$WORLD\t0\t/d; /^plugin@$WORLD\t0\t/d" "$RAW/runs.tsv"
    for run in $(seq 1 "$runs"); do
        for variant in plain plugin cold warm run static floor; do
            one_init "$variant" "$run"
        done
        # The baseline's warm init: its daemon warmed by one init first.
        if [[ -n $BASE_BIN ]]; then
            use_build "$BASE_BIN"
            one_init warm-base-fill "$run"
            one_init warm-base "$run"
            use_build "$BIN"
        fi
    done
    for run in $(seq 1 "$runs"); do
        for variant in plain cold; do
            many_inits "$variant" "$run"
        done
    done
}

# world_name WORLD: "40 ms round trip" or "40 ms round trip, HTTP/2".
world_name() {
    if [[ $1 == *h2 ]]; then echo "${1%h2} ms round trip, HTTP/2"; else echo "$1 ms round trip"; fi
}

# rows WORLD RUNS: the table's rows for one round trip and registry.
rows() {
    local r=$1 runs=$2 n=${HK_BENCH_TF_CONCURRENT:-10} w static plain plugin cold warm run_init floor plain_n cold_n
    w=$(world_name "$r")
    plain=$(tsv_median "plain@$r" 3) plugin=$(tsv_median "plugin@$r" 3) cold=$(tsv_median "cold@$r" 3) warm=$(tsv_median "warm@$r" 3)
    run_init=$(tsv_median "run@$r" 3) floor=$(tsv_median "floor@$r" 3) static=$(tsv_median "static@$r" 3)
    plain_n=$(tsv_median "plainx$n@$r" 3) cold_n=$(tsv_median "coldx$n@$r" 3)
    req() { echo "$(tsv_median "$1@$r" 4) / $(tsv_median "$1@$r" 5) / $(tsv_median "$1@$r" 6)"; }
    echo "| \`terraform init\`, 4 modules + 3 providers, $w, warm registry cache vs plain terraform, tsv_median of $runs | $(ms "$warm") ms | $(ms "$plain") ms | $(speedup "$plain" "$warm") | ≥ 3× | $(yesno ge "$(ratio "$plain" "$warm")" 3) |"
    echo "| same ($w), warm registry cache vs Terraform's floor (filesystem mirror, modules present), warm/floor $(tsv_ratio "$warm" "$floor") | $(ms "$warm") ms | $(ms "$floor") ms | $(speedup "$floor" "$warm") | warm/floor ≤ 1.5 | $(yesno le "$(tsv_ratio "$warm" "$floor")" 1.5) |"
    echo "| same ($w), warm registry cache vs its answers as static files from nginx (Terraform's own registry protocol), warm/static $(tsv_ratio "$warm" "$static") | $(ms "$warm") ms | $(ms "$static") ms | $(speedup "$static" "$warm") | — | — |"
    echo "| same ($w), warm registry cache vs \`plugin_cache_dir\` (warm) | $(ms "$warm") ms | $(ms "$plugin") ms | $(speedup "$plugin" "$warm") | — | — |"
    echo "| same ($w), \`hostkeeper exec --registry-cache -- terraform init\` (a run's own port, daemon warm) vs plain terraform | $(ms "$run_init") ms | $(ms "$plain") ms | $(speedup "$plain" "$run_init") | as warm ($(speedup "$plain" "$warm")) | $(yesno le "$(tsv_ratio "$run_init" "$warm")" 1.2) |"
    echo "| same ($w), cold registry cache (daemon restarted, archives removed) vs plain terraform, cold/plain $(tsv_ratio "$cold" "$plain") | $(ms "$cold") ms | $(ms "$plain") ms | $(speedup "$plain" "$cold") | cold/plain ≤ 0.7 | $(yesno le "$(tsv_ratio "$cold" "$plain")" 0.7) |"
    echo "| same ($w), $n concurrent cold inits vs $n concurrent plain inits, until the last ended, cold/plain $(tsv_ratio "$cold_n" "$plain_n") | $(ms "$cold_n") ms | $(ms "$plain_n") ms | $(speedup "$plain_n" "$cold_n") | cold/plain ≤ 0.5 | $(yesno le "$(tsv_ratio "$cold_n" "$plain_n")" 0.5) |"
    if [[ -n $BASE_BIN ]]; then
        local base
        base=$(tsv_median "warm-base@$r" 3)
        echo "| same ($w), warm registry cache, this build vs the baseline ($BASE_BIN), runs interleaved, this/baseline $(tsv_ratio "$warm" "$base") | $(ms "$warm") ms | $(ms "$base") ms | $(speedup "$base" "$warm") | within noise | — |"
    fi
    echo "| upstream per init at $w, metadata requests / archive requests / connections (median): warm; run; cold; plain; plugin cache | $(req warm); $(req run); $(req cold) | $(req plain); $(req plugin) | — | warm, run: 0 metadata | $(yesno test "$(tsv_median "warm@$r" 4)$(tsv_median "run@$r" 4)" = 00) |"
    echo "| upstream of $n concurrent inits at $w, metadata / archives / connections (median): cold cache; plain | $(req "coldx$n") | $(req "plainx$n") | — | — | — |"
}

inner() {
    BIN=$1 OUT=$2
    DIR=$HK_TEST_ROOT/bench-registry-cache
    RAW=$OUT/registry-cache
    mkdir -p "$DIR" "$RAW"
    chmod 700 "$DIR"
    : >"$RAW/runs.tsv"
    on_exit stop_bench
    local runs=${HK_BENCH_TF_RUNS:-3} rtts=${HK_BENCH_TF_RTTS:-40 120} https=${HK_BENCH_TF_HTTP:-1.1} h
    for h in $https; do
        [[ $h == 1.1 || $h == 2 ]] || die "HK_BENCH_TF_HTTP: \"$h\" is neither 1.1 nor 2"
    done
    BASE_BIN=${HK_BENCH_TF_BASELINE_BIN:-}
    if [[ -n $BASE_BIN ]]; then
        BASE_BIN=$(cd "$BASE_BIN" && pwd)
        [[ -x $BASE_BIN/hostkeeperd && -x $BASE_BIN/terraform-credentials-hostkeeper ]] ||
            die "HK_BENCH_TF_BASELINE_BIN: $BASE_BIN holds no hostkeeperd and terraform-credentials-hostkeeper"
    fi
    REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

    # A clean terraform environment (as tests/e2e/lib.sh makes it).
    local name
    while read -r name; do unset "$name"; done < <(compgen -e | grep '^TF_' || true)
    unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
    export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1

    "$REPO/tests/support/make_ca.sh" "$DIR/tls" localhost 127.0.0.1 >/dev/null
    mkdir -p "$DIR/no-system-certs"
    export SSL_CERT_FILE=$DIR/tls/ca.pem SSL_CERT_DIR=$DIR/no-system-certs
    local tf_version
    tf_version=$("$TF" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["terraform_version"])')
    log "terraform $tf_version; round trips: $rtts ms; link ${HK_BENCH_TF_RATE_MBIT:-100} Mbit/s each way"

    mkdir -p "$HOME/.terraform.d/plugins"
    ln -sf "$BIN/terraform-credentials-hostkeeper" "$HOME/.terraform.d/plugins/terraform-credentials-hostkeeper"
    printf 'credentials_helper "hostkeeper" {}\n' >"$DIR/plain.rc"
    # Without plugin_cache_may_break_dependency_lock_file, terraform (>= 1.4)
    # downloads a cached provider again into a directory without a lock file.
    printf 'credentials_helper "hostkeeper" {}\nplugin_cache_dir = "%s"\nplugin_cache_may_break_dependency_lock_file = true\n' \
        "$DIR/plugin-cache" >"$DIR/plugin.rc"
    "$BIN/hostkeeper" setup --registry-cache >"$DIR/setup.out" 2>&1 ||
        { cat "$DIR/setup.out" >&2; die "hostkeeper setup --registry-cache failed"; }
    grep -qs 'credentials_helper "hostkeeper"' "$HOME/.terraformrc" || die "setup left no credentials_helper in ~/.terraformrc"

    local worlds=() exec_done=""
    for HTTP in $https; do
        for RTT in $rtts; do
            WORLD=$RTT
            [[ $HTTP == 1.1 ]] || WORLD=${RTT}h2
            worlds+=("$WORLD")
            measure "$runs"
            if [[ -z $exec_done ]]; then
                log "exec's own overhead: hostkeeper exec --registry-cache -- true against true"
                exec_overhead "${HK_BENCH_TF_EXEC_RUNS:-20}"
                exec_done=1
            fi
            stop_registry
        done
    done

    local exec_true true_alone r
    exec_true=$(tsv_median exec 3) true_alone=$(tsv_median true 3)
    {
        for r in "${worlds[@]}"; do rows "$r" "$runs"; done
        echo "| \`hostkeeper exec --registry-cache -- true\` vs \`true\`, tsv_median of ${HK_BENCH_TF_EXEC_RUNS:-20}: exec's own overhead $(ms "$(awk -v a="$exec_true" -v b="$true_alone" 'BEGIN { print a - b }')") ms | $(ms "$exec_true") ms | $(ms "$true_alone") ms | — | overhead ≤ 20 ms | $(yesno le "$(awk -v a="$exec_true" -v b="$true_alone" 'BEGIN { print a - b }')" 0.020) |"
    } >"$OUT/registry-cache-rows.md"
    {
        echo "- Registry cache: tests/support/https_registry.py on 127.0.0.1 (TLS, throw-away CA, a token required" \
             "for metadata, ${HK_BENCH_TF_DELAY_MS:-0} ms added to each answer), reached through" \
             "tests/support/latency_proxy.py (half the round trip each way, the TCP handshake's round trip before a" \
             "connection's first bytes, ${HK_BENCH_TF_RATE_MBIT:-100} Mbit/s each way), 4 modules and 3 providers" \
             "(signed SHA256SUMS), terraform $tf_version in a fresh working directory each run; $runs runs per" \
             "variant, interleaved (plain, plugin, cold, warm, run, static, floor), at round trips of $rtts ms;" \
             "HTTP/1.1 is the registry itself (keep-alive), HTTP/2 is nginx $(nginx_version 2>/dev/null || true) in front of it" \
             "(HTTP/2 and HTTP/1.1 by ALPN, unbuffered, kept-alive connections to the registry)."
        for r in "${worlds[@]}"; do
            echo "  At $(world_name "$r"), ranges (s): plain $(tsv_range "plain@$r" 3), plugin $(tsv_range "plugin@$r" 3), cold $(tsv_range "cold@$r" 3)," \
                 "warm $(tsv_range "warm@$r" 3), run $(tsv_range "run@$r" 3), static $(tsv_range "static@$r" 3), floor $(tsv_range "floor@$r" 3)," \
                 "${HK_BENCH_TF_CONCURRENT:-10} plain $(tsv_range "plainx${HK_BENCH_TF_CONCURRENT:-10}@$r" 3)," \
                 "${HK_BENCH_TF_CONCURRENT:-10} cold $(tsv_range "coldx${HK_BENCH_TF_CONCURRENT:-10}@$r" 3)."
            [[ -z $BASE_BIN ]] || echo "  At $(world_name "$r"), the baseline's warm init $(tsv_range "warm-base@$r" 3) s ($BASE_BIN)."
        done
        echo "  exec -- true $(tsv_range exec 3), true $(tsv_range true 3) (s). Upstream requests from the registry's log," \
             "connections from the proxy's. The plugin cache variant sets plugin_cache_may_break_dependency_lock_file" \
             "= true (without it terraform downloads every provider again into a directory without a lock file); it" \
             "still downloads every module. The floor variant installs from a filesystem_mirror made by" \
             "\`terraform providers mirror\` with .terraform/modules already in place. Raw: $RAW/runs.tsv."
    } >"$OUT/registry-cache-notes.md"
    log "registry cache rows written to $OUT/registry-cache-rows.md"
}

main() {
    [[ $# -eq 2 ]] || { echo "usage: $0 BIN_DIR OUT_DIR" >&2; exit 2; }
    if [[ -x /usr/local/bin/terraform ]]; then
        TF=/usr/local/bin/terraform
    elif ! TF=$(command -v terraform); then
        echo "bench (registry cache): terraform is not installed: skipped" >&2
        exit 77
    fi
    local bin out
    bin=$(cd "$1" && pwd)
    mkdir -p "$2"
    out=$(cd "$2" && pwd)
    local self
    self=$(readlink -f "${BASH_SOURCE[0]}")
    # The registry port: a real hostkeeper-portd in a private network
    # namespace (root only), as the package's hostkeeper-port.socket holds it.
    if [[ -z "${HOSTKEEPER_PORT_SOCKET:-}" ]]; then
        exec "$(dirname "$self")/../support/port-env.sh" bash "$self" "$bin" "$out"
    fi
    if [[ -z "${HK_TEST_ROOT:-}" ]]; then
        exec "$(dirname "$self")/../support/keyring-env.sh" bash "$self" "$bin" "$out"
    fi
    inner "$bin" "$out"
    cat "$out/registry-cache-rows.md"
    cat "$out/registry-cache-notes.md"
}

main "$@"; exit
