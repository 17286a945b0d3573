#include "daemon/portd/link_greetings.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>
#include <cerrno>
#include <optional>
#include <utility>
#include <vector>

#include "daemon/portd/socket_calls.hpp"
#include "proto/port_link.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::daemon::portd {

namespace asio = boost::asio;

LinkGreetings::LinkGreetings(asio::io_context& io, proto::UniqueFd listener,
                             const PortLimits& limits, std::uint16_t port, Budget& budget,
                             HolderOf holder_of, PortCounters& counters, DeadlineSweep& sweep,
                             Register registration)
    : io_(io),
      limits_(limits),
      port_(port),
      budget_(budget),
      holder_of_(std::move(holder_of)),
      counters_(counters),
      sweep_(sweep),
      register_(std::move(registration)),
      listener_(io, std::move(listener), limits.accepts_per_turn, "link socket", accept_failures_,
                [this](proto::UniqueFd fd) { on_link_connection(std::move(fd)); }) {}

bool LinkGreetings::expire(Clock::time_point now) {
    std::vector<std::uint64_t> late;
    for (const auto& [id, greeting] : greetings_)
        if (greeting->deadline <= now) late.push_back(id);
    for (const std::uint64_t id : late) {
        std::unique_ptr<Greeting> greeting = take_greeting(id);
        ++counters_.bad_links;
        if (worth_logging(counters_.bad_links))
            spdlog::warn("link connection of uid {}: no request line in time", greeting->uid);
    }
    return !greetings_.empty();
}

void LinkGreetings::on_link_connection(proto::UniqueFd fd) {
    const std::optional<proto::PeerCredentials> peer = proto::peer_credentials(fd.get());
    if (!peer) return;
    const BudgetHolder holder = holder_of_(peer->uid);
    Budget::Slot slot = budget_.take(holder);
    if (!slot) {
        // Answered, not reset: a daemon that registers says why it could not.
        ++counters_.refused_greetings;
        if (worth_logging(counters_.refused_greetings))
            spdlog::warn(
                "refused a link connection of uid {} (budget of {}): too many are in flight ({} "
                "such refusals so far)",
                peer->uid, holder.describe(), counters_.refused_greetings);
        send_now(fd.get(), proto::port_reply_error(
                               "too many link connections of this user are in flight; try again"));
        return;
    }
    const std::uint64_t id = ++next_id_;
    auto greeting =
        std::make_unique<Greeting>(io_, fd.release(), peer->uid, holder,
                                   Clock::now() + limits_.greeting_deadline, std::move(slot));
    greetings_.emplace(id, std::move(greeting));
    sweep_.arm();
    read_greeting(id);  // the line usually came with the connection
}

std::unique_ptr<LinkGreetings::Greeting> LinkGreetings::take_greeting(std::uint64_t id) {
    const auto found = greetings_.find(id);
    if (found == greetings_.end()) return nullptr;
    std::unique_ptr<Greeting> greeting = std::move(found->second);
    greetings_.erase(found);
    greeting->slot = Budget::Slot();  // no longer in flight
    return greeting;
}

void LinkGreetings::bad_greeting(std::unique_ptr<Greeting> greeting, std::string_view why) {
    ++counters_.bad_links;
    if (worth_logging(counters_.bad_links))
        spdlog::warn("link connection of uid {}: {} ({} bad link connections so far)",
                     greeting->uid, why, counters_.bad_links);
    send_now(greeting->descriptor.native_handle(), proto::port_reply_error(why));
}

void LinkGreetings::wait_greeting(Greeting& greeting, std::uint64_t id) {
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

void LinkGreetings::read_greeting(std::uint64_t id) {
    const auto found = greetings_.find(id);
    if (found == greetings_.end()) return;
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
        ++counters_.probes;
        send_now(greeting->descriptor.native_handle(), proto::port_reply_ok(port_));
        return;
    }
    const uid_t uid = greeting->uid;
    const BudgetHolder holder = greeting->holder;
    proto::UniqueFd link(greeting->descriptor.release());
    greeting.reset();
    register_(uid, holder, std::move(link), std::move(parsed->socket));
}

}  // namespace hostkeeper::daemon::portd
