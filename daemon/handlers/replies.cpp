#include "daemon/handlers/replies.hpp"

#include <unistd.h>

#include "daemon/credentials/item_kinds.hpp"
#include "daemon/credentials/token_expiry.hpp"
#include "proto/framing.hpp"
#include "proto/git_credential.hpp"
#include "proto/messages.hpp"
#include "proto/session_bus.hpp"
#include "proto/version.hpp"

namespace hostkeeper::daemon::handlers::reply {
using proto::Error;
using proto::ErrorCode;
using proto::Json;

namespace {

std::string ok_payload(const Json& response) {
    return proto::serialize(response, proto::kMaxResponseFrameSize);
}

const Json& supported_versions() {
    static const Json versions = Json::array({proto::kProtocolVersion});
    return versions;
}

// An object's members without its braces, to splice into another object.
std::string members(const Json& object) {
    std::string text = object.dump();
    return text.substr(1, text.size() - 2);
}

// {"v":1,"ok":true, without its closing brace.
std::string ok_head() {
    std::string payload = R"({"v":)";
    payload.append(std::to_string(proto::kProtocolVersion)).append(R"(,"ok":true)");
    return payload;
}

Json daemon_object(const DaemonInfo& daemon, server::ServerState server) {
    const auto uptime = std::chrono::steady_clock::now() - daemon.started;
    return {{"version", proto::product_version()},
            {"protocol", proto::kProtocolVersion},
            {"pid", ::getpid()},
            {"uptime_s", std::chrono::duration_cast<std::chrono::seconds>(uptime).count()},
            {"on_demand", daemon.on_demand},
            {"idle_timeout_s", daemon.idle_timeout.count()},
            {"connections", server.connections},
            {"socket", daemon.socket},
            {"session_bus", proto::session_bus_address()}};
}

// status's "commands": [{"host","runs","running","last_run_age_s","expires_in_s",
// "last_error"}], the ages and times in whole seconds, absent when unknown.
Json command_states(const std::map<std::string, credentials::CommandTokenState>& commands,
                    std::chrono::steady_clock::time_point now) {
    using std::chrono::duration_cast;
    using std::chrono::seconds;
    Json out = Json::array();
    for (const auto& [host, state] : commands) {
        Json entry = {{"host", host}, {"runs", state.runs}, {"running", state.running}};
        if (state.last_run)
            entry["last_run_age_s"] = duration_cast<seconds>(now - *state.last_run).count();
        if (state.expires)
            entry["expires_in_s"] = duration_cast<seconds>(*state.expires - now).count();
        if (!state.last_error.empty()) entry["last_error"] = state.last_error;
        out.push_back(std::move(entry));
    }
    return out;
}

}  // namespace

Json rejections(const std::map<std::string, credentials::TokenRejection>& rejected,
                std::chrono::steady_clock::time_point now) {
    Json out = Json::array();
    for (const auto& [host, r] : rejected) {
        out.push_back(
            {{"host", host},
             {"url", r.url},
             {"status", r.status},
             {"age_s", std::chrono::duration_cast<std::chrono::seconds>(now - r.when).count()},
             {"at", credentials::rfc3339_text(r.at)},
             {"withheld", true},
             {"next_steps", {"terraform login " + host, "hostkeeper check " + host}}});
    }
    return out;
}

namespace {

long long seconds_between(credentials::WallTime from, credentials::WallTime to) {
    return std::chrono::duration_cast<std::chrono::seconds>(to - from).count();
}

}  // namespace

namespace {

// "warning_stage" (the stage warned of now: "later" is none) and
// "renew_command" of an expiry entry.
void add_advice(Json& entry, const std::optional<credentials::ExpiryAdvice>& advice) {
    entry["warning_stage"] = advice ? Json(credentials::to_string(advice->stage)) : Json(nullptr);
    entry["renew_command"] = advice ? Json(advice->renew) : Json(nullptr);
}

std::optional<credentials::ExpiryAdvice> advice_of(
    const std::map<std::string, credentials::ExpiryAdvice>& advice, const std::string& host) {
    const auto found = advice.find(host);
    if (found == advice.end()) return std::nullopt;
    return found->second;
}

}  // namespace

Json expiries(const std::map<std::string, credentials::WallTime>& expiries,
              const std::map<std::string, credentials::ExpiryAdvice>& advice,
              credentials::WallTime now) {
    Json out = Json::array();
    for (const auto& [host, at] : expiries) {
        out.push_back(
            {{"host", host},
             {"expires_at", credentials::rfc3339_text(at)},
             {"expires_in_s", seconds_between(now, at)},
             {"expiry_stage", credentials::to_string(credentials::expiry_stage(at, now))}});
        add_advice(out.back(), advice_of(advice, host));
    }
    return out;
}

std::string ok() {
    return ok_payload(proto::make_ok());
}

std::string hello() {
    Json response = proto::make_ok();
    response["daemon_version"] = proto::product_version();
    response["supported"] = supported_versions();
    return ok_payload(response);
}

std::string not_found(const credentials::Withheld* withheld) {
    Json response = proto::make_ok();
    response["found"] = false;
    if (withheld != nullptr) {
        response["withheld"] = {{"reason", credentials::to_string(withheld->reason)},
                                {"message", withheld->message}};
    }
    return ok_payload(response);
}

std::string credentials(const proto::Secret& stored) {
    // The stored text is a validated compact JSON object: splice it in
    // rather than parse it into more copies of the token.
    std::string payload;
    payload.reserve(stored.size() + 64);
    payload.append(ok_head()).append(R"(,"found":true,"credentials":)");
    payload.append(stored.view());
    payload.append("}");
    return payload;
}

namespace {

Json wall_time(const std::optional<credentials::WallTime>& when) {
    if (!when) return nullptr;
    return credentials::rfc3339_text(*when);
}

}  // namespace

std::string listed(std::string_view backend, const std::vector<ListedHost>& hosts,
                   const std::vector<credentials::DockerItemInfo>& docker,
                   const std::vector<credentials::GitItemInfo>& git,
                   const credentials::CredentialStats& stats) {
    Json response = proto::make_ok();
    response["backend"] = std::string(backend);
    Json& out = response["hosts"] = Json::array();
    for (const ListedHost& h : hosts) {
        out.push_back({{"host", h.item.host},
                       {"label", h.item.label},
                       {"stored", wall_time(h.item.stored)},
                       {"fields", h.fields ? Json(*h.fields) : Json(nullptr)},
                       {"locked", !h.fields.has_value()}});
        Json& entry = out.back();
        entry["expires_at"] = nullptr;
        entry["expires_in_s"] = nullptr;
        entry["expiry_stage"] = nullptr;
        if (h.expires) {
            entry["expires_at"] = credentials::rfc3339_text(*h.expires);
            entry["expires_in_s"] = seconds_between(stats.wall_now, *h.expires);
            entry["expiry_stage"] =
                credentials::to_string(credentials::expiry_stage(*h.expires, stats.wall_now));
        }
        add_advice(entry, h.expires ? h.advice : std::nullopt);
        entry["withheld"] = nullptr;
        if (h.withheld) {
            entry["withheld"] = {{"reason", credentials::to_string(h.withheld->reason)},
                                 {"message", h.withheld->message}};
        }
    }
    Json& servers = response["docker"] = Json::array();
    for (const credentials::DockerItemInfo& d : docker) {
        servers.push_back({{"server", d.server},
                           {"username", d.username ? Json(*d.username) : Json(nullptr)},
                           {"label", d.label},
                           {"stored", wall_time(d.stored)}});
    }
    Json& urls = response["git"] = Json::array();
    for (const credentials::GitItemInfo& g : git) {
        urls.push_back({{"url", g.url},
                        {"protocol", proto::kGitProtocol},
                        {"host", g.key.host},
                        {"path", g.key.path.empty() ? Json(nullptr) : Json(g.key.path)},
                        {"username", g.key.username},
                        {"label", g.label},
                        {"stored", wall_time(g.stored)}});
    }
    response["rejected"] = rejections(stats.rejected, stats.now);
    response["commands"] = command_states(stats.commands, stats.now);
    response["refresh_failures"] = stats.refresh_failures;
    return ok_payload(response);
}

std::string checked(const std::string& host, const discovery::TokenCheck& check) {
    Json response = proto::make_ok();
    response["host"] = host;
    response["result"] = std::string(discovery::to_string(check.result));
    if (!check.url.empty()) response["url"] = check.url;
    if (check.status) response["status"] = *check.status;
    if (!check.user.empty()) response["user"] = check.user;
    if (!check.message.empty()) response["message"] = check.message;
    if (check.learned_expiry)
        response["learned_expires_at"] = credentials::rfc3339_text(*check.learned_expiry);
    if (!check.expiry_note.empty()) response["expiry_note"] = check.expiry_note;
    return ok_payload(response);
}

std::string rotated(const std::string& host, const discovery::TokenRotation& rotation) {
    Json response = proto::make_ok();
    response["host"] = host;
    response["result"] = rotation.rotated() ? "rotated" : "failed";
    if (rotation.rotated()) {
        response["token_id"] = rotation.token_id;
        response["expires_at"] = rotation.expires_at;
        if (!rotation.revoked.empty()) response["revoked"] = rotation.revoked;
        if (!rotation.warning.empty()) response["warning"] = rotation.warning;
        return ok_payload(response);
    }
    response["step"] = std::string(discovery::to_string(rotation.failed));
    if (!rotation.url.empty()) response["url"] = rotation.url;
    if (rotation.status) response["status"] = *rotation.status;
    response["message"] = rotation.message;
    return ok_payload(response);
}

std::string login_started(const std::string& host, const discovery::LoginStart& start) {
    Json response = proto::make_ok();
    response["host"] = host;
    response["url"] = start.url;
    response["state"] = start.state;
    return ok_payload(response);
}

std::string logged_in(const std::string& host, const std::optional<std::string>& expires_at,
                      bool refreshable) {
    Json response = proto::make_ok();
    response["host"] = host;
    response["expires_at"] = expires_at ? Json(*expires_at) : Json(nullptr);
    response["refreshable"] = refreshable;
    return ok_payload(response);
}

std::string docker_found(const credentials::DockerCredentials& found) {
    Json response = proto::make_ok();
    const proto::ScrubGuard guard(response);
    response["found"] = true;
    response["server"] = found.server;
    response["username"] = found.username;
    response["secret"] = std::string(found.secret.view());
    return ok_payload(response);
}

std::string docker_erased(bool erased) {
    Json response = proto::make_ok();
    response["erased"] = erased;
    return ok_payload(response);
}

std::string git_found(std::string_view source, const std::string& username,
                      const credentials::GitCredential& found) {
    Json response = proto::make_ok();
    const proto::ScrubGuard guard(response);
    response["found"] = true;
    response["source"] = source;
    response["username"] = username;
    response["password"] = std::string(found.password.view());
    if (found.password_expiry_utc) response["password_expiry_utc"] = *found.password_expiry_utc;
    if (found.oauth_refresh_token)
        response["oauth_refresh_token"] = std::string(found.oauth_refresh_token->view());
    return ok_payload(response);
}

std::string git_stored(bool stored) {
    Json response = proto::make_ok();
    response["stored"] = stored;
    if (!stored) response["reason"] = "terraform_token";
    return ok_payload(response);
}

std::string git_erased(std::size_t erased) {
    Json response = proto::make_ok();
    response["erased"] = erased;
    return ok_payload(response);
}

std::string docker_servers(const std::vector<credentials::DockerItemInfo>& items) {
    Json response = proto::make_ok();
    Json& servers = response["servers"] = Json::object();
    for (const credentials::DockerItemInfo& d : items) servers[d.server] = d.username.value_or("");
    return ok_payload(response);
}

std::string flushed(std::size_t count) {
    Json response = proto::make_ok();
    response["flushed"] = count;
    return ok_payload(response);
}

std::string stopping(long pid) {
    Json response = proto::make_ok();
    response["pid"] = pid;  // so the client can wait for it to exit
    return ok_payload(response);
}

std::string status(const DaemonInfo& daemon, server::ServerState server,
                   const credentials::CredentialStats& c, const discovery::DiscoveryStats& d,
                   const registry::RegistryStats& r, const Json& registry_cache,
                   const backends::KeyringState& keyring) {
    Json response = proto::make_ok();
    response["daemon"] = daemon_object(daemon, server);
    response["credentials"] = {{"entries", c.entries},
                               {"positive", c.positive},
                               {"negative", c.negative},
                               {"hits", c.hits},
                               {"misses", c.misses},
                               {"keyring_lookups", c.keyring_lookups},
                               {"evictions", c.evictions},
                               {"keyring_watched", c.keyring_watched},
                               {"invalidations", c.invalidations},
                               {"rejected", rejections(c.rejected, c.now)},
                               {"expiries", expiries(c.expiries, c.expiry_advice, c.wall_now)},
                               {"commands", command_states(c.commands, c.now)},
                               {"refresh_failures", c.refresh_failures}};
    response["discovery"] = {{"entries", d.entries},
                             {"positive", d.positive},
                             {"empty", d.empty},
                             {"errors", d.errors},
                             {"hits", d.hits},
                             {"misses", d.misses},
                             {"stale", d.stale},
                             {"forced", d.forced},
                             {"upstream_requests", d.upstream_requests},
                             {"upstream_failures", d.upstream_failures},
                             {"in_flight", d.in_flight},
                             {"evictions", d.evictions}};
    response["registry"] = {{"entries", r.entries},
                            {"documents", r.positive},
                            {"not_found", r.empty},
                            {"errors", r.errors},
                            {"hits", r.hits},
                            {"misses", r.misses},
                            {"stale", r.stale},
                            {"upstream_requests", r.upstream_requests},
                            {"upstream_failures", r.upstream_failures},
                            {"in_flight", r.in_flight},
                            {"evictions", r.evictions}};
    response["registry_cache"] = registry_cache;
    response["keyring"] = keyring_object(keyring);
    return ok_payload(response);
}

Json keyring_object(const backends::KeyringState& keyring) {
    Json object = {{"backend", keyring.backend ? Json(*keyring.backend) : Json(nullptr)},
                   {"configured", keyring.configured},
                   {"reason", keyring.reason}};
    if (keyring.store) object["store"] = keyring.store->string();
    if (keyring.store_writable) object["store_writable"] = *keyring.store_writable;
    if (!keyring.tried.empty()) {
        Json tried = Json::array();
        for (const backends::ProbeResult& p : keyring.tried)
            tried.push_back({{"backend", p.backend}, {"usable", p.usable}, {"detail", p.detail}});
        object["tried"] = std::move(tried);
    }
    return object;
}

namespace {

Json migration_failures(const std::vector<backends::MigrationFailure>& failures) {
    Json out = Json::array();
    for (const backends::MigrationFailure& f : failures) {
        Json entry = {{credentials::describe(f.kind).migration.reply_failed, f.key}};
        entry["code"] = proto::to_string(f.code);
        entry["message"] = f.message;
        out.push_back(std::move(entry));
    }
    return out;
}

}  // namespace

std::string migrated(const backends::MigrationResult& result) {
    Json response = proto::make_ok();
    response["from"] = result.from;
    response["to"] = result.to;
    for (const credentials::ItemKindDescription& kind : credentials::item_kinds())
        response[kind.migration.reply_moved] = result.moved(kind.kind);
    response["failed"] = migration_failures(result.failed);
    response["leftover"] = migration_failures(result.leftover);
    response["switched"] = result.switched;
    return ok_payload(response);
}

std::string registry_cache(const Json& state) {
    Json response = proto::make_ok();
    response["registry_cache"] = state;
    return ok_payload(response);
}

std::string registry_run(const std::string& tfrc) {
    Json response = proto::make_ok();
    response["tfrc"] = tfrc;
    return ok_payload(response);
}

const std::string& fields_of(const discovery::DiscoveryDocument& document) {
    if (document.reply_fields.empty()) {
        Json object = {{"url", document.url}, {"services", document.services.services}};
        if (!document.services.invalid.empty()) object["invalid"] = document.services.invalid;
        document.reply_fields = members(object);
    }
    return document.reply_fields;
}

const std::string& fields_of(const registry::RegistryDocument& document) {
    if (document.reply_fields.empty()) {
        Json object = {{"url", document.url}};
        for (const auto& [key, value] : document.body.items()) object[key] = value;
        document.reply_fields = members(object);
    }
    return document.reply_fields;
}

std::string discovery(const std::string& host, const discovery::DiscoveryAnswer& answer) {
    const std::string& fields = fields_of(*answer.document);
    std::string payload;
    payload.reserve(fields.size() + host.size() + 128);
    payload.append(ok_head());
    payload.append(R"(,"host":)").append(Json(host).dump());
    payload.append(R"(,"source":")").append(to_string(answer.source)).append("\",");
    payload.append(fields);
    if (answer.age) payload.append(R"(,"age_s":)").append(std::to_string(answer.age->count()));
    if (answer.expires_in)
        payload.append(R"(,"expires_in_s":)").append(std::to_string(answer.expires_in->count()));
    if (!answer.error.empty()) payload.append(R"(,"error":)").append(Json(answer.error).dump());
    payload.append("}");
    if (payload.size() > proto::kMaxResponseFrameSize) {
        throw Error(ErrorCode::too_large, "the services of " + host + " make an answer over " +
                                              std::to_string(proto::kMaxResponseFrameSize) +
                                              " bytes");
    }
    return payload;
}

