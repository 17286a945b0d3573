#include "daemon/registry_cache/registry_door.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

#include "daemon/registry_cache/registry_cache.hpp"
#include "daemon/server/server.hpp"
#include "proto/port_link.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace asio = boost::asio;

namespace {

// What the port link says of the registry port, told to `cache`.
PortEvents events_for(RegistryCache& cache) {
    return PortEvents{
        [&cache](std::uint16_t number) { cache.port_registered(number); },
        [&cache](const std::string& why) { cache.port_lost(why); },
        [&cache](const std::string& why) { cache.port_unavailable(why); },
        [&cache](const proto::PortHolder& holder) { cache.port_held_elsewhere(holder); }};
}

// A fixed answer's listener: each connection's first request, 64 at most.
ListenerOptions fixed_answer_options() {
    return ListenerOptions{64, std::chrono::seconds(10), std::chrono::seconds(10),
                           "registry cache"};
}

}  // namespace

RegistryDoor::RegistryDoor(asio::io_context& io, RegistryCache& cache, server::Server& clients)
    : io_(io),
      events_(events_for(cache)),
      listener_(io, cache.gate(), ListenerOptions{}, [&clients] { clients.activity(); }) {
    cache.runs().hand_to([this](asio::ip::tcp::socket socket) { adopt(std::move(socket)); });
}

RegistryDoor::RegistryDoor(asio::io_context& io, ListenerResponse fixed, server::Server& clients)
    : io_(io),
      listener_(io, std::move(fixed), fixed_answer_options(), [&clients] { clients.activity(); }) {}

void RegistryDoor::open_port(asio::any_io_executor worker, const std::string& own_socket) {
    if (!proto::port_socket_override().empty() && proto::root_is_unmapped()) {
        spdlog::warn(
            "registry cache: HOSTKEEPER_PORT_SOCKET is ignored: this user namespace does not map "
            "root, so only {} can be told to be root's",
            proto::kPortSocket);
    }
    link_.emplace(
        io_, std::move(worker), proto::port_socket_path(), events_,
        [this](asio::ip::tcp::socket socket) { adopt(std::move(socket)); }, own_socket);
    link_->start();
}

void RegistryDoor::stop() {
    if (link_) link_->stop();
    listener_.stop();
}

}  // namespace hostkeeper::daemon::registry_cache
