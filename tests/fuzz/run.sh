#!/usr/bin/env bash
# tests/fuzz/run.sh [BUILD_DIR] [SECONDS_PER_TARGET] [TARGET...]
# Builds the libFuzzer targets with clang (ASan + UBSan + coverage) in
# BUILD_DIR (default build-fuzz), then runs each target (default: all) for
# SECONDS_PER_TARGET (default 60), starting from its seeds in
# tests/fuzz/corpus/TARGET. New inputs go to BUILD_DIR/fuzz-corpus/TARGET,
# never into the repository; a crash, leak, timeout or broken invariant leaves
# its input in BUILD_DIR/fuzz-artifacts/TARGET and makes the script fail.
#   HOSTKEEPER_FUZZ_JOBS=N   targets run N at a time (default 1)
#   HOSTKEEPER_FUZZ_MAX_LEN  largest input in bytes (default 4096)
#   HOSTKEEPER_FUZZ_BUILD_ONLY=1  builds the targets and runs none
#   HOSTKEEPER_FUZZ_BUDGET=S one budget for the whole run instead: the targets
#                            share S seconds of wall time, each running
#                            S * JOBS / TARGETS seconds (at least 5)
# See docs/FUZZING.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
source=$PWD
build=${1:-build-fuzz}
seconds=${2:-60}
shift $(($# > 2 ? 2 : $#))
jobs=${HOSTKEEPER_FUZZ_JOBS:-1}
max_len=${HOSTKEEPER_FUZZ_MAX_LEN:-4096}

for tool in clang clang++; do
    command -v "$tool" >/dev/null || { echo "fuzz: $tool is not installed (packaging/deps.sh test installs it)" >&2; exit 1; }
done

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -DHOSTKEEPER_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOSTKEEPER_WERROR=ON "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
[[ ${HOSTKEEPER_FUZZ_BUILD_ONLY:-0} == 1 ]] && exit 0
build=$(cd "$build" && pwd)

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets <"$build/fuzz_targets.txt"
fi
if [[ -n ${HOSTKEEPER_FUZZ_BUDGET:-} ]]; then
    seconds=$((HOSTKEEPER_FUZZ_BUDGET * jobs / ${#targets[@]}))
    ((seconds >= 5)) || seconds=5
    echo "fuzz: a budget of ${HOSTKEEPER_FUZZ_BUDGET} s for ${#targets[@]} targets, $jobs at a time: ${seconds} s each"
fi

logs=$build/fuzz-logs
rm -rf "$logs"
mkdir -p "$logs"
touch "$logs/started"

run_one() {
    local target=$1
    local corpus=$build/fuzz-corpus/$target artifacts=$build/fuzz-artifacts/$target
    local seeds=$source/tests/fuzz/corpus/$target
    [[ -d $seeds ]] || { echo "fuzz: no seeds in $seeds" >"$logs/$target.log"; return 1; }
    mkdir -p "$corpus" "$artifacts"
    # Leaks are findings too (detect_leaks); a UBSan report aborts
    # (-fno-sanitize-recover=all in the build) and is kept as a crash.
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$build/bin/$target" "$corpus" "$seeds" -max_total_time="$seconds" -max_len="$max_len" \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
        >"$logs/$target.log" 2>&1
}
export -f run_one
export build source seconds max_len logs

printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$1" || echo "$1" >>"$0/failed"' "$logs" {}

printf '\n%-26s %8s %12s %8s  %s\n' target seconds executions corpus result
failed=0
for target in "${targets[@]}"; do
    log=$logs/$target.log
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    size=$(find "$build/fuzz-corpus/$target" -type f 2>/dev/null | wc -l)
    result=ok
    if grep -qx "$target" "$logs/failed" 2>/dev/null; then
        failed=$((failed + 1))
        repro=$(find "$build/fuzz-artifacts/$target" -type f -newer "$logs/started" | head -1)
        result="FAILED: $(grep -m1 -E '^==[0-9]+==ERROR|^SUMMARY|runtime error|fuzz invariant|deadly signal|timeout' "$log" || echo 'see log')"
        result+=$'\n'"    reproducer: ${repro:-none} (log: $log; replay: $build/bin/$target ${repro:-INPUT})"
    fi
    printf '%-26s %8s %12s %8s  %s\n' "$target" "${took:-?}" "${execs:-?}" "$size" "$result"
done
echo "fuzz: ${#targets[@]} targets, $((${#targets[@]} - failed)) passed, $failed failed (${seconds}s each)"
[[ $failed -eq 0 ]]
