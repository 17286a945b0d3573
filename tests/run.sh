#!/usr/bin/env bash
# tests/run.sh — installs what the tests need, then runs every check CI runs:
#   1. suite: builds with warnings as errors, as a unity build
#      (HOSTKEEPER_UNITY: each target's sources compiled a batch at a time,
#      which parses the heavy headers once per batch), and runs every test
#      (unit, integration against a real gnome-keyring on a private D-Bus bus,
#      conformance, packaging, and end to end with terraform when it is
#      installed), in build-tests;
#   2. asan:  the same suite (unity build too) built with AddressSanitizer and
#      UndefinedBehaviorSanitizer (leaks included), in build-asan, its unit
#      tests' cases all in one process (tests/CMakeLists.txt); a report
#      from any process (daemons started on demand too) fails it;
#   3. fuzz:  every libFuzzer target from its seed corpus, in build-fuzz
#      (tests/fuzz/run.sh), one at a time, sharing one budget of
#      HOSTKEEPER_FUZZ_BUDGET seconds (default 200) of wall time, or each for
#      HOSTKEEPER_FUZZ_SECONDS when that is set; it builds and runs beside
#      the asan stage's tests;
#   4. style: clang-format (check mode), the include rules and clang-tidy on
#      the whole tree (tests/style.sh), on build-tests' unity batches; it
#      runs beside the suite stage's tests.
# The suite's and the asan stage's tests leave the machine mostly idle (they
# wait on daemons, keyrings and servers), so the stage beside them costs
# little wall time; its output is printed in its own turn. All four run even
# when one fails; the last lines say which passed and how long each took
# (fuzz's and style's own times, spent within the other stages').
#
# Usage: tests/run.sh                       all four
#        tests/run.sh suite|asan [BUILD_DIR] one of them
#        tests/run.sh style [BUILD_DIR]
#        tests/run.sh fuzz [BUILD_DIR [SECONDS [TARGET...]]]
#        tests/run.sh BUILD_DIR              the suite in BUILD_DIR
#          (HOSTKEEPER_SANITIZE=1: the asan stage in BUILD_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
./packaging/deps.sh test
echo "tests/run.sh: deps took $((SECONDS - started)) s"

# Every compile goes through ccache (packaging/deps.sh test installs it),
# cached in build-ccache unless CCACHE_DIR says otherwise, with paths taken
# relative to the checkout: the package test's tree, configured as the
# suite's is, then compiles nothing the suite has not, and a second run
# recompiles only what changed. Trees configured before keep their setting.
if command -v ccache >/dev/null; then
    export CCACHE_DIR=${CCACHE_DIR:-$PWD/build-ccache} CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true
    export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi

# Tests at once (HOSTKEEPER_TEST_JOBS, default 2). Four at a time on two
# cores, with the stage beside them, made the instrumented integration
# tests miss their waits and gained no wall time.
test_jobs=${HOSTKEEPER_TEST_JOBS:-2}

