#include "daemon/portd/daemon_links.hpp"

#include <linux/sockios.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "daemon/portd/socket_calls.hpp"
#include "proto/port_link.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::daemon::portd {

void DaemonLinks::deliver(uid_t uid, proto::UniqueFd fd) {
    const auto found = links_.find(uid);
    if (found != links_.end()) {
        hand(*found->second, std::move(fd));
    } else {
        hold_(uid, std::move(fd));
    }
}

void DaemonLinks::hand(Link& link, proto::UniqueFd fd) {
    if (link.queue.empty()) {
        if (proto::send_handed_connection(link.descriptor.native_handle(), fd.get())) {
            ++counters_.handed;
            return;  // the daemon has its copy; ours closes here
        }
        if (!would_block(errno)) {
            const uid_t uid = link.uid;
            end_link(uid, std::string("handing a connection failed: ") + std::strerror(errno));
            hold_(uid, std::move(fd));
            return;
        }
    }
    Budget::Slot slot = budgets_.queued.take(link.holder);
    if (!slot) {
        refuse_full(counters_, link.uid, std::move(fd), "its daemon takes no more connections");
        return;
    }
    link.queue.push_back(Queued{std::move(fd), std::move(slot)});
    wait_writable(link);
}

void DaemonLinks::wait_writable(Link& link) {
    if (link.writing) return;
    link.writing = true;
    link.descriptor.async_wait(Descriptor::wait_write, [this, uid = link.uid, id = link.id](
                                                           const boost::system::error_code& ec) {
        Link* current = find_link(uid, id);
        if (current == nullptr) return;
        current->writing = false;
        if (ec) {
            end_link(uid, "its link failed: " + ec.message());
            return;
        }
        flush_queue(*current);
    });
}

void DaemonLinks::flush_queue(Link& link) {
    while (!link.queue.empty()) {
        if (proto::send_handed_connection(link.descriptor.native_handle(),
                                          link.queue.front().fd.get())) {
            link.queue.pop_front();
            ++counters_.handed;
            continue;
        }
        if (would_block(errno)) {
            wait_writable(link);
        } else {
            end_link(link.uid, std::string("handing a connection failed: ") + std::strerror(errno));
        }
        return;
    }
}

DaemonLinks::Link* DaemonLinks::find_link(uid_t uid, std::uint64_t id) {
    const auto found = links_.find(uid);
    return found != links_.end() && found->second->id == id ? found->second.get() : nullptr;
}

void DaemonLinks::end_link(uid_t uid, const std::string& why) {
    const auto found = links_.find(uid);
    if (found == links_.end()) return;
    std::unique_ptr<Link> link = std::move(found->second);
    links_.erase(found);
    spdlog::info("registration of uid {} ended: {}", uid, why);
    std::deque<Queued> queue = std::move(link->queue);
    link.reset();  // closes the link; its waits complete as aborted and find nothing
    for (Queued& queued : queue) {
        queued.slot = Budget::Slot();
        hold_(uid, std::move(queued.fd));
    }
}

void DaemonLinks::watch(Link& link) {
    link.descriptor.async_wait(Descriptor::wait_read, [this, uid = link.uid, id = link.id](
                                                          const boost::system::error_code& ec) {
        Link* current = find_link(uid, id);
        if (current == nullptr) return;
        if (ec) {
            end_link(uid, "its link failed: " + ec.message());
            return;
        }
        const std::string why = silence_broken(current->descriptor.native_handle());
        if (why.empty()) {
            watch(*current);  // a spurious wakeup
            return;
        }
        if (why != "the daemon closed its link") ++counters_.bad_links;
        end_link(uid, why);
    });
}

std::string DaemonLinks::silence_broken(int fd) {
    char byte = 0;
    ssize_t n = 0;
    do {
        n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n == 0) return "the daemon closed its link";
    if (n > 0) return "the daemon sent bytes after registering";
    if (would_block(errno)) return "";
    return std::string("its link failed: ") + std::strerror(errno);
}

bool DaemonLinks::replaceable(Link& link, pid_t newcomer) {
    const uid_t uid = link.uid;
    const int fd = link.descriptor.native_handle();
    // Its end may not have been seen yet (watch runs on the next turn).
    if (std::string why = silence_broken(fd); !why.empty()) {
        if (why != "the daemon closed its link") ++counters_.bad_links;
        end_link(uid, why);
        return true;
    }
    int unread = 0;
    if (::ioctl(fd, SIOCOUTQ, &unread) != 0 || (unread == 0 && link.queue.empty())) {
        link.unread_since = {};
        return false;
    }
    const Clock::time_point now = Clock::now();
    if (link.unread_since == Clock::time_point{}) link.unread_since = now;
    if (now - link.unread_since < limits_.wedged_link) return false;
    end_link(
        uid,
        "its daemon (pid " + std::to_string(link.pid) + ") left handed connections unread for " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::seconds>(now - link.unread_since).count()) +
            " s: replaced by pid " + std::to_string(newcomer));
    return true;
}

void DaemonLinks::register_daemon(uid_t uid, BudgetHolder holder, proto::UniqueFd greeting,
                                  std::string socket) {
    const int greeting_fd = greeting.get();
    const std::optional<proto::PeerCredentials> peer = proto::peer_credentials(greeting_fd);
    const pid_t pid = peer ? peer->pid : 0;
    if (const auto held = links_.find(uid);
        held != links_.end() && !replaceable(*held->second, pid)) {
        // One registration per user: the holder keeps it, the newcomer learns who holds it.
        const Link& holding = *held->second;
        ++counters_.second_daemons;
        if (worth_logging(counters_.second_daemons)) {
            spdlog::warn(
                "refused a second daemon of uid {} (pid {}{}): pid {}{} holds the registration "
                "({} refused so far)",
                uid, pid, socket.empty() ? "" : ", socket " + socket, holding.pid,
                holding.socket.empty() ? "" : ", socket " + holding.socket,
                counters_.second_daemons);
        }
        send_now(greeting_fd,
                 proto::port_reply_held(proto::PortHolder{holding.pid, holding.socket}));
        return;
    }
    Budget::Slot slot = budgets_.registrations.take(holder);
    if (!slot) {
        ++counters_.bad_links;
        spdlog::warn(
            "refused the registration of uid {}: {} daemons are registered, {} of them in the "
            "budget of {}",
            uid, links_.size(), budgets_.registrations.used_by(holder), holder.describe());
        send_now(greeting_fd,
                 proto::port_reply_error("too many daemons of this user are registered"));
        return;
    }
    if (!send_now(greeting_fd, proto::port_reply_ok(port_))) {
        spdlog::info("uid {} left before its registration was confirmed", uid);
        return;
    }
    const int fd = greeting.release();
    auto link = std::make_unique<Link>(io_, fd, uid, holder, ++next_id_, std::move(slot));
    link->pid = pid;
    link->socket = std::move(socket);
    Link& registered = *link;
    links_.emplace(uid, std::move(link));
    ++counters_.registrations;
    spdlog::info("registered the daemon of uid {} (pid {}{}; {} registered)", uid, pid,
                 registered.socket.empty() ? "" : ", socket " + registered.socket, links_.size());
    // Bytes that came with the request line are already a broken silence.
    if (std::string why = silence_broken(fd); !why.empty()) {
        ++counters_.bad_links;
        end_link(uid, why);
        return;
    }
    watch(registered);
    release_(uid);
}

}  // namespace hostkeeper::daemon::portd
