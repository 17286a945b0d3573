#!/usr/bin/env bash
# package.sh SOURCE_DIR WORK_DIR [TREE]
#
# Builds the Debian package as packaging/install.sh does (a RelWithDebInfo
# tree configured for /usr, then cpack -G DEB) in TREE (default
# WORK_DIR/build), keeping its logs in WORK_DIR, and checks it: lintian finds
# nothing (overrides shipped in the package carry their reasons), the
# control fields and the file list are what they should be, the binaries are
# stripped, the manual pages render without warnings. Then it unpacks it into
# a throw-away root (dpkg -x) and runs the installed binaries: --version, and
# a real store/get through the installed helper and the hostkeeperd it
# starts, and the installed hostkeeperd with the shipped example configuration.
#
# The tree's compile flags and unity batches are the suite's (tests/run.sh;
# without the tests, the other targets' batches hold the same files), so
# where the suite compiles through ccache this build takes the suite's
# objects from the cache (all but proto's batch with the generated
# version.cpp, which the batch names by its path in TREE): ccache's paths are
# relative, so TREE must be as deep below the sources as the suite's tree
# (ctest passes a directory beside it).
#
# Run it inside tests/support/keyring-env.sh. Exit status: 0 pass, 1 fail, 2 set-up error.
set -euo pipefail

# shellcheck source=../support/script_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/script_lib.sh"
[[ $# -eq 2 || $# -eq 3 ]] || die "usage: $0 SOURCE_DIR WORK_DIR [TREE]"
src=$(cd "$1" && pwd)
work=$2
tree=${3:-$work/build}
[[ -n "${HK_TEST_ROOT:-}" ]] || die "run me through tests/support/keyring-env.sh"
need cmake cpack dpkg-deb dpkg-shlibdeps lintian file man gzip

# --- Build ----------------------------------------------------------------------
mkdir -p "$work"
cmake -S "$src" -B "$tree" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOSTKEEPER_BUILD_TESTS=OFF \
    -DCMAKE_INSTALL_PREFIX=/usr -DHOSTKEEPER_WERROR=ON -DHOSTKEEPER_UNITY=ON >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; fail "cmake configure failed"; }
cmake --build "$tree" -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; fail "build failed"; }
rm -f "$tree"/hostkeeper_*.deb
(cd "$tree" && cpack -G DEB) >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail "cpack failed"; }

version=$(sed -n 's/^project(hostkeeper VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
arch=$(dpkg --print-architecture)
deb=$tree/hostkeeper_${version}-1_${arch}.deb
[[ -f $deb ]] || { ls "$tree"; fail "cpack did not make $deb"; }
pass "cpack made $(basename "$deb")"

# --- lintian ----------------------------------------------------------------------
lintian --pedantic --display-info --fail-on error,warning,info,pedantic "$deb" >"$work/lintian.out" 2>&1 ||
    { cat "$work/lintian.out"; fail "lintian failed"; }
if grep -E '^[EWIPX]: ' "$work/lintian.out"; then fail "lintian reports the tags above"; fi
pass "lintian (pedantic, info included): no tags; overrides: $(grep -vc '^#' "$src/packaging/debian/lintian-overrides")"

# --- Control fields ----------------------------------------------------------------
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == hostkeeper ]] || fail "Package is '$(field Package)'"
[[ $(field Version) == "$version-1" ]] || fail "Version is '$(field Version)'"
[[ $(field Architecture) == "$arch" ]] || fail "Architecture is '$(field Architecture)'"
[[ $(field Recommends) == *gnome-keyring* && $(field Recommends) == *bash-completion* ]] ||
    fail "Recommends is '$(field Recommends)' (gnome-keyring and bash-completion wanted)"
[[ $(field Section) == utils ]] || fail "Section is '$(field Section)'"
[[ -n $(field Maintainer) ]] || fail "no Maintainer"
depends=$(field Depends)
for lib in libc6 libidn2-0 libsecret-1-0 libglib2.0-0 libsystemd0 libcurl4 libzip4 libssl3; do
    [[ ", $depends," =~ ", $lib"[\ ,] ]] || fail "Depends lacks $lib: $depends"
done
pass "control fields: $(field Package) $(field Version) $(field Architecture); Depends: $depends"

# Maintainer scripts: prerm stops the daemons on removal (removal.sh runs it
# for real), postinst/postrm reload user managers.
control=$work/control
rm -rf "$control"
dpkg-deb -e "$deb" "$control"
for script in prerm postinst postrm; do
    [[ -x $control/$script ]] || fail "the package has no executable $script"
    sh -n "$control/$script" || fail "$script has syntax errors"
