#!/usr/bin/env bash
# registry_cache_streaming.sh BIN_DIR
#
# End to end: archives stream through the registry cache as they arrive
# from upstream, with the real listener, the real HTTPS registry
# (https_registry.py sending downloads in pieces) and the real terraform.
# Checks:
#   0. the package document starts the package's download and fetches its
#      SHA256SUMS and signature (prefetch) before anyone asks for them;
#      asked for then, SHA256SUMS makes no second upstream request;
#   1. a client gets the first bytes of a cold provider package while the
#      upstream still holds back its last piece (the registry's log says
#      "holding" and nothing has released it): the archive is streamed, not
#      downloaded whole first; once released the client has the exact file;
#   2. two concurrent requests for one cold archive (sent chunked upstream)
#      make one upstream request and both get the whole body;
#   3. an upstream whose bytes do not match the published hash: terraform
#      init through the cache fails, nothing enters the store (no file under
#      the key, tmp/ empty); once the upstream serves the right bytes, the
#      next init works and the package is stored;
#   4. terraform init through the cache installs a provider (signature
#      checked) and a module while both arrive in pieces;
#   5. a provider's versions document fetches the package document of its
#      newest release for this platform, with that package's SHA256SUMS and
#      signature, before anyone asks (and neither the package nor an older
#      version's document); asked for then, they make no second upstream
#      request.
#
# Readers run curl --no-buffer: what it receives is in its file at once.
#
# Run it inside support/port-env.sh and support/keyring-env.sh:
#   tests/support/port-env.sh tests/support/keyring-env.sh tests/e2e/registry_cache_streaming.sh BIN_DIR
# Exit status: 0 pass, 1 fail, 2 usage/set-up error, 77 skipped (no terraform,
# or terraform not on linux_amd64 or darwin_arm64, the registry's platforms).
set -euo pipefail

e2e_name=e2e-registry-cache-streaming  # read by lib.sh
control=$HK_TEST_ROOT/$e2e_name/control
mkdir -p "$control"
# shellcheck disable=SC2054  # the commas are https_registry.py's list syntax
registry_args=(--modules acme/hello/null --providers acme/thing,acme/other,acme/spare
    --registry-provider-versions 1.0.0,1.2.0 --download-pieces 16 --piece-delay-ms 10
    --hold-while "$control/hold" --lie-while "$control/lie" --chunked-while "$control/chunked")
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hk=$bin/hostkeeper
need curl cmp
tf_platform=$("$terraform" version -json | python3 -c 'import json, sys; print(json.load(sys.stdin)["platform"])')
case $tf_platform in
    linux_amd64 | darwin_arm64) ;;
    *) echo "SKIP: terraform runs on $tf_platform; the test registry serves linux_amd64 and darwin_arm64"; exit 77 ;;
