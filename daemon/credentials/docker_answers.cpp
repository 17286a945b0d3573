#include "daemon/credentials/docker_answers.hpp"

#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "daemon/credentials/command_tokens.hpp"
#include "daemon/credentials/keyring_items.hpp"
#include "daemon/credentials/terraform_items.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::daemon::credentials {
namespace asio = boost::asio;

namespace {

// The host whose token_command answers for `server` ("" when `server`
// names no host with a token_command and a token_username).
std::string docker_command_host(const CommandTokens* commands, const std::string& server) {
    if (commands == nullptr) return {};
    std::string host;
    try {
        host = proto::normalize_hostname(server);
    } catch (const std::exception&) {
        return {};  // a URL with a scheme or a path: not a host's name
    }
    if (!commands->has(host) || commands->username(host).empty()) return {};
    return host;
}

}  // namespace

asio::awaitable<std::optional<DockerCredentials>> docker_credentials(KeyringItems& items,
                                                                     CommandTokens* commands,
                                                                     std::string server) {
    const std::optional<std::string> other = proto::other_docker_server(server);
    std::string host = docker_command_host(commands, server);
    if (host.empty() && other) host = docker_command_host(commands, *other);
    try {
        auto reading = items.docker_get(server);  // named first
        std::optional<DockerCredentials> stored = co_await std::move(reading);
        if (!stored && other) {
            auto reading_other = items.docker_get(*other);  // named first
            stored = co_await std::move(reading_other);
        }
        if (stored) co_return stored;
    } catch (const std::exception&) {
        if (host.empty()) throw;  // else the command answers
    }
    if (host.empty()) co_return std::nullopt;
    auto running = commands->get(host);  // named first
    const proto::Secret object = co_await std::move(running);
    std::optional<proto::Secret> token = token_of(object);
    if (!token)
        throw proto::Error(proto::ErrorCode::token_command_failed,
                           "token_command for " + host + " gave no token");
    co_return DockerCredentials{std::move(server), commands->username(host), std::move(*token)};
}

}  // namespace hostkeeper::daemon::credentials