done
grep -q 'stop hostkeeperd.socket hostkeeperd.service' "$control/prerm" || fail "prerm does not stop the units"
grep -q 'port_units="hostkeeper-port.socket hostkeeper-port-ipv6.socket"' "$control/postinst" ||
    fail "postinst does not enable the registry port's units"
grep -q 'deb-systemd-helper enable' "$control/postinst" || fail "postinst does not enable the registry port's units"
pass "maintainer scripts: prerm, postinst, postrm"

# --- File list ----------------------------------------------------------------------
expected="./usr/bin/docker-credential-hostkeeper
./usr/bin/git-credential-hostkeeper
./usr/bin/hostkeeper
./usr/bin/hostkeeperd
./usr/bin/terraform-credentials-hostkeeper
./usr/lib/systemd/system/hostkeeper-port-ipv6.socket
./usr/lib/systemd/system/hostkeeper-port.service
./usr/lib/systemd/system/hostkeeper-port.socket
./usr/lib/systemd/user/hostkeeperd.service
./usr/lib/systemd/user/hostkeeperd.socket
./usr/libexec/hostkeeper/hostkeeper-portd
./usr/share/bash-completion/completions/hostkeeper
./usr/share/doc/hostkeeper/PROTOCOL.md
./usr/share/doc/hostkeeper/README.md
./usr/share/doc/hostkeeper/changelog.Debian.gz
./usr/share/doc/hostkeeper/config.toml.example
./usr/share/doc/hostkeeper/copyright
./usr/share/doc/hostkeeper/docs/manual/README.md
./usr/share/doc/hostkeeper/docs/manual/ci.md
./usr/share/doc/hostkeeper/docs/manual/commands.md
./usr/share/doc/hostkeeper/docs/manual/configuration.md
./usr/share/doc/hostkeeper/docs/manual/docker-podman.md
./usr/share/doc/hostkeeper/docs/manual/exit-codes.md
./usr/share/doc/hostkeeper/docs/manual/fleet.md
./usr/share/doc/hostkeeper/docs/manual/git.md
./usr/share/doc/hostkeeper/docs/manual/helper.md
./usr/share/doc/hostkeeper/docs/manual/install.md
./usr/share/doc/hostkeeper/docs/manual/keyrings.md
./usr/share/doc/hostkeeper/docs/manual/pass.md
./usr/share/doc/hostkeeper/docs/manual/registries.md
./usr/share/doc/hostkeeper/docs/manual/registry-cache.md
./usr/share/doc/hostkeeper/docs/manual/removal.md
./usr/share/doc/hostkeeper/docs/manual/security.md
./usr/share/doc/hostkeeper/docs/manual/setup.md
./usr/share/doc/hostkeeper/docs/manual/token-commands.md
./usr/share/doc/hostkeeper/docs/manual/troubleshooting.md
./usr/share/lintian/overrides/hostkeeper
./usr/share/man/man1/docker-credential-hostkeeper.1.gz
./usr/share/man/man1/git-credential-hostkeeper.1.gz
./usr/share/man/man1/hostkeeper.1.gz
./usr/share/man/man1/terraform-credentials-hostkeeper.1.gz
./usr/share/man/man5/hostkeeper.toml.5.gz
./usr/share/man/man8/hostkeeper-portd.8.gz
./usr/share/man/man8/hostkeeperd.8.gz"
actual=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | grep -v '/$' | LC_ALL=C sort)
[[ $actual == "$expected" ]] || { diff <(echo "$expected") <(echo "$actual") || true; fail "the file list differs (- expected, + actual)"; }
pass "file list: $(wc -l <<<"$actual") files where they belong"

# --- Unpacked into a throw-away root ------------------------------------------------
root=$HK_TEST_ROOT/pkgroot
rm -rf "$root"
dpkg -x "$deb" "$root"
for program in hostkeeper hostkeeperd terraform-credentials-hostkeeper docker-credential-hostkeeper \
    git-credential-hostkeeper; do
    file "$root/usr/bin/$program" | grep -q ', stripped' || fail "$program is not stripped: $(file "$root/usr/bin/$program")"
    got=$("$root/usr/bin/$program" --version)
    # The Docker helper's line has the form of the upstream helpers' own.
    want="$program $version"
    [[ $program != docker-credential-hostkeeper ]] || want="$program (hostkeeper) $version"
    [[ $got == "$want" ]] || fail "$program --version says '$got'"
done
portd=$root/usr/libexec/hostkeeper/hostkeeper-portd
file "$portd" | grep -q ', stripped' || fail "hostkeeper-portd is not stripped: $(file "$portd")"
[[ $("$portd" --version) == "hostkeeper-portd $version" ]] || fail "hostkeeper-portd --version says '$("$portd" --version)'"
pass "installed binaries are stripped and report version $version"
grep -qx "ExecStart=/usr/bin/hostkeeperd" "$root/usr/lib/systemd/user/hostkeeperd.service" ||
    fail "hostkeeperd.service does not start /usr/bin/hostkeeperd"
