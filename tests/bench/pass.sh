#!/usr/bin/env bash
# tests/bench/pass.sh BIN_DIR OUT_DIR
#
# The keyring backends' `get` cost, in two worlds of its own:
#   1. pass (tests/support/pass-env.sh: no D-Bus, a throw-away GnuPG home and
#      agent, a key without passphrase, a pass store): hostkeeperd with
#      --keyring-backend pass on a private socket; ONE hyperfine -N run of
#        helper-warm   the helper's get, the daemon's cache warm
#        helper-cold   the same after `hostkeeper flush HOST` (--prepare): the
#                      daemon decrypts hostkeeper/HOST.gpg through GPGME
#        pass-show     `pass show hostkeeper/HOST`: what a user would run
#        gpg-decrypt   `gpg --batch --quiet --decrypt FILE`: pass without its
#                      shell script around it
#   2. the Secret Service with HK_BENCH_PASS_ITEMS (10,000) items
#      (tests/support/keyring-env.sh; gnome-keyring's in-memory session
#      collection filled with hk_bench_keyring_fill): hostkeeperd
#      (auto: the Secret Service) on a private socket; ONE hyperfine -N run of
#        helper-cold-present     the helper's get after `hostkeeper flush HOST`
#                                of an item among them
#        libsecret-present       hk_bench_libsecret_lookup of the same item
#        helper-cold-missing     the helper's get of a host with no item
#                                (flushed before each run: no negative cache)
#        libsecret-missing       hk_bench_libsecret_lookup of that host
# Every answer is checked once before timing (the token, or {} / nothing).
# Prints a markdown table of medians and ratios, and writes it to
# OUT_DIR/pass.md; OUT_DIR/pass-rows.md and OUT_DIR/pass-notes.md hold rows and
# notes for run.sh's report; raw hyperfine JSON in OUT_DIR/pass/.
#
# Run by hand (BIN_DIR: cmake --build BUILD --target bench), or by run.sh.
# Exit status: 0 when every measurement ran; 77 when pass or gpg are missing
# (pass-env.sh); otherwise non-zero when something broke.
#
# Environment: HK_BENCH_RUNS (300; cold runs: a third, at least 30),
# HK_BENCH_WARMUP (20), HK_BENCH_PASS_ITEMS (10000).
# Needs: hyperfine, jq, pass, gpg, gnome-keyring, dbus (./packaging/deps.sh bench).

set -euo pipefail
shopt -s inherit_errexit
# shellcheck source=tests/bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# die (tests/support/script_lib.sh, through lib.sh): "bench (pass): MSG", exit 1.
# shellcheck disable=SC2034  # read by die
script_name="bench (pass)" die_status=1

BIN="" OUT="" RAW="" SOCK="" DAEMON_PID="" DAEMON_LOG=""

# shellcheck disable=SC2317  # run at exit
stop_bench() {
    hkd_stop
    hkd_log_on_failure
}

median() { jq -r --arg n "$2" '.results[] | select(.command == $n) | .median' "$1"; }

