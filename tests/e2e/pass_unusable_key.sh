#!/usr/bin/env bash
# pass_unusable_key.sh BIN_DIR
#
# End to end: a password store whose hostkeeper/.gpg-id names a valid key
# that cannot encrypt (a sign-only key: gpg --quick-gen-key NAME ed25519
# sign), against the real `pass` and gpg:
#   - hostkeeper doctor says the key has no usable encryption subkey and
#     gives `gpg --quick-add-key FINGERPRINT rsa3072 encr` with the key's real
#     fingerprint, not --quick-set-expire (which fixes expired keys only);
#   - hostkeeperd's error for a store names the cause and the same fix;
#   - hostkeeper import of two hosts into that store stores neither, leaves
#     the store without new entries and credentials.tfrc.json byte for byte;
#   - all or nothing: with a usable key, an import whose third host cannot
#     be stored takes back the host it created in this run and puts back the
#     earlier token of the one it replaced, and leaves the file as it was.
#
# Run it inside tests/support/pass-env.sh:
#   tests/support/pass-env.sh tests/e2e/pass_unusable_key.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (pass-env.sh:
# no pass or gpg).
set -euo pipefail

e2e_name=e2e-pass-unusable-key  # read by pass_lib.sh
# shellcheck source-path=SCRIPTDIR
# shellcheck source=pass_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/pass_lib.sh"

use_backend pass
store_token pre.example tok-pre-old
tf_file=$HOME/.terraform.d/credentials.tfrc.json
mkdir -p "$(dirname "$tf_file")"
# store_entries: the store's hostkeeper entries, sorted.
store_entries() { (cd "$store/hostkeeper" && find . -name '*.gpg' | sort); }
# failing_import OUT JSON WHAT: credentials.tfrc.json holds JSON; hostkeeper
# import (output in OUT) must exit 1 and leave both the file, byte for byte,
# and the store's entries as they were.
failing_import() {
    local out=$1 rc=0
    printf '%s\n' "$2" >"$tf_file"
    cp "$tf_file" "$root/tf.before"
    store_entries >"$root/entries.before"
    "$bin/hostkeeper" import >"$out" 2>&1 || rc=$?
    [[ $rc == 1 ]] || { show "$out"; fail "$3: import exited $rc, not 1"; }
    cmp -s "$tf_file" "$root/tf.before" || { show "$out"; fail "$3: credentials.tfrc.json changed"; }
    store_entries | cmp -s - "$root/entries.before" || { show "$out"; fail "$3: new entries are left in the store"; }
}

# --- a sign-only key in hostkeeper/.gpg-id -------------------------------------------------
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
    --quick-gen-key 'Signer <signer@hostkeeper.test>' ed25519 sign never 2>/dev/null
signer=$(gpg --batch --with-colons --list-secret-keys signer@hostkeeper.test |
    awk -F: '$1 == "fpr" { print $10; exit }')
[[ -n $signer ]] || die "no fingerprint for the sign-only key"
echo "$signer" >"$store/hostkeeper/.gpg-id"
stop_daemon

"$bin/hostkeeper" doctor >"$root/doctor.out" 2>&1 && { show "$root/doctor.out"; fail "doctor passed with a sign-only key in .gpg-id"; }
grep -qF "no usable encryption subkey" "$root/doctor.out" ||
    { show "$root/doctor.out"; fail "doctor does not say the key has no usable encryption subkey"; }
grep -qF "gpg --quick-add-key $signer rsa3072 encr" "$root/doctor.out" ||
    { show "$root/doctor.out"; fail "doctor does not give gpg --quick-add-key $signer rsa3072 encr"; }
! grep -qF -- "--quick-set-expire" "$root/doctor.out" ||
    { show "$root/doctor.out"; fail "doctor suggests --quick-set-expire for a valid key without an encryption subkey"; }
pass "doctor: no usable encryption subkey, fix gpg --quick-add-key $signer rsa3072 encr"

python3 "$request" '{"op":"store","host":"x.example","credentials":{"token":"tok-x"}}' >"$root/store.json" ||
    fail "hk_request.py failed"
[[ $(json_get error.code <"$root/store.json") == keyring_error ]] ||
    { show "$root/store.json"; fail "storing to a sign-only key is not keyring_error"; }
message=$(json_get error.message <"$root/store.json")
[[ $message == *"no usable encryption subkey"* && $message == *"gpg --quick-add-key $signer rsa3072 encr"* ]] ||
    { show "$root/store.json"; fail "the store error does not name the missing encryption subkey and its fix"; }
pass "hostkeeperd's store error names the missing encryption subkey and gpg --quick-add-key"

failing_import "$root/import.out" '{"credentials":{"a.example":{"token":"tok-a"},"b.example":{"token":"tok-b"}}}' \
    "import into a store it cannot encrypt to"
grep -qF "gpg --quick-add-key $signer" "$root/import.out" ||
    { show "$root/import.out"; fail "the failed import does not say how to fix the key"; }
pass "import into a store it cannot encrypt to: no entry stored, the file byte for byte as it was"

# --- all or nothing with a usable key ------------------------------------------------------
rm "$store/hostkeeper/.gpg-id"
stop_daemon
# The third host's entry is a symbolic link, which hostkeeperd refuses.
ln -s /dev/null "$(entry c.example)"
failing_import "$root/import2.out" \
    '{"credentials":{"pre.example":{"token":"tok-pre-new"},"b.example":{"token":"tok-b"},"c.example":{"token":"tok-c"}}}' \
    "an import whose third host cannot be stored"
grep -qF "c.example: not imported" "$root/import2.out" ||
    { show "$root/import2.out"; fail "import does not name the host that failed"; }
grep -qF "nothing imported from $tf_file" "$root/import2.out" ||
    { show "$root/import2.out"; fail "import does not say that nothing was imported"; }
[[ -L $(entry c.example) ]] || fail "the entry that existed before (c.example) was removed"
expect_get pre.example tok-pre-old "an import that failed midway put back the token it replaced"
rm "$(entry c.example)"
pass "an import that fails midway takes back what it stored and leaves the file as it was"
