#include "dispatcher.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "hostkeeper/proto/error.hpp"
#include "hostkeeper/proto/hostname.hpp"
#include "hostkeeper/proto/secret.hpp"
#include "hostkeeper/proto/version.hpp"

namespace hostkeeper::daemon {
namespace asio = boost::asio;
using proto::Error;
using proto::ErrorCode;
using proto::Json;
using proto::Op;

namespace {

const Json& supported_versions() {
    static const Json versions = Json::array({proto::kProtocolVersion});
    return versions;
}

std::string host_of(const Json& request) {
    const auto host = request.find("host");
    if (host == request.end() || !host->is_string()) {
        throw Error(ErrorCode::bad_request, "request needs a \"host\" string");
    }
    // Never trust the client's normalization: every spelling is one entry.
    return proto::normalize_hostname(host->get_ref<const std::string&>());
}

std::string ok_payload(const Json& response) { return proto::serialize(response); }

}  // namespace

asio::awaitable<std::string> Dispatcher::handle(std::string_view payload) {
    std::string op_name = "?";
    try {
        Json request = proto::parse_payload(payload);
        const proto::ScrubGuard guard(request);
        const auto op_field = request.find("op");
        if (op_field == request.end() || !op_field->is_string()) {
            throw Error(ErrorCode::bad_request, "request needs an \"op\" string");
        }
        op_name = op_field->get<std::string>();
        const std::optional<Op> op = proto::op_from_string(op_name);
        const auto version = request.find("v");
        if (version == request.end() || !version->is_number_integer()) {
            throw Error(ErrorCode::bad_request, "request needs an integer \"v\" (protocol version)");
        }
        // "hello" and "stop" are frozen: honoured whatever version is asked for.
        const bool frozen = op == Op::hello || op == Op::stop;
        if (version->get<long long>() != proto::kProtocolVersion && !frozen) {
            Json refusal = proto::make_error(
                ErrorCode::unsupported_version,
                "this hostkeeperd (" + std::string(proto::product_version()) + ") speaks protocol " +
                    std::to_string(proto::kProtocolVersion) + ", not " + version->dump() +
                    "; restart it with 'hostkeeper stop' so that the installed version starts");
            refusal["supported"] = supported_versions();
            co_return proto::serialize(refusal);
        }
        if (!op) {
            throw Error(ErrorCode::unknown_op, "unknown op \"" + op_name + "\" (this is hostkeeperd " +
                                                   proto::product_version() + ")");
        }
        co_return co_await dispatch(*op, request);
    } catch (const Error& e) {
        spdlog::debug("request {}: {} ({})", op_name, proto::to_string(e.code()), e.what());
        co_return proto::serialize(proto::make_error(e.code(), e.what()));
    } catch (const std::exception& e) {
        spdlog::error("request {}: internal error: {}", op_name, e.what());
        co_return proto::serialize(proto::make_error(ErrorCode::internal, e.what()));
    }
}

asio::awaitable<std::string> Dispatcher::dispatch(Op op, Json& request) {
    switch (op) {
        case Op::hello: {
            Json response = proto::make_ok();
            response["daemon_version"] = proto::product_version();
            response["supported"] = supported_versions();
            co_return ok_payload(std::move(response));
        }
        case Op::get: {
            const std::string host = host_of(request);
            const std::optional<proto::Secret> credentials = co_await credentials_.get(host);
            spdlog::debug("get {}: {}", host, credentials ? "found" : "none");
            if (!credentials) {
                Json response = proto::make_ok();
                response["found"] = false;
                co_return ok_payload(std::move(response));
            }
            // The stored text is a validated compact JSON object: splice it
            // in rather than parse it into more copies of the token.
            std::string payload;
            payload.reserve(credentials->size() + 64);
            payload.append(R"({"v":)").append(std::to_string(proto::kProtocolVersion));
            payload.append(R"(,"ok":true,"found":true,"credentials":)");
            payload.append(credentials->view());
            payload.append("}");
            co_return payload;
        }
        case Op::store: {
            const std::string host = host_of(request);
            const auto credentials = request.find("credentials");
            if (credentials == request.end()) {
                throw Error(ErrorCode::bad_request, "store needs a \"credentials\" object");
            }
            proto::validate_credentials(*credentials);
            std::string text = credentials->dump();
            if (text.size() > proto::kMaxCredentialsSize) {
                proto::scrub(text);
                throw Error(ErrorCode::too_large, "credentials object over " +
                                                      std::to_string(proto::kMaxCredentialsSize) + " bytes");
            }
            proto::Secret secret = proto::Secret::adopt(text);
            co_await credentials_.store(host, std::move(secret));
            spdlog::info("stored credentials for {}", host);
            co_return ok_payload(proto::make_ok());
        }
        case Op::forget: {
            const std::string host = host_of(request);
            co_await credentials_.forget(host);
            spdlog::info("forgot credentials for {}", host);
            co_return ok_payload(proto::make_ok());
        }
        case Op::status: {
            const CredentialStats s = credentials_.stats();
            Json response = proto::make_ok();
            response["daemon"] = control_.describe();
            response["credentials"] = {{"entries", s.entries},   {"positive", s.positive},
                                       {"negative", s.negative}, {"hits", s.hits},
                                       {"misses", s.misses},     {"keyring_lookups", s.keyring_lookups},
                                       {"evictions", s.evictions}};
            co_return ok_payload(std::move(response));
        }
        case Op::flush: {
            std::size_t flushed = 0;
            if (request.contains("host")) {
                const std::string host = host_of(request);
                flushed = credentials_.flush(host);
                spdlog::info("flushed cached entries of {}", host);
            } else {
                flushed = credentials_.flush();
                spdlog::info("flushed all {} cached entries", flushed);
            }
            Json response = proto::make_ok();
            response["flushed"] = flushed;
            co_return ok_payload(std::move(response));
        }
        case Op::stop: {
            spdlog::info("stop requested over the socket");
            control_.request_stop();
            Json response = proto::make_ok();
            response["pid"] = ::getpid();  // so the client can wait for it to exit
            co_return ok_payload(std::move(response));
        }
    }
    throw Error(ErrorCode::internal, "unhandled op");
}

}  // namespace hostkeeper::daemon
