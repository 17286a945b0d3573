#include "daemon/upstream/bearer_token.hpp"

#include <spdlog/spdlog.h>

#include <exception>

#include "daemon/credentials/terraform_items.hpp"

namespace hostkeeper::daemon::upstream {

boost::asio::awaitable<std::optional<proto::Secret>> bearer_token(
    credentials::CredentialService& credentials, std::string host, std::string purpose,
    std::string* problem, bool send_refused) {
    try {
        const std::optional<proto::Secret> stored = co_await credentials.get(host);
        if (!stored) co_return std::nullopt;
        if (const auto withheld = credentials.withheld(host);
            withheld &&
            !(send_refused && withheld->reason == credentials::Withheld::Reason::refused)) {
            spdlog::debug("{}: going without the token of {}: {}", purpose, host,
                          withheld->message);
            co_return std::nullopt;
        }
        co_return credentials::token_of(*stored);
    } catch (const std::exception& e) {
        spdlog::warn("{}: not sending the credentials of {}: {}", purpose, host, e.what());
        if (problem != nullptr) *problem = e.what();
    }
    co_return std::nullopt;
}

}  // namespace hostkeeper::daemon::upstream
