#!/usr/bin/env bash
# removal.sh PACKAGE_BUILD_DIR
#
# The built Debian package (hostkeeper_*.deb in PACKAGE_BUILD_DIR, made by
# package.sh) installed for real with dpkg, and hostkeeperd started the two
# ways a user starts it: by socket activation in a real systemd user manager
# (user_world.sh) and on demand by the helper. Asserts:
#   - postinst enables the registry port's system units;
#   - an upgrade in place (the same package again: prerm upgrade) stops both
#     daemons; the socket keeps listening and starts the new hostkeeperd; an
#     older setup's host blocks for a port of the user's own are withdrawn
#     (and its socket drop-in removed) before any terraform could read them;
#   - the upgrade leaves a user's `hostkeeper setup` as it was;
#   - `apt-get remove hostkeeper` leaves no hostkeeperd process (none holds
#     tokens under a deleted executable), the socket unit stopped and gone;
#   - and undoes, as the user, what `hostkeeper setup` did (one line saying
#     so, and how to get the tokens back): no credentials_helper block, no
#     helper link, no dangling link, no host blocks; a real `terraform init`
#     (/usr/local/bin/terraform; exit 77 when absent) works and logs nothing
#     about a credentials helper. (The registry cache needs hostkeeper-portd,
#     which this world does not run: its undo is covered by
#     test_registry_cache_setup.)
#
# It installs the package for real, so it is skipped (77) where hostkeeper is
# installed already (a real installation is never touched) and purges the
# package on exit. Root only; ctest runs it RUN_SERIAL.
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 PACKAGE_BUILD_DIR" >&2; exit 2; }
debs=("$1"/hostkeeper_*.deb)
[[ -f ${debs[0]} && ${#debs[@]} -eq 1 ]] || { echo "$0: no single hostkeeper_*.deb in $1 (package.sh makes it)" >&2; exit 2; }
deb=$(realpath "${debs[0]}")
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root: it installs the package"; exit 77; }
if dpkg-query -W -f='${db:Status-Status}' hostkeeper 2>/dev/null | grep -qv '^not-installed$'; then
    echo "SKIP: hostkeeper is installed on this machine ($(dpkg-query -W -f='${Version} ${db:Status-Status}' hostkeeper));" \
        "this test installs and removes the package and leaves a real installation alone"
    exit 77
fi

# shellcheck source=user_world.sh
source "$(dirname "$0")/user_world.sh"
on_exit 'dpkg-query -W hostkeeper >/dev/null 2>&1 && dpkg --purge hostkeeper >/dev/null 2>&1'

daemon=/usr/bin/hostkeeperd
# Every pid whose executable is the package's hostkeeperd, deleted or not.
daemon_pids() {
    local exe target
    for exe in /proc/[0-9]*/exe; do
        target=$(readlink "$exe" 2>/dev/null) || continue
        [[ $target == "$daemon" || $target == "$daemon (deleted)" ]] && { exe=${exe#/proc/}; echo "${exe%/exe}"; }
    done
    return 0
}
token=rm-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
on_demand_socket=$runtime/on-demand/socket

# Both kinds of daemon, each having served the token: sets $activated and
# $on_demand to their pids.
start_daemons() {
    as_user systemctl --user start hostkeeperd.socket || fail "systemctl --user start hostkeeperd.socket failed"
    [[ $(as_user /usr/bin/terraform-credentials-hostkeeper get rm.example.com) == "{\"token\":\"$token\"}" ]] ||
        fail "the installed helper did not get the token through the socket"
    activated=$(unit_show hostkeeperd.service MainPID)
    [[ $(readlink "/proc/$activated/exe") == "$daemon" ]] || fail "hostkeeperd.service runs $(readlink "/proc/$activated/exe")"
    [[ $(as_user env HOSTKEEPER_SOCKET="$on_demand_socket" /usr/bin/terraform-credentials-hostkeeper get rm.example.com) == \
        "{\"token\":\"$token\"}" ]] || fail "the installed helper did not get the token from an on-demand daemon"
    on_demand=$(pgrep -U "$uid" -f -- "--on-demand --socket $on_demand_socket") || fail "no on-demand hostkeeperd"
}

# True while PID runs. A zombie does not: it has exited (no memory, no
# tokens) and only waits for its parent to reap it, which may come later.
running() {
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ -n $state && ${state%% *} != Z ]]
}

DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >"$world/dpkg.log" 2>&1 || { cat "$world/dpkg.log"; fail "dpkg -i failed"; }
printf '{"token":"%s"}' "$token" | as_user /usr/bin/terraform-credentials-hostkeeper store rm.example.com ||
    fail "the installed helper could not store (on demand)"
as_user /usr/bin/hostkeeper stop >/dev/null
start_daemons
pass "installed $(basename "$deb"); hostkeeperd runs socket-activated (pid $activated) and on demand (pid $on_demand)"

# The user sets Terraform up: the helper's link in its plugin directory, the
# credentials_helper block in ~/.terraformrc (created), the socket enabled.
setup_out=$(as_user /usr/bin/hostkeeper setup --terraform 2>&1) || { echo "$setup_out"; fail "hostkeeper setup --terraform failed"; }
rc_file=$home/.terraformrc
helper_links() { find "$home/.terraform.d" -name terraform-credentials-hostkeeper 2>/dev/null; }
grep -q 'credentials_helper "hostkeeper"' "$rc_file" || { echo "$setup_out"; fail "setup added no credentials_helper block to $rc_file"; }
[[ -n $(helper_links) ]] || { echo "$setup_out"; fail "setup linked no helper under $home/.terraform.d"; }
[[ -f $home/.local/state/hostkeeper/setup.json ]] || fail "setup left no record"
pass "the user ran hostkeeper setup --terraform: $(helper_links), the block in $rc_file"

# The registry port's system units are enabled (postinst, as dh_installsystemd does).
for unit in hostkeeper-port.socket hostkeeper-port-ipv6.socket; do
    [[ -L /etc/systemd/system/sockets.target.wants/$unit ]] || fail "postinst did not enable $unit"
done
pass "postinst enabled hostkeeper-port.socket and hostkeeper-port-ipv6.socket"

# An older setup's registry cache: host blocks for a TCP port of the user's
# own, and the socket drop-in that held it. The upgrade withdraws both before
# the user's next terraform run could read them.
mkdir -p "$home/.config/hostkeeper" "$home/.terraform.d" "$home/.config/systemd/user/hostkeeperd.socket.d"
printf '{"version":1,"listen":"127.0.0.1:47123","capability":"%s","tfrc_files":["%s"],"hosts":[]}\n' \
    "$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')" "$home/.terraform.d/hostkeeper.tfrc" \
    >"$home/.config/hostkeeper/registry-cache.json"
old_tfrc=$home/.terraform.d/hostkeeper.tfrc
printf '%s\n' '# Written by hostkeeperd for the registry cache (hostkeeper setup --registry-cache).' \
    'host "old.example.com" {' '  services = {' \
    '    "modules.v1" = "http://127.0.0.1:47123/CAP/v1/old.example.com/modules/"' '  }' '}' >"$old_tfrc"
old_drop_in=$home/.config/systemd/user/hostkeeperd.socket.d/registry-cache.conf
printf '%s\n' '# Written by "hostkeeper setup --registry-cache"; "hostkeeper setup --registry-cache --undo" removes it.' \
    '[Socket]' 'ListenStream=127.0.0.1:47123' >"$old_drop_in"
chmod 600 "$home/.config/hostkeeper/registry-cache.json" "$old_tfrc"
chown -R "$user:" "$home/.config" "$home/.terraform.d"
# A file hostkeeperd did not write is never touched.
foreign_tfrc=$home/.terraform.d/mine.tfrc
printf 'host "x" { services = { "modules.v1" = "http://127.0.0.1:47123/" } }\n' >"$foreign_tfrc"

# Upgrade in place.
DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >"$world/dpkg.log" 2>&1 || { cat "$world/dpkg.log"; fail "the upgrade failed"; }
if grep -q '127.0.0.1:47123' "$old_tfrc"; then cat "$old_tfrc"; fail "the upgrade left host blocks for the old port in $old_tfrc"; fi
grep -q '^# Suspended' "$old_tfrc" || { cat "$old_tfrc"; fail "$old_tfrc does not say why it has no blocks"; }
[[ $(stat -c '%U %a' "$old_tfrc") == "$user 600" ]] || fail "$old_tfrc is now $(stat -c '%U %a' "$old_tfrc")"
[[ ! -e $old_drop_in ]] || fail "the upgrade left the older setup's socket drop-in"
grep -q '127.0.0.1:47123' "$foreign_tfrc" || fail "the upgrade changed a tfrc file hostkeeperd did not write"
pass "the upgrade withdrew the old port's host blocks and socket drop-in (as the user), and left other files alone"
grep -q 'credentials_helper "hostkeeper"' "$rc_file" && [[ -n $(helper_links) && -f $home/.local/state/hostkeeper/setup.json ]] ||
    fail "the upgrade undid the user's hostkeeper setup"
[[ $(grep -c "undid 'hostkeeper setup'" "$world/dpkg.log") == 0 ]] || { cat "$world/dpkg.log"; fail "the upgrade says it undid setup"; }
pass "the upgrade left the user's setup (block, link, record) as it was"
for pid in $activated $on_demand; do
    running "$pid" && fail "pid $pid still runs after the upgrade: $(readlink "/proc/$pid/exe")"
done
[[ $(unit_show hostkeeperd.socket ActiveState) == active ]] || fail "the upgrade stopped hostkeeperd.socket"
[[ $(as_user /usr/bin/terraform-credentials-hostkeeper get rm.example.com) == "{\"token\":\"$token\"}" ]] ||
    fail "get after the upgrade failed"
new=$(unit_show hostkeeperd.service MainPID)
[[ $(readlink "/proc/$new/exe") == "$daemon" ]] || fail "after the upgrade hostkeeperd.service runs $(readlink "/proc/$new/exe")"
pass "upgrade in place: both daemons stopped, the socket listening, the new hostkeeperd (pid $new) answers"

start_daemons
start=$(date +%s%N)
DEBIAN_FRONTEND=noninteractive apt-get remove -y -q hostkeeper >"$world/apt.log" 2>&1 ||
    { cat "$world/apt.log"; fail "apt-get remove hostkeeper failed"; }
elapsed=$((($(date +%s%N) - start) / 1000000))
left=$(daemon_pids)
[[ -z $left ]] || fail "hostkeeperd still runs after apt-get remove: pid(s) $left ($(for p in $left; do readlink "/proc/$p/exe"; done))"
for pid in $activated $on_demand; do
    running "$pid" && fail "pid $pid still runs after apt-get remove"
done
[[ $(unit_show hostkeeperd.socket ActiveState) == inactive ]] || fail "hostkeeperd.socket is $(unit_show hostkeeperd.socket ActiveState)"
[[ $(unit_show hostkeeperd.socket LoadState) == not-found ]] ||
    fail "the user manager still has hostkeeperd.socket loaded ($(unit_show hostkeeperd.socket LoadState))"
[[ ! -e $runtime/hostkeeper/socket ]] || fail "the socket file is still there"
pass "apt-get remove ($elapsed ms): no hostkeeperd left (pids $activated and $on_demand gone), the socket unit stopped and unloaded"

# What setup did is undone, as the user, and said; Terraform works without the package.
grep -q "^hostkeeper: undid 'hostkeeper setup' for $user (.*their tokens stay in the keyring.*--restore-tokens" "$world/apt.log" ||
    { cat "$world/apt.log"; fail "apt-get remove did not say it undid the user's setup, and how to get the tokens back"; }
if [[ -e $rc_file ]] && grep -q 'credentials_helper' "$rc_file"; then cat "$rc_file"; fail "apt-get remove left the credentials_helper block in $rc_file"; fi
[[ -z $(helper_links) ]] || fail "apt-get remove left the helper's link: $(helper_links)"
dangling=$(find "$home" -xtype l 2>/dev/null)
[[ -z $dangling ]] || fail "apt-get remove left dangling links: $dangling"
[[ ! -e $home/.local/state/hostkeeper/setup.json ]] || fail "setup's record is still there: the undo did not finish"
for tfrc in "$home"/.terraform.d/*.tfrc; do
    [[ -e $tfrc && $tfrc != "$foreign_tfrc" ]] || continue
    grep -q '^host ' "$tfrc" && { cat "$tfrc"; fail "apt-get remove left host blocks in $tfrc"; }
done
foreign_owned=$(find "$home" ! -user "$user" ! -path "$foreign_tfrc" 2>/dev/null)
[[ -z $foreign_owned ]] || fail "files in the user's home now belong to someone else: $foreign_owned"
pass "apt-get remove undid the user's setup as the user: $(grep "undid 'hostkeeper setup' for $user" "$world/apt.log" | cut -c1-120)..."

terraform=/usr/local/bin/terraform
if [[ ! -x $terraform ]]; then
    echo "SKIP: $terraform is absent: terraform init after the removal was not run (everything else passed)"
    exit 77
fi
config=$world/tf-config
mkdir -p "$config/local"
printf 'module "local" {\n  source = "./local"\n}\n' >"$config/main.tf"
printf 'output "x" {\n  value = 1\n}\n' >"$config/local/main.tf"
chown -R "$user:" "$config"
tf_out=$(as_user env CHECKPOINT_DISABLE=1 TF_LOG=WARN "$terraform" -chdir="$config" init -input=false -no-color 2>&1) ||
    { echo "$tf_out"; fail "terraform init failed for $user after the removal"; }
grep -qi 'credentials helper\|credentials_helper\|hostkeeper' <<<"$tf_out" &&
    { echo "$tf_out"; fail "terraform still reads hostkeeper's helper or files after the removal"; }
pass "terraform init as $user after the removal: initialized, nothing about a credentials helper (TF_LOG=WARN)"
echo "PASS: removing the package stops every hostkeeperd and undoes every user's setup"
