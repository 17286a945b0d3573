#!/usr/bin/env bash
# tests/bench/consumers.sh BIN_DIR OUT_DIR
#
# What the other consumers of the token store pay, against what
# a user would run instead, in worlds of its own:
#   1. the Secret Service (tests/support/keyring-env.sh): hostkeeperd on a
#      private socket, one Terraform token and one Docker credential stored
#      through it, the same Docker credential stored by Debian's
#      docker-credential-secretservice; ONE hyperfine run of
#        token              `hostkeeper token HOST` (warm daemon cache)
#        secret-tool        `secret-tool lookup` of the same item: what a
#                           script would call instead
#        exec-true          `hostkeeper exec --host HOST -- true`
#        env-secret-tool    `sh -c 'TF_TOKEN_...=$(secret-tool lookup ...) exec true'`:
#                           the shell-profile alternative exec replaces
#        true               `true`: the floor of any process start
#      and ONE hyperfine run (through /bin/dash, hyperfine subtracting the
#      shell's own start: the helpers read the server from stdin) of
#        docker-hostkeeper      `docker-credential-hostkeeper get`
#        docker-secretservice   `docker-credential-secretservice get`
#      and ONE hyperfine run (dash, as above) of git's credential helpers'
#      `get` for one https host, each run as git runs it (`git credential-X`):
#        git-hostkeeper     `git credential-hostkeeper get`: the host's
#                           Terraform token (the daemon keeps which hosts
#                           have git items until the keyring changes)
#        git-cache          `git credential-cache get` against git's warm
#                           credential-cache daemon (memory only)
#        git-libsecret      `git credential-libsecret get`: git's one-shot
#                           libsecret helper, built from the source Debian's
#                           git ships (contrib/credential/libsecret) when not
#                           on PATH
#   2. pass (tests/support/pass-env.sh, no D-Bus): hostkeeperd
#      --keyring-backend pass, the same Docker credential stored by
#      docker-credential-hostkeeper and by Debian's docker-credential-pass;
#      ONE hyperfine run (dash, as above) of both helpers' `get`.
# Docker credentials are not cached by the daemon (every `get` reads the
# keyring), so the Docker rows compare keyring reads with keyring reads.
# Every answer is checked once before timing. Prints a markdown table and
# writes it to OUT_DIR/consumers.md; OUT_DIR/consumers-rows.md and
# OUT_DIR/consumers-notes.md feed run.sh's report; raw JSON in
# OUT_DIR/consumers/.
#
# Exit status: 0 when every measurement ran; 77 when Debian's
# docker-credential helpers (golang-docker-credential-helpers) are missing;
# otherwise non-zero when something broke.
# Environment: HK_BENCH_RUNS (300), HK_BENCH_WARMUP (20).

set -euo pipefail
shopt -s inherit_errexit
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# die (tests/support/script_lib.sh, through lib.sh): "bench (consumers): MSG", exit 1.
# shellcheck disable=SC2034  # read by die
script_name="bench (consumers)" die_status=1

BIN="" OUT="" RAW="" SOCK="" DAEMON_PID="" DAEMON_LOG=""

# shellcheck disable=SC2317  # run at exit
stop_bench() {
    hkd_stop
    hkd_log_on_failure
}

# start_daemon NAME ARGS...: hostkeeperd on a private socket (nothing
# expires during a run), waited for.
start_daemon() {
    SOCK=$HK_TEST_ROOT/run/hk-bench/socket
    mkdir -p "$(dirname "$SOCK")"
    chmod 700 "$(dirname "$SOCK")"
    export HOSTKEEPER_SOCKET=$SOCK  # the helpers run as their callers run them: no options
    hkd_keeping "$@"
}

median() { jq -r --arg n "$2" '.results[] | select(.command == $n) | .median' "$1"; }

SERVER=registry.bench.localhost:5000
DOCKER_JSON='{"ServerURL":"registry.bench.localhost:5000","Username":"bench","Secret":"s3cret-bench-password"}'

# Stores the Docker credential with both helpers ($1: the alternative's name)
# and checks that each gives it back.
docker_setup() {
    local other=$1 got
    printf '%s' "$DOCKER_JSON" | "$BIN/docker-credential-hostkeeper" store || die "docker-credential-hostkeeper store failed"
    printf '%s' "$DOCKER_JSON" | "docker-credential-$other" store || die "docker-credential-$other store failed"
    printf '%s\n' "$SERVER" >"$HK_TEST_ROOT/server"
    for helper in "$BIN/docker-credential-hostkeeper" "docker-credential-$other"; do
        got=$("$helper" get <"$HK_TEST_ROOT/server") || die "$helper get failed: $got"
        [[ "$(jq -r .Secret <<<"$got")" == s3cret-bench-password && "$(jq -r .Username <<<"$got")" == bench ]] ||
            die "$helper get gave $got"
    done
}

