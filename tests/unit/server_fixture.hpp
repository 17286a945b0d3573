#pragma once
// A Server on a real Unix socket in a throw-away directory, answering with
// whatever RequestHandler the test gives, on an event loop of its own thread.
// A fixture derives from it, makes its handler from `io`, calls serve(), and
// calls shutdown() first thing in its destructor (before its handler goes).

#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <optional>
#include <thread>

#include "daemon/server/request_handler.hpp"
#include "daemon/server/server.hpp"
#include "daemon/server/socket_owner.hpp"
#include "proto/socket_path.hpp"
#include "socket_fixture.hpp"

namespace hostkeeper::test {

class SocketServer {
  public:
    SocketServer() {
        char pattern[] = "/tmp/hk-unit.XXXXXX";
        root = ::mkdtemp(pattern);
        location = {root / "d" / "socket", root / "d"};
    }
    SocketServer(const SocketServer&) = delete;
    SocketServer& operator=(const SocketServer&) = delete;
    ~SocketServer() {
        shutdown();
        std::filesystem::remove_all(root);
    }

    // `stopping` counts the stops begun; `stopped` says the server finished
    // one (and ends the event loop, as the daemon's main does).
    void serve(daemon::server::RequestHandler& handler, daemon::server::ServerOptions options) {
        owner.emplace(location);
        options.max_connections = options.max_connections == 1 ? 16 : options.max_connections;
        server.emplace(io, owner->release_listener(), handler, options,
                       daemon::server::StopHooks{[this] { ++stopping; },
                                                 [this] {
                                                     stopped = true;
                                                     io.stop();
                                                 }});
        server->start();
        thread = std::thread([this] { io.run(); });
    }

    void shutdown() {
        if (!thread.joinable()) return;
        boost::asio::post(io, [this] { server->stop(); });
        thread.join();
        server.reset();
        owner.reset();
    }

    proto::Json request(const proto::Json& message) const {
        const RawClient client(location.socket);
        client.send_json(message);
        auto response = client.read_json();
        if (!response) throw std::runtime_error("no response");
        return *response;
    }

    std::filesystem::path root;
    proto::SocketLocation location;
    boost::asio::io_context io;
    std::optional<daemon::server::SocketOwner> owner;
    std::optional<daemon::server::Server> server;
    std::thread thread;
    std::atomic<int> stopping{0};
    std::atomic<bool> stopped{false};
};

}  // namespace hostkeeper::test