# --- 1. pass ------------------------------------------------------------------------
inner_pass() {
    local runs=${HK_BENCH_RUNS:-300} warmup=${HK_BENCH_WARMUP:-20}
    local cold_runs=$(( runs / 3 > 30 ? runs / 3 : 30 ))
    SOCK=$HK_TEST_ROOT/run/hk-bench/socket
    mkdir -p "$(dirname "$SOCK")"
    chmod 700 "$(dirname "$SOCK")"
    export HOSTKEEPER_SOCKET=$SOCK  # the helper runs as Terraform runs it: no options
    on_exit stop_bench
    cd "$HK_TEST_ROOT"
    local host=registry.bench.example.com token creds file
    token=hkbench.atlasv1.$(printf 'x%.0s' $(seq 1 70))
    creds="{\"token\":\"$token\"}"
    file=$HOME/.password-store/hostkeeper/$host.gpg
    hkd_keeping pass --keyring-backend pass
    [[ "$("$BIN/hostkeeper" --socket "$SOCK" status --json | jq -r .keyring.backend)" == pass ]] ||
        die "hostkeeperd --keyring-backend pass does not use pass"
    printf '%s' "$creds" | "$BIN/terraform-credentials-hostkeeper" store "$host"
    [[ -f $file ]] || die "the helper's store did not make $file"
    [[ "$(command pass show "hostkeeper/$host")" == "$creds" ]] || die "pass show does not give the stored credentials"
    [[ "$(gpg --batch --quiet --decrypt "$file")" == "$creds" ]] || die "gpg --decrypt does not give them"
    "$BIN/hostkeeper" --socket "$SOCK" flush "$host" >/dev/null
    [[ "$("$BIN/terraform-credentials-hostkeeper" get "$host")" == "$creds" ]] || die "the helper's cold get gave something else"
    local lookups0
    lookups0=$("$BIN/hostkeeper" --socket "$SOCK" status --json | jq -r .credentials.keyring_lookups)

    log "pass: hyperfine -N, $cold_runs runs of each command"
    local true_
    true_=$(type -P true)
    hyperfine -N --style basic --warmup "$warmup" --runs "$cold_runs" --export-json "$RAW/pass.json" \
        --prepare "$true_" -n helper-warm "$BIN/terraform-credentials-hostkeeper get $host" \
        --prepare "$BIN/hostkeeper --socket $SOCK flush $host" -n helper-cold "$BIN/terraform-credentials-hostkeeper get $host" \
        --prepare "$true_" -n pass-show "$(type -P pass) show hostkeeper/$host" \
        --prepare "$true_" -n gpg-decrypt "$(type -P gpg) --batch --quiet --decrypt $file" >&2
    local lookups1
    lookups1=$("$BIN/hostkeeper" --socket "$SOCK" status --json | jq -r .credentials.keyring_lookups)
    [[ $(( lookups1 - lookups0 )) -ge $cold_runs ]] ||
        die "the cold runs made $(( lookups1 - lookups0 )) store lookups, fewer than $cold_runs"
    echo "$cold_runs $(( lookups1 - lookups0 ))" >"$RAW/pass-runs"
}

