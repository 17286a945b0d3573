#include "daemon/handlers/credential_requests.hpp"

#include <spdlog/spdlog.h>

#include "daemon/credentials/token_lifecycle.hpp"
#include "daemon/handlers/replies.hpp"
#include "daemon/registry_cache/registry_cache.hpp"
#include "proto/error.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::handlers {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Op;

asio::awaitable<server::Reply> CredentialRequests::handle(const Request& request) {
    const std::string host = host_field(request.fields);
    switch (request.op) {
        case Op::get: {
            cache_.learn(host);
            std::optional<credentials::Withheld> withheld;
            auto serving = credentials_.serve(host, &withheld);  // named first
            const std::optional<proto::Secret> credentials = co_await std::move(serving);
            spdlog::debug("get {}: {}", host,
                          credentials ? "found"
                          : withheld  ? credentials::to_string(withheld->reason)
                                      : "none");
            if (!credentials) {
                co_return server::Reply{reply::not_found(withheld ? &*withheld : nullptr)};
            }
            co_return server::Reply{reply::credentials(*credentials)};
        }
        case Op::store: {
            const auto credentials = request.fields.find("credentials");
            if (credentials == request.fields.end()) {
                throw Error(ErrorCode::bad_request, "store needs a \"credentials\" object");
            }
            proto::validate_credentials(*credentials);
            std::string text = credentials->dump();
            if (text.size() > proto::kMaxCredentialsSize) {
                proto::scrub(text);
                throw Error(ErrorCode::too_large, "credentials object over " +
                                                      std::to_string(proto::kMaxCredentialsSize) +
                                                      " bytes");
            }
            proto::Secret secret = proto::Secret::adopt(text);
            co_await credentials_.store(host, std::move(secret));
            spdlog::info("stored credentials for {}", host);
            co_return server::Reply{reply::ok()};
        }
        case Op::forget: {
            co_await credentials_.forget(host);
            spdlog::info("forgot credentials for {}", host);
            co_return server::Reply{reply::ok()};
        }
        default:
            break;
    }
    throw Error(ErrorCode::internal, "not a credentials op");
}

}  // namespace hostkeeper::daemon::handlers
