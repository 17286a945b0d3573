#!/usr/bin/env bash
# Runs COMMAND in a mount namespace of its own with private propagation, so
# that a test may mount a tmpfs on its own directory (a full cache directory)
# and nothing of it reaches the machine's mounts. Root only: exit 77 (ctest's
# SKIP) elsewhere.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: mount-env.sh needs root (mount -t tmpfs)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: unshare is not installed"; exit 77; }
if ! unshare -m --propagation private true 2>/dev/null; then
    echo "SKIP: cannot make a mount namespace (unshare -m)"
    exit 77
fi
exec unshare -m --propagation private "$@"
