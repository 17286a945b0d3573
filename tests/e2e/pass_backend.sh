#!/usr/bin/env bash
# pass_backend.sh BIN_DIR
#
# End to end: hostkeeper's `pass` backend on a headless machine (no D-Bus),
# through BIN_DIR/terraform-credentials-hostkeeper and the hostkeeperd it
# starts on demand, against the real `pass` 1.7 and gpg:
#   - keyring.backend = "pass": store/get/forget; the entry is
#     hostkeeper/HOST.gpg holding the compact JSON and "\n"; `pass show` reads
#     what the helper stored, and the helper reads what `pass insert` made
#     (pretty JSON from -m, a bare one-line token, a token with more lines);
#   - HOST:PORT is hostkeeper/HOST_PORT;
#   - an entry changed or removed underneath the daemon (`pass rm`,
#     `pass insert -f`) is seen by the next get;
#   - hostkeeper/.gpg-id of its own: new entries are encrypted to that key only
#     (gpg --list-packets);
#   - a git-backed store (`pass git init`): one commit per store and forget,
#     with pass's own messages, and a clean work tree;
#   - a key whose passphrase is not cached: keyring_locked naming `hostkeeper
#     unlock`, the helper exits non-zero and never prints {}; the preset
#     passphrase key works; a missing secret key is keyring_error naming it;
#   - bad input (malformed JSON, oversized credentials, a bad hostname) loses
#     nothing: the existing entry is intact, byte for byte;
#   - 50 helpers at once: 50 stores (50 commits), then 50 cold gets, each right;
#   - keyring.backend = "auto" without D-Bus picks pass (status says why, and
#     what was tried); with no store either, the error names both and how to
#     set them up, and `pass init` afterwards works without a restart;
#   - PASSWORD_STORE_DIR of the daemon's environment is the store.
#
# Run it inside tests/support/pass-env.sh:
#   tests/support/pass-env.sh tests/e2e/pass_backend.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (pass-env.sh:
# no pass or gpg).
set -euo pipefail

e2e_name=e2e-pass  # read by pass_lib.sh
# shellcheck source-path=SCRIPTDIR
# shellcheck source=pass_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/pass_lib.sh"

[[ -z "${DBUS_SESSION_BUS_ADDRESS:-}" && ! -e "$XDG_RUNTIME_DIR/bus" ]] ||
    fail "this world has a D-Bus session bus: run me through tests/support/pass-env.sh without --keep-world"

# --- keyring.backend = "pass": store, get, forget -----------------------------------
use_backend pass
store_token a.example tok-a-1
expect_get a.example tok-a-1 "the helper gives back what it stored in pass"
[[ -f $(entry a.example) ]] || fail "no $(entry a.example) after store"
content=$(decrypted "$(entry a.example)")
[[ "${content%.}" == $'{"token":"tok-a-1"}\n' ]] ||
    fail "hostkeeper/a.example.gpg holds '${content%.}', not the compact JSON and a newline"
[[ "$(command pass show hostkeeper/a.example)" == '{"token":"tok-a-1"}' ]] ||
    fail "pass show hostkeeper/a.example does not show the JSON stored through the helper"
pass "pass show hostkeeper/a.example shows {\"token\":\"tok-a-1\"}"
recipients "$(entry a.example)" | grep -qxF "$HK_PASS_SUBKEY_PLAIN" ||
    fail "hostkeeper/a.example.gpg is not encrypted to the store's .gpg-id ($HK_PASS_SUBKEY_PLAIN): $(recipients "$(entry a.example)")"
pass "the entry is encrypted to the key in the store's .gpg-id"

status_json >"$root/status.json" || fail "hostkeeper status --json failed"
[[ $(json_get keyring.backend <"$root/status.json") == pass ]] || { show "$root/status.json"; fail "status keyring.backend is not pass"; }
[[ $(json_get keyring.configured <"$root/status.json") == pass ]] || { show "$root/status.json"; fail "status keyring.configured is not pass"; }
[[ $(json_get keyring.store <"$root/status.json") == "$store" ]] || { show "$root/status.json"; fail "status keyring.store is not $store"; }
[[ $(json_get keyring.store_writable <"$root/status.json") == true ]] || { show "$root/status.json"; fail "status keyring.store_writable is not true"; }
pass "status: backend pass (configured), store $store, writable"

