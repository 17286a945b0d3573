#!/usr/bin/env bash
# pass_migrate.sh BIN_DIR
#
# End to end, in a world with both a Secret Service (gnome-keyring on a
# private bus) and an initialised pass store:
#   - keyring.backend = "auto" picks the Secret Service (status says so);
#   - `migrate` to pass with one host whose target cannot be written (a
#     directory where hostkeeper/HOST.gpg must go): all or nothing, so the
#     reply lists it under failed with a code, migrated is empty, every host
#     is still in the keyring and none in pass (the copies were taken back),
#     switched is false and the daemon still uses the Secret Service;
#   - with the obstacle gone, `hostkeeper migrate --to pass` moves them all,
#     switches the daemon, writes backend = "pass" into config.toml (a
#     restarted daemon keeps pass) and every host is read from pass;
#   - migrating to the backend in use is bad_request;
#   - `hostkeeper migrate --to secret-service` moves everything back.
#
# Run it inside keyring-env.sh and pass-env.sh --keep-world:
#   tests/support/keyring-env.sh tests/support/pass-env.sh --keep-world tests/e2e/pass_migrate.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped.
set -euo pipefail

e2e_name=e2e-pass-migrate  # read by pass_lib.sh
# shellcheck source-path=SCRIPTDIR
# shellcheck source=pass_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/pass_lib.sh"

[[ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ]] ||
    fail "no D-Bus session bus: run me through keyring-env.sh and pass-env.sh --keep-world"
need secret-tool
in_keyring() { secret-tool lookup xdg:schema io.hostkeeper.Credentials host "$1" 2>/dev/null; }
in_pass() { [[ -e $(entry "$1") ]]; }

hosts=(one.example two.example stuck.example)

# --- auto with both: the Secret Service --------------------------------------------------
use_backend auto
for h in "${hosts[@]}"; do store_token "$h" "tok-$h"; done
status_json >"$root/status.json" || fail "hostkeeper status --json failed"
[[ $(json_get keyring.backend <"$root/status.json") == secret-service ]] ||
    { show "$root/status.json"; fail "auto with a Secret Service and a pass store did not pick the Secret Service"; }
for h in "${hosts[@]}"; do
    [[ $(in_keyring "$h") == "{\"token\":\"tok-$h\"}" ]] || fail "$h is not in the Secret Service after store"
    ! in_pass "$h" || fail "$h went into pass too"
done
pass "auto with both picks the Secret Service; the hosts are stored there"

# --- migrate to pass, one host failing ------------------------------------------------------
mkdir -p "$store/hostkeeper/stuck.example.gpg"  # the entry's file cannot be written
python3 "$request" '{"op":"migrate","to":"pass"}' >"$root/migrate1.json" || fail "hk_request.py failed"
python3 - "$root/migrate1.json" <<'PY' || { show "$root/migrate1.json"; fail "the first migrate's reply is wrong"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is True, r
assert r["from"] == "secret-service" and r["to"] == "pass", r
assert r["migrated"] == [], r["migrated"]
assert [f["host"] for f in r["failed"]] == ["stuck.example"], r["failed"]
assert r["leftover"] == [], r
assert r["failed"][0]["code"] and r["failed"][0]["message"], r["failed"]
assert r["switched"] is False, r
PY
pass "migrate with one failing host: $(head -c 400 "$root/migrate1.json")"
for h in "${hosts[@]}"; do
    [[ $h == stuck.example ]] || ! in_pass "$h" || fail "$h was left in pass although the migration failed"
    [[ $(in_keyring "$h") == "{\"token\":\"tok-$h\"}" ]] || fail "$h left the Secret Service although the migration failed"
    expect_get "$h" "tok-$h" "$h is still served"
done
[[ -d $store/hostkeeper/stuck.example.gpg ]] || fail "the obstacle was changed"
[[ $(status_json | json_get keyring.backend) == secret-service ]] || fail "the daemon switched although a host failed"
pass "one host failed: nothing moved, every copy taken back out of pass, no switch"

# --- migrate the rest with the command line ------------------------------------------------
rmdir "$store/hostkeeper/stuck.example.gpg"
rc=0
timeout 120 "$bin/hostkeeper" migrate --to pass >"$root/migrate2.out" 2>&1 || rc=$?
[[ $rc == 0 ]] || { show "$root/migrate2.out"; fail "hostkeeper migrate --to pass exited with $rc"; }
grep -qF stuck.example "$root/migrate2.out" || { show "$root/migrate2.out"; fail "hostkeeper migrate does not name the host it moved"; }
[[ $(status_json | json_get keyring.backend) == pass ]] || fail "the daemon did not switch to pass"
python3 -c 'import sys, tomllib; c = tomllib.load(open(sys.argv[1], "rb")); assert c["keyring"]["backend"] == "pass", c' "$config" 2>/dev/null ||
    grep -qxE 'backend *= *"pass"' "$config" || { show "$config"; fail "config.toml does not say backend = \"pass\""; }
for h in "${hosts[@]}"; do
    in_pass "$h" || fail "$h is not in pass after the second migrate"
    [[ -z $(in_keyring "$h") ]] || fail "$h is still in the Secret Service"
done
stop_daemon
for h in "${hosts[@]}"; do expect_get "$h" "tok-$h" "$h is read from pass by a restarted daemon"; done
[[ $(status_json | json_get keyring.backend) == pass ]] || fail "a restarted daemon does not use pass (config.toml)"
pass "hostkeeper migrate --to pass moved the rest, switched, and config.toml keeps pass"

# --- to the backend in use: bad_request ------------------------------------------------------
python3 "$request" '{"op":"migrate","to":"pass"}' >"$root/migrate3.json" || fail "hk_request.py failed"
[[ $(json_get error.code <"$root/migrate3.json") == bad_request ]] || { show "$root/migrate3.json"; fail "migrate to the backend in use is not bad_request"; }
rc=0
"$bin/hostkeeper" migrate --to pass >"$root/migrate3.out" 2>&1 || rc=$?
[[ $rc != 0 ]] || { show "$root/migrate3.out"; fail "hostkeeper migrate --to pass exited 0 while pass is in use"; }
pass "migrating to the backend in use: bad_request, exit $rc"

# --- and back --------------------------------------------------------------------------------
rc=0
timeout 120 "$bin/hostkeeper" migrate --to secret-service >"$root/migrate4.out" 2>&1 || rc=$?
[[ $rc == 0 ]] || { show "$root/migrate4.out"; fail "hostkeeper migrate --to secret-service exited with $rc"; }
for h in "${hosts[@]}"; do
    [[ $(in_keyring "$h") == "{\"token\":\"tok-$h\"}" ]] || fail "$h is not back in the Secret Service"
    ! in_pass "$h" || fail "$h is still in pass after migrating back"
done
[[ $(status_json | json_get keyring.backend) == secret-service ]] || fail "the daemon did not switch back"
grep -qxE 'backend *= *"secret-service"' "$config" || { show "$config"; fail "config.toml does not say backend = \"secret-service\""; }
for h in "${hosts[@]}"; do expect_get "$h" "tok-$h" "$h is read from the Secret Service again"; done

echo "PASS: migrate moves hosts between the Secret Service and pass, keeping failed hosts where they were"
