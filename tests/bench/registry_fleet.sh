#!/usr/bin/env bash
# tests/bench/registry_fleet.sh BIN_DIR OUT_DIR
#
# The fleet tier benchmark: ephemeral CI runners, each a fresh HOME with no
# keyring backend running `hostkeeper exec --registry-cache -- terraform
# init` (the registry's token in the run's TF_TOKEN_ variable, the tier's
# credentials in DOCKER_CONFIG), of one configuration: 1 module and 3
# providers, one of them HK_BENCH_FLEET_LARGE_MB (300) MiB larger (a
# generated package, signed like the others). The registry is reached
# through tests/support/latency_proxy.py: HK_BENCH_FLEET_RTT_MS (100) ms
# round trip and HK_BENCH_FLEET_RATE_MBIT (160, 20 MB/s) per connection, as
# each runner's own internet link. The fleet tier is Debian's
# docker-registry on loopback (TLS, htpasswd Basic auth).
#
# First one cold runner fills the tier (reported as "cold"). Then, in a fresh
# working directory each, HK_BENCH_FLEET_RUNS (3) times each, interleaved:
#   plain    terraform alone (the token in a credentials block);
#   store    a warm local store: one runner HOME kept between runs, its
#            archives in its store, its daemon started by the run (no tier);
#   fleet    an ephemeral runner: a fresh HOME (empty store), its daemon
#            started by the run, the tier warm;
#   plainxN  HK_BENCH_FLEET_CONCURRENT (10) plain inits at once;
#   fleetxN  N ephemeral runners at once.
# Per run: wall time around the init (exec included), upstream metadata and
# archive requests (the registry's log) and the archives the runners took
# from the tier (status). Goal: fleet makes 0 upstream archive requests, is
# at least 3× faster than plain and within 1.5× of the warm store. Metadata
# keeps coming from the registry: the store and fleet variants pay its
# round trips as plain does.
#
# It re-runs itself in tests/support/container-env.sh (a private network
# namespace: the registries on its loopback) and tests/support/keyring-env.sh
# --no-keyring. Writes OUT_DIR/registry-fleet-rows.md (rows of run.sh's
# table), OUT_DIR/registry-fleet-notes.md and OUT_DIR/registry-fleet/runs.tsv
# (variant, run, seconds, metadata requests, archive requests, tier hits).
# Exit status: 0 when every measurement ran, whether or not a goal was met;
# 77 without terraform, docker-registry or htpasswd, or without root;
# otherwise non-zero.
#
# Environment: HK_BENCH_FLEET_RUNS (3), HK_BENCH_FLEET_CONCURRENT (10),
# HK_BENCH_FLEET_LARGE_MB (300), HK_BENCH_FLEET_RTT_MS (100),
# HK_BENCH_FLEET_RATE_MBIT (160).

set -euo pipefail
shopt -s inherit_errexit
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/support/docker_registry.sh
. "$(dirname "${BASH_SOURCE[0]}")/../support/docker_registry.sh"

# die (tests/support/script_lib.sh, through lib.sh): "bench (fleet): MSG", exit 1.
# shellcheck disable=SC2034  # read by die and fail
script_name="bench (fleet)" die_status=1

BIN="" OUT="" DIR="" RAW="" TF="" REPO="" HOST="" TOKEN="" REG_LOG="" OCI_HOST=""
PIDS=()

# shellcheck disable=SC2317  # runs at exit
stop_bench() {
    local pid
    for pid in ${PIDS[@]+"${PIDS[@]}"}; do kill "$pid" 2>/dev/null || true; done
    for pid in ${PIDS[@]+"${PIDS[@]}"}; do wait "$pid" 2>/dev/null || true; done
}

# wait_file FILE WHAT: waits up to 20 s for FILE to be non-empty.
wait_file() {
    local _
    for _ in $(seq 1 400); do [[ -s $1 ]] && return 0; sleep 0.05; done
    die "$2 did not start"
}

# The configuration: 1 module, 3 providers (big: the large one), from $HOST.
write_config() {
    mkdir -p "$1"
    {
        echo 'terraform {'
        echo '  required_providers {'
        local p
        for p in thing p2 big; do
            printf '    %s = {\n      source  = "%s/acme/%s"\n      version = "1.0.0"\n    }\n' "$p" "$HOST" "$p"
        done
        echo '  }'
        echo '}'
        printf '\nmodule "hello" {\n  source  = "%s/acme/hello/null"\n  version = "1.0.0"\n}\n' "$HOST"
    } >"$1/main.tf"
}

