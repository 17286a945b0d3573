#include "daemon/upstream/bearer_token.hpp"

namespace hostkeeper::daemon::upstream {

boost::asio::awaitable<std::optional<proto::Secret>> bearer_token(
    credentials::TokenLifecycle& credentials, std::string host, std::string purpose,
    std::string* problem, bool send_refused) {
    return credentials.bearer_token(std::move(host), std::move(purpose), problem, send_refused);
}

}  // namespace hostkeeper::daemon::upstream
