#include "daemon/handlers/dispatcher.hpp"

#include <spdlog/spdlog.h>

#include "daemon/handlers/replies.hpp"
#include "proto/error.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"
#include "proto/version.hpp"

namespace hostkeeper::daemon::handlers {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Json;
using proto::Op;

asio::awaitable<server::Reply> Dispatcher::handle(std::string_view payload,
                                                  server::ServerState server) {
    std::string op_name = "?";
    try {
        Json fields = proto::parse_payload(payload);
        const proto::ScrubGuard guard(fields);
        const auto op_field = fields.find("op");
        if (op_field == fields.end() || !op_field->is_string()) {
            throw Error(ErrorCode::bad_request, "request needs an \"op\" string");
        }
        op_name = op_field->get<std::string>();
        const std::optional<Op> op = proto::op_from_string(op_name);
        const auto version = fields.find("v");
        if (version == fields.end() || !version->is_number_integer()) {
            throw Error(ErrorCode::bad_request,
                        "request needs an integer \"v\" (protocol version)");
        }
        // "hello" and "stop" are frozen: honoured whatever version is asked for.
        const bool frozen = op == Op::hello || op == Op::stop;
        if (version->get<long long>() != proto::kProtocolVersion && !frozen) {
            co_return server::Reply{reply::unsupported_version(*version)};
        }
        if (!op) {
            throw Error(ErrorCode::unknown_op, "unknown op \"" + op_name +
                                                   "\" (this is hostkeeperd " +
                                                   proto::product_version() + ")");
        }
        const Request request{*op, fields, server};
        co_return co_await route(request);
    } catch (const Error& e) {
        spdlog::debug("request {}: {} ({})", op_name, proto::to_string(e.code()), e.what());
        co_return server::Reply{reply::error(e, daemon_, server)};
    } catch (const std::exception& e) {
        spdlog::error("request {}: internal error: {}", op_name, e.what());
        co_return server::Reply{reply::internal_error(e.what())};
    }
}

asio::awaitable<server::Reply> Dispatcher::route(const Request& request) {
    switch (request.op) {
        case Op::get:
        case Op::store:
        case Op::forget:
            co_return co_await credentials_.handle(request);
        case Op::discover:
            co_return co_await discovery_.handle(request);
        case Op::module_versions:
        case Op::module_download:
        case Op::provider_versions:
        case Op::provider_package:
        case Op::provider_fetch:
            co_return co_await registry_.handle(request);
        case Op::migrate:
        case Op::unlock:
            co_return co_await keyring_.handle(request);
        case Op::list:
        case Op::check:
        case Op::rotate:
        case Op::login_start:
        case Op::login_exchange:
        case Op::login_refresh:
        case Op::docker_get:
        case Op::docker_store:
        case Op::docker_erase:
        case Op::docker_list:
        case Op::git_get:
        case Op::git_store:
        case Op::git_erase:
            co_return co_await items_.handle(request);
        case Op::registry_cache_sync:
        case Op::registry_run:
        case Op::registry_run_blocks:
        case Op::hello:
        case Op::status:
        case Op::flush:
        case Op::stop:
            co_return co_await control_.handle(request);
    }
    throw Error(ErrorCode::internal, "unhandled op");
}

}  // namespace hostkeeper::daemon::handlers
