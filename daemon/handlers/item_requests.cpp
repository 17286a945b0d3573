#include "daemon/handlers/item_requests.hpp"

#include <spdlog/spdlog.h>

#include "daemon/backends/keyring_admin.hpp"
#include "daemon/credentials/credential_service.hpp"
#include "daemon/credentials/docker_answers.hpp"
#include "daemon/credentials/keyring_items.hpp"
#include "daemon/credentials/terraform_items.hpp"
#include "daemon/credentials/token_expiry.hpp"
#include "daemon/discovery/discovery_service.hpp"
#include "daemon/handlers/replies.hpp"
#include "proto/error.hpp"
#include "proto/git_credential.hpp"
#include "proto/json.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::handlers {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Op;

namespace {

// The names of a credentials object's properties (never their values).
std::vector<std::string> field_names(const proto::Secret& credentials) {
    std::vector<std::string> names;
    try {
        proto::Json object = proto::parse_json(credentials.view());
        const proto::ScrubGuard guard(object);
        if (object.is_object()) {
            for (const auto& [name, value] : object.items()) names.push_back(name);
        }
    } catch (const std::exception&) {
        // Served objects are valid JSON; nothing to name otherwise.
    }
    return names;
}

// One host's field names, or nullopt when its item is locked. Its own
// coroutine: an await after a try block trips GCC bug 109224.
asio::awaitable<std::optional<std::vector<std::string>>> fields_of(
    credentials::TokenLifecycle& credentials, std::string host) {
    try {
        auto reading = credentials.get(std::move(host));  // named first
        const std::optional<proto::Secret> stored = co_await std::move(reading);
        co_return stored ? field_names(*stored) : std::vector<std::string>{};
    } catch (const Error& e) {
        if (e.code() != ErrorCode::keyring_locked) throw;
    }
    co_return std::nullopt;
}

credentials::DockerCredentials docker_credentials_field(const proto::Json& fields) {
    credentials::DockerCredentials out;
    out.server = proto::docker_server_key(*text_field(fields, "server", true));
    const std::string* username = text_field(fields, "username", true);
    if (username->empty()) throw Error(ErrorCode::bad_request, "no credentials username");
    if (username->size() > proto::kMaxDockerUsernameSize)
        throw Error(
            ErrorCode::bad_request,
            "the username is over " + std::to_string(proto::kMaxDockerUsernameSize) + " bytes");
    out.username = *username;
    out.secret = proto::Secret(*text_field(fields, "secret", true));
    return out;
}

// The host's Terraform token as git_store compares it: an item `get`
// cannot serve (one without a "token") holds none. Its own coroutine: an
// await after a try block trips GCC bug 109224.
asio::awaitable<std::optional<proto::Secret>> comparable_token(
    credentials::TokenLifecycle& credentials, std::string host) {
    try {
        auto reading = credentials.get(std::move(host));  // named first
        const std::optional<proto::Secret> stored = co_await std::move(reading);
        if (stored) co_return credentials::token_of(*stored);
    } catch (const Error& e) {
        if (e.code() != ErrorCode::bad_request) throw;
    }
    co_return std::nullopt;
}

credentials::GitCredential git_credential_field(const proto::Json& fields) {
    credentials::GitCredential out{git_key_fields(fields), {}, std::nullopt, std::nullopt};
    // Both may be empty, as git's single-sign-on credentials are; not absent.
    text_field(fields, "username", true);
    const std::string* password = text_field(fields, "password", true);
    proto::check_git_password(*password);
    out.password = proto::Secret(*password);
    out.password_expiry_utc = git_expiry_field(fields);
    if (const std::string* refresh = text_field(fields, "oauth_refresh_token", false);
        refresh != nullptr && !refresh->empty()) {
        proto::check_git_password(*refresh);
        out.oauth_refresh_token = proto::Secret(*refresh);
    }
    return out;
}

}  // namespace

asio::awaitable<server::Reply> ItemRequests::handle(const Request& request) {
    switch (request.op) {
        case Op::list: {
            auto listing = list();  // named first
            co_return co_await std::move(listing);
        }
        case Op::check: {
            auto checking = check(host_field(request.fields));
            co_return co_await std::move(checking);
        }
        case Op::rotate: {
            auto rotating = rotate(host_field(request.fields));  // named first
            co_return co_await std::move(rotating);
        }
        case Op::login_start:
        case Op::login_exchange:
        case Op::login_refresh: {
            auto answering = login(request);  // named first
            co_return co_await std::move(answering);
        }
        case Op::docker_get:
        case Op::docker_store:
        case Op::docker_erase:
        case Op::docker_list: {
            auto answering = docker(request);
            co_return co_await std::move(answering);
        }
        case Op::git_get: {
            auto answering = git_get(request);  // named first
            co_return co_await std::move(answering);
        }
        case Op::git_store: {
            auto answering = git_store(request);  // named first
            co_return co_await std::move(answering);
        }
        case Op::git_erase: {
            auto answering = git_erase(request);  // named first
            co_return co_await std::move(answering);
        }
        default:
            break;
    }
    throw Error(ErrorCode::internal, "not an item op");
}

