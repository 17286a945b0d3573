#include "daemon/handlers/control_requests.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon/backends/keyring_admin.hpp"
#include "daemon/handlers/replies.hpp"
#include "daemon/registry_cache/registry_cache.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::handlers {
using proto::Op;

namespace {

// The request's array of hostnames `name`, normalized; none when absent.
std::vector<std::string> hostnames(const proto::Json& fields, const char* name) {
    std::vector<std::string> hosts;
    const auto it = fields.find(name);
    if (it == fields.end()) return hosts;
    if (!it->is_array())
        throw proto::Error(proto::ErrorCode::bad_request,
                           std::string("\"") + name + "\" must be an array");
    for (const proto::Json& host : *it) {
        if (!host.is_string())
            throw proto::Error(proto::ErrorCode::bad_request,
                               std::string("\"") + name + "\" must hold hostnames");
        hosts.push_back(proto::normalize_hostname(host.get<std::string>()));
    }
    return hosts;
}

// The run's "kept" hosts: those its user's own configuration keeps direct.
std::set<std::string> kept_hosts(const proto::Json& fields) {
    std::vector<std::string> kept = hostnames(fields, "kept");
    return {kept.begin(), kept.end()};
}

// The run's TCP "port".
std::uint16_t run_port(const proto::Json& fields) {
    const auto port = fields.find("port");
    if (port == fields.end() || !port->is_number_unsigned() || port->get<std::uint64_t>() == 0 ||
        port->get<std::uint64_t>() > 65535)
        throw proto::Error(proto::ErrorCode::bad_request, "request needs a TCP \"port\"");
    return static_cast<std::uint16_t>(port->get<std::uint64_t>());
}

// The run's "tokens" (host -> token); none when absent.
std::map<std::string, proto::Secret> run_tokens(const proto::Json& fields) {
    std::map<std::string, proto::Secret> tokens;
    const auto it = fields.find("tokens");
    if (it == fields.end()) return tokens;
    if (!it->is_object())
        throw proto::Error(proto::ErrorCode::bad_request, "\"tokens\" must be an object");
    for (const auto& [host, token] : it->items()) {
        if (!token.is_string() || token.get_ref<const std::string&>().empty())
            throw proto::Error(proto::ErrorCode::bad_request,
                               "\"tokens\" must map hostnames to tokens");
        tokens.insert_or_assign(proto::normalize_hostname(host),
                                proto::Secret(token.get_ref<const std::string&>()));
    }
    return tokens;
}

}  // namespace

boost::asio::awaitable<server::Reply> ControlRequests::handle(const Request& request) {
    switch (request.op) {
        case Op::hello:
            co_return server::Reply{reply::hello()};
        case Op::status:
            co_return server::Reply{reply::status(daemon_, request.server, credentials_.stats(),
                                                  discovery_.stats(), registry_.stats(),
                                                  cache_.status(), keyring_.state())};
        case Op::registry_cache_sync: {
            std::vector<std::string> hosts = hostnames(request.fields, "hosts");
            auto syncing = cache_.sync(std::move(hosts));  // named first
            const proto::Json state = co_await std::move(syncing);
            co_return server::Reply{reply::registry_cache(state)};
        }
        case Op::registry_run: {
            const auto link = request.fields.find("link");
            if (link == request.fields.end() || !link->is_string())
                throw proto::Error(proto::ErrorCode::bad_request, "request needs a \"link\" path");
            const std::uint16_t number = run_port(request.fields);
            cache_.runs().attach(link->get<std::string>(), number, run_tokens(request.fields));
            auto rendering = cache_.run_tfrc(number, hostnames(request.fields, "hosts"),
                                             kept_hosts(request.fields));
            const std::string tfrc = co_await std::move(rendering);  // named first
            co_return server::Reply{reply::registry_run(tfrc)};
        }
        case Op::registry_run_blocks: {
            const std::uint16_t number = run_port(request.fields);
            if (!cache_.runs().serves(number))
                throw proto::Error(proto::ErrorCode::bad_request,
                                   "no run's port " + std::to_string(number) + " is served");
            auto rendering = cache_.run_tfrc(number, {}, kept_hosts(request.fields));
            const std::string tfrc = co_await std::move(rendering);  // named first
            co_return server::Reply{reply::registry_run(tfrc)};
        }
        case Op::flush: {
            std::size_t flushed = 0;
            if (request.fields.contains("host")) {
                const std::string host = host_field(request.fields);
                flushed = credentials_.flush(host) + discovery_.flush(host) + registry_.flush(host);
                spdlog::info("flushed cached entries of {}", host);
            } else {
                flushed = credentials_.flush() + discovery_.flush() + registry_.flush();
                spdlog::info("flushed all {} cached entries", flushed);
            }
            co_return server::Reply{reply::flushed(flushed)};
        }
        case Op::stop:
            spdlog::info("stop requested over the socket");
            co_return server::Reply{reply::stopping(::getpid()), true};
        default:
            break;
    }
    throw proto::Error(proto::ErrorCode::internal, "not a control op");
}

}  // namespace hostkeeper::daemon::handlers