# --- 2. the Secret Service with many items ------------------------------------------------
inner_ss() {
    local runs=${HK_BENCH_RUNS:-300} items=${HK_BENCH_PASS_ITEMS:-10000}
    local cold_runs=$(( runs / 3 > 30 ? runs / 3 : 30 ))
    SOCK=$HK_TEST_ROOT/run/hk-bench/socket
    mkdir -p "$(dirname "$SOCK")"
    chmod 700 "$(dirname "$SOCK")"
    export HOSTKEEPER_SOCKET=$SOCK
    on_exit stop_bench
    cd "$HK_TEST_ROOT"
    log "Secret Service: putting $items items in the session collection (hk_bench_keyring_fill)"
    local start=0 n out fill_s=0
    while [[ $start -lt $items ]]; do
        n=$(( items - start < 2000 ? items - start : 2000 ))
        out=$("$BIN/hk_bench_keyring_fill" session bench-pass- "$start" "$n") || die "hk_bench_keyring_fill failed"
        log "  $out"
        fill_s=$(awk -v a="$fill_s" -v b="$(jq -r .seconds <<<"$out")" 'BEGIN { printf "%.1f", a + b }')
        start=$(( start + n ))
    done
    echo "$fill_s" >"$RAW/ss-fill-seconds"
    hkd_keeping secret-service
    local backend
    backend=$("$BIN/hostkeeper" --socket "$SOCK" status --json | jq -r '.keyring.backend // "secret-service"')
    [[ $backend == secret-service ]] || die "the daemon in the keyring world uses $backend"
    local present=bench-pass-$(( items / 2 )).example.com missing=bench-pass-missing.example.com want
    want=$("$BIN/hk_bench_libsecret_lookup" "$present") || die "hk_bench_libsecret_lookup $present failed"
    [[ $want == '{"token":"'* ]] || die "hk_bench_libsecret_lookup $present gave '$want'"
    [[ "$("$BIN/terraform-credentials-hostkeeper" get "$present")" == "$want" ]] || die "the helper's get of $present differs"
    [[ "$("$BIN/terraform-credentials-hostkeeper" get "$missing")" == "{}" ]] || die "the helper's get of $missing is not {}"
    [[ -z "$("$BIN/hk_bench_libsecret_lookup" "$missing" 2>/dev/null || true)" ]] || die "libsecret finds $missing"
    local lookups0 lookups1
    lookups0=$("$BIN/hostkeeper" --socket "$SOCK" status --json | jq -r .credentials.keyring_lookups)
    log "Secret Service, $items items: hyperfine -N, $cold_runs runs"
    local true_ flush="$BIN/hostkeeper --socket $SOCK flush"
    true_=$(type -P true)
    # hk_bench_libsecret_lookup exits non-zero for a missing item: -i.
    hyperfine -N -i --style basic --warmup 3 --runs "$cold_runs" --export-json "$RAW/ss.json" \
        --prepare "$flush $present" -n helper-cold-present "$BIN/terraform-credentials-hostkeeper get $present" \
        --prepare "$true_" -n libsecret-present "$BIN/hk_bench_libsecret_lookup $present" \
        --prepare "$flush $missing" -n helper-cold-missing "$BIN/terraform-credentials-hostkeeper get $missing" \
        --prepare "$true_" -n libsecret-missing "$BIN/hk_bench_libsecret_lookup $missing" >&2
    lookups1=$("$BIN/hostkeeper" --socket "$SOCK" status --json | jq -r .credentials.keyring_lookups)
    [[ $(( lookups1 - lookups0 )) -ge $(( 2 * cold_runs )) ]] ||
        die "the cold runs made $(( lookups1 - lookups0 )) keyring lookups, fewer than $(( 2 * cold_runs ))"
    echo "$cold_runs $(( lookups1 - lookups0 ))" >"$RAW/ss-runs"
}

