#include "daemon/handlers/config_error_handler.hpp"

#include "daemon/handlers/replies.hpp"
#include "proto/error.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::handlers {
using proto::ErrorCode;
using proto::Json;

ConfigErrorHandler::ConfigErrorHandler(std::string reason)
    : message_("hostkeeperd cannot run with its configuration: " + std::move(reason) +
               "; fix it (see hostkeeper.toml(5)), then run 'hostkeeper stop' or wait 10 s") {}

boost::asio::awaitable<server::Reply> ConfigErrorHandler::handle(std::string_view payload,
                                                                 server::ServerState) {
    Json request;
    try {
        request = proto::parse_payload(payload);
    } catch (const proto::Error& e) {
        co_return server::Reply{reply::failure(e.code(), e.what())};
    }
    const proto::ScrubGuard guard(request);
    const auto op = request.find("op");
    if (op != request.end() && op->is_string() && op->get_ref<const std::string&>() == "stop") {
        co_return server::Reply{reply::ok(), true};  // the server stops once it is written
    }
    co_return server::Reply{reply::failure(ErrorCode::config_error, message_)};
}

}  // namespace hostkeeper::daemon::handlers
