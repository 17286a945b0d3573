#pragma once
// Every reply the daemon sends, built here and nowhere else (PROTOCOL.md):
// the services return values, the request handlers pick the reply. A
// document's fields are serialized once, at its first reply, and spliced
// into every later one (the cached-answer fast path); a credentials object
// is spliced in as stored, never parsed into more copies of the token.

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/backends/keyring_state.hpp"
#include "daemon/backends/migration.hpp"
#include "daemon/credentials/credential_service.hpp"
#include "daemon/credentials/docker_items.hpp"
#include "daemon/credentials/git_items.hpp"
#include "daemon/credentials/terraform_items.hpp"
#include "daemon/discovery/discovery_service.hpp"
#include "daemon/handlers/daemon_info.hpp"
#include "daemon/registry/registry_service.hpp"
#include "daemon/server/request_handler.hpp"
#include "proto/error.hpp"
#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::handlers {

namespace reply {

// {"v":1,"ok":true}
std::string ok();
std::string hello();
// get: no credentials; `withheld`: there are, but the token is not handed
// out ("withheld":{"reason","message"}).
std::string not_found(const credentials::Withheld* withheld = nullptr);
std::string credentials(const proto::Secret& stored);  // get: the stored object, spliced in
std::string flushed(std::size_t count);
std::string stopping(long pid);
std::string status(const DaemonInfo& daemon, server::ServerState server,
                   const credentials::CredentialStats& credentials,
                   const discovery::DiscoveryStats& discovery,
                   const registry::RegistryStats& registry, const proto::Json& registry_cache,
                   const backends::KeyringState& keyring);
// status's and list's "rejected":
// [{"host","url","status","age_s","at","withheld","next_steps"}].
proto::Json rejections(const std::map<std::string, credentials::TokenRejection>& rejected,
                       std::chrono::steady_clock::time_point now);
// status's "expiries": [{"host","expires_at","expires_in_s","expiry_stage",
// "warning_stage","renew_command"}].
proto::Json expiries(const std::map<std::string, credentials::WallTime>& expiries,
                     const std::map<std::string, credentials::ExpiryAdvice>& advice,
                     credentials::WallTime now);
// status's "keyring" object.
proto::Json keyring_object(const backends::KeyringState& keyring);
// migrate: {"v":1,"ok":true,"from":..,"to":..,"migrated":[..],"failed":[..],"switched":..}
std::string migrated(const backends::MigrationResult& result);
// list: one host's entry, as the handler found it.
struct ListedHost {
    credentials::ItemInfo item;
    std::optional<std::vector<std::string>> fields;   // nullopt: locked
    std::optional<credentials::WallTime> expires;     // its expires_at
    std::optional<credentials::Withheld> withheld;    // why its token is not handed out
    std::optional<credentials::ExpiryAdvice> advice;  // with `expires`
};
// list: {"hosts","docker","git","rejected","commands"} (commands as status's).
std::string listed(std::string_view backend, const std::vector<ListedHost>& hosts,
                   const std::vector<credentials::DockerItemInfo>& docker,
                   const std::vector<credentials::GitItemInfo>& git,
                   const credentials::CredentialStats& stats);
// check: {"v":1,"ok":true,"host":..,"result":..,...}
std::string checked(const std::string& host, const discovery::TokenCheck& check);
// rotate: {"v":1,"ok":true,"host":..,"result":"rotated"|"failed",...}
std::string rotated(const std::string& host, const discovery::TokenRotation& rotation);
// login_start: {"v":1,"ok":true,"host":..,"url":..,"state":..}
std::string login_started(const std::string& host, const discovery::LoginStart& start);
// login_exchange, login_refresh: {"v":1,"ok":true,"host":..,"expires_at":..|null,"refreshable":..}
std::string logged_in(const std::string& host, const std::optional<std::string>& expires_at,
                      bool refreshable);
// docker_get: found, with the secret (the payload is scrubbed by the server).
std::string docker_found(const credentials::DockerCredentials& found);
std::string docker_erased(bool erased);
// git_get: found, with the password (the payload is scrubbed by the
// server); `source` is "git" or "terraform".
std::string git_found(std::string_view source, const std::string& username,
                      const credentials::GitCredential& found);
// git_store: {"stored":true}, or {"stored":false,"reason":"terraform_token"}.
std::string git_stored(bool stored);
std::string git_erased(std::size_t erased);
// docker_list: {"servers":{SERVER: USERNAME}}.
std::string docker_servers(const std::vector<credentials::DockerItemInfo>& items);
// registry_cache_sync: {"v":1,"ok":true,"registry_cache":{...}}
std::string registry_cache(const proto::Json& state);
// registry_run: {"v":1,"ok":true,"tfrc":TEXT}
std::string registry_run(const std::string& tfrc);

// `host`'s answer. Throws proto::Error{too_large} past the response frame size.
std::string discovery(const std::string& host, const discovery::DiscoveryAnswer& answer);
// `fields`: the request's own (module, version, ...), in order; `body`: the
// document's fields reshaped by the request (a constraint, a mirror's
// package), else the document as fetched. Throws proto::Error{too_large}.
std::string registry(const proto::Json& fields, const registry::RegistryAnswer& answer,
                     const proto::Json* body = nullptr);
// registry(fields, answer) for a versions list (module_versions,
// provider_versions) as fetched, as a prepared reply: the document's fields
// are Reply::shared, made once per document (fields_of) and written by every
// reply made from it with no copy and no scrub, and die with the document (a
// refreshed list is a new document, with new fields). Only the request's
// fields, the source, the age and the expiry are made per request.
// A versions list holds no secret: its URL holds no user name or password
// (discovery and make_mirror refuse those), its fields are versions,
// protocols, platforms and the registry's warnings, and the token goes in a
// request header, never into a document. (A download's or a package's
// answer may hold a signed or credentialed URL: those replies are not
// prepared.) Throws proto::Error{too_large}.
// With `pass_file` (the request's "document_fd"), a document of at least
// kMinPassedBytes goes by reference instead: the fields as a JSON object in
// a sealed file made once per document (file_of), named in the payload as
// "document_fd":{"bytes":N} and passed with the frame (PROTOCOL.md, Passed
// documents); inline when no file can be made.
inline constexpr std::size_t kMinPassedBytes = std::size_t{16} * 1024;
server::Reply registry_versions(const proto::Json& fields, const registry::RegistryAnswer& answer,
                                bool pass_file = false);
// The document's fields as a JSON object in a sealed file, made at the first
// call; null when none could be made (proto::SealedFile::make).
const std::shared_ptr<const proto::SealedFile>& file_of(const registry::RegistryDocument& document);

// The refusal of a request for protocol `asked` (PROTOCOL.md, Versions).
std::string unsupported_version(const proto::Json& asked);
// A failed request: its code and message, the daemon object for
// keyring_unavailable, `cached` and `retry_in_s` for a fetch failure.
std::string error(const proto::Error& error, const DaemonInfo& daemon, server::ServerState server);
std::string internal_error(const std::string& message);
// An error reply of `code` with `message` and nothing else.
std::string failure(proto::ErrorCode code, const std::string& message);

// A document's fields as replies splice them: "url":...,... (no braces).
const std::string& fields_of(const discovery::DiscoveryDocument& document);
const std::string& fields_of(const registry::RegistryDocument& document);

}  // namespace reply
}  // namespace hostkeeper::daemon::handlers