asio::awaitable<server::Reply> ItemRequests::list() {
    auto listing = items_.items();  // named first
    std::vector<credentials::ItemInfo> items = co_await std::move(listing);
    std::vector<reply::ListedHost> hosts;
    bool locked = false;
    for (credentials::ItemInfo& item : items) {
        reply::ListedHost listed{std::move(item), std::nullopt, std::nullopt, std::nullopt,
                                 std::nullopt};
        // After the first locked item the rest are reported locked unasked:
        // listing prompts at most once.
        if (!locked) {
            auto reading = fields_of(credentials_.tokens(), listed.item.host);
            listed.fields = co_await std::move(reading);
            locked = !listed.fields;
        }
        if (listed.fields) {
            listed.expires = credentials_.tokens().expiry(listed.item.host);
            listed.withheld = credentials_.tokens().withheld(listed.item.host);
            listed.advice = credentials_.tokens().expiry_advice(listed.item.host);
        }
        hosts.push_back(std::move(listed));
    }
    auto docker_listing = items_.docker_items();
    const std::vector<credentials::DockerItemInfo> docker = co_await std::move(docker_listing);
    auto git_listing = items_.git_items();
    const std::vector<credentials::GitItemInfo> git = co_await std::move(git_listing);
    const std::string backend = keyring_.state().backend.value_or("");
    co_return server::Reply{reply::listed(backend, hosts, docker, git, credentials_.stats())};
}

asio::awaitable<server::Reply> ItemRequests::check(std::string host) {
    auto checking = discovery_.check_token(host);  // named first
    const discovery::TokenCheck result = co_await std::move(checking);
    spdlog::info("check {}: {}", host, discovery::to_string(result.result));
    co_return server::Reply{reply::checked(host, result)};
}

asio::awaitable<server::Reply> ItemRequests::rotate(std::string host) {
    auto rotating = discovery_.rotate_token(host);  // named first
    const discovery::TokenRotation result = co_await std::move(rotating);
    if (result.rotated()) {
        spdlog::info("rotate {}: new token {} until {}{}", host, result.token_id, result.expires_at,
                     result.revoked.empty() ? "" : ", revoked " + result.revoked);
        if (!result.warning.empty()) spdlog::warn("rotate {}: {}", host, result.warning);
    } else {
        spdlog::warn("rotate {}: {} failed: {}", host, discovery::to_string(result.failed),
                     result.message);
    }
    co_return server::Reply{reply::rotated(host, result)};
}

asio::awaitable<server::Reply> ItemRequests::login(const Request& request) {
    std::string host = host_field(request.fields);
    if (request.op == Op::login_start) {
        const auto port = request.fields.find("port");
        if (port == request.fields.end() || !port->is_number_integer())
            throw Error(ErrorCode::bad_request, "login_start needs an integer \"port\"");
        auto starting = discovery_.login().start(host, port->get<int>());  // named first
        const discovery::LoginStart started = co_await std::move(starting);
        co_return server::Reply{reply::login_started(host, started)};
    }
    if (request.op == Op::login_exchange) {
        std::string state = *text_field(request.fields, "state", true);
        proto::Secret code(*text_field(request.fields, "code", true));
        auto exchanging = discovery_.login().exchange(host, std::move(state), std::move(code));
        const discovery::LoginDone done = co_await std::move(exchanging);
        co_return server::Reply{reply::logged_in(host, done.expires_at, done.refreshable)};
    }
    auto refreshing = credentials_.tokens().refresh(host);  // named first
    co_await std::move(refreshing);
    const std::optional<credentials::WallTime> expires = credentials_.tokens().expiry(host);
    std::optional<std::string> expires_at;
    if (expires) expires_at = credentials::rfc3339_text(*expires);
    co_return server::Reply{reply::logged_in(host, expires_at, true)};
}

