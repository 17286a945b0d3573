#!/usr/bin/env bash
# tests/packaging/client_libraries.sh BIN_DIR — the programs Terraform,
# OpenTofu, Docker, git and the user start for each request (the credentials
# helper, the Docker helper, the git helper, hostkeeper) link libstdc++ and
# libgcc statically: loading and relocating the shared ones is most of what a C++
# program costs before main(). Checks that no shared library they need
# brings them back (directly, or through a library such as libtomlplusplus),
# from `ldd`'s list of everything loaded. Sanitizer builds link them
# dynamically by design: skipped there (exit 77).
set -euo pipefail
# shellcheck source=tests/support/script_lib.sh
. "$(dirname "$0")/../support/script_lib.sh"

[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
need ldd
bin_dir "$1" terraform-credentials-hostkeeper docker-credential-hostkeeper git-credential-hostkeeper hostkeeper
# No pipe into grep -q here: with pipefail, grep's early exit fails the pipe.
if grep -q libasan <<<"$(ldd "$bin/hostkeeper")"; then
    skip "a sanitizer build links libstdc++ dynamically"
fi
for program in terraform-credentials-hostkeeper docker-credential-hostkeeper git-credential-hostkeeper hostkeeper; do
    loaded=$(ldd "$bin/$program") || fail "ldd $program failed"
    if grep -E 'libstdc\+\+|libgcc_s' <<<"$loaded"; then
        echo "$loaded"
        fail "$program loads a shared libstdc++ or libgcc_s (above)"
    fi
    pass "$program loads neither libstdc++ nor libgcc_s: $(awk '{print $1}' <<<"$loaded" | tr '\n' ' ')"
done
