#pragma once
// What the registry cache's listener lets through, and how a failure is
// answered. Every request must name the listener in its Host header (no DNS
// rebinding) and carry none of the headers only web browsers send (Origin,
// Sec-Fetch-*); a registry request must be for a routed host and, for a host
// with stored credentials, carry that host's token (compared in constant
// time); a provider's SHA256SUMS and signature, which Terraform fetches
// without credentials, only for a package this listener gave out with them.
// Failures become the registry protocol's error answers (error_answers),
// a registry's outage the last good answer kept on disk when there is one.

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "daemon/credentials/bearer_check.hpp"
#include "daemon/registry_cache/host_routing.hpp"
#include "daemon/registry_cache/http_handler.hpp"
#include "daemon/registry_cache/listener_messages.hpp"
#include "daemon/registry_cache/listener_routes.hpp"
#include "daemon/registry_cache/registry_answers.hpp"

namespace hostkeeper::daemon::registry_cache {

class Gate : public HttpHandler {
  public:
    // Every request is refused while `routing` is not active (the cache is
    // off and no run was served).
    Gate(HostRouting& routing, credentials::BearerCheck& credentials, RegistryAnswers& answers)
        : routing_(routing), credentials_(credentials), answers_(answers) {}

    // One request on the listener: its answer, never an exception (a
    // request that cannot be answered at all gets 400).
    boost::asio::awaitable<ListenerResponse> answer(ListenerRequest request) override;

    std::uint64_t requests() const { return requests_; }
    std::uint64_t refused() const { return refused_; }
    // Answers given from the copies kept on disk when the registry failed.
    std::uint64_t from_disk() const { return from_disk_; }

  private:
    // Provider packages answered, remembered at most this many.
    static constexpr std::size_t kMaxAnswered = 4096;

    boost::asio::awaitable<ListenerResponse> checked(ListenerRequest request);
    std::optional<std::uint16_t> port_of(const ListenerRequest& request) const;
    std::optional<ListenerResponse> refusal(const ListenerRequest& request,
                                            std::optional<std::uint16_t> port);
    boost::asio::awaitable<ListenerResponse> answer_route(Route route, std::string authorization);
    boost::asio::awaitable<ListenerResponse> registry_answer(const Route& route,
                                                             const std::string& authorization);
    std::optional<ListenerResponse> token_refusal(const Route& route,
                                                  credentials::BearerAnswer::Match bearer);
    ListenerResponse refuse(unsigned status, const std::string& message);

    HostRouting& routing_;
    credentials::BearerCheck& credentials_;
    RegistryAnswers& answers_;
    // Provider package documents answered with the host's token (route paths).
    std::set<std::string> answered_packages_;
    std::uint64_t requests_ = 0;
    std::uint64_t refused_ = 0;
    std::uint64_t from_disk_ = 0;
};

}  // namespace hostkeeper::daemon::registry_cache