asio::awaitable<server::Reply> ItemRequests::docker(const Request& request) {
    switch (request.op) {
        case Op::docker_get: {
            std::string server =
                proto::docker_server_key(*text_field(request.fields, "server", true));
            auto reading = credentials::docker_credentials(
                items_, credentials_.tokens().token_commands(), std::move(server));  // named first
            const std::optional<credentials::DockerCredentials> found = co_await std::move(reading);
            if (!found) co_return server::Reply{reply::not_found()};
            co_return server::Reply{reply::docker_found(*found)};
        }
        case Op::docker_store: {
            credentials::DockerCredentials credentials = docker_credentials_field(request.fields);
            const std::string server = credentials.server;
            auto writing = items_.docker_store(std::move(credentials));  // named first
            co_await std::move(writing);
            spdlog::info("stored Docker credentials for {}", server);
            co_return server::Reply{reply::ok()};
        }
        case Op::docker_erase: {
            std::string server =
                proto::docker_server_key(*text_field(request.fields, "server", true));
            const std::string logged = server;
            auto erasing = items_.docker_erase(std::move(server));  // named first
            const bool erased = co_await std::move(erasing);
            if (erased) spdlog::info("erased Docker credentials for {}", logged);
            co_return server::Reply{reply::docker_erased(erased)};
        }
        case Op::docker_list: {
            auto listing = items_.docker_items();  // named first
            const std::vector<credentials::DockerItemInfo> items = co_await std::move(listing);
            for (const credentials::DockerItemInfo& item : items) {
                if (!item.username)
                    throw Error(ErrorCode::keyring_locked,
                                "the Docker credentials for " + item.server +
                                    " are locked (their username is read with the secret): run "
                                    "hostkeeper unlock");
            }
            co_return server::Reply{reply::docker_servers(items)};
        }
        default:
            break;
    }
    throw Error(ErrorCode::internal, "not a docker op");
}

}  // namespace hostkeeper::daemon::handlers

namespace hostkeeper::daemon::handlers {

asio::awaitable<std::optional<proto::Secret>> ItemRequests::terraform_token(std::string host) {
    auto reading = credentials_.tokens().serve(std::move(host), nullptr);  // named first
    const std::optional<proto::Secret> stored = co_await std::move(reading);
    if (!stored) co_return std::nullopt;
    co_return credentials::token_of(*stored);
}

// A git item first, else the host's Terraform token under its git
// username (when the request names none or that one), else not found.
asio::awaitable<server::Reply> ItemRequests::git_get(const Request& request) {
    proto::GitItemKey key = git_key_fields(request.fields);
    auto finding = items_.git_find(key);  // named first
    const std::optional<credentials::GitCredential> found = co_await std::move(finding);
    if (found) co_return server::Reply{reply::git_found("git", found->key.username, *found)};
    const std::string username = items_.git_username(key.host);
    if (!key.username.empty() && key.username != username)
        co_return server::Reply{reply::not_found()};
    auto reading = terraform_token(key.host);  // named first
    std::optional<proto::Secret> token = co_await std::move(reading);
    if (!token) co_return server::Reply{reply::not_found()};
    const credentials::GitCredential served{std::move(key), std::move(*token), std::nullopt,
                                            std::nullopt};
    co_return server::Reply{reply::git_found("terraform", username, served)};
}

// What our own git_get answered from a Terraform token comes back after
// every authentication: it is not kept a second time.
asio::awaitable<server::Reply> ItemRequests::git_store(const Request& request) {
    credentials::GitCredential credential = git_credential_field(request.fields);
    if (credential.key.username == items_.git_username(credential.key.host)) {
        auto reading = comparable_token(credentials_.tokens(), credential.key.host);  // named first
        const std::optional<proto::Secret> token = co_await std::move(reading);
        if (token && token->view() == credential.password.view())
            co_return server::Reply{reply::git_stored(false)};
    }
    const std::string url = proto::git_item_url(credential.key);
    auto writing = items_.git_store(std::move(credential));  // named first
    co_await std::move(writing);
    spdlog::info("stored git credentials for {}", url);
    co_return server::Reply{reply::git_stored(true)};
}

// Only git items: a Terraform token is never erased or marked here.
asio::awaitable<server::Reply> ItemRequests::git_erase(const Request& request) {
    proto::GitItemKey key = git_key_fields(request.fields);
    std::optional<proto::Secret> password;
    if (const std::string* given = text_field(request.fields, "password", false);
        given != nullptr && !given->empty())
        password = proto::Secret(*given);
    const std::string url = proto::git_item_url(key);
    auto erasing = items_.git_erase(std::move(key), std::move(password));  // named first
    const std::size_t erased = co_await std::move(erasing);
    if (erased > 0) spdlog::info("erased {} git credentials for {}", erased, url);
    co_return server::Reply{reply::git_erased(erased)};
}

}  // namespace hostkeeper::daemon::handlers
