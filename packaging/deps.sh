#!/usr/bin/env bash
# packaging/deps.sh build|test|bench — installs the Debian 12 packages hostkeeper
# needs to build and package (dpkg-dev: dpkg-shlibdeps for cpack's Depends), to
# test (lintian, file, man-db for the package test; gnupg for the test registry's
# provider signatures; pass, git and gpg-agent for the pass backend's tests; systemd for
# systemd-analyze and systemd --user, dbus-user-session and passwd for the
# user-manager test; dunst, xvfb and libglib2.0-bin (gdbus) for the desktop
# notification test; clang for the fuzz targets; ccache and ninja-build,
# through which tests/run.sh compiles), and to benchmark. Runs apt-get as root, or
# through sudo. Quiet when everything is already there.
set -euo pipefail

build_packages=(build-essential cmake pkg-config libboost-dev nlohmann-json3-dev libsecret-1-dev
    libspdlog-dev libcli11-dev libidn2-dev libsystemd-dev libtomlplusplus-dev libcurl4-openssl-dev libssl-dev
    libzip-dev catch2 dpkg-dev libgpgme-dev)
runtime_packages=(gnome-keyring dbus-user-session libsecret-tools gnupg pass)
test_packages=(dbus dbus-user-session gnome-keyring libsecret-tools openssl libssl-dev python3 util-linux systemd
    procps curl passwd lintian file man-db gzip gnupg iproute2 pass git gpg-agent podman docker-registry
    apache2-utils ccache ninja-build dunst xvfb libglib2.0-bin nginx)
# The fuzz targets (tests/fuzz): clang with libFuzzer's runtime, and
# llvm-symbolizer for readable stacks; the style stage: clang-format,
# clang-tidy and shellcheck.
fuzz_packages=(clang libclang-rt-14-dev llvm clang-format clang-tidy shellcheck)
# git: its credential-cache is the start-up benchmark's peer (tests/bench/startup.sh),
# and with its contrib libsecret helper (built by tests/bench/consumers.sh from
# the source Debian's git ships, with build-essential and libsecret-1-dev) the
# git helper's peers;
# golang-docker-credential-helpers: docker-credential-secretservice and -pass, the
# Docker helper's peers (tests/bench/consumers.sh).
bench_packages=(hyperfine git golang-docker-credential-helpers)

case "${1:-build}" in
    build) wanted=("${build_packages[@]}" "${runtime_packages[@]}") ;;
    test) wanted=("${build_packages[@]}" "${test_packages[@]}" "${fuzz_packages[@]}") ;;
    bench) wanted=("${build_packages[@]}" "${test_packages[@]}" "${bench_packages[@]}") ;;
    *) echo "usage: $0 build|test|bench" >&2; exit 2 ;;
esac

# git's own tests for external credential helpers (t/t0303, run by
# tests/e2e/git_conformance.sh): the t/ directory of the source of the git
# installed, from Debian (a deb-src entry is added beside the deb ones when
# there is none), kept in $git_tests. Only for `test`.
git_tests=/var/cache/hostkeeper-tests/git-t
git_test_source() {
    local version tmp
    version=$(dpkg-query -W -f='${Version}' git)
    [[ -f $git_tests/$version/t/t0303-credential-external.sh ]] && return 0
    echo "Fetching the source of git $version (its t/ directory, for tests/e2e/git_conformance.sh)"
    if ! apt-cache showsrc git 2>/dev/null | grep -qx "Version: $version"; then
        {
            sed -n 's/^Types:.*\bdeb\b.*/Types: deb-src/;/^Types:/,/^$/p' /etc/apt/sources.list.d/*.sources 2>/dev/null || true
        } | "${sudo[@]}" tee /etc/apt/sources.list.d/hostkeeper-tests-src.sources >/dev/null
        if [[ -f /etc/apt/sources.list ]]; then
            sed -n 's/^deb /deb-src /p' /etc/apt/sources.list |
                "${sudo[@]}" tee /etc/apt/sources.list.d/hostkeeper-tests-src.list >/dev/null
        fi
        "${sudo[@]}" apt-get update -qq
    fi
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get source -qq --download-only "git=$version" >/dev/null 2>&1 &&
        dpkg-source --no-check -x ./*.dsc src >/dev/null) || {
        rm -rf "$tmp"
        echo "deps.sh: could not fetch git $version's source (apt-get source git)" >&2
        return 1
    }
    "${sudo[@]}" mkdir -p "$git_tests/$version"
    "${sudo[@]}" rm -rf "$git_tests/$version/t"
    "${sudo[@]}" cp -r "$tmp/src/t" "$git_tests/$version/t"
    rm -rf "$tmp"
}

missing=()
for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

sudo=()
if [[ ${#missing[@]} -gt 0 && $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "Installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [[ ${1:-build} == test ]]; then
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    git_test_source
fi