esac
[[ -n ${HK_REGISTRY_PORT:-} ]] || die "run me through tests/support/port-env.sh"
listen=http://127.0.0.1:$HK_REGISTRY_PORT
store=$XDG_CACHE_HOME/hostkeeper/archives
os=${tf_platform%_*}
arch=${tf_platform#*_}

printf '{"token":"%s"}' "$TOKEN" | "$helper" store "$host" || fail "storing the token for $host failed"
"$hk" setup --registry-cache "$host" >"$root/setup.out" 2>&1 || { show "$root/setup.out"; fail "setup --registry-cache failed"; }
tfrc=$HOME/.terraform.d/hostkeeper.tfrc
for _ in $(seq 1 150); do
    grep -qsF "host \"$host\"" "$tfrc" && break
    sleep 0.1
done
grep -qsF "$listen/v1/$host/providers/" "$tfrc" ||
    { [[ -e $tfrc ]] && show "$tfrc"; fail "no block routing $host through the cache within 15 s"; }

# package TYPE VERSION: the package document through the listener; sets
# package_url (the listener's archive URL), upstream_path and key.
package() {
    local doc=$root/package-$1-$2.json
    curl -sS -f -o "$doc" -H "Authorization: Bearer $TOKEN" \
        "$listen/v1/$host/providers/acme/$1/$2/download/$os/$arch" || fail "the package document of acme/$1 $2 through the listener"
    package_url=$(json "$doc" 'd["download_url"]')
    upstream_path=/provider-files/acme/$1/$2/terraform-provider-$1_$2_$tf_platform.zip
    key=providers/$(json "$doc" 'd["shasum"]')
    [[ $package_url == "$listen/archives/$key/"* ]] || fail "acme/$1 $2's download_url is not the listener's: $package_url"
}
json() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# statuses PATH: the registry log's statuses for PATH, in order, on one line.
statuses() { requests "$log" "$1" | cut -d' ' -f1 | tr '\n' ' '; }
# wait_for WHAT COMMAND...: until COMMAND succeeds (at most 30 s).
wait_for() {
    local what=$1 _
    shift
    for _ in $(seq 1 300); do
        "$@" && return 0
        sleep 0.1
    done
    fail "$what did not happen within 30 s"
}
nonempty() { [[ -s $1 ]]; }
holding() { [[ $(statuses "$1") == *holding* ]]; }

# The package document starts the package's download (the prefetch): each
# upstream behaviour is set before the document is asked for.
# --- 1. the first bytes arrive before upstream has sent the last ------------------------
curl -sS --cacert "$root/tls/ca.pem" -o "$root/direct.zip" \
    "https://$host/provider-files/acme/thing/1.0.0/terraform-provider-thing_1.0.0_$tf_platform.zip" ||
    fail "the package straight from the registry"
touch "$control/hold"
package thing 1.0.0
# Nobody has asked for the package yet: the document alone started it.
wait_for "the package's download started by its document (prefetch)" holding "$upstream_path"
sums_path=/provider-files/acme/thing/1.0.0/terraform-provider-thing_1.0.0_SHA256SUMS
asked() { [[ -n $(statuses "$1") ]]; }
wait_for "SHA256SUMS fetched with its package document (prefetch)" asked "$sums_path"
wait_for "SHA256SUMS.sig fetched with its package document (prefetch)" asked "$sums_path.sig"
curl -sS -f -N -o "$root/streamed.zip" "$package_url" 2>"$root/streamed.err" &
curl_pid=$!
wait_for "the first bytes through the listener" nonempty "$root/streamed.zip"
[[ $(statuses "$upstream_path") == *holding* && $(statuses "$upstream_path") != *released* ]] ||
    fail "the upstream released its last piece before the client had bytes ($(statuses "$upstream_path"))"
[[ ! -e $store/$key ]] || fail "$key was stored before its download ended"
got=$(stat -c %s "$root/streamed.zip")
rm "$control/hold"
wait "$curl_pid" || { show "$root/streamed.err"; fail "the streamed download failed"; }
cmp -s "$root/direct.zip" "$root/streamed.zip" || fail "the streamed package differs from upstream's"
stored "$store/$key" || fail "the streamed package was not stored as $key"
# Asked for now, the SHA256SUMS the document fetched (held until now too).
curl -sS -f -o "$root/sums" "$(json "$root/package-thing-1.0.0.json" 'd["shasums_url"]')" ||
    fail "SHA256SUMS through the listener"
grep -q "terraform-provider-thing_1.0.0_$tf_platform.zip" "$root/sums" || fail "SHA256SUMS through the listener does not name the package"
[[ $(requests "$log" "$sums_path" | grep -c '^200 ') == 1 ]] ||
    fail "SHA256SUMS was fetched upstream more than once: $(statuses "$sums_path")"
pass "the client had $got bytes while upstream held back its last piece; then the whole package, stored"

# --- 2. two readers, one download --------------------------------------------------------
touch "$control/hold" "$control/chunked"
package other 1.2.0
curl -sS -f -N -o "$root/a.zip" "$package_url" 2>"$root/a.err" &
a_pid=$!
curl -sS -f -N -o "$root/b.zip" "$package_url" 2>"$root/b.err" &
b_pid=$!
wait_for "the upstream holding back the last piece" holding "$upstream_path"
wait_for "the first reader's bytes" nonempty "$root/a.zip"
wait_for "the second reader's bytes" nonempty "$root/b.zip"
rm "$control/hold" "$control/chunked"
wait "$a_pid" || { show "$root/a.err"; fail "the first concurrent reader failed"; }
wait "$b_pid" || { show "$root/b.err"; fail "the second concurrent reader failed"; }
[[ $(statuses "$upstream_path") == "200 holding released " ]] ||
    fail "upstream saw '$(statuses "$upstream_path")' for the package, not one request"
curl -sS --cacert "$root/tls/ca.pem" -o "$root/direct2.zip" "https://$host$upstream_path"
cmp -s "$root/direct2.zip" "$root/a.zip" || fail "the first reader's package differs from upstream's"
cmp -s "$root/direct2.zip" "$root/b.zip" || fail "the second reader's package differs from upstream's"
pass "two concurrent readers of one cold archive (chunked upstream): one upstream request, both whole"

# --- 3. an upstream that lies ---------------------------------------------------------------
w=$root/lie
mkdir -p "$w"
cat >"$w/main.tf" <<TF
terraform {
  required_providers {
    thing = {
      source  = "$host/acme/thing"
      version = "1.2.0"
    }
  }
}
TF
touch "$control/lie"
package thing 1.2.0
if init "$w" "$w.out"; then
    show "$w.out"
    fail "terraform init succeeded with an upstream serving the wrong bytes"
fi
[[ ! -e $store/$key ]] || fail "the wrong bytes were stored as $key"
[[ -z $(ls -A "$store/tmp") ]] || { ls -l "$store/tmp"; fail "a temp file was left in $store/tmp"; }
[[ $(statuses "$upstream_path") == *200* ]] || fail "terraform's init never had the daemon download the lying package"
# Never a complete wrong file: terraform saw the download cut short (it
# followed it) or refused (it asked after the daemon had refused it).
grep -q -e 'unexpected EOF' -e '502 Bad Gateway' "$w.out" ||
    { show "$w.out"; fail "terraform saw neither the response cut short nor the daemon's refusal"; }
pass "a lying upstream: terraform init failed ($(grep -m1 -io 'error[^│]*' "$w.out" | head -c 120)), nothing stored"
rm "$control/lie"
init "$w" "$w.out" || { show "$w.out"; fail "terraform init failed once the upstream served the right bytes"; }
stored "$store/$key" || fail "the right bytes were not stored as $key"
pass "once the upstream served the right bytes, the next init installed and stored the package"

# --- 4. terraform init, everything in pieces ------------------------------------------------
w=$root/w
mkdir -p "$w"
cat >"$w/main.tf" <<TF
terraform {
  required_providers {
    thing = {
      source  = "$host/acme/thing"
      version = "1.0.0"
    }
    other = {
      source  = "$host/acme/other"
      version = "1.0.0"
    }
  }
}

module "hello" {
  source  = "$host/acme/hello/null"
  version = "1.0.0"
}
TF
init "$w" "$w.out" || { show "$w.out"; fail "terraform init through the cache failed"; }
for type in thing other; do
    [[ -x $w/.terraform/providers/$host/acme/$type/1.0.0/$tf_platform/terraform-provider-${type}_v1.0.0 ]] ||
        { show "$w.out"; fail "acme/$type was not installed"; }
done
grep -q 'self-signed, key ID' "$w.out" || { show "$w.out"; fail "terraform did not check the providers' signatures"; }
grep -qs 'hello from the keyring' "$w/.terraform/modules/hello/main.tf" || fail "the module was not installed"
[[ $(requests "$log" "/provider-files/acme/other/1.0.0/terraform-provider-other_1.0.0_$tf_platform.zip" | wc -l) == 1 ]] ||
    fail "acme/other 1.0.0 was downloaded upstream more than once"
pass "terraform init through the cache installed two providers and a module, each arriving in pieces"

# --- 5. the versions document fetches the likely package document --------------------------
spare=/provider-files/acme/spare/1.2.0/terraform-provider-spare_1.2.0
curl -sS -f -o "$root/spare-versions.json" -H "Authorization: Bearer $TOKEN" \
    "$listen/v1/$host/providers/acme/spare/versions" || fail "acme/spare's versions through the listener"
wait_for "the newest release's package document fetched with the versions" asked "/v1/providers/acme/spare/1.2.0/download/$os/$arch"
wait_for "its SHA256SUMS fetched with it" asked "${spare}_SHA256SUMS"
wait_for "its SHA256SUMS.sig fetched with it" asked "${spare}_SHA256SUMS.sig"
[[ -z $(statuses "/v1/providers/acme/spare/1.0.0/download/$os/$arch") ]] ||
    fail "the versions document fetched an older version's package document"
[[ -z $(statuses "${spare}_$tf_platform.zip") ]] || fail "the versions document fetched the package itself"
package spare 1.2.0
curl -sS -f -o "$root/spare-sums" "$(json "$root/package-spare-1.2.0.json" 'd["shasums_url"]')" ||
    fail "acme/spare's SHA256SUMS through the listener"
curl -sS -f -o "$root/spare-sums.sig" "$(json "$root/package-spare-1.2.0.json" 'd["shasums_signature_url"]')" ||
    fail "acme/spare's SHA256SUMS.sig through the listener"
for path in "/v1/providers/acme/spare/1.2.0/download/$os/$arch" "${spare}_SHA256SUMS" "${spare}_SHA256SUMS.sig"; do
    [[ $(statuses "$path") == "200 " ]] || fail "$path was asked upstream '$(statuses "$path")', not once"
done
pass "a provider's versions fetched its newest release's package document, SHA256SUMS and signature, once each"
echo "PASS: archives stream through the registry cache"
