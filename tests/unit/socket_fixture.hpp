#pragma once
// Raw client-side socket helpers for tests that speak the wire protocol, or
// break it on purpose.

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "proto/framing.hpp"
#include "proto/messages.hpp"

namespace hostkeeper::test {

class RawClient {
  public:
    explicit RawClient(const std::filesystem::path& socket) {
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
        if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
            throw std::runtime_error("connect " + socket.string() + ": " + std::strerror(errno));
        }
    }
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;
    ~RawClient() { ::close(fd_); }

    void send_bytes(const std::string& bytes) const {
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
            if (n <= 0) throw std::runtime_error("send failed");
            done += static_cast<std::size_t>(n);
        }
    }
    void send_json(const proto::Json& message) const {
        send_bytes(proto::encode_frame(message.dump()));
    }

    // Reads exactly n bytes; nullopt on EOF/timeout first.
    std::optional<std::string> read_bytes(std::size_t n, int timeout_ms = 5000) const {
        std::string out;
        while (out.size() < n) {
            pollfd pfd{fd_, POLLIN, 0};
            if (::poll(&pfd, 1, timeout_ms) <= 0) return std::nullopt;
            char buffer[4096];
            const ssize_t got = ::recv(fd_, buffer, std::min(sizeof buffer, n - out.size()), 0);
            if (got <= 0) return std::nullopt;
            out.append(buffer, static_cast<std::size_t>(got));
        }
        return out;
    }
    // One response frame, parsed; nullopt when the daemon closed instead.
    std::optional<proto::Json> read_json(int timeout_ms = 5000) const {
        const auto header = read_bytes(4, timeout_ms);
        if (!header) return std::nullopt;
        proto::FrameHeader h{};
        std::memcpy(h.data(), header->data(), 4);
        const auto body = read_bytes(proto::decode_header(h), timeout_ms);
        if (!body) return std::nullopt;
        return proto::parse_payload(*body);
    }
    // True when the peer closed the connection within the timeout.
    bool closed_within(int timeout_ms) const {
        pollfd pfd{fd_, POLLIN, 0};
        if (::poll(&pfd, 1, timeout_ms) <= 0) return false;
        char c = 0;
        return ::recv(fd_, &c, 1, MSG_PEEK) == 0;
    }
    int fd() const { return fd_; }

  private:
    int fd_ = -1;
};

// Polls `condition` for up to `limit`.
template <typename F>
bool wait_for(F&& condition, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

inline std::string error_code_of(const proto::Json& response) {
    return response.at("error").at("code").get<std::string>();
}

}  // namespace hostkeeper::test
