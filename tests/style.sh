#!/usr/bin/env bash
# tests/style.sh [BUILD_DIR [PART/PARTS]] — the style checks CI runs
# (tests/run.sh's style stage), each on the whole tree:
#   1. clang-format in check mode (.clang-format) on every C and C++ file;
#   2. the include rules: folders depend only on the folders they may
#      (tests/layout/include_graph.py --check);
#   3. shellcheck (.shellcheckrc) on every shell script, warnings and errors;
#   4. clang-tidy (.clang-tidy) on every .cpp of proto/, daemon/ and
#      helper/, from BUILD_DIR's compile_commands.json (default build-style,
#      configured here, never built, without unity: no header is generated,
#      so configuring is all clang-tidy needs). Given a unity tree
#      (HOSTKEEPER_UNITY=ON, as tests/run.sh's suite tree is), it checks
#      that tree's batches instead (tests/layout/tidy_units.py): each batch
#      parses the heavy headers once for its 8 files, a sixth of the time,
#      and the .cpp files it includes are checked as headers are
#      (HeaderFilterRegex), with bugprone-suspicious-include off for the
#      batch's own includes.
# With PART/PARTS (for example 1/2), only that share of the work: checks 1 to
# 3 in part 1, and clang-tidy on every PARTS-th unit from the PART-th, so that
# the parts together are the whole (tests/run.sh runs them beside the tests of
# two stages).
# clang-tidy's static analyzer (clang-analyzer-*) runs in its shallow mode
# (less inlining per path): half the stage's time on this tree, which lets
# it fit beside the tests. HOSTKEEPER_TIDY_ANALYZER=deep runs the analyzer's
# default, deeper mode instead.
# Prints every finding; exits 1 when there is one.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
build=${1:-build-style}
part=${2:-1/1}
[[ $part =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] && ((BASH_REMATCH[1] <= BASH_REMATCH[2])) ||
    { echo "style: PART/PARTS must be like 1/2, not '$part'" >&2; exit 2; }
index=${BASH_REMATCH[1]} parts=${BASH_REMATCH[2]}
analyzer=${HOSTKEEPER_TIDY_ANALYZER:-shallow}
[[ $analyzer == shallow || $analyzer == deep ]] ||
    { echo "style: HOSTKEEPER_TIDY_ANALYZER must be shallow or deep, not '$analyzer'" >&2; exit 2; }
rc=0

if ((index == 1)); then
    mapfile -t sources < <(git ls-files -- '*.cpp' '*.hpp' '*.c' '*.h' | grep -v '^tests/fuzz/corpus/')
    echo "style: clang-format on ${#sources[@]} files"
    if ! clang-format --dry-run --Werror "${sources[@]}"; then
        echo "style: clang-format: run 'clang-format -i' on the files above" >&2
        rc=1
    fi

    echo "style: include rules"
    python3 tests/layout/include_graph.py --check || rc=1

    # The .sh files, and the other files whose first line starts a shell.
    mapfile -t scripts < <({
        git ls-files -- '*.sh'
        git grep -lI '^#!' -- ':!:*.sh' ':!:tests/fuzz/corpus/*' | while read -r file; do
            head -n 1 "$file" | grep -q '^#!.*\<\(ba\)\?sh\>' && echo "$file"
        done
    } | sort -u)
    echo "style: shellcheck on ${#scripts[@]} scripts"
    if ! shellcheck -x -S warning "${scripts[@]}"; then
        echo "style: shellcheck: mend the scripts above" >&2
        rc=1
    fi
fi

tidy_args=()
if grep -qx 'HOSTKEEPER_UNITY:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null &&
    [[ -f $build/compile_commands.json ]]; then
    # The unity tree is the caller's, configured as it builds it.
    mapfile -t units < <(python3 tests/layout/tidy_units.py "$build" . |
        awk -v index_="$index" -v parts="$parts" '(NR - index_) % parts == 0')
    kind="unity batches"
    tidy_args=(--checks=-bugprone-suspicious-include --extra-arg=-Wno-unknown-warning-option)
else
    # Configured every time (a few seconds), so that its commands name
    # every .cpp of the checkout as it is.
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOSTKEEPER_WERROR=ON \
        -DHOSTKEEPER_UNITY=OFF >/dev/null || exit 1
    mapfile -t units < <(git ls-files -- 'proto/*.cpp' 'daemon/*.cpp' 'helper/*.cpp' |
        awk -v index_="$index" -v parts="$parts" '(NR - index_) % parts == 0')
    kind="translation units"
fi
echo "style: clang-tidy on ${#units[@]} $kind (part $part, analyzer $analyzer)"
analyzer_args=()
[[ $analyzer == shallow ]] &&
    analyzer_args=(--extra-arg=-Xclang --extra-arg=-analyzer-config --extra-arg=-Xclang --extra-arg=mode=shallow)
# clang 14 does not detect the coroutine support of libstdc++ 12 that Boost
# 1.74's Asio looks for; told, it parses the daemon's coroutines.
if ! printf '%s\n' "${units[@]}" |
    xargs -P "$(nproc)" -n 1 clang-tidy -p "$build" --quiet "${analyzer_args[@]}" "${tidy_args[@]}" \
        --extra-arg=-DBOOST_ASIO_HAS_CO_AWAIT --extra-arg=-DBOOST_ASIO_HAS_STD_COROUTINE 2>/dev/null; then
    echo "style: clang-tidy found problems (above)" >&2
    rc=1
fi
[[ $rc -eq 0 ]] && echo "style: clean"
exit "$rc"
