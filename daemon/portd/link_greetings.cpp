// The link socket: connections accepted, their peer's uid taken, and the
// request line read: a probe is answered, a registration made.

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <optional>

#include "daemon/portd/port_state.hpp"
#include "daemon/portd/socket_calls.hpp"
#include "proto/port_link.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::daemon::portd {

namespace asio = boost::asio;

void PortService::Impl::wait_link_listener() {
    link_listener->descriptor.async_wait(
        Descriptor::wait_read, [this](const boost::system::error_code& ec) {
            if (ec == asio::error::operation_aborted) return;
            if (ec) {
                spdlog::error("link socket listener: {}", ec.message());
                pause_link_listener();
                return;
            }
            accept_links();
        });
}

void PortService::Impl::pause_link_listener() {
    link_listener->pause.expires_after(kAcceptPause);
    link_listener->pause.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) accept_links();
    });
}

void PortService::Impl::accept_links() {
    for (std::size_t i = 0; i < limits.accepts_per_turn; ++i) {
        const int fd =
            ::accept4(link_listener->descriptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
            on_link_connection(UniqueFd(fd));
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (would_block(errno)) {
            wait_link_listener();
            return;
        }
        static std::uint64_t failures = 0;
        if (worth_logging(++failures))
            spdlog::error("link socket: accept: {} ({} times)", std::strerror(errno), failures);
        pause_link_listener();
        return;
    }
    asio::post(io, [this] { accept_links(); });
}

void PortService::Impl::on_link_connection(UniqueFd fd) {
    const std::optional<proto::PeerCredentials> peer = proto::peer_credentials(fd.get());
    if (!peer) return;
    const BudgetHolder holder = budgets.holder_of(peer->uid);
    Budget::Slot slot = budgets.greetings.take(holder);
    if (!slot) {
        // Answered, not reset: a daemon that registers says why it could not.
        ++counters.refused_greetings;
        if (worth_logging(counters.refused_greetings))
            spdlog::warn(
                "refused a link connection of uid {} (budget of {}): too many are in flight ({} "
                "such refusals so far)",
                peer->uid, holder.describe(), counters.refused_greetings);
        send_now(fd.get(), proto::port_reply_error(
                               "too many link connections of this user are in flight; try again"));
        return;
    }
    const std::uint64_t id = ++next_id;
    auto greeting =
        std::make_unique<Greeting>(io, fd.release(), peer->uid, holder,
                                   Clock::now() + limits.greeting_deadline, std::move(slot));
    greetings.emplace(id, std::move(greeting));
    arm_sweep();
    read_greeting(id);  // the line usually came with the connection
}

std::unique_ptr<PortService::Impl::Greeting> PortService::Impl::take_greeting(std::uint64_t id) {
    const auto found = greetings.find(id);
    if (found == greetings.end()) return nullptr;
    std::unique_ptr<Greeting> greeting = std::move(found->second);
    greetings.erase(found);
    greeting->slot = Budget::Slot();  // no longer in flight
    return greeting;
}

void PortService::Impl::bad_greeting(std::unique_ptr<Greeting> greeting, std::string_view why) {
    ++counters.bad_links;
    if (worth_logging(counters.bad_links))
        spdlog::warn("link connection of uid {}: {} ({} bad link connections so far)",
                     greeting->uid, why, counters.bad_links);
    send_now(greeting->descriptor.native_handle(), proto::port_reply_error(why));
}

void PortService::Impl::wait_greeting(Greeting& greeting, std::uint64_t id) {
    greeting.descriptor.async_wait(Descriptor::wait_read,
                                   [this, id](const boost::system::error_code& ec) {
                                       if (ec == asio::error::operation_aborted) return;
                                       if (ec) {
                                           take_greeting(id);
                                           return;
                                       }
                                       read_greeting(id);
                                   });
}

void PortService::Impl::read_greeting(std::uint64_t id) {
    const auto found = greetings.find(id);
    if (found == greetings.end()) return;
    const int fd = found->second->descriptor.native_handle();
    char line[proto::kMaxPortLine];
    ssize_t n = 0;
    do {
        n = ::recv(fd, line, sizeof line, MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && would_block(errno)) {
        wait_greeting(*found->second, id);
        return;
    }
    if (n <= 0) {
        take_greeting(id);  // gone before its request
        return;
    }
    const std::string_view peeked(line, static_cast<std::size_t>(n));
    const std::size_t newline = peeked.find('\n');
    if (newline == std::string_view::npos) {
        if (peeked.size() >= proto::kMaxPortLine) {
            bad_greeting(take_greeting(id), "request line too long");
        } else {
            // The rest of the line is still to come: wait for it (new
            // bytes wake the reactor again).
            wait_greeting(*found->second, id);
        }
        return;
    }
    const std::string request(peeked.substr(0, newline));
    ssize_t taken = 0;
    do {
        taken = ::recv(fd, line, newline + 1, MSG_DONTWAIT);
    } while (taken < 0 && errno == EINTR);
    std::unique_ptr<Greeting> greeting = take_greeting(id);
    if (taken != static_cast<ssize_t>(newline + 1)) return;
    std::optional<proto::PortRequest> parsed = proto::parse_port_request(request);
    if (!parsed) {
        bad_greeting(std::move(greeting), proto::kNotARequest);
        return;
    }
    if (parsed->verb == proto::PortVerb::probe) {
        ++counters.probes;
        send_now(greeting->descriptor.native_handle(), proto::port_reply_ok(port));
        return;
    }
    register_daemon(std::move(greeting), std::move(parsed->socket));
}

}  // namespace hostkeeper::daemon::portd
