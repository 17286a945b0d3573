# own_runtime.sh: sourced first, as `source own_runtime.sh "$0" "$@"`, by the
# test worlds that make an XDG_RUNTIME_DIR of their own (keyring-env.sh,
# pass-env.sh). hostkeeper takes the uid's own /run/user/UID before
# XDG_RUNTIME_DIR (proto/socket_path.hpp), so where the real user has one
# (a logged-in desktop), a world would reach the real user's daemon. As
# root, the world's script runs again in a mount namespace of its own with an
# empty tmpfs on /run/user; otherwise world_socket, called once
# XDG_RUNTIME_DIR is the world's, names the world's socket in
# HOSTKEEPER_SOCKET.
# shellcheck shell=bash
if [[ -d /run/user/$(id -u) && ${HK_OWN_RUNTIME_HIDDEN:-} != 1 ]]; then
    if [[ $(id -u) -eq 0 ]] && unshare --mount --propagation private true 2>/dev/null; then
        exec env HK_OWN_RUNTIME_HIDDEN=1 unshare --mount --propagation private \
            /bin/sh -c 'mount -t tmpfs -o mode=0755,size=1m tmpfs /run/user && exec "$@"' sh "$@"
    fi
    hk_world_socket=1
fi
world_socket() {
    [[ ${hk_world_socket:-} != 1 ]] || export HOSTKEEPER_SOCKET="$XDG_RUNTIME_DIR/hostkeeper/socket"
}
