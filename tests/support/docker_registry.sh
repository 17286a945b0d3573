# tests/support/docker_registry.sh — sourced by the end-to-end scripts that
# need a real OCI registry: Debian's docker-registry (distribution 2.8) on
# loopback, with TLS from the suite's throw-away CA and htpasswd Basic auth.
# Uses script_lib.sh's fail and show.
# Sets: docker_registry_pid (the last one started).
# shellcheck shell=bash

docker_registry_pid=

# docker_registry_config FILE DATA ADDR CERT KEY HTPASSWD: its configuration
# (storage under DATA, listening on ADDR only, access log in its log).
docker_registry_config() {
    cat >"$1" <<YML
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $2
http:
  addr: $3
  secret: hk-test-$(openssl rand -hex 8)
  tls:
    certificate: $4
    key: $5
auth:
  htpasswd:
    realm: hostkeeper-test
    path: $6
YML
}

# docker_registry_start CONFIG LOG URL CA: starts it (its pid in
# docker_registry_pid, its output appended to LOG) and waits until URL/v2/
# answers 401 (it wants credentials); fails when it dies, or does not answer
# so within 20 s.
docker_registry_start() {
    docker-registry serve "$1" >>"$2" 2>&1 &
    docker_registry_pid=$!
    local _ code
    for _ in $(seq 1 200); do
        kill -0 "$docker_registry_pid" 2>/dev/null || { show "$2"; fail "docker-registry died at start-up"; }
        code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$4" "$3/v2/" || true)
        [[ $code == 401 ]] && return 0
        sleep 0.1
    done
    show "$2"
    fail "docker-registry did not answer 401 on $3/v2/"
}