# runner_home DIR FLEET: a runner's HOME and XDG directories under DIR; with
# FLEET=1 its hostkeeperd uses the tier.
runner_home() {
    local dir=$1
    mkdir -p "$dir/home" "$dir/config/hostkeeper" "$dir/cache" "$dir/state" "$dir/data" "$dir/run"
    chmod 700 "$dir/run"
    {
        echo "[registry_cache]"
        if [[ $2 == 1 ]]; then echo "fleet = \"oci://$OCI_HOST/ci/terraform\""; fi
    } >"$dir/config/hostkeeper/config.toml"
}

# in_runner DIR COMMAND...: COMMAND with the runner's HOME and XDG directories.
in_runner() {
    local dir=$1
    shift
    env HOME="$dir/home" XDG_CONFIG_HOME="$dir/config" XDG_CACHE_HOME="$dir/cache" XDG_STATE_HOME="$dir/state" \
        XDG_DATA_HOME="$dir/data" XDG_RUNTIME_DIR="$dir/run" DOCKER_CONFIG="$DIR/docker" "$@"
}

# init_in VARIANT DIR: one init in DIR/work as VARIANT does it (plain, or
# exec in the runner DIR); its output in DIR/work.out.
init_in() {
    local variant=$1 dir=$2
    if [[ $variant == plain ]]; then
        (cd "$dir/work" && in_runner "$dir" env TF_CLI_CONFIG_FILE="$DIR/plain.rc" "$TF" init -input=false -no-color)
    else
        (cd "$dir/work" && in_runner "$dir" env "TF_TOKEN_${HOST//./_}=$TOKEN" \
            "$BIN/hostkeeper" exec --registry-cache -- "$TF" init -input=false -no-color)
    fi >"$dir/work.out" 2>&1
}

# settle DIR: waits until the runner's tier writes are done, keeps its status
# in DIR/status.json and stops its daemon.
settle() {
    local dir=$1 _
    for _ in $(seq 1 600); do
        in_runner "$dir" "$BIN/hostkeeper" status --json >"$dir/status.json" 2>/dev/null || true
        jq -e '(.registry_cache.fleet.in_flight // 0) == 0' "$dir/status.json" >/dev/null 2>&1 && break
        sleep 0.1
    done
    in_runner "$dir" "$BIN/hostkeeper" stop >/dev/null 2>&1 || true
}

# hits DIR: archives the runner took from the tier.
hits() { jq -r '.registry_cache.fleet.hits // 0' "$1/status.json" 2>/dev/null || echo 0; }

