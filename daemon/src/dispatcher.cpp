#include "dispatcher.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "hostkeeper/proto/error.hpp"
#include "hostkeeper/proto/framing.hpp"
#include "hostkeeper/proto/hostname.hpp"
#include "hostkeeper/proto/secret.hpp"
#include "hostkeeper/proto/version.hpp"
#include "registry_requests.hpp"

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

std::string ok_payload(const Json& response) { return proto::serialize(response, proto::kMaxResponseFrameSize); }

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
        Json response = proto::make_error(e.code(), e.what());
        // Who we are, so that a client can tell whether its own session bus
        // would have done better (PROTOCOL.md, keyring_unavailable).
        if (e.code() == ErrorCode::keyring_unavailable) response["daemon"] = control_.describe();
        if (const auto* failed = dynamic_cast<const FetchFailure*>(&e)) {
            response["cached"] = failed->cached();
            response["retry_in_s"] = failed->retry_in().count();
        }
        co_return proto::serialize(response);
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
        case Op::status: co_return ok_payload(status());
        case Op::discover: co_return co_await discover(request);
        case Op::module_versions:
        case Op::module_download:
        case Op::provider_versions:
        case Op::provider_package:
        case Op::provider_fetch: co_return co_await answer_registry_request(registry_, op, request);
        case Op::flush: {
            std::size_t flushed = 0;
            if (request.contains("host")) {
                const std::string host = host_of(request);
                flushed = credentials_.flush(host) + discovery_.flush(host) + registry_.flush(host);
                spdlog::info("flushed cached entries of {}", host);
            } else {
                flushed = credentials_.flush() + discovery_.flush() + registry_.flush();
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

Json Dispatcher::status() const {
    const CredentialStats c = credentials_.stats();
    const DiscoveryStats d = discovery_.stats();
    const RegistryStats r = registry_.stats();
    Json response = proto::make_ok();
    response["daemon"] = control_.describe();
    response["credentials"] = {{"entries", c.entries}, {"positive", c.positive},
                               {"negative", c.negative}, {"hits", c.hits},
                               {"misses", c.misses}, {"keyring_lookups", c.keyring_lookups},
                               {"evictions", c.evictions}, {"keyring_watched", c.keyring_watched},
                               {"invalidations", c.invalidations}};
    response["discovery"] = {{"entries", d.entries},
                             {"positive", d.positive},
                             {"empty", d.empty},
                             {"errors", d.errors},
                             {"hits", d.hits},
                             {"misses", d.misses},
                             {"stale", d.stale},
                             {"forced", d.forced},
                             {"upstream_requests", d.upstream_requests},
                             {"upstream_failures", d.upstream_failures},
                             {"in_flight", d.in_flight},
                             {"evictions", d.evictions}};
    response["registry"] = {{"entries", r.entries},
                            {"documents", r.positive},
                            {"not_found", r.empty},
                            {"errors", r.errors},
                            {"hits", r.hits},
                            {"misses", r.misses},
                            {"stale", r.stale},
                            {"upstream_requests", r.upstream_requests},
                            {"upstream_failures", r.upstream_failures},
                            {"in_flight", r.in_flight},
                            {"evictions", r.evictions}};
    return response;
}

asio::awaitable<std::string> Dispatcher::discover(const Json& request) {
    const std::string host = host_of(request);
    bool refresh = false;
    if (const auto it = request.find("refresh"); it != request.end()) {
        if (!it->is_boolean()) throw Error(ErrorCode::bad_request, "\"refresh\" must be true or false");
        refresh = it->get<bool>();
    }
    const DiscoveryAnswer answer = co_await discovery_.discover(host, refresh);
    // The document's JSON was made once, when it was fetched: splice it in.
    std::string payload;
    payload.reserve(answer.document->json.size() + host.size() + 128);
    payload.append(R"({"v":)").append(std::to_string(proto::kProtocolVersion));
    payload.append(R"(,"ok":true,"host":)").append(Json(host).dump());
    payload.append(R"(,"source":")").append(to_string(answer.source)).append("\",");
    payload.append(answer.document->json);
    if (answer.age) payload.append(R"(,"age_s":)").append(std::to_string(answer.age->count()));
    if (answer.expires_in) payload.append(R"(,"expires_in_s":)").append(std::to_string(answer.expires_in->count()));
    if (!answer.error.empty()) payload.append(R"(,"error":)").append(Json(answer.error).dump());
    payload.append("}");
    if (payload.size() > proto::kMaxResponseFrameSize) {
        throw Error(ErrorCode::too_large, "the services of " + host + " make an answer over " +
                                              std::to_string(proto::kMaxResponseFrameSize) + " bytes");
    }
    co_return payload;
}

}  // namespace hostkeeper::daemon