docker_run() {  # docker_run OTHER JSON_OUT RUNS WARMUP
    local other=$1 out=$2 runs=$3 warmup=$4 other_path
    other_path=$(type -P "docker-credential-$other")
    hyperfine -S /bin/dash --style basic --warmup "$warmup" --runs "$runs" --export-json "$out" \
        -n docker-hostkeeper "$BIN/docker-credential-hostkeeper get <$HK_TEST_ROOT/server >/dev/null" \
        -n "docker-$other" "$other_path get <$HK_TEST_ROOT/server >/dev/null" >&2
}

GIT_HOST=git.bench.example.com
GIT_TOKEN=glpat-bench-$(printf 'g%.0s' $(seq 1 20))

# git-credential-libsecret on PATH: Debian's git ships only its source; it
# is built once into OUT_DIR/git-libsecret (libsecret-1-dev, glib).
git_libsecret() {
    local dir=$1 src=/usr/share/doc/git/contrib/credential/libsecret
    command -v git-credential-libsecret >/dev/null && return 0
    if [[ ! -x $dir/git-credential-libsecret ]]; then
        [[ -f $src/git-credential-libsecret.c ]] || die "no $src (apt-get install git)"
        mkdir -p "$dir"
        cp "$src/git-credential-libsecret.c" "$src/Makefile" "$dir/"
        make -C "$dir" >"$dir/build.log" 2>&1 || { cat "$dir/build.log" >&2; die "building git-credential-libsecret failed"; }
    fi
    export PATH=$dir:$PATH
}

# The same credential in each git helper, each checked once; input in
# $HK_TEST_ROOT/git-get.
git_setup() {
    local got helper
    printf '{"token":"%s"}' "$GIT_TOKEN" | "$BIN/terraform-credentials-hostkeeper" store "$GIT_HOST"
    printf 'protocol=https\nhost=%s\n' "$GIT_HOST" >"$HK_TEST_ROOT/git-get"
    printf 'protocol=https\nhost=%s\nusername=oauth2\npassword=%s\n' "$GIT_HOST" "$GIT_TOKEN" >"$HK_TEST_ROOT/git-store"
    export PATH=$BIN:$PATH GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
    git credential-cache --socket "$HK_TEST_ROOT/git-cache/socket" --timeout 7200 store <"$HK_TEST_ROOT/git-store"
    git credential-libsecret store <"$HK_TEST_ROOT/git-store"
    for helper in hostkeeper "cache --socket $HK_TEST_ROOT/git-cache/socket" libsecret; do
        # shellcheck disable=SC2086  # the helper's words
        got=$(git credential-$helper get <"$HK_TEST_ROOT/git-get") || die "git credential-$helper get failed"
        [[ $got == *"username=oauth2"* && $got == *"password=$GIT_TOKEN"* ]] || die "git credential-$helper get gave: $got"
    done
}

git_run() {  # git_run JSON_OUT RUNS WARMUP
    local out=$1 runs=$2 warmup=$3 git_path
    git_path=$(type -P git)
    hyperfine -S /bin/dash --style basic --warmup "$warmup" --runs "$runs" --export-json "$out" \
        -n git-hostkeeper "$git_path credential-hostkeeper get <$HK_TEST_ROOT/git-get >/dev/null" \
        -n git-cache "$git_path credential-cache --socket $HK_TEST_ROOT/git-cache/socket get <$HK_TEST_ROOT/git-get >/dev/null" \
        -n git-libsecret "$git_path credential-libsecret get <$HK_TEST_ROOT/git-get >/dev/null" >&2
    git credential-cache --socket "$HK_TEST_ROOT/git-cache/socket" exit </dev/null || true
}

