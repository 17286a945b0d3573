#pragma once
// One request to hostkeeperd, as the helper and the command line make it:
// find or start the daemon, send, read the answer; restart a daemon that
// speaks an older protocol; retry once when the daemon dies mid-call.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "helper/client/deadline.hpp"
#include "proto/messages.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::helper::client {

struct ClientOptions {
    std::optional<std::filesystem::path> socket;  // else proto::resolve_socket_location()
    std::chrono::milliseconds timeout{30'000};    // the whole call, start-up included
    bool start_daemon = true;                     // start hostkeeperd when nothing answers
};

// The options of --socket ("" for the default) and --timeout SECONDS.
ClientOptions make_client_options(const std::string& socket, double timeout_seconds);

// The string member `name` of the daemon's answer to `op`. Throws
// proto::Error internal ("hostkeeperd's OP answer has no string "NAME"")
// when it is missing or not a string.
const std::string& answer_string(const proto::Json& answer, std::string_view op, const char* name);

class DaemonClient {
  public:
    explicit DaemonClient(const ClientOptions& options);

    // The daemon's response with "ok": true. Throws proto::Error with the
    // daemon's code and message, NoDaemon, proto::UnsafeSocket, or
    // proto::Error{timeout}. A daemon that answers `busy` is asked again
    // until the deadline; then proto::Error{busy}.
    proto::Json call(const proto::Json& request);

    // Asks the daemon to stop and waits until that process has exited (by
    // the pid it answers with). False when none was running (start_daemon
    // off). Throws proto::Error{timeout} past the deadline.
    bool stop();

    const proto::SocketLocation& location() const { return location_; }

  private:
    proto::Json exchange(const proto::Json& request);
    // One answer, after a retry for a daemon that died and the replacement of
    // an outdated one; `busy` answers are returned as they are.
    proto::Json attempt(const proto::Json& request);
    void replace_outdated_daemon(const proto::Json& refusal);
    // A keyring_unavailable answer from a daemon whose session bus is not
    // ours: a daemon started on demand is replaced by one started here and
    // asked again; otherwise the answer says why and how to fix it.
    std::optional<proto::Json> retry_on_own_bus(const proto::Json& refusal,
                                                const proto::Json& request);
    // Sends the frozen "stop" in protocol `version`, then wait_until_stopped.
    void stop_daemon(int version);
    // Until the process that gave `answer` (its "pid") has exited; without a
    // pid, until nothing answers on the socket.
    void wait_until_stopped(const proto::Json& answer);

    proto::SocketLocation location_;
    Deadline deadline_;
    bool start_daemon_;
};

}  // namespace hostkeeper::helper::client