store_token a.example tok-a-2
expect_get a.example tok-a-2 "store replaces the entry"
run_helper "$root/forget.out" forget a.example
[[ $helper_rc == 0 ]] || { show "$root/forget.out.err"; fail "helper forget exited with $helper_rc"; }
[[ ! -e $(entry a.example) ]] || fail "hostkeeper/a.example.gpg is still there after forget"
expect_get a.example "" "after forget the helper prints {} and the file is gone"
[[ -z "$(command pass ls hostkeeper 2>/dev/null | grep a.example || true)" ]] || fail "pass ls still lists a.example"

# --- interop: entries made by pass itself ----------------------------------------------
printf '{\n  "token": "tok-b"\n}\n' | command pass insert -m hostkeeper/b.example >/dev/null
expect_get b.example tok-b "an entry made by 'pass insert -m' (pretty JSON) is read"
echo tok-c | command pass insert -e hostkeeper/c.example >/dev/null
expect_get c.example tok-c "a bare one-line token made by 'pass insert -e' is read"
printf 'tok-d\nlogin: someone\nurl: https://d.example/\n' | command pass insert -m hostkeeper/d.example >/dev/null
expect_get d.example tok-d "a bare token with more lines: the first line is the token"

# --- a host with a port -------------------------------------------------------------
store_token registry.example:8443 tok-port
[[ -f $store/hostkeeper/registry.example_8443.gpg ]] ||
    fail "registry.example:8443 is not hostkeeper/registry.example_8443.gpg: $(ls "$store/hostkeeper")"
[[ "$(command pass show hostkeeper/registry.example_8443)" == '{"token":"tok-port"}' ]] ||
    fail "pass show hostkeeper/registry.example_8443 does not show the stored JSON"
expect_get registry.example:8443 tok-port "HOST:PORT is the entry hostkeeper/HOST_PORT"
expect_get registry.example "" "HOST without the port is another host"
store_token portless.example:443 tok-443
[[ -f $(entry portless.example) ]] || fail "portless.example:443 is not hostkeeper/portless.example.gpg (:443 is dropped)"
pass ":443 is dropped: hostkeeper/portless.example.gpg"

# --- changes underneath the daemon ------------------------------------------------------
store_token g.example tok-g-1
expect_get g.example tok-g-1 "g.example is cached"
command pass rm -f hostkeeper/g.example >/dev/null
expect_get g.example "" "an entry removed by 'pass rm' is seen by the next get"
echo '{"token":"tok-g-2"}' | command pass insert -m -f hostkeeper/g.example >/dev/null
expect_get g.example tok-g-2 "an entry made by 'pass insert' after a cached miss is seen by the next get"
echo '{"token":"tok-g-3"}' | command pass insert -m -f hostkeeper/g.example >/dev/null
expect_get g.example tok-g-3 "an entry replaced by 'pass insert -f' is seen by the next get"

# --- bad input loses nothing -------------------------------------------------------------
store_token keep.example tok-keep
before=$(sha256sum <"$(entry keep.example)")
entries_before=$(ls "$store/hostkeeper" | sort)
run_helper "$root/bad.out" store keep.example <<<'{"token":'
[[ $helper_rc != 0 ]] || fail "the helper accepted malformed JSON"
run_helper "$root/bad.out" store keep.example <<<"{\"token\":\"$(head -c 62000 /dev/zero | tr '\0' x)\"}"
[[ $helper_rc != 0 ]] || fail "the helper accepted credentials of 62000 bytes (over 61440)"
run_helper "$root/bad.out" store keep.example <<<"{\"token\":\"$(head -c 70000 /dev/zero | tr '\0' x)\"}"
[[ $helper_rc != 0 ]] || fail "the helper accepted 70000 bytes of input (over 65536)"
run_helper "$root/bad.out" store 'keep_example' <<<'{"token":"no"}'
[[ $helper_rc != 0 ]] || fail "the helper stored under the bad hostname keep_example"
run_helper "$root/bad.out" store 'keep.example:99999' <<<'{"token":"no"}'
[[ $helper_rc != 0 ]] || fail "the helper stored under the bad port keep.example:99999"
[[ $(sha256sum <"$(entry keep.example)") == "$before" ]] || fail "bad input changed hostkeeper/keep.example.gpg"
[[ "$(ls "$store/hostkeeper" | sort)" == "$entries_before" ]] ||
    fail "bad input changed the entries: $(diff <(echo "$entries_before") <(ls "$store/hostkeeper" | sort) || true)"