# --- 1. the Secret Service ---------------------------------------------------------------
inner_ss() {
    local runs=${HK_BENCH_RUNS:-300} warmup=${HK_BENCH_WARMUP:-20}
    on_exit stop_bench
    cd "$HK_TEST_ROOT"
    start_daemon secret-service
    local host=registry-bench.example.com token creds var
    token=hkbench.atlasv1.$(printf 'x%.0s' $(seq 1 70))
    creds="{\"token\":\"$token\"}"
    var=TF_TOKEN_registry__bench_example_com
    printf '%s' "$creds" | "$BIN/terraform-credentials-hostkeeper" store "$host"
    [[ "$("$BIN/hostkeeper" token --force "$host")" == "$token" ]] || die "hostkeeper token gave something else"
    [[ "$(secret-tool lookup xdg:schema io.hostkeeper.Credentials host "$host")" == "$creds" ]] ||
        die "secret-tool lookup does not see the stored item"
    [[ "$("$BIN/hostkeeper" exec --host "$host" -- sh -c "printenv $var")" == "$token" ]] ||
        die "hostkeeper exec did not give the child $var"
    local lookup="secret-tool lookup xdg:schema io.hostkeeper.Credentials host $host"
    [[ "$(sh -c "$var=\$($lookup) exec printenv $var")" == "$creds" ]] || die "the shell alternative does not work"
    log "Secret Service: hyperfine -N, $runs runs"
    hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$RAW/ss-token.json" \
        -n token "$BIN/hostkeeper token --force $host" \
        -n secret-tool "$(type -P secret-tool) lookup xdg:schema io.hostkeeper.Credentials host $host" \
        -n exec-true "$BIN/hostkeeper exec --host $host -- true" \
        -n env-secret-tool "$(type -P sh) -c '$var=\$($lookup) exec true'" \
        -n true "$(type -P true)" >&2
    docker_setup secretservice
    log "Secret Service, Docker credentials: hyperfine -S dash, $runs runs"
    docker_run secretservice "$RAW/ss-docker.json" "$runs" "$warmup"
    git_libsecret "$RAW/../git-libsecret"
    git_setup
    log "Secret Service, git credentials: hyperfine -S dash, $runs runs"
    git_run "$RAW/ss-git.json" "$runs" "$warmup"
}

# --- 2. pass ----------------------------------------------------------------------------
inner_pass() {
    local runs=${HK_BENCH_RUNS:-300} warmup=${HK_BENCH_WARMUP:-20}
    local pass_runs=$(( runs / 3 > 30 ? runs / 3 : 30 ))
    on_exit stop_bench
    cd "$HK_TEST_ROOT"
    start_daemon pass --keyring-backend pass
    docker_setup pass
    log "pass, Docker credentials: hyperfine -S dash, $pass_runs runs"
    docker_run pass "$RAW/pass-docker.json" "$pass_runs" 3
    echo "$pass_runs" >"$RAW/pass-runs"
}