grep -qx "ExecStart=/usr/libexec/hostkeeper/hostkeeper-portd" "$root/usr/lib/systemd/system/hostkeeper-port.service" ||
    fail "hostkeeper-port.service does not start /usr/libexec/hostkeeper/hostkeeper-portd"
head -1 "$root/usr/share/doc/hostkeeper/copyright" | grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
    fail "copyright is not machine-readable (DEP-5)"
bash -n "$root/usr/share/bash-completion/completions/hostkeeper" || fail "the bash completion has syntax errors"
for page in "$root"/usr/share/man/man*/*.gz; do
    gzip -t "$page" || fail "$page is not valid gzip"
    warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
    [[ -z $warnings ]] || fail "$(basename "$page") renders with warnings: $warnings"
    LC_ALL=C.UTF-8 man -l "$page" 2>/dev/null | grep -q NAME || fail "$(basename "$page") has no NAME section"
done
pass "unit ExecStart, DEP-5 copyright, completion syntax, manual pages render cleanly"

# A real store and get through the installed helper; it starts the installed
# hostkeeperd (next to itself) on demand.
run_dir=$HK_TEST_ROOT/run/pkg
mkdir -p "$run_dir" && chmod 700 "$run_dir"
socket=$run_dir/socket
token=pkg-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '{"token":"%s"}' "$token" | "$root/usr/bin/terraform-credentials-hostkeeper" --socket="$socket" store pkg.example.com ||
    fail "the installed helper could not store"
[[ $("$root/usr/bin/terraform-credentials-hostkeeper" --socket="$socket" get pkg.example.com) == "{\"token\":\"$token\"}" ]] ||
    fail "the installed helper does not give the token back"
pid=$("$root/usr/bin/hostkeeper" --socket "$socket" status --json | sed -n 's/.*"pid": \([0-9]*\).*/\1/p' | head -1)
[[ $(readlink "/proc/$pid/exe") == "$root/usr/bin/hostkeeperd" ]] ||
    fail "the daemon that answered is $(readlink "/proc/$pid/exe"), not the installed one"
# The installed Docker helper (no options: the socket from the environment).
printf '{"ServerURL":"pkg.example.com:5000","Username":"pkg","Secret":"%s"}' "$token" |
    HOSTKEEPER_SOCKET=$socket "$root/usr/bin/docker-credential-hostkeeper" store || fail "the installed Docker helper could not store"
[[ $(printf 'pkg.example.com:5000' | HOSTKEEPER_SOCKET=$socket "$root/usr/bin/docker-credential-hostkeeper" get) == \
    "{\"ServerURL\":\"pkg.example.com:5000\",\"Username\":\"pkg\",\"Secret\":\"$token\"}" ]] ||
    fail "the installed Docker helper does not give the credentials back"
printf 'pkg.example.com:5000' | HOSTKEEPER_SOCKET=$socket "$root/usr/bin/docker-credential-hostkeeper" erase ||
    fail "the installed Docker helper could not erase"
# The installed git helper answers the host's Terraform token (git_username
# oauth2 by default).
[[ $(printf 'protocol=https\nhost=pkg.example.com\n' | HOSTKEEPER_SOCKET=$socket "$root/usr/bin/git-credential-hostkeeper" get) == \
    "username=oauth2"$'\n'"password=$token" ]] ||
    fail "the installed git helper does not answer the Terraform token"
"$root/usr/bin/hostkeeper" --socket "$socket" stop >/dev/null || fail "the installed hostkeeper could not stop the daemon"
pass "store and get through the installed helpers (Terraform's, Docker's and git's) and the installed hostkeeperd they started"

# The installed daemon runs with the shipped example configuration and still
# has the token (it was in the keyring, not in memory).
"$root/usr/bin/hostkeeperd" --config "$root/usr/share/doc/hostkeeper/config.toml.example" --socket "$socket" \
    >"$run_dir/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 1 200); do [[ -S $socket ]] && break; sleep 0.05; done
[[ -S $socket ]] || { kill "$daemon" 2>/dev/null; cat "$run_dir/daemon.log"; fail "hostkeeperd did not start with config.toml.example"; }
got=$("$root/usr/bin/terraform-credentials-hostkeeper" --socket="$socket" get pkg.example.com)
kill "$daemon"; wait "$daemon" || true
[[ $got == "{\"token\":\"$token\"}" ]] || fail "with config.toml.example, get gave something else"
pass "the installed hostkeeperd runs with the shipped config.toml.example and serves the keyring's token"
echo "PASS: the Debian package"