namespace {

// A registry answer's payload up to its document's fields:
// {"v":1,"ok":true,FIELDS...,"source":"...",
std::string registry_head(const Json& fields, const registry::RegistryAnswer& answer) {
    Json head = {{"v", proto::kProtocolVersion}, {"ok", true}};
    for (const auto& [key, value] : fields.items()) head[key] = value;
    head["source"] = to_string(answer.source);
    std::string payload = head.dump();
    payload.pop_back();  // the closing brace
    payload += ',';
    return payload;
}

// What follows the document's fields: ,"age_s":..,"expires_in_s":..[,"error":..]}
std::string registry_tail(const registry::RegistryAnswer& answer) {
    std::string tail = R"(,"age_s":)" + std::to_string(answer.age.count());
    tail += R"(,"expires_in_s":)" + std::to_string(answer.expires_in.count());
    if (!answer.error.empty()) tail += R"(,"error":)" + Json(answer.error).dump();
    tail += '}';
    return tail;
}

void check_registry_size(std::size_t size) {
    if (size > proto::kMaxResponseFrameSize) {
        throw Error(ErrorCode::too_large, "the answer is over " +
                                              std::to_string(proto::kMaxResponseFrameSize) +
                                              " bytes; narrow it with a constraint");
    }
}

}  // namespace

