# tests/support/script_lib.sh — sourced by the test, e2e, packaging and bench
# scripts: how they report, stop on a broken set-up, and clean up.
#   pass MSG...             prints "PASS: MSG"
#   fail MSG...             prints "FAIL: MSG" (then whatever the script's
#                           fail_details function prints, when it has one) and
#                           exits 1: a check failed
#   skip MSG...             prints "SKIP: MSG" and exits 77 (ctest: skipped)
#   die MSG...              prints "NAME: MSG" on stderr and exits $die_status
#                           (default 2: the set-up failed; NAME is $script_name,
#                           default the script's file name)
#   show FILE               prints FILE between two marker lines
#   need TOOL...            dies unless every TOOL is on PATH
#   bin_dir DIR PROGRAM...  sets $bin to DIR's absolute path; dies unless each
#                           PROGRAM is an executable file there
#   on_exit COMMAND...      a clean-up step: when the script exits, the steps
#                           run newest first, each whatever the others did, with
#                           $exit_status set to the script's status, which is
#                           then kept
# shellcheck shell=bash

pass() { echo "PASS: $*"; }

fail() {
    echo "FAIL: $*"
    if declare -F fail_details >/dev/null; then fail_details; fi
    exit 1
}

skip() {
    echo "SKIP: $*"
    exit 77
}

die() {
    echo "${script_name:-$(basename "$0")}: $*" >&2
    exit "${die_status:-2}"
}

show() {
    echo "---- $1 ----"
    cat "$1"
    echo "---- end of $1 ----"
}

need() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || die "$tool is missing (packaging/deps.sh test installs it)"
    done
}

bin_dir() {
    local program
    bin=$(cd "$1" 2>/dev/null && pwd) || die "BIN_DIR $1 is not a directory"
    shift
    for program in "$@"; do
        [[ -f $bin/$program && -x $bin/$program ]] || die "$bin/$program is missing or not executable"
    done
}

exit_steps=()
# stored FILE: waits up to 10 s for FILE to be non-empty: an archive is
# renamed into the store just after its readers have had all of it.
stored() {
    local _
    for _ in $(seq 1 100); do
        [[ -s $1 ]] && return 0
        sleep 0.1
    done
    return 1
}

on_exit() {
    exit_steps+=("$*")
    trap run_exit_steps EXIT
}

run_exit_steps() {
    exit_status=$?
    local i
    set +e
    for ((i = ${#exit_steps[@]} - 1; i >= 0; i--)); do
        eval "${exit_steps[i]}"
    done
    exit "$exit_status"
}

# free_port: a TCP port on 127.0.0.1 that was free a moment ago.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# nginx_conf_head DIR: the start of a private nginx's configuration, up to
# and including `http {`: in the foreground as one process (daemon off,
# master_process off: no worker needs `user root;` to read a 0700
# directory), its pid, error log and temporary files in DIR (DIR/tmp must
# exist). The caller adds its log format, access log, servers and the
# closing brace.
nginx_conf_head() {
    cat <<CONF
daemon off;
master_process off;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 1024; }
http {
    client_body_temp_path $1/tmp/body;
    proxy_temp_path $1/tmp/proxy;
    fastcgi_temp_path $1/tmp/fastcgi;
    uwsgi_temp_path $1/tmp/uwsgi;
    scgi_temp_path $1/tmp/scgi;
CONF
}
