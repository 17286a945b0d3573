#include "daemon/handlers/keyring_requests.hpp"

#include <spdlog/spdlog.h>

#include "daemon/backends/keyring_admin.hpp"
#include "daemon/credentials/credential_service.hpp"
#include "daemon/handlers/replies.hpp"
#include "proto/error.hpp"

namespace hostkeeper::daemon::handlers {
using proto::Error;
using proto::ErrorCode;
using proto::Op;

boost::asio::awaitable<server::Reply> KeyringRequests::handle(const Request& request) {
    if (request.op == Op::migrate) {
        const auto to = request.fields.find("to");
        if (to == request.fields.end() || !to->is_string())
            throw Error(ErrorCode::bad_request,
                        "migrate needs \"to\": \"pass\" or \"secret-service\"");
        auto moving = keyring_.migrate_to(to->get<std::string>());  // named first
        const backends::MigrationResult result = co_await std::move(moving);
        // What was cached was read from the source: its items are gone from it.
        credentials_.flush();
        co_return server::Reply{reply::migrated(result)};
    }
    if (request.op == Op::unlock) {
        // The password field is scrubbed with the request (dispatcher).
        const std::string* typed = text_field(request.fields, "password", false);
        std::optional<proto::Secret> password;
        if (typed != nullptr) password.emplace(*typed);
        const bool with_password = password.has_value();
        auto unlocking = keyring_.unlock_keyring(std::move(password));  // named first
        co_await std::move(unlocking);
        credentials_.flush();
        spdlog::info("keyring unlocked on request{}", with_password ? ", with its password" : "");
        co_return server::Reply{reply::ok()};
    }
    throw Error(ErrorCode::internal, "not a keyring op");
}

}  // namespace hostkeeper::daemon::handlers