std::string registry(const Json& fields, const registry::RegistryAnswer& answer, const Json* body) {
    std::string payload = registry_head(fields, answer);
    if (body == nullptr) {
        payload += fields_of(*answer.document);
    } else {
        Json object = {{"url", answer.document->url}};
        for (const auto& [key, value] : body->items()) object[key] = value;
        payload += members(object);
    }
    payload += registry_tail(answer);
    check_registry_size(payload.size());
    return payload;
}

const std::shared_ptr<const proto::SealedFile>& file_of(
    const registry::RegistryDocument& document) {
    if (!document.reply_file)
        document.reply_file = proto::SealedFile::make("{" + fields_of(document) + "}");
    return document.reply_file;
}

server::Reply registry_versions(const Json& fields, const registry::RegistryAnswer& answer,
                                bool pass_file) {
    server::Reply prepared;
    prepared.payload = registry_head(fields, answer);
    if (pass_file && fields_of(*answer.document).size() + 2 >= kMinPassedBytes) {
        if (const auto& file = file_of(*answer.document)) {
            prepared.payload += R"("document_fd":{"bytes":)" + std::to_string(file->size()) + "}";
            prepared.file = file;
            prepared.tail = registry_tail(answer);
            check_registry_size(file->size());
            return prepared;
        }
    }
    // Shares the document's ownership: the part lives as long as the
    // document, or as long as a reply being written needs it.
    prepared.shared =
        std::shared_ptr<const std::string>(answer.document, &fields_of(*answer.document));
    prepared.tail = registry_tail(answer);
    check_registry_size(prepared.size());
    return prepared;
}

