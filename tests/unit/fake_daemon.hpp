#pragma once
// A stand-in hostkeeperd for the command line's and the helpers' unit tests:
// answers each connection on a socket with the next of its replies (one
// request each), and keeps the requests; client options that reach it; and
// the stdout/stderr of a call, captured.

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "helper/client/daemon_client.hpp"
#include "proto/framing.hpp"
#include "proto/messages.hpp"

namespace hk_unit {

class FakeDaemon {
  public:
    FakeDaemon(const std::filesystem::path& socket, hostkeeper::proto::Json reply)
        : FakeDaemon(socket, std::vector<hostkeeper::proto::Json>{std::move(reply)}) {}
    FakeDaemon(const std::filesystem::path& socket, std::vector<hostkeeper::proto::Json> replies)
        : replies_(std::move(replies)) {
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
        REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(::listen(fd_, 4) == 0);
        thread_ = std::thread([this] { serve(); });
    }
    FakeDaemon(const FakeDaemon&) = delete;
    FakeDaemon& operator=(const FakeDaemon&) = delete;
    ~FakeDaemon() {
        if (thread_.joinable()) thread_.join();
        ::close(fd_);
    }
    // The first request (after all replies were given).
    hostkeeper::proto::Json request() { return requests().at(0); }
    const std::vector<hostkeeper::proto::Json>& requests() {
        if (thread_.joinable()) thread_.join();
        return requests_;
    }

  private:
    static bool read_exact(int fd, char* out, std::size_t n) {
        std::size_t done = 0;
        while (done < n) {
            const ssize_t got = ::read(fd, out + done, n - done);
            if (got <= 0) return false;
            done += static_cast<std::size_t>(got);
        }
        return true;
    }
    void serve() {
        for (const auto& reply : replies_) {
            const int client = ::accept(fd_, nullptr, nullptr);
            if (client < 0) return;
            hostkeeper::proto::FrameHeader header{};
            hostkeeper::proto::Json request;
            // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): bytes
            if (read_exact(client, reinterpret_cast<char*>(header.data()), header.size())) {
                std::string body(hostkeeper::proto::decode_header(header), '\0');
                if (read_exact(client, body.data(), body.size()))
                    request = hostkeeper::proto::parse_payload(body);
            }
            requests_.push_back(std::move(request));
            const std::string frame = hostkeeper::proto::encode_frame(reply.dump());
            (void)!::write(client, frame.data(), frame.size());
            ::close(client);
        }
    }
    int fd_ = -1;
    std::vector<hostkeeper::proto::Json> replies_;
    std::vector<hostkeeper::proto::Json> requests_;
    std::thread thread_;
};

// stdout and stderr of `body`, through memfds.
struct Captured {
    int status = -1;
    std::string out, err;
};
template <typename F>
Captured capture(F body) {
    std::fflush(stdout);
    std::fflush(stderr);
    const int out = ::memfd_create("out", MFD_CLOEXEC), err = ::memfd_create("err", MFD_CLOEXEC);
    const int saved_out = ::dup(1), saved_err = ::dup(2);
    ::dup2(out, 1);
    ::dup2(err, 2);
    Captured c;
    c.status = body();
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(saved_out, 1);
    ::dup2(saved_err, 2);
    ::close(saved_out);
    ::close(saved_err);
    const auto slurp = [](int fd) {
        std::string text;
        char buffer[4096];
        ::lseek(fd, 0, SEEK_SET);
        for (ssize_t n = 0; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
            text.append(buffer, static_cast<std::size_t>(n));
        ::close(fd);
        return text;
    };
    c.out = slurp(out);
    c.err = slurp(err);
    return c;
}

// This process's directory of private sockets, removed with everything in it
// when the process exits.
class SocketRoot {
  public:
    SocketRoot()
        : dir_(std::filesystem::temp_directory_path() /
               ("hk-cli-unit-" + std::to_string(::getpid()))) {
        std::filesystem::create_directories(dir_);
        ::chmod(dir_.c_str(), 0700);
    }
    ~SocketRoot() {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }
    SocketRoot(const SocketRoot&) = delete;
    SocketRoot& operator=(const SocketRoot&) = delete;
    const std::filesystem::path& dir() const { return dir_; }

  private:
    std::filesystem::path dir_;
};

// A new socket path in a fresh private (0700) directory.
inline std::filesystem::path private_socket() {
    static const SocketRoot root;
    static int n = 0;
    const std::filesystem::path dir = root.dir() / std::to_string(n++);
    std::filesystem::create_directories(dir);
    ::chmod(dir.c_str(), 0700);
    return dir / "socket";
}

// Client options for a socket of its own (private_socket()) that never start
// a daemon and give up after 5 s: a FakeDaemon on options.socket answers, or
// nothing does.
inline hostkeeper::helper::client::ClientOptions fake_client_options() {
    hostkeeper::helper::client::ClientOptions options;
    options.start_daemon = false;
    options.timeout = std::chrono::seconds(5);
    options.socket = private_socket();
    return options;
}

}  // namespace hk_unit
