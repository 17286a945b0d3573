#pragma once
// A client that speaks the socket protocol by hand, byte by byte, so tests
// can misbehave on purpose: pipeline without reading, send garbage, stall.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace hostkeeper::it {

class RawClient {
  public:
    // Connects to `socket` (throws std::runtime_error when it cannot).
    explicit RawClient(const std::filesystem::path& socket);
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;
    ~RawClient();

    // Sends `payload` in one frame (header included); false once the daemon hung up.
    bool send_frame(const std::string& payload);
    bool send_bytes(const std::string& bytes);
    // The next frame's payload; nullopt on end of stream or after `limit`.
    std::optional<std::string> read_frame(
        std::chrono::milliseconds limit = std::chrono::seconds(10));
    // True when the daemon closed the connection (end of stream) within
    // `limit`, discarding whatever frames come before it.
    bool closed_within(std::chrono::milliseconds limit);
    int fd() const { return fd_; }

  private:
    bool read_exact(char* data, std::size_t size, std::chrono::steady_clock::time_point until);
    int fd_ = -1;
};

// True when a connection to `socket` succeeds: something listens there (a
// socket file alone may be bound but not yet listening).
bool listening(const std::filesystem::path& socket);

// A request payload: {"v":1,"op":OP} plus `extra` (",\"host\":\"...\"").
std::string request(const std::string& op, const std::string& extra = "");

}  // namespace hostkeeper::it
