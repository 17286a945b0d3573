#include "daemon/upstream/bearer_token.hpp"

#include <spdlog/spdlog.h>

#include <exception>

#include "proto/json.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::daemon::upstream {

std::optional<proto::Secret> token_of(const proto::Secret& credentials) {
    proto::Json object = proto::parse_json(credentials.view());
    const proto::ScrubGuard guard(object);
    const auto token = object.find("token");
    if (token == object.end() || !token->is_string()) return std::nullopt;
    return proto::Secret(token->get_ref<const std::string&>());
}

boost::asio::awaitable<std::optional<proto::Secret>> bearer_token(
    credentials::CredentialService& credentials, std::string host, std::string purpose,
    std::string* problem) {
    try {
        const std::optional<proto::Secret> stored = co_await credentials.get(host);
        if (!stored) co_return std::nullopt;
        co_return token_of(*stored);
    } catch (const std::exception& e) {
        spdlog::warn("{}: not sending the credentials of {}: {}", purpose, host, e.what());
        if (problem != nullptr) *problem = e.what();
    }
    co_return std::nullopt;
}

}  // namespace hostkeeper::daemon::upstream
