#!/usr/bin/env bash
# request_walk.sh BIN_DIR: the walk of one registry request through the
# registry port, file by file (docs/DEVELOPMENT.md, "A request's walk").
#
# BIN_DIR holds a walk build's hostkeeperd (cmake -DHOSTKEEPER_WALK=ON:
# every function records its entry, tests/walk/walk_trace.c) beside
# hostkeeper, terraform-credentials-hostkeeper and hostkeeper-portd (any
# build's). It runs inside the worlds of the end-to-end tests:
#   tests/support/port-env.sh tests/support/keyring-env.sh tests/walk/request_walk.sh BIN_DIR
# With the test registry's host set up for the registry cache and its
# documents cached, it records hostkeeperd while one warm request
# (a module's versions, answered from the cache) and one cold request (a
# provider's versions, fetched upstream) go through the port, and prints
# each walk (tests/walk/walk.py: files, stays, returns, folders).
#   HK_WALK_LIST=1  also lists each walk's stays
set -euo pipefail
e2e_name=walk
# shellcheck disable=SC2034  # read by lib.sh
registry_args=(--modules acme/hello/null --providers acme/thing)
walk_dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../e2e/lib.sh
source "$walk_dir/../e2e/lib.sh"
hk=$bin/hostkeeper
need curl addr2line
[[ -n ${HK_REGISTRY_PORT:-} ]] || die "run me through tests/support/port-env.sh"

export HOSTKEEPER_WALK_TRACE=$root/walk.trace
printf '{"token":"%s"}' "$TOKEN" | "$helper" store "$host" || fail "storing the token for $host failed"
"$hk" setup --registry-cache >"$root/setup.out" 2>&1 || { show "$root/setup.out"; fail "setup --registry-cache failed"; }
"$helper" get "$host" >/dev/null || fail "the helper's get of $host failed"
base=http://127.0.0.1:$HK_REGISTRY_PORT/v1/$host
warm_url=$base/modules/acme/hello/null/versions
cold_url=$base/providers/acme/thing/versions

status() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$1"; }
for _ in $(seq 1 100); do
    [[ $(status "$warm_url") == 200 ]] && break
    sleep 0.1
done
[[ $(status "$warm_url") == 200 ]] || fail "the registry port does not answer $warm_url with 200"
daemon=$(pgrep -n -f "^$bin/hostkeeperd") || fail "no hostkeeperd of $bin runs"

# walk NAME URL: records the daemon while URL is asked, and prints the walk.
walk() {
    rm -f "$HOSTKEEPER_WALK_TRACE"
    kill -USR2 "$daemon"
    sleep 0.2
    [[ $(status "$2") == 200 ]] || fail "$2 was not answered with 200"
    sleep 0.2
    kill -USR2 "$daemon"
    for _ in $(seq 1 50); do [[ -s $HOSTKEEPER_WALK_TRACE ]] && break; sleep 0.1; done
    local list=()
    [[ ${HK_WALK_LIST:-} == 1 ]] && list=(--list)
    echo "$1 request ($2):"
    python3 "$walk_dir/walk.py" "${list[@]}" "$bin/hostkeeperd" "$HOSTKEEPER_WALK_TRACE" "$walk_dir/../.."
}
walk warm "$warm_url"
walk cold "$cold_url"
