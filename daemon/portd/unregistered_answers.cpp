#include "daemon/portd/unregistered_answers.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>

#include "daemon/portd/socket_calls.hpp"

namespace hostkeeper::daemon::portd {

std::string unregistered_response(uid_t uid, std::chrono::milliseconds waited) {
    const std::string body =
        R"({"errors":["hostkeeperd is not running for uid )" + std::to_string(uid) +
        ": its registry cache did not register with hostkeeper-portd within " +
        std::to_string(waited.count()) +
        R"( ms (is hostkeeperd.socket enabled for this user?); run hostkeeper doctor"]})";
    return "HTTP/1.1 503 hostkeeperd is not running for this user (run: hostkeeper doctor)\r\n"
           "Content-Type: application/json\r\n"
           "Content-Length: " +
           std::to_string(body.size()) +
           "\r\n"
           "Cache-Control: no-store\r\n"
           "Connection: close\r\n"
           "\r\n" +
           body;
}

void UnregisteredAnswers::answer(uid_t uid, proto::UniqueFd fd) {
    ++counters_.unregistered;
    if (worth_logging(counters_.unregistered))
        spdlog::info("answered 503 to uid {}: no daemon registered ({} such answers so far)", uid,
                     counters_.unregistered);
    if (drains_.size() >= limits_.draining) {
        reset_and_close(fd.release());
        return;
    }
    // What the client sent first (its request), then the answer; a client
    // still sending when the bound is reached is reset.
    std::size_t discarded = 0;
    if (!discard(fd.get(), discarded) ||
        !send_now(fd.get(), unregistered_response(uid, limits_.pending_wait))) {
        reset_and_close(fd.release());
        return;
    }
    ::shutdown(fd.get(), SHUT_WR);
    const std::uint64_t id = ++next_id_;
    auto drain = std::make_unique<Drain>(io_, fd.release(), Clock::now() + limits_.drain_deadline);
    drain->bytes = discarded;
    Drain& mine = *drain;
    drains_.emplace(id, std::move(drain));
    sweep_.arm();
    wait_drain(mine, id);
}

bool UnregisteredAnswers::expire(Clock::time_point now) {
    for (auto it = drains_.begin(); it != drains_.end();) {
        if (it->second->deadline <= now) {
            // Still open after the bound: reset, so no TIME_WAIT is left.
            reset_and_close(it->second->descriptor.release());
            it = drains_.erase(it);
        } else {
            ++it;
        }
    }
    return !drains_.empty();
}

bool UnregisteredAnswers::discard(int fd, std::size_t& total) const {
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n > 0) {
            total += static_cast<std::size_t>(n);
            if (total > limits_.drain_bytes) return false;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && would_block(errno);
    }
}

void UnregisteredAnswers::wait_drain(Drain& drain, std::uint64_t id) {
    drain.descriptor.async_wait(
        Descriptor::wait_read, [this, id](const boost::system::error_code& ec) {
            const auto found = drains_.find(id);
            if (found == drains_.end()) return;
            Drain& current = *found->second;
            if (!ec && discard(current.descriptor.native_handle(), current.bytes)) {
                wait_drain(current, id);
                return;
            }
            drains_.erase(found);
        });
}

}  // namespace hostkeeper::daemon::portd