# record LABEL RUN T0 T1 BEFORE HITS: one line of runs.tsv.
record() {
    local requests meta arch
    requests=$(tail -n "+$(($5 + 1))" "$REG_LOG")
    meta=$(grep -c -e '"path": "/v1/' -e '"path": "/.well-known/' <<<"$requests" || true)
    arch=$(grep -c -e '"path": "/archives/' -e '"path": "/provider-files/[^"]*\.zip"' <<<"$requests" || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$(awk -v a="$3" -v b="$4" 'BEGIN { printf "%.3f", b - a }')" \
        "$meta" "$arch" "$6" >>"$RAW/runs.tsv"
    log "  $1 run $2: $(tail -n1 "$RAW/runs.tsv" | cut -f3) s, upstream: $meta metadata, $arch archive request(s); tier hits: $6"
}

# measure VARIANT RUN COUNT: COUNT inits at once as VARIANT (plain, store,
# fleet, cold), timed until the last ended.
measure() {
    local variant=$1 run=$2 count=$3 i dirs=() pids=() before t0 t1 failed=0 total_hits=0
    for i in $(seq 1 "$count"); do
        local dir=$DIR/runners/$variant-$run-$i
        [[ $variant == store ]] && dir=$DIR/runners/store
        [[ $variant == store ]] || rm -rf "$dir"
        runner_home "$dir" "$([[ $variant == fleet || $variant == cold ]] && echo 1 || echo 0)"
        rm -rf "$dir/work"
        write_config "$dir/work"
        dirs+=("$dir")
    done
    before=$(wc -l <"$REG_LOG")
    t0=$(date +%s.%N)
    for dir in "${dirs[@]}"; do
        init_in "$([[ $variant == plain ]] && echo plain || echo exec)" "$dir" &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || { failed=1; cat "${dirs[$i]}/work.out" >&2; }
    done
    t1=$(date +%s.%N)
    ((failed == 0)) || die "terraform init ($variant x$count, run $run) failed"
    for dir in "${dirs[@]}"; do
        [[ -d $dir/work/.terraform/providers/$HOST/acme/big ]] || die "$variant: the large provider is not installed"
        if [[ $variant != plain ]]; then
            settle "$dir"
            total_hits=$((total_hits + $(hits "$dir")))
        fi
    done
    local label=$variant
    ((count == 1)) || label=${variant}x$count
    record "$label" "$run" "$t0" "$t1" "$before" "$total_hits"
    # Only the warm store is kept: the others' gigabytes go.
    for dir in "${dirs[@]}"; do
        if [[ $variant == store ]]; then rm -rf "$dir/work"; else rm -rf "$dir"; fi
    done
}

start_worlds() {
    local rtt=${HK_BENCH_FLEET_RTT_MS:-100} rate=${HK_BENCH_FLEET_RATE_MBIT:-160} large=${HK_BENCH_FLEET_LARGE_MB:-300}
    "$REPO/tests/support/make_ca.sh" "$DIR/tls" localhost 127.0.0.1 >/dev/null
    mkdir -p "$DIR/no-system-certs"
    export SSL_CERT_FILE=$DIR/tls/ca.pem SSL_CERT_DIR=$DIR/no-system-certs

    python3 "$REPO/tests/support/latency_proxy.py" --port-file "$DIR/proxy-port" --upstream-port-file "$DIR/port" \
        --rtt-ms "$rtt" --rate-mbit "$rate" --per-connection --log "$DIR/connections.jsonl" 2>"$DIR/proxy.stderr" &
    PIDS+=($!)
    wait_file "$DIR/proxy-port" "the latency proxy"
    TOKEN=bench-$(openssl rand -hex 24)
    REG_LOG=$DIR/requests.jsonl
    : >"$REG_LOG"
    python3 "$REPO/tests/support/https_registry.py" --port-file "$DIR/port" --public-port-file "$DIR/proxy-port" \
        --cert "$DIR/tls/server.pem" --key "$DIR/tls/server.key" --token "$TOKEN" --log "$REG_LOG" \
        --modules acme/hello/null --providers acme/thing,acme/p2,acme/big --large-provider "acme/big=$large" \
        --registry-provider-versions 1.0.0 --gpg-home "$DIR/gnupg" 2>"$DIR/registry.stderr" &
    PIDS+=($!)
    wait_file "$DIR/port" "the registry"
    HOST=127.0.0.1:$(<"$DIR/proxy-port")
    printf 'credentials "%s" {\n  token = "%s"\n}\n' "$HOST" "$TOKEN" >"$DIR/plain.rc"
    chmod 600 "$DIR/plain.rc"

    mkdir -p "$DIR/oci" "$DIR/docker"
    htpasswd -Bbn fleet fleet-secret >"$DIR/oci/htpasswd" 2>/dev/null
    OCI_HOST=127.0.0.1:$(free_port)
    docker_registry_config "$DIR/oci/config.yml" "$DIR/oci/data" "$OCI_HOST" "$DIR/tls/server.pem" \
        "$DIR/tls/server.key" "$DIR/oci/htpasswd"
    docker_registry_start "$DIR/oci/config.yml" "$DIR/oci/registry.log" "https://$OCI_HOST" "$DIR/tls/ca.pem"
    PIDS+=("$docker_registry_pid")
    printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$OCI_HOST" "$(printf 'fleet:fleet-secret' | base64 -w0)" \
        >"$DIR/docker/config.json"
    log "registry https://$HOST/ through a ${rtt} ms round trip at ${rate} Mbit/s per connection;" \
        "tier oci://$OCI_HOST/ci/terraform; the large provider: $large MiB"
}

inner() {
    BIN=$1 OUT=$2
    DIR=$HK_TEST_ROOT/bench-registry-fleet RAW=$OUT/registry-fleet
    REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    mkdir -p "$DIR" "$RAW"
    chmod 700 "$DIR"
    : >"$RAW/runs.tsv"
    on_exit stop_bench
    local name
    while read -r name; do unset "$name"; done < <(compgen -e | grep '^TF_' || true)
    unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY DBUS_SESSION_BUS_ADDRESS
    export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
    start_worlds

    local runs=${HK_BENCH_FLEET_RUNS:-3} n=${HK_BENCH_FLEET_CONCURRENT:-10} run variant
    log "one cold runner fills the tier; the warm store's first run fills its store"
    measure cold 0 1
    measure store 0 1
    sed -i '/^store\t0\t/d' "$RAW/runs.tsv"
    for run in $(seq 1 "$runs"); do
        for variant in plain store fleet; do measure "$variant" "$run" 1; done
    done
    for run in $(seq 1 "$runs"); do
        for variant in plain fleet; do measure "$variant" "$run" "$n"; done
    done

    local plain store fleet cold plain_n fleet_n tf_version
    plain=$(tsv_median plain 3) store=$(tsv_median store 3) fleet=$(tsv_median fleet 3) cold=$(tsv_median cold 3)
    plain_n=$(tsv_median "plainx$n" 3) fleet_n=$(tsv_median "fleetx$n" 3)
    tf_version=$("$TF" version -json | jq -r .terraform_version)
    req() { echo "$(tsv_median "$1" 4) / $(tsv_median "$1" 5) / $(tsv_median "$1" 6)"; }
    {
        echo "| fleet tier: an ephemeral runner (fresh store, daemon started by the run) with a warm tier vs plain terraform, 1 module + 3 providers (one $((${HK_BENCH_FLEET_LARGE_MB:-300})) MiB larger), tsv_median of $runs | $(ms "$fleet") ms | $(ms "$plain") ms | $(speedup "$plain" "$fleet") | ≥ 3× | $(yesno ge "$(ratio "$plain" "$fleet")" 3) |"
        echo "| same, ephemeral runner with a warm tier vs a runner with a warm local store, fleet/store $(tsv_ratio "$fleet" "$store") | $(ms "$fleet") ms | $(ms "$store") ms | $(speedup "$store" "$fleet") | fleet/store ≤ 1.5 | $(yesno le "$(tsv_ratio "$fleet" "$store")" 1.5) |"
        echo "| same, $n ephemeral runners at once with a warm tier vs $n plain inits at once, until the last ended | $(ms "$fleet_n") ms | $(ms "$plain_n") ms | $(speedup "$plain_n" "$fleet_n") | — | — |"
        echo "| same, the cold runner that filled the tier vs plain | $(ms "$cold") ms | $(ms "$plain") ms | $(speedup "$plain" "$cold") | — | — |"
        echo "| upstream per init, metadata requests / archive requests / archives from the tier (median): fleet; fleet x$n (all); store | $(req fleet); $(req "fleetx$n"); $(req store) | $(req plain); $(req "plainx$n") | — | fleet: 0 archive requests | $(yesno test "$(tsv_median fleet 5)$(tsv_median "fleetx$n" 5)" = 00) |"
    } >"$OUT/registry-fleet-rows.md"
    {
        echo "- Fleet tier: terraform $tf_version; tests/support/https_registry.py (TLS, a token) behind" \
             "tests/support/latency_proxy.py (${HK_BENCH_FLEET_RTT_MS:-100} ms round trip, the TCP handshake's round" \
             "trip, ${HK_BENCH_FLEET_RATE_MBIT:-160} Mbit/s per connection), 1 module and 3 signed providers, acme/big's" \
             "linux_amd64 package $((${HK_BENCH_FLEET_LARGE_MB:-300})) MiB larger; the tier: Debian's docker-registry" \
             "$(docker-registry --version 2>/dev/null | awk '{ print $3 }') on loopback (TLS, htpasswd)." \
             "Each runner: a fresh HOME, no keyring backend, the token in TF_TOKEN_, the tier's credentials in" \
             "DOCKER_CONFIG, \`hostkeeper exec --registry-cache -- terraform init\` (its daemon started by the run and" \
             "stopped after it). $runs runs per variant, interleaved (plain, store, fleet), then plain x$n and fleet x$n" \
             "interleaved. Ranges (s): plain $(tsv_range plain 3), store $(tsv_range store 3), fleet $(tsv_range fleet 3)," \
             "plain x$n $(tsv_range "plainx$n" 3), fleet x$n $(tsv_range "fleetx$n" 3). Metadata still comes from the" \
             "registry in every variant ($(tsv_median fleet 4) requests per init): what separates fleet from floor is" \
             "those round trips, the daemon's start and the tier's download and verification. Raw: $RAW/runs.tsv."
    } >"$OUT/registry-fleet-notes.md"
    log "fleet rows written to $OUT/registry-fleet-rows.md"
}

main() {
    [[ $# -eq 2 ]] || { echo "usage: $0 BIN_DIR OUT_DIR" >&2; exit 2; }
    if [[ -x /usr/local/bin/terraform ]]; then
        TF=/usr/local/bin/terraform
    elif ! TF=$(command -v terraform); then
        echo "bench (fleet): terraform is not installed: skipped" >&2
        exit 77
    fi
    local tool
    for tool in docker-registry htpasswd jq; do
        command -v "$tool" >/dev/null || { echo "bench (fleet): $tool is not installed: skipped" >&2; exit 77; }
    done
    local bin out self
    bin=$(cd "$1" && pwd)
    mkdir -p "$2"
    out=$(cd "$2" && pwd)
    self=$(readlink -f "${BASH_SOURCE[0]}")
    if [[ ${HK_CONTAINER_NETNS:-} != 1 ]]; then
        exec "$(dirname "$self")/../support/container-env.sh" bash "$self" "$bin" "$out"
    fi
    if [[ -z "${HK_TEST_ROOT:-}" ]]; then
        exec "$(dirname "$self")/../support/keyring-env.sh" --no-keyring bash "$self" "$bin" "$out"
    fi
    inner "$bin" "$out"
    cat "$out/registry-fleet-rows.md"
    cat "$out/registry-fleet-notes.md"
}

main "$@"; exit
