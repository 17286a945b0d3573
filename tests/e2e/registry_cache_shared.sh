#!/usr/bin/env bash
# registry_cache_shared.sh BIN_DIR
#
# End to end: two real users in one group share one archive directory
# (registry_cache.archive_dir, 2770), each through their own hostkeeperd
# and the real terraform, over the registry port of a real hostkeeper-portd
# (support/port-env.sh), from a public loopback HTTPS registry
# (https_registry.py --public). Each user has a world of their own
# (support/keyring-env.sh run as that user: home, runtime directory, D-Bus
# session and gnome-keyring). Checks:
#   1. concurrent inits from both users succeed; the shared directory holds
#      the provider package once (0440, the directory's group) and each
#      user's module archive under modules/UID/;
#   2. a package one user stored is served to the other, verified (hashed
#      against its name), without another download;
#   3. a package one user rewrote under the other's key is refused by the
#      other's daemon (counted as rejected), removed and downloaded again:
#      terraform, which checks the registry's hashes, installs it;
#   4. eviction while another daemon serves a file: a file under a shared
#      lock on its byte of DIR/.lock (as a serving daemon holds one)
#      survives the other user's eviction, everything that user may remove
#      goes, and once the lock is gone the cap is met;
#   5. a directory with a bad mode (0777) is refused with the documented
#      message in `hostkeeper status`, and init still works (passed through);
#   6. a member plants directories under provider packages' names (an empty
#      one, and one with a file the other member cannot remove): the other
#      member's inits succeed, the directories are removed or moved aside
#      and the packages stored in their place;
#   7. a member's sparse files (25 of 2 GiB in their own module directory,
#      a few blocks of disk) do not make the other member's daemon evict:
#      the cap counts allocated blocks;
#   8. a member holding a write lock on all of DIR/.lock: the other member's
#      init still succeeds (every lookup a miss: the package is downloaded
#      again), without waiting on the lock.
#
# Run it inside support/port-env.sh, as root (useradd, setpriv):
#   tests/support/port-env.sh tests/e2e/registry_cache_shared.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (not root, no
# terraform, or terraform not on linux_amd64 or darwin_arm64).
# shellcheck disable=SC2016  # sh -c scripts take their arguments as $1, $2...
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
support=$(cd "$here/../support" && pwd)
# shellcheck source=../support/script_lib.sh
source "$support/script_lib.sh"

[[ $# -eq 1 ]] || die "usage: $0 BIN_DIR"
[[ $(id -u) -eq 0 ]] || skip "two real users share the directory: run me as root (useradd, setpriv)"
terraform=/usr/local/bin/terraform
[[ -x $terraform ]] || terraform=$(command -v terraform) || skip "terraform is not installed; the test needs it"
need useradd userdel groupadd groupdel setpriv curl python3 openssl
bin_dir "$1" hostkeeperd hostkeeper terraform-credentials-hostkeeper
bin=${bin:?}  # set by bin_dir
[[ -n ${HK_REGISTRY_PORT:-} && -n ${HOSTKEEPER_PORT_SOCKET:-} ]] || die "run me through tests/support/port-env.sh"
tf_platform=$("$terraform" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["platform"])')
case $tf_platform in
    linux_amd64 | darwin_arm64) ;;
    *) skip "terraform runs on $tf_platform; the test registry serves linux_amd64 and darwin_arm64" ;;
esac