"$bin/hostkeeper" flush >/dev/null
expect_get keep.example tok-keep "malformed JSON, oversized credentials and bad hostnames left the entry intact"

# --- keys: preset passphrase, uncached passphrase, no secret key -------------------------
printf '{"token":"tok-preset"}\n' | gpg --batch --quiet -e -r "$HK_PASS_KEY_PRESET" -o "$(entry preset.example)"
expect_get preset.example tok-preset "an entry for a key whose passphrase is preset in gpg-agent is read"
printf '{"token":"tok-locked"}\n' | gpg --batch --quiet -e -r "$HK_PASS_KEY_LOCKED" -o "$(entry locked.example)"
run_helper "$root/locked.out" get locked.example
[[ $helper_rc != 0 ]] || { show "$root/locked.out"; fail "helper get of an entry needing an uncached passphrase exited 0"; }
[[ ! -s "$root/locked.out" ]] || { show "$root/locked.out"; fail "helper get of a locked entry printed something on stdout"; }
grep -q 'hostkeeper unlock' "$root/locked.out.err" ||
    { show "$root/locked.out.err"; fail "the helper's error does not say to run hostkeeper unlock"; }
pass "uncached passphrase: the helper exits $helper_rc, prints nothing, says: $(head -c 300 "$root/locked.out.err")"
python3 "$request" '{"op":"get","host":"locked.example"}' >"$root/locked.json" || fail "hk_request.py failed"
[[ $(json_get error.code <"$root/locked.json") == keyring_locked ]] || { show "$root/locked.json"; fail "get of a locked entry is not keyring_locked"; }
json_get error.message <"$root/locked.json" | grep -q 'hostkeeper unlock' ||
    { show "$root/locked.json"; fail "keyring_locked's message does not name hostkeeper unlock"; }
pass "the daemon answers keyring_locked, naming hostkeeper unlock"
hk_pass_preset "$HK_PASS_KEY_LOCKED" "$HK_PASS_LOCKED_PASSPHRASE"
expect_get locked.example tok-locked "once its passphrase is cached in gpg-agent, the same entry is read"
# Locked means locked: the answer is cached now; when gpg-agent forgets the
# passphrase (no file changes), the daemon's watch drops it within about a
# second, and the next get is keyring_locked again, not the cached token.
python3 "$request" '{"op":"get","host":"locked.example"}' | grep -q tok-locked || fail "the cached answer is not served"
hk_pass_forget_passphrases
for _ in $(seq 1 40); do
    python3 "$request" '{"op":"get","host":"locked.example"}' >"$root/relocked.json" || fail "hk_request.py failed"
    [[ $(json_get error.code <"$root/relocked.json" 2>/dev/null || true) == keyring_locked ]] && break
    sleep 0.1
done
[[ $(json_get error.code <"$root/relocked.json") == keyring_locked ]] ||
    { show "$root/relocked.json"; fail "4 s after gpg-agent forgot the passphrase, the cached token is still served"; }
pass "gpg-agent forgot the passphrase: the cached token is dropped and get is keyring_locked again"
rm -f "$(entry locked.example)"

gone=$(hk_pass_make_key gone)
gone_sub=$(hk_pass_subkey "$gone")
printf '{"token":"tok-gone"}\n' | gpg --batch --quiet -e -r "$gone" -o "$(entry gone.example)"
gpg --batch --yes --delete-secret-keys "$gone" 2>/dev/null
python3 "$request" '{"op":"get","host":"gone.example"}' >"$root/gone.json" || fail "hk_request.py failed"
[[ $(json_get error.code <"$root/gone.json") == keyring_error ]] || { show "$root/gone.json"; fail "get of an entry without its secret key is not keyring_error"; }
json_get error.message <"$root/gone.json" | grep -qi "$gone_sub" ||
    { show "$root/gone.json"; fail "keyring_error's message does not name the key id $gone_sub"; }
pass "no secret key: keyring_error naming $gone_sub"
rm -f "$(entry gone.example)"

