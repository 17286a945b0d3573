#pragma once
// One blocking connection to hostkeeperd: connect, send a request frame, read
// the response frame; every wait bounded by a Deadline.

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "helper/client/deadline.hpp"
#include "proto/messages.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::helper::client {

// The daemon closed the connection, or sent something that is not a frame.
class ConnectionLost : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class Connection {
  public:
    // nullopt when nothing accepts on `socket`; `error` is then the errno
    // (ENOENT: no socket file or directory; ECONNREFUSED: a stale one).
    // Throws proto::UnsafeDirectory when the socket's directory is not the
    // user's own with mode 0700 (or is a symlink), proto::ForeignPeer when
    // what listens runs as another uid: nothing is sent to either.
    static std::optional<Connection> open(const std::filesystem::path& socket,
                                          const Deadline& deadline, int& error);

    Connection(Connection&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    Connection& operator=(Connection&&) = delete;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    ~Connection();

    // Sends one request and returns the daemon's response. Throws
    // proto::Error{timeout} past the deadline, ConnectionLost when the
    // daemon hangs up or answers with something that is not a response
    // (a bad length, not JSON, nested too deeply).
    // Buffers that held the messages are scrubbed.
    proto::Json round_trip(const proto::Json& request, const Deadline& deadline);

  private:
    explicit Connection(int fd) : fd_(fd) {}
    void write_all(const std::string& bytes, const Deadline& deadline);
    // false on a clean end of stream before the first byte. With `passed`,
    // the first descriptor passed with the bytes goes there, others closed.
    bool read_exact(char* data, std::size_t size, const Deadline& deadline,
                    proto::UniqueFd* passed = nullptr);
    void wait_for(short events, const Deadline& deadline);

    int fd_ = -1;
};

}  // namespace hostkeeper::helper::client