# Everything both users read lives under a world-traversable directory.
work=$(mktemp -d /tmp/hk-e2e-shared-XXXXXX)
chmod 0755 "$work"
tag=$(basename "$work" | tr -dc 'a-z0-9' | tail -c 6)
group=hksh$tag
users=("hksha$tag" "hkshb$tag")
worlds=()
cleanup() {
    local user pid
    rm -f "$work"/*/held*  # lock holders (lock_bytes) end
    for user in "${users[@]}"; do
        if [[ -s $work/$user/world.env ]]; then as "$user" "$bin/hostkeeper" stop >/dev/null 2>&1 || true; fi
        rm -f "$work/$user/alive"
    done
    for pid in ${worlds[@]+"${worlds[@]}"}; do wait "$pid" 2>/dev/null || true; done
    [[ -n ${registry_pid:-} ]] && { kill "$registry_pid" 2>/dev/null || true; wait "$registry_pid" 2>/dev/null || true; }
    for user in "${users[@]}"; do userdel "$user" 2>/dev/null || true; done
    groupdel "$group" 2>/dev/null || true
    [[ ${exit_status:-0} == 0 ]] && rm -rf "$work"
    [[ ${exit_status:-0} == 0 ]] || echo "kept for inspection: $work"
}
on_exit cleanup

groupadd "$group" || die "groupadd failed"
for user in "${users[@]}"; do
    useradd --system --no-create-home --home-dir "$work/$user" --shell /usr/sbin/nologin -G "$group" "$user" ||
        die "useradd $user failed"
done
uid_of() { id -u "$1"; }

# as_user USER COMMAND...: COMMAND as USER (its own groups: ours among
# them), trusting the test CA only.
as_user() {
    local user=$1
    shift
    (cd "$work/$user" && setpriv --reuid="$(uid_of "$user")" --regid="$(id -g "$user")" --init-groups \
        /usr/bin/env -i USER="$user" PATH=/usr/local/bin:/usr/bin:/bin \
        HOSTKEEPER_PORT_SOCKET="$HOSTKEEPER_PORT_SOCKET" \
        SSL_CERT_FILE="$work/tls/ca.pem" SSL_CERT_DIR="$work/no-system-certs" \
        CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 "$@")
}

# start_world USER: USER's keyring-env.sh world, kept until USER.alive goes;
# its environment in USER.env.
start_world() {
    touch "$work/$1/alive"
    as_user "$1" "$support/keyring-env.sh" -- sh -c 'env >"$1.tmp" && mv "$1.tmp" "$1"; while [ -e "$2" ]; do sleep 0.2; done' \
        sh "$work/$1/world.env" "$work/$1/alive" >"$work/$1.world" 2>&1 &
    worlds+=("$!")
    for _ in $(seq 1 200); do
        [[ -s $work/$1/world.env ]] && return 0
        sleep 0.05
    done
    show "$work/$1.world"
    die "$1's keyring world did not start within 10 s"
}

# as USER COMMAND...: COMMAND as USER in their world.
as() {
    local user=$1 vars
    shift
    mapfile -t vars <"$work/$user/world.env"
    (cd "$work/$user" && setpriv --reuid="$(uid_of "$user")" --regid="$(id -g "$user")" --init-groups \
        /usr/bin/env -i "${vars[@]}" "$@")
}

# world_var USER NAME: NAME in USER's world.
world_var() { sed -n "s/^$2=//p" "$work/$1/world.env"; }

# --- the registry -------------------------------------------------------------------------
"$support/make_ca.sh" "$work/tls" localhost 127.0.0.1 >/dev/null
chmod -R a+rX "$work/tls"
chmod a-r "$work/tls"/*.key
mkdir -m 0755 "$work/no-system-certs"
log=$work/requests.jsonl
: >"$log"
python3 "$support/https_registry.py" --public --port-file "$work/port" --cert "$work/tls/server.pem" \
    --key "$work/tls/server.key" --token unused --log "$log" --modules acme/hello/null \
    --providers acme/thing --registry-provider-versions 1.0.0,1.1.0,1.2.0 \
    --gpg-home "$work/gnupg" 2>"$work/registry.stderr" &
registry_pid=$!
for _ in $(seq 1 200); do
    [[ -s $work/port ]] && break
    kill -0 "$registry_pid" 2>/dev/null || { show "$work/registry.stderr"; die "the registry died at start-up"; }
    sleep 0.05
done
[[ -s $work/port ]] || die "the registry did not write its port within 10 s"
host=127.0.0.1:$(<"$work/port")
files=/provider-files/acme/thing
zip_path() { echo "$files/$1/terraform-provider-thing_$1_$tf_platform.zip"; }
count() { python3 -c 'import json, sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["path"] == sys.argv[2]))' "$log" "$1"; }

# --- the shared directory and each user's world ---------------------------------------------
shared=$work/shared
install -d -o root -g "$group" -m 2770 "$shared"

# configure USER CAP: the user's config.toml, naming the shared directory.
configure() {
    local config
    config=$(world_var "$1" XDG_CONFIG_HOME)/hostkeeper
    as "$1" mkdir -p "$config"
    as "$1" sh -c 'printf "[registry_cache]\narchive_dir = \"%s\"\nmax_archive_bytes = %s\n" "$1" "$2" >"$3"' \
        sh "$shared" "$2" "$config/config.toml"
}

for user in "${users[@]}"; do
    install -d -o "$user" -m 0700 "$work/$user"
    start_world "$user"
    configure "$user" 1000000000
    as "$user" "$bin/hostkeeper" setup --registry-cache "$host" >"$work/$user.setup" 2>&1 ||
        { show "$work/$user.setup"; fail "setup --registry-cache as $user failed"; }
    tfrc=$(world_var "$user" HOME)/.terraform.d/hostkeeper.tfrc
    for _ in $(seq 1 150); do
        grep -qsF "host \"$host\"" "$tfrc" && break
        sleep 0.1
    done
    grep -qsF "host \"$host\"" "$tfrc" || { show "$work/$user.setup"; fail "no block for $host in $user's tfrc within 15 s"; }
done
pass "both users' daemons route $host through the registry port, sharing $shared"

# workdir USER NAME VERSION: a configuration with the module and thing VERSION.
workdir() {
    local dir=$work/$1/$2
    install -d -o "$1" -m 0700 "$dir"
    cat >"$dir/main.tf" <<TF
terraform {
  required_providers {
    thing = {
      source  = "$host/acme/thing"
      version = "$3"
    }
  }
}

module "hello" {
  source  = "$host/acme/hello/null"
  version = "1.0.0"
}
TF
    chown "$1" "$dir/main.tf"
    echo "$dir"
}

# init USER DIR: terraform init as USER in DIR; output in DIR.out.
init() {
    as "$1" sh -c 'cd "$1" && exec "$2" init -input=false -no-color' sh "$2" "$terraform" >"$2.out" 2>&1
}
installed() {
    [[ -x $1/.terraform/providers/$host/acme/thing/$2/$tf_platform/terraform-provider-thing_v$2 ]]
}

# status USER OUT: hostkeeper status --json as USER.
status() {
    as "$1" "$bin/hostkeeper" status --json >"$2" 2>&1 || { show "$2"; fail "hostkeeper status as $1 failed"; }
}
archives() {  # archives FILE KEY: the registry cache's archive counter KEY
    python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["registry_cache"]["archives"][sys.argv[2]])' "$1" "$2"
}

# restart USER CAP: USER's daemon again, with the cap CAP, registered for the port.
restart() {
    as "$1" "$bin/hostkeeper" stop >/dev/null 2>&1 || true
    configure "$1" "$2"
    as "$1" "$bin/hostkeeper" start >"$work/$1.start" 2>&1 || { show "$work/$1.start"; fail "hostkeeper start as $1 failed"; }
    for _ in $(seq 1 100); do
        status "$1" "$work/$1.held"
        [[ $(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["registry_cache"]["held"])' "$work/$1.held") == True ]] && return 0
        sleep 0.1
    done
    show "$work/$1.held"
    fail "$1's daemon did not register for the registry port within 10 s"
}

a=${users[0]}
b=${users[1]}

# --- 1. concurrent inits from both users ----------------------------------------------------
wa=$(workdir "$a" one 1.0.0)
wb=$(workdir "$b" one 1.0.0)
init "$a" "$wa" & pid_a=$!
init "$b" "$wb" & pid_b=$!
rc_a=0 rc_b=0
wait "$pid_a" || rc_a=$?
wait "$pid_b" || rc_b=$?
[[ $rc_a == 0 ]] || { show "$wa.out"; fail "init as $a failed"; }
[[ $rc_b == 0 ]] || { show "$wb.out"; fail "init as $b failed"; }
if ! installed "$wa" 1.0.0 || ! installed "$wb" 1.0.0; then fail "the provider was not installed for both users"; fi
mapfile -t stored < <(find "$shared/providers" -type f)
[[ ${#stored[@]} == 1 ]] || { ls -la "$shared/providers"; fail "the shared directory holds ${#stored[@]} provider files, not 1"; }
[[ $(stat -c '%a %G' "${stored[0]}") == "440 $group" ]] ||
    fail "the stored package is $(stat -c '%a %G' "${stored[0]}"), not 440 $group"
for user in "$a" "$b"; do
    mods=$(find "$shared/modules/$(uid_of "$user")" -type f | wc -l)
    [[ $mods == 1 ]] || fail "$user's module archives: $mods, not 1, under modules/$(uid_of "$user")"
done
pass "concurrent inits of both users installed everything; one package (0440, $group), a module archive per user"

# --- 2. one user's package served to the other, verified ------------------------------------
wa2=$(workdir "$a" two 1.1.0)
init "$a" "$wa2" || { show "$wa2.out"; fail "init of 1.1.0 as $a failed"; }
downloads=$(count "$(zip_path 1.1.0)")
wb2=$(workdir "$b" two 1.1.0)
init "$b" "$wb2" || { show "$wb2.out"; fail "init of 1.1.0 as $b failed"; }
installed "$wb2" 1.1.0 || fail "1.1.0 was not installed for $b"
[[ $(count "$(zip_path 1.1.0)") == "$downloads" ]] ||
    fail "$b's daemon downloaded 1.1.0 again instead of serving $a's"
status "$b" "$work/b.status"
[[ $(archives "$work/b.status" rejected) == 0 ]] || fail "$b's daemon rejected a good package"
pass "$a's package is served to $b, verified, without another download"

# --- 3. a package rewritten by one user, refused and replaced for the other -------------------
# The 1.0.0 package: the one file whose bytes are not 1.1.0's.
v110=$(sha256sum < <(curl -sS --cacert "$work/tls/ca.pem" "https://$host$(zip_path 1.1.0)") | cut -c1-64)
key_file=""
for f in "$shared"/providers/*; do [[ $(basename "$f") != "$v110" ]] && key_file=$f; done
[[ -n $key_file ]] || fail "no 1.0.0 package in the shared directory"
downloads=$(count "$(zip_path 1.0.0)")
as "$a" sh -c 'rm -f "$1" && printf "PK tampered by a group member" >"$1" && chmod 0440 "$1"' sh "$key_file" ||
    fail "$a could not replace a file in the shared directory (it is not sticky)"
wb3=$(workdir "$b" three 1.0.0)
init "$b" "$wb3" || { show "$wb3.out"; fail "init of 1.0.0 as $b after the rewrite failed"; }
installed "$wb3" 1.0.0 || fail "1.0.0 was not installed for $b after the rewrite"
status "$b" "$work/b.status"
[[ $(archives "$work/b.status" rejected) == 1 ]] ||
    { show "$work/b.status"; fail "$b's daemon did not count the rewritten package as rejected"; }
[[ $(count "$(zip_path 1.0.0)") == $((downloads + 1)) ]] || fail "the rewritten package was not downloaded again"
[[ $(sha256sum "$key_file" | cut -c1-64) == "$(basename "$key_file")" ]] ||
    fail "the shared directory still holds the rewritten bytes"
pass "a package $a rewrote under its key was refused by $b's daemon, removed and downloaded again"

# --- 4. eviction while another daemon serves a file -------------------------------------------
# A daemon holds a shared lock on the archive's byte of DIR/.lock for as long
# as it sends the file; on loopback a whole package fits in the socket's
# buffers, so the lock is taken here as user b, as b's daemon takes it.
# Sizes as the cap counts them: allocated blocks (find's %b and stat's %b are 512 bytes).
b_modules=$(find "$shared/modules/$(uid_of "$b")" -type f -printf '%b\n' | awk '{ n += $1 * 512 } END { print n + 0 }')
zip_size=$(($(stat -c %b "$key_file") * 512))
cap=$((b_modules + zip_size + 100))
restart "$a" "$cap"
# lock_bytes USER TYPE START LENGTH HELD: USER holds an OFD lock (F_RDLCK or
# F_WRLCK) on LENGTH bytes of DIR/.lock from START (0: to the end and beyond)
# in the background (its pid in $holder) until the file HELD is removed.
lock_bytes() {
    as "$1" python3 - "$shared/.lock" "$2" "$3" "$4" "$5" <<'PY' &
import fcntl, os, struct, sys, time
F_OFD_SETLK = 37
fd = os.open(sys.argv[1], os.O_RDWR)
kind = getattr(fcntl, sys.argv[2])
fcntl.fcntl(fd, F_OFD_SETLK, struct.pack("hhqqi", kind, os.SEEK_SET, int(sys.argv[3]), int(sys.argv[4]), 0))
open(sys.argv[5], "w").close()
while os.path.exists(sys.argv[5]):
    time.sleep(0.05)
PY
    holder=$!
    for _ in $(seq 1 100); do [[ -e $5 ]] && return 0; sleep 0.05; done
    fail "could not lock $shared/.lock as $1"
}
held=$work/$b/held
lock_bytes "$b" F_RDLCK "$((16#$(basename "$key_file" | cut -c1-15)))" 1 "$held"
wa4=$(workdir "$a" four 1.2.0)
init "$a" "$wa4" || { show "$wa4.out"; fail "init of 1.2.0 as $a (evicting) failed"; }
[[ -e $key_file ]] || fail "the package $b's daemon is serving was evicted"
[[ ! -e $shared/providers/$v110 ]] || fail "the unused 1.1.0 package was not evicted"
[[ -z $(find "$shared/modules/$(uid_of "$a")" -type f) ]] || fail "$a's own module archive was not evicted"
[[ $(find "$shared/modules/$(uid_of "$b")" -type f | wc -l) == 1 ]] || fail "$a removed $b's module archive"
pass "eviction skipped the package in use and $b's module archive, and removed the rest"
rm -f "$held"
wait "$holder" || true
# The lock is gone: the next eviction (a new module version) meets the cap.
wa5=$(workdir "$a" five 1.1.0)
init "$a" "$wa5" || { show "$wa5.out"; fail "init of 1.1.0 as $a after the lock went failed"; }
[[ ! -e $key_file ]] || fail "the package no longer in use was not evicted"
total=$(find "$shared/providers" "$shared/modules" -type f -printf '%b\n' | awk '{ n += $1 * 512 } END { print n + 0 }')
[[ $total -le $cap ]] || { find "$shared" -type f -ls; fail "the directory holds $total bytes, over the cap of $cap"; }
pass "once nothing served it, the package was evicted and the directory fits its cap ($total <= $cap bytes)"

# --- 5. a directory with a bad mode -----------------------------------------------------------
chmod g-s,a+rwx "$shared"  # 0777: a plain chmod 0777 keeps the setgid bit of a directory
restart "$a" "$cap"
status "$a" "$work/a.status"
problem=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["registry_cache"]["archives"]["store_problem"])' "$work/a.status")
expected="$shared has mode 0777: it is writable by others; an archive directory is either private"
[[ $problem == *"$expected"* ]] || { show "$work/a.status"; fail "status does not say why the directory is refused"; }
wa6=$(workdir "$a" six 1.0.0)
init "$a" "$wa6" || { show "$wa6.out"; fail "init as $a with the directory refused failed"; }
installed "$wa6" 1.0.0 || fail "1.0.0 was not installed (passed through) with the directory refused"
[[ ! -e $key_file ]] || fail "an archive was stored in the refused directory"
chmod 2770 "$shared"
pass "a world-writable directory is refused ($problem), and init goes through uncached"

# --- 6. directories planted under packages' names --------------------------------------------
# $a is the member who plants, $b the member whose inits must go on.
zh_hex() { sha256sum < <(curl -sS --cacert "$work/tls/ca.pem" "https://$host$(zip_path "$1")") | cut -c1-64; }
v100=$(zh_hex 1.0.0)
v120=$(zh_hex 1.2.0)
# An empty directory, and one holding a file of $a's that $b cannot remove
# (so it cannot be removed, only moved aside); a package stored there before is gone.
as "$a" sh -c 'rm -f "$1" && mkdir -m 0755 "$1"' sh "$shared/providers/$v120" ||
    fail "$a could not make a directory under 1.2.0's name"
as "$a" sh -c 'rm -f "$1" && mkdir -m 0755 "$1" && echo theirs >"$1/theirs" && chmod 0555 "$1"' \
    sh "$shared/providers/$v100" || fail "$a could not make a directory under 1.0.0's name"
for version in 1.2.0 1.0.0; do
    wb6=$(workdir "$b" "six-$version" "$version")
    init "$b" "$wb6" || { show "$wb6.out"; fail "init of $version as $b with a directory under its name failed"; }
    installed "$wb6" "$version" || fail "$version was not installed for $b with a directory under its name"
done
for hex in "$v120" "$v100"; do
    stored "$shared/providers/$hex" || true
    [[ -f $shared/providers/$hex && ! -L $shared/providers/$hex ]] ||
        { ls -la "$shared/providers"; fail "the package $hex was not stored in the directory's place"; }
    [[ $(sha256sum "$shared/providers/$hex" | cut -c1-64) == "$hex" ]] || fail "the package stored as $hex is not it"
done
mapfile -t aside < <(find "$shared/providers" -maxdepth 1 -name "$v100.moved-aside.*")
[[ ${#aside[@]} == 1 && -f ${aside[0]}/theirs ]] ||
    { ls -la "$shared/providers"; fail "$a's directory with a file in it was not moved aside, whole"; }
[[ -z $(find "$shared/providers" -maxdepth 1 -name "$v120.moved-aside.*") ]] ||
    fail "$a's empty directory was moved aside, not removed"
pass "directories $a planted under packages' names were removed or moved aside; $b's inits installed and stored both"

# --- 7. sparse files do not count against the cap ------------------------------------------------
# 25 files of 2 GiB each, a few blocks of disk, in $a's own module directory
# (theirs to evict): 50 GiB by length against $b's cap of 1 GB.
as "$a" sh -c 'for i in $(seq 1 25); do
    f=$1/$(echo "sparse $i" | sha256sum | cut -c1-64)
    printf PK >"$f" && truncate -s 2G "$f" || exit 1
done' sh "$shared/modules/$(uid_of "$a")" || fail "$a could not make sparse files"
# $b's next download (1.1.0 again, its package removed) is followed by an eviction.
b_module=$(find "$shared/modules/$(uid_of "$b")" -type f)
[[ -n $b_module ]] || fail "$b has no module archive stored"
as "$a" rm -f "$shared/providers/$v110" || fail "$a could not remove the 1.1.0 package"
wb7=$(workdir "$b" seven 1.1.0)
init "$b" "$wb7" || { show "$wb7.out"; fail "init of 1.1.0 as $b after $a's sparse files failed"; }
stored "$shared/providers/$v110" || fail "1.1.0 was not stored"
for kept in "$shared/providers/$v100" "$shared/providers/$v120" $b_module; do
    [[ -f $kept ]] || { ls -laR "$shared"; fail "$b's daemon evicted $kept for $a's sparse files"; }
done
status "$b" "$work/b.status"
[[ $(archives "$work/b.status" evictions) == 0 ]] || { show "$work/b.status"; fail "$b's daemon evicted archives"; }
pass "$a's sparse files (50 GiB long, a few blocks) did not make $b's daemon evict anything"

# --- 8. a member holding every lock byte ---------------------------------------------------------
# now: seconds since the epoch, with nanoseconds (the times are printed, not checked).
now() { date +%s.%N; }
elapsed() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$2"; }
wb8=$(workdir "$b" eight-free 1.0.0)
started=$(now)
init "$b" "$wb8" || { show "$wb8.out"; fail "init of 1.0.0 as $b (a hit) failed"; }
echo "info: $b's init of 1.0.0 from the cache took $(elapsed "$started" "$(now)") s"
held=$work/$a/held-all
lock_bytes "$a" F_WRLCK 0 0 "$held"
downloads=$(count "$(zip_path 1.0.0)")
wb8=$(workdir "$b" eight 1.0.0)
started=$(now)
init "$b" "$wb8" || { rm -f "$held"; show "$wb8.out"; fail "init of 1.0.0 as $b with every lock byte held by $a failed"; }
echo "info: $b's init of 1.0.0 with every lock byte held by $a took $(elapsed "$started" "$(now)") s"
installed "$wb8" 1.0.0 || fail "1.0.0 was not installed for $b with every lock byte held"
[[ $(count "$(zip_path 1.0.0)") -gt $downloads ]] ||
    fail "the lookup was a hit although every lock byte was held (the lock was not taken?)"
rm -f "$held"
wait "$holder" || true
pass "with every lock byte held by $a, $b's init still installs (the package downloaded again)"