# --- hostkeeper/.gpg-id of its own ---------------------------------------------------------
command pass init -p hostkeeper "$HK_PASS_KEY_OTHER" >/dev/null
store_token other.example tok-other
keys=$(recipients "$(entry other.example)")
[[ $keys == "$HK_PASS_SUBKEY_OTHER" ]] ||
    fail "with hostkeeper/.gpg-id, hostkeeper/other.example.gpg is encrypted to '$keys', not only $HK_PASS_SUBKEY_OTHER"
pass "with hostkeeper/.gpg-id, new entries are encrypted to that key only ($keys)"
expect_get other.example tok-other "and read back"
expect_get keep.example tok-keep "entries pass re-encrypted for hostkeeper/.gpg-id are read"
command pass init -p hostkeeper "" >/dev/null  # back to the store's .gpg-id
[[ ! -e $store/hostkeeper/.gpg-id ]] || fail "pass init -p hostkeeper '' left hostkeeper/.gpg-id"

# --- a git-backed store ---------------------------------------------------------------
command pass git init >/dev/null 2>&1 || fail "pass git init failed"
commits() { git -C "$store" rev-list --count HEAD; }
n0=$(commits)
store_token git.example tok-git
[[ $(commits) == $((n0 + 1)) ]] || fail "store made $(( $(commits) - n0 )) commits, not 1"
subject=$(git -C "$store" log -1 --format=%s)
[[ $subject == "Add given password for hostkeeper/git.example to store." ]] || fail "the commit's subject is '$subject'"
git -C "$store" show --name-only --format= HEAD | grep -qxF hostkeeper/git.example.gpg ||
    fail "the commit does not hold hostkeeper/git.example.gpg"
run_helper "$root/forget.out" forget git.example
[[ $helper_rc == 0 ]] || { show "$root/forget.out.err"; fail "helper forget git.example exited with $helper_rc"; }
[[ $(commits) == $((n0 + 2)) ]] || fail "forget made $(( $(commits) - n0 - 1 )) commits, not 1"
subject=$(git -C "$store" log -1 --format=%s)
[[ $subject == "Remove hostkeeper/git.example from store." ]] || fail "the forget commit's subject is '$subject'"
[[ -z "$(git -C "$store" status --porcelain)" ]] || fail "the store's work tree is not clean: $(git -C "$store" status --porcelain)"
pass "git-backed store: one commit per store and per forget, pass's messages, clean work tree"

# --- 50 helpers at once ---------------------------------------------------------------
n0=$(commits)
pids=()
for i in $(seq 0 49); do
    (printf '{"token":"tok-many-%d"}' "$i" | timeout 120 "$helper" store "many$i.example" \
        >"$root/many-store-$i.out" 2>&1) &
    pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do wait "${pids[$i]}" || { failed=$((failed + 1)); cat "$root/many-store-$i.out"; }; done
[[ $failed == 0 ]] || fail "$failed of 50 concurrent stores failed"
[[ $(ls "$store"/hostkeeper/many*.gpg | wc -l) == 50 ]] || fail "50 concurrent stores made $(ls "$store"/hostkeeper/many*.gpg | wc -l) entries"
[[ $(commits) == $((n0 + 50)) ]] || fail "50 concurrent stores made $(( $(commits) - n0 )) commits"
[[ -z "$(git -C "$store" status --porcelain)" ]] || fail "the work tree is not clean after 50 stores: $(git -C "$store" status --porcelain)"
pass "50 concurrent stores: 50 entries, 50 commits, clean work tree"
"$bin/hostkeeper" flush >/dev/null
pids=()
for i in $(seq 0 49); do
    (timeout 120 "$helper" get "many$i.example" >"$root/many-get-$i.out" 2>"$root/many-get-$i.err") &
    pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}" || [[ "$(<"$root/many-get-$i.out")" != "{\"token\":\"tok-many-$i\"}" ]]; then
        failed=$((failed + 1))
        echo "many$i.example: $(cat "$root/many-get-$i.out" "$root/many-get-$i.err")"
    fi
done
[[ $failed == 0 ]] || fail "$failed of 50 concurrent cold gets did not get their own token"
pass "50 concurrent cold gets (after flush) each got their own token"
for i in $(seq 0 49); do command pass rm -f "hostkeeper/many$i.example" >/dev/null; done