std::string unsupported_version(const Json& asked) {
    Json refusal = proto::make_error(
        ErrorCode::unsupported_version,
        "this hostkeeperd (" + std::string(proto::product_version()) + ") speaks protocol " +
            std::to_string(proto::kProtocolVersion) + ", not " + asked.dump() +
            "; restart it with 'hostkeeper stop' so that the installed version starts");
    refusal["supported"] = supported_versions();
    return proto::serialize(refusal);
}

std::string error(const Error& e, const DaemonInfo& daemon, server::ServerState server) {
    Json response = proto::make_error(e.code(), e.what());
    // Who we are, so that a client can tell whether its own session bus
    // would have done better (PROTOCOL.md, keyring_unavailable).
    if (e.code() == ErrorCode::keyring_unavailable)
        response["daemon"] = daemon_object(daemon, server);
    if (const auto* failed = dynamic_cast<const cache::FetchFailure*>(&e)) {
        response["cached"] = failed->cached();
        response["retry_in_s"] = failed->retry_in().count();
    }
    return proto::serialize(response);
}

std::string internal_error(const std::string& message) {
    return failure(ErrorCode::internal, message);
}

std::string failure(ErrorCode code, const std::string& message) {
    return proto::serialize(proto::make_error(code, message));
}

}  // namespace hostkeeper::daemon::handlers::reply
