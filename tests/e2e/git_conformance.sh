#!/usr/bin/env bash
# git_conformance.sh BIN_DIR
#
# git's own tests for external credential helpers, t/t0303-credential-external.sh
# of the git installed (its source's t/ directory, fetched from Debian by
# `packaging/deps.sh test` into /var/cache/hostkeeper-tests/git-t/VERSION, or
# $HK_GIT_TESTS), run by the installed git (GIT_TEST_INSTALLED=/usr/bin) with
# GIT_TEST_CREDENTIAL_HELPER=hostkeeper: BIN_DIR/git-credential-hostkeeper on
# PATH, a hostkeeperd started first and the real keyring (gnome-keyring
# on a private D-Bus, tests/support/keyring-env.sh, or pass,
# tests/support/pass-env.sh). Every case must pass; none may be skipped.
# The timeout cases (GIT_TEST_CREDENTIAL_HELPER_TIMEOUT) are for helpers that
# forget after a configurable time, as credential-cache does; hostkeeper keeps
# what git stores until git erases it or its password_expiry_utc passes, so
# they do not apply and are not run.
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 git's tests absent.
set -euo pipefail

# shellcheck disable=SC2034  # read by keyring_world.sh
e2e_name=e2e-git-conformance
# shellcheck source-path=SCRIPTDIR
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
support=$(cd "$here/../support" && pwd)
# shellcheck source=../support/script_lib.sh
source "$support/script_lib.sh"

[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
bin_dir "$1" git-credential-hostkeeper hostkeeperd hostkeeper
need git perl diff

version=$(dpkg-query -W -f='${Version}' git)
tests=${HK_GIT_TESTS:-/var/cache/hostkeeper-tests/git-t/$version/t}
[[ -f $tests/t0303-credential-external.sh && -f $tests/lib-credential.sh ]] ||
    skip "git $version's own tests are not at $tests (packaging/deps.sh test fetches them)"

# shellcheck source=keyring_world.sh
source "$here/keyring_world.sh"

# A copy of t/ inside a tree of its own, as test-lib.sh wants it: beside it
# GIT-BUILD-OPTIONS, templates/blt (the installed git's templates), and a
# t/helper/test-tool that t0303 never runs (any use of it fails loudly).
tree=$root/git
rm -rf "$tree"
mkdir -p "$tree"
cp -r "$tests" "$tree/t"
mkdir -p "$tree/t/helper"
printf '#!/bin/sh\necho "test-tool $* is not built here" >&2\nexit 127\n' >"$tree/t/helper/test-tool"
chmod +x "$tree/t/helper/test-tool"
[[ -d /usr/share/git-core/templates ]] || die "git's templates are not at /usr/share/git-core/templates"
mkdir -p "$tree/templates"
ln -s /usr/share/git-core/templates "$tree/templates/blt"
cat >"$tree/GIT-BUILD-OPTIONS" <<OPTIONS
SHELL_PATH='/bin/sh'
TEST_SHELL_PATH='/bin/sh'
PERL_PATH='$(command -v perl)'
DIFF='diff'
PYTHON_PATH='$(command -v python3 || true)'
TAR='tar'
X=''
OPTIONS

unset GIT_ASKPASS SSH_ASKPASS GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT
export PATH=$bin:$PATH
export GIT_TEST_INSTALLED=/usr/bin GIT_TEST_CREDENTIAL_HELPER=hostkeeper
# test-lib.sh otherwise preloads glibc's malloc checker into every program it
# runs, the helper too, which an AddressSanitizer build refuses.
export TEST_NO_MALLOC_CHECK=1
unset GIT_TEST_CREDENTIAL_HELPER_TIMEOUT GIT_TEST_CREDENTIAL_HELPER_SETUP

# test-lib.sh gives each test a HOME of its own (and unsets XDG_CONFIG_HOME),
# where no keyring or configuration is: the helper is served by the daemon
# started here, on this world's socket (XDG_RUNTIME_DIR, which it keeps).
"$bin/hostkeeper" list >"$root/list.out" 2>&1 || { show "$root/list.out"; fail "hostkeeper list failed"; }

out=$root/t0303.out
rc=0
(cd "$tree/t" && sh ./t0303-credential-external.sh --verbose --root="$root/trash") >"$out" 2>&1 ||
    rc=$?
grep -E '^(ok|not ok) ' "$out" || true
# TAP as git's test-lib writes it: "ok N - NAME", "ok N # skip NAME", "not ok N - NAME".
passed=$(grep -cE '^ok [0-9]+ - ' "$out" || true)
skipped=$(grep -cE '^ok [0-9]+ # skip' "$out" || true)
failed=$(grep -c '^not ok ' "$out" || true)
[[ $rc == 0 && $failed == 0 ]] || { show "$out"; fail "git's t0303 failed ($failed failed, exit $rc)"; }
[[ $skipped == 0 ]] || { show "$out"; fail "git's t0303 skipped $skipped cases"; }
# All of lib-credential.sh's helper_test cases ran.
expected=$(sed -n '/^helper_test() {/,/^}/p' "$tests/lib-credential.sh" | grep -c 'test_expect_success')
[[ $expected -ge 1 && $passed == "$expected" ]] ||
    { show "$out"; fail "git's t0303 passed $passed cases, its helper_test has $expected"; }
pass "git $version's t0303-credential-external.sh: all $passed cases with GIT_TEST_CREDENTIAL_HELPER=hostkeeper"