# --- auto, no D-Bus: pass ---------------------------------------------------------------
use_backend auto
expect_get keep.example tok-keep "auto without D-Bus reads the pass store"
status_json >"$root/status-auto.json" || fail "hostkeeper status --json failed"
[[ $(json_get keyring.backend <"$root/status-auto.json") == pass ]] || { show "$root/status-auto.json"; fail "auto did not pick pass"; }
[[ $(json_get keyring.configured <"$root/status-auto.json") == auto ]] || { show "$root/status-auto.json"; fail "keyring.configured is not auto"; }
[[ -n $(json_get keyring.reason <"$root/status-auto.json") ]] || { show "$root/status-auto.json"; fail "keyring.reason is empty"; }
python3 - "$root/status-auto.json" <<'PY' || { show "$root/status-auto.json"; fail "keyring.tried does not say the Secret Service was unusable and pass usable"; }
import json, sys
tried = {t["backend"]: t for t in json.load(open(sys.argv[1]))["keyring"]["tried"]}
assert tried["secret-service"]["usable"] is False and tried["secret-service"]["detail"], tried
assert tried["pass"]["usable"] is True, tried
PY
pass "auto without D-Bus: backend pass; reason: $(json_get keyring.reason <"$root/status-auto.json")"

# --- PASSWORD_STORE_DIR in the daemon's environment --------------------------------------
stop_daemon
env_store=$root/env-store
PASSWORD_STORE_DIR=$env_store command pass init "$HK_PASS_KEY_PLAIN" >/dev/null
printf '{"token":"tok-env"}\n' | PASSWORD_STORE_DIR=$env_store command pass insert -m hostkeeper/env.example >/dev/null
PASSWORD_STORE_DIR=$env_store expect_get env.example tok-env "a daemon started with PASSWORD_STORE_DIR reads that store"
[[ $(status_json | json_get keyring.store) == "$env_store" ]] || fail "status keyring.store is not \$PASSWORD_STORE_DIR"
stop_daemon

# --- auto, neither a Secret Service nor a pass store ----------------------------------------
nostore=$root/no-store
mkdir -p "$nostore"
use_backend auto "$nostore"
run_helper "$root/none.out" get keep.example
[[ $helper_rc != 0 ]] || { show "$root/none.out"; fail "with no backend at all, helper get exited 0"; }
[[ ! -s "$root/none.out" ]] || { show "$root/none.out"; fail "with no backend at all, helper get printed something"; }
python3 "$request" '{"op":"get","host":"keep.example"}' >"$root/none.json" || fail "hk_request.py failed"
[[ $(json_get error.code <"$root/none.json") == keyring_unavailable ]] || { show "$root/none.json"; fail "no backend is not keyring_unavailable"; }
message=$(json_get error.message <"$root/none.json")
grep -qiE 'secret.service' <<<"$message" || fail "the error does not name the Secret Service: $message"
grep -qF 'pass init' <<<"$message" || fail "the error does not say how to set up pass (pass init): $message"
grep -qF "$nostore" <<<"$message" || fail "the error does not name the store it looked at ($nostore): $message"
grep -qiE 'd-?bus|session bus|gnome-keyring|keyring daemon' <<<"$message" ||
    fail "the error does not say how to get a Secret Service: $message"
pass "no backend: keyring_unavailable naming both: $message"
status_json >"$root/status-none.json" || fail "hostkeeper status --json failed"
[[ $(json_get keyring.backend <"$root/status-none.json") == null ]] || { show "$root/status-none.json"; fail "status keyring.backend is not null"; }
PASSWORD_STORE_DIR=$nostore command pass init "$HK_PASS_KEY_PLAIN" >/dev/null
expect_get keep.example "" "after 'pass init' the same daemon uses the new store (no restart)"
store_token late.example tok-late
[[ -f $nostore/hostkeeper/late.example.gpg ]] || fail "the store made after start-up did not get the entry"
[[ $(status_json | json_get keyring.backend) == pass ]] || fail "status keyring.backend is not pass after pass init"
pass "the daemon found the store made after it started"

echo "PASS: the pass backend stores, reads and shares hostkeeper/HOST entries with pass"