# Stages run in subshells and return on the first failing step explicitly:
# `set -e` does not hold inside a function called from `||` or `&&`.
# suite BUILD_DIR SANITIZE [--beside 'COMMAND ARGS'] [CTEST_ARGS...]:
# configures, builds and runs ctest; with --beside, COMMAND runs in the
# background while ctest does, and the suite waits for it.
suite() {
    local build=$1 sanitize=$2 beside=() beside_pid="" rc=0
    shift 2
    [[ ${1:-} == --beside ]] && { read -ra beside <<<"$2"; shift 2; }
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOSTKEEPER_WERROR=ON \
        -DHOSTKEEPER_UNITY=ON -DHOSTKEEPER_SANITIZE="$sanitize" >/dev/null || return
    local started=$SECONDS
    cmake --build "$build" -j"$(nproc)" || return
    echo "tests/run.sh: $build built in $((SECONDS - started)) s"
    if ((${#beside[@]})); then
        "${beside[@]}" &
        beside_pid=$!
    fi
    started=$SECONDS
    (cd "$build" && ctest --output-on-failure -j"$test_jobs" "$@") || rc=$?
    echo "tests/run.sh: $build's tests ran in $((SECONDS - started)) s ($test_jobs at a time)"
    [[ -z $beside_pid ]] || wait "$beside_pid"
    return "$rc"
}

# beside NAME COMMAND...: a stage run beside another stage's tests, which
# leave most of the machine idle (they wait on daemons, keyrings and
# servers). Its output, status and time go to build-side/NAME.log and
# NAME.status, which the stage then reports in its turn.
beside() {
    local name=$1 started=$SECONDS rc=0
    shift
    mkdir -p build-side
    "$@" >"build-side/$name.log" 2>&1 || rc=$?
    echo "$rc $((SECONDS - started))" >"build-side/$name.status"
}

# style_beside: the style stage, with build-tests' unity batches as
# clang-tidy's units; where the suite did not configure build-tests, with
# build-style's files (tests/style.sh).
style_beside() {
    local tree=build-style
    grep -qx 'HOSTKEEPER_UNITY:BOOL=ON' build-tests/CMakeCache.txt 2>/dev/null && tree="build-tests"
    beside style ./tests/style.sh "$tree"
}

# fuzz_beside: the fuzz stage, one target at a time (the instrumented
# tests beside it need CPU too), without the asan stage's report settings
# (each target's run sets its own).
fuzz_beside() {
    (
        unset ASAN_OPTIONS UBSAN_OPTIONS
        export HOSTKEEPER_FUZZ_JOBS=${HOSTKEEPER_FUZZ_JOBS:-1}
        beside fuzz fuzz
    )
}

# report NAME: prints the output of a stage that ran beside another (running
# it now where that stage did not get so far) and sets result and took.
report() {
    local rc
    [[ -f build-side/$1.status ]] || "$1_beside"
    cat "build-side/$1.log"
    read -r rc "took[$1]" <"build-side/$1.status"
    result[$1]=passed
    [[ $rc == 0 ]] || result[$1]=FAILED
}

# asan BUILD_DIR [--beside 'COMMAND ARGS']
asan() {
    local build=$1
    local reports
    reports=$(mkdir -p "$build" && cd "$build" && pwd)/sanitizer-reports
    rm -rf "$reports" && mkdir -p "$reports" || return
    # Reports go to files, not stderr: a daemon the helper starts on demand
    # writes its stderr to /dev/null or the journal, where they would be lost.
    # Every instrumented process of the run writes REPORTS/asan.PID or ubsan.PID
    # (UBSan's through tests/support/ubsan_log_path.c, linked into each).
    export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:log_path=$reports/asan"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
    local rc=0
    # Not under ASan, each run by the suite stage instead:
    # - the package test builds its own tree of the .deb (no sanitizers), and
    #   the removal test installs that .deb;
    # - the real user manager runs hostkeeperd in the unit's sandbox, which
    #   forbids what the sanitizers need at exit (LeakSanitizer's ptrace, a
    #   writable place for reports), so an instrumented daemon fails there.
    # Not under ASan either, to keep the stage within its time: scenarios
    # whose daemon-side paths another test here already runs instrumented:
    # - the pass backend's twins of the Secret Service scenarios ("... with
    #   the pass backend", "... (pass)"): the pass backend runs instrumented
    #   in "e2e: pass backend" and "integration: pass-cli";
    # - terraform's and hostkeeper's agreement on registry documents, whose
    #   daemon side "integration: registry" runs;
    # - who may hold the registry port (two uids racing for it, one daemon
    #   per user under podman's XDG_RUNTIME_DIR): properties of the port's
    #   ownership, with portd's and the daemon's paths run instrumented by
    #   "e2e: the registry port: portd hands each user only their own
    #   connections" and "e2e: terraform init through the registry cache".
    local skipped='^packaging: (Debian package|removing the package|units under a real user manager)'
    skipped+='|^e2e: .*(with the pass backend|\(pass\))$'
    skipped+='|^e2e: terraform and hostkeeper agree on registry versions'
    skipped+='|^e2e: the registry port cannot be taken over'
    skipped+='|^e2e: one daemon per user holds the registry port'
    suite "$build" ON "${@:2}" -E "$skipped" || rc=$?
    if compgen -G "$reports/*" >/dev/null; then
        echo "asan: sanitizer reports were written:" >&2
        for report in "$reports"/*; do
            echo "----- $report" >&2
            cat "$report" >&2
        done
        rc=1
    fi
    return "$rc"
}

fuzz() {
    if [[ -z ${2:-${HOSTKEEPER_FUZZ_SECONDS:-}} ]]; then
        export HOSTKEEPER_FUZZ_BUDGET=${HOSTKEEPER_FUZZ_BUDGET:-200}
    fi
    ./tests/fuzz/run.sh "${1:-build-fuzz}" "${2:-${HOSTKEEPER_FUZZ_SECONDS:-45}}" "${@:3}"
}

case "${1:-all}" in
    suite) suite "${2:-build-tests}" OFF ;;
    asan) (asan "${2:-build-asan}") ;;
    fuzz) shift; fuzz "$@" ;;
    style) ./tests/style.sh "${2:-build-style}" ;;
    all)
        declare -A result took
        for stage in suite asan fuzz style; do
            echo "=== tests/run.sh: $stage"
            started=$SECONDS
            case $stage in
                suite)
                    rm -f build-side/*.status
                    (suite build-tests OFF --beside style_beside) && result[$stage]=passed ||
                        result[$stage]=FAILED
                    ;;
                asan) (asan build-asan --beside fuzz_beside) && result[$stage]=passed ||
                    result[$stage]=FAILED ;;
                fuzz | style) report "$stage" ;;
            esac
            [[ $stage == suite || $stage == asan ]] && took[$stage]=$((SECONDS - started))
            echo "=== tests/run.sh: $stage ${result[$stage]} in ${took[$stage]} s"
        done
        failed=0
        for stage in suite asan fuzz style; do
            echo "tests/run.sh: $stage ${result[$stage]} ($((took[$stage] / 60)) min $((took[$stage] % 60)) s)"
            [[ ${result[$stage]} == passed ]] || failed=$((failed + 1))
        done
        echo "tests/run.sh: $((4 - failed)) of 4 stages passed, $failed failed, in $((SECONDS / 60)) min $((SECONDS % 60)) s" \
            "(style beside the suite's tests, fuzz beside asan's)"
        [[ $failed -eq 0 ]]
        ;;
    *)
        if [[ "${HOSTKEEPER_SANITIZE:-0}" == 1 ]]; then (asan "$1"); else suite "$1" OFF; fi
        ;;
esac