outer() {
    [[ $# -eq 2 ]] || { echo "usage: $0 BIN_DIR OUT_DIR" >&2; exit 2; }
    BIN=$(cd "$1" && pwd)
    mkdir -p "$2"
    OUT=$(cd "$2" && pwd)
    RAW=$OUT/consumers
    rm -rf "$RAW"
    mkdir -p "$RAW"
    local b tool self repo
    for b in hostkeeperd hostkeeper terraform-credentials-hostkeeper docker-credential-hostkeeper \
        git-credential-hostkeeper; do
        [[ -x $BIN/$b ]] || die "$BIN/$b is missing (cmake --build BUILD --target bench)"
    done
    for tool in hyperfine jq secret-tool dash git make pkg-config; do
        command -v "$tool" >/dev/null || die "$tool is missing (./packaging/deps.sh bench)"
    done
    for tool in docker-credential-secretservice docker-credential-pass; do
        command -v "$tool" >/dev/null || { log "skipped: no $tool (apt-get install golang-docker-credential-helpers)"; exit 77; }
    done
    self=$(readlink -f "${BASH_SOURCE[0]}")
    repo=$(cd "$(dirname "$self")/../.." && pwd)
    export LC_NUMERIC=C
    log "Secret Service: in tests/support/keyring-env.sh"
    HK_BENCH_CONSUMERS_PART=ss HK_BENCH_BIN=$BIN HK_BENCH_RAW=$RAW \
        env -u HK_TEST_ROOT "$repo/tests/support/keyring-env.sh" bash "$self" >&2 || die "the Secret Service measurements failed"
    local pass_rc=0
    log "pass: in tests/support/pass-env.sh"
    HK_BENCH_CONSUMERS_PART=pass HK_BENCH_BIN=$BIN HK_BENCH_RAW=$RAW \
        env -u HK_TEST_ROOT "$repo/tests/support/pass-env.sh" bash "$self" >&2 || pass_rc=$?
    [[ $pass_rc == 0 || $pass_rc == 77 ]] || die "the pass measurements failed"

    local t=$RAW/ss-token.json d=$RAW/ss-docker.json p=$RAW/pass-docker.json runs=${HK_BENCH_RUNS:-300}
    local tok st ex env_st tru dh ds g=$RAW/ss-git.json gh gc gl
    tok=$(median "$t" token)
    st=$(median "$t" secret-tool)
    ex=$(median "$t" exec-true)
    env_st=$(median "$t" env-secret-tool)
    tru=$(median "$t" true)
    dh=$(median "$d" docker-hostkeeper)
    ds=$(median "$d" docker-secretservice)
    gh=$(median "$g" git-hostkeeper)
    gc=$(median "$g" git-cache)
    gl=$(median "$g" git-libsecret)
    {
        echo "| \`hostkeeper token HOST\`, warm daemon, median of $runs | $(ms "$tok") ms | $(ms "$st") ms (\`secret-tool lookup\`) | $(speedup "$st" "$tok") | — | — |"
        echo "| \`hostkeeper exec --host HOST -- true\`, median of $runs | $(ms "$ex") ms | $(ms "$env_st") ms (\`sh -c 'TF_TOKEN_…=\$(secret-tool lookup …) exec true'\`) | $(speedup "$env_st" "$ex") | — | — |"
        echo "| \`hostkeeper exec\` over \`true\` alone | $(ms "$ex") ms | $(ms "$tru") ms (\`true\`) | $(ratio "$ex" "$tru")× the floor | — | — |"
        echo "| \`docker-credential-hostkeeper get\` (Secret Service), median of $runs | $(ms "$dh") ms | $(ms "$ds") ms (\`docker-credential-secretservice get\`) | $(speedup "$ds" "$dh") | — | — |"
        echo "| \`git credential-hostkeeper get\` (Terraform token, Secret Service), median of $runs | $(ms "$gh") ms | $(ms "$gc") ms (\`git credential-cache get\`, warm) | $(speedup "$gc" "$gh") | — | — |"
        echo "| \`git credential-hostkeeper get\` (Terraform token, Secret Service), median of $runs | $(ms "$gh") ms | $(ms "$gl") ms (\`git credential-libsecret get\`, one-shot) | $(speedup "$gl" "$gh") | — | — |"
        if [[ -s $p ]]; then
            local ph pp pass_runs
            ph=$(median "$p" docker-hostkeeper)
            pp=$(median "$p" docker-pass)
            pass_runs=$(<"$RAW/pass-runs")
            echo "| \`docker-credential-hostkeeper get\` (pass), median of $pass_runs | $(ms "$ph") ms | $(ms "$pp") ms (\`docker-credential-pass get\`) | $(speedup "$pp" "$ph") | — | — |"
        fi
    } >"$OUT/consumers-rows.md"
    {
        echo "- Consumers (tests/bench/consumers.sh): token and exec in ONE hyperfine -N run against secret-tool and" \
             "the shell alternative; each Docker helper's \`get\` in ONE hyperfine run through /bin/dash (stdin" \
             "redirected; hyperfine subtracts dash's own start) against Debian's docker-credential-secretservice" \
             "and docker-credential-pass 0.6.4 reading the same credential from the same keyring. hostkeeperd does" \
             "not cache Docker credentials: each \`get\` is a keyring read."
        echo "- git (same script): the three helpers' \`get\` of one https host in ONE hyperfine run through" \
             "/bin/dash, each as git runs it (\`git credential-X get\`, git's own start included in all three):" \
             "git-credential-hostkeeper answering the host's Terraform token (from the daemon's cache; it" \
             "keeps which hosts have git items until the keyring changes), git's credential-cache daemon (memory only, not a" \
             "keyring), and git's contrib libsecret helper (a D-Bus session and a Secret Service lookup per run)."
        [[ -s $p ]] || echo "- pass Docker row skipped: no pass or gpg."
    } >"$OUT/consumers-notes.md"
    {
        echo "## other consumers: token, exec, Docker and git credential helpers"
        echo
        echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); hostkeeper $("$BIN/hostkeeperd" --version | awk '{print $NF}');" \
             "$(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
        echo
        echo "| measure | hostkeeper | alternative | ratio | target | met? |"
        echo "|---|---|---|---|---|---|"
        cat "$OUT/consumers-rows.md"
        echo
        echo "Notes:"
        cat "$OUT/consumers-notes.md"
        echo "- Raw data: $RAW/."
    } >"$OUT/consumers.md"
    cat "$OUT/consumers.md"
}

main() {
    case "${HK_BENCH_CONSUMERS_PART:-}" in
        ss | pass)
            BIN=$HK_BENCH_BIN RAW=$HK_BENCH_RAW
            if [[ $HK_BENCH_CONSUMERS_PART == ss ]]; then inner_ss; else inner_pass; fi
            ;;
        *) outer "$@" ;;
    esac
}

main "$@"; exit