# --- outside: both worlds, then the report ----------------------------------------------
outer() {
    [[ $# -eq 2 ]] || { echo "usage: $0 BIN_DIR OUT_DIR" >&2; exit 2; }
    BIN=$(cd "$1" && pwd)
    mkdir -p "$2"
    OUT=$(cd "$2" && pwd)
    RAW=$OUT/pass
    rm -rf "$RAW"
    mkdir -p "$RAW"
    local b tool self repo
    for b in hostkeeperd hostkeeper terraform-credentials-hostkeeper hk_bench_keyring_fill hk_bench_libsecret_lookup; do
        [[ -x $BIN/$b ]] || die "$BIN/$b is missing (cmake --build BUILD --target bench)"
    done
    for tool in hyperfine jq; do
        command -v "$tool" >/dev/null || die "$tool is missing (./packaging/deps.sh bench)"
    done
    self=$(readlink -f "${BASH_SOURCE[0]}")
    repo=$(cd "$(dirname "$self")/../.." && pwd)
    export LC_NUMERIC=C
    local rc=0 items=${HK_BENCH_PASS_ITEMS:-10000}
    log "pass: in tests/support/pass-env.sh"
    HK_BENCH_PASS_PART=pass HK_BENCH_BIN=$BIN HK_BENCH_RAW=$RAW \
        env -u HK_TEST_ROOT "$repo/tests/support/pass-env.sh" bash "$self" >&2 || rc=$?
    [[ $rc == 77 ]] && { log "skipped: no pass or gpg"; exit 77; }
    [[ $rc == 0 ]] || die "the pass measurements failed"
    log "Secret Service: in tests/support/keyring-env.sh"
    HK_BENCH_PASS_PART=ss HK_BENCH_BIN=$BIN HK_BENCH_RAW=$RAW \
        env -u HK_TEST_ROOT "$repo/tests/support/keyring-env.sh" bash "$self" >&2 || die "the Secret Service measurements failed"

    local p=$RAW/pass.json s=$RAW/ss.json
    local warm cold pshow gdec cp lp cm lm pass_runs ss_runs fill_s
    warm=$(median "$p" helper-warm)
    cold=$(median "$p" helper-cold)
    pshow=$(median "$p" pass-show)
    gdec=$(median "$p" gpg-decrypt)
    cp=$(median "$s" helper-cold-present)
    lp=$(median "$s" libsecret-present)
    cm=$(median "$s" helper-cold-missing)
    lm=$(median "$s" libsecret-missing)
    read -r pass_runs _ <"$RAW/pass-runs"
    read -r ss_runs _ <"$RAW/ss-runs"
    fill_s=$(<"$RAW/ss-fill-seconds")
    local n
    n=$(thousands "$items")
    {
        echo "| pass backend: \`get\`, warm daemon cache, median of $pass_runs | $(ms "$warm") ms | $(ms "$pshow") ms (\`pass show\`) | $(speedup "$pshow" "$warm") | — | — |"
        echo "| pass backend: \`get\` after \`hostkeeper flush HOST\` (GPGME decrypt), median of $pass_runs | $(ms "$cold") ms | $(ms "$pshow") ms (\`pass show\`) | $(speedup "$pshow" "$cold") | — | — |"
        echo "| pass backend: \`get\` after flush, against \`gpg --decrypt\` of the entry | $(ms "$cold") ms | $(ms "$gdec") ms (\`gpg --decrypt\`) | $(speedup "$gdec" "$cold") | — | — |"
        echo "| Secret Service, $n items: \`get\` after flush, item present, median of $ss_runs | $(ms "$cp") ms | $(ms "$lp") ms (one-shot libsecret) | $(speedup "$lp" "$cp") | — | — |"
        echo "| Secret Service, $n items: \`get\` after flush, no item, median of $ss_runs | $(ms "$cm") ms | $(ms "$lm") ms (one-shot libsecret) | $(speedup "$lm" "$cm") | — | — |"
    } >"$OUT/pass-rows.md"
    {
        echo "- Backends (tests/bench/pass.sh): pass in a headless world (no D-Bus; a throw-away GnuPG home," \
             "gpg-agent and ed25519/cv25519 key without passphrase; hostkeeperd --keyring-backend pass) and the" \
             "Secret Service with $n items put in gnome-keyring's in-memory session collection by" \
             "hk_bench_keyring_fill ($fill_s s). Each world's commands in ONE hyperfine -N run (same" \
             "count of runs for all, 3 to 20 warm-ups), the cold ones with \`hostkeeper flush HOST\` as their --prepare."
    } >"$OUT/pass-notes.md"
    {
        echo "## keyring backends: \`get\` cost"
        echo
        echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); hostkeeper $("$BIN/hostkeeperd" --version | awk '{print $NF}');" \
             "$(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
        echo
        echo "| measure | hostkeeper | alternative | ratio | target | met? |"
        echo "|---|---|---|---|---|---|"
        cat "$OUT/pass-rows.md"
        echo
        echo "Notes:"
        cat "$OUT/pass-notes.md"
        echo "- Raw data: $RAW/."
    } >"$OUT/pass.md"
    cat "$OUT/pass.md"
}

main() {
    case "${HK_BENCH_PASS_PART:-}" in
        pass | ss)
            BIN=$HK_BENCH_BIN RAW=$HK_BENCH_RAW
            if [[ $HK_BENCH_PASS_PART == pass ]]; then inner_pass; else inner_ss; fi
            ;;
        *) outer "$@" ;;
    esac
}

main "$@"; exit
