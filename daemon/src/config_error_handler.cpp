#include "config_error_handler.hpp"

#include "hostkeeper/proto/error.hpp"
#include "hostkeeper/proto/messages.hpp"
#include "hostkeeper/proto/secret.hpp"

namespace hostkeeper::daemon {
using proto::ErrorCode;
using proto::Json;

ConfigErrorHandler::ConfigErrorHandler(std::string reason, std::function<void()> stop)
    : message_("hostkeeperd cannot run with its configuration: " + std::move(reason) +
               "; fix it (see hostkeeper.toml(5)), then run 'hostkeeper stop' or wait 10 s"),
      stop_(std::move(stop)) {}

boost::asio::awaitable<std::string> ConfigErrorHandler::handle(std::string_view payload) {
    Json request;
    try {
        request = proto::parse_payload(payload);
    } catch (const proto::Error& e) {
        co_return proto::serialize(proto::make_error(e.code(), e.what()));
    }
    const proto::ScrubGuard guard(request);
    const auto op = request.find("op");
    if (op != request.end() && op->is_string() && op->get_ref<const std::string&>() == "stop") {
        stop_();
        co_return proto::serialize(proto::make_ok());
    }
    co_return proto::serialize(proto::make_error(ErrorCode::config_error, message_));
}

}  // namespace hostkeeper::daemon
