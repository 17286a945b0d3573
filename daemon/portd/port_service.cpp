#include "daemon/portd/port_service.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "daemon/portd/sock_diag.hpp"
#include "proto/port_link.hpp"
#include "proto/socket_path.hpp"
#include "proto/unique_fd.hpp"

namespace hostkeeper::daemon::portd {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using Descriptor = asio::posix::stream_descriptor;
using proto::UniqueFd;

namespace {

// Deadlines are checked this often while anything has one.
constexpr std::chrono::milliseconds kSweepInterval{100};
// How long accepting pauses when the process is out of descriptors.
constexpr std::chrono::milliseconds kAcceptPause{100};

// Refusals are logged the first few times, then at every power of two, with
// the count: a flood cannot flood the journal.
bool worth_logging(std::uint64_t count) {
    return count <= 5 || (count & (count - 1)) == 0;
}

bool is_loopback(const sockaddr_storage& address) {
    if (address.ss_family == AF_INET) {
        sockaddr_in in{};
        std::memcpy(&in, &address, sizeof in);
        return (ntohl(in.sin_addr.s_addr) >> 24) == 127;
    }
    if (address.ss_family == AF_INET6) {
        sockaddr_in6 in6{};
        std::memcpy(&in6, &address, sizeof in6);
        return IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr) != 0;
    }
    return false;
}

bool local_address(int fd, sockaddr_storage& out) {
    socklen_t len = sizeof out;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    return ::getsockname(fd, reinterpret_cast<sockaddr*>(&out), &len) == 0;
}

bool peer_address(int fd, sockaddr_storage& out) {
    socklen_t len = sizeof out;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    return ::getpeername(fd, reinterpret_cast<sockaddr*>(&out), &len) == 0;
}

// Sends all of `text` without waiting; false when the socket would block or
// failed (a reply or answer this small fits any fresh socket's buffer).
bool send_now(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t n = ::send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

bool would_block(int error) {
    return error == EAGAIN || error == EWOULDBLOCK;
}

}  // namespace

std::string tcp_listener_problem(int fd) {
    int type = 0;
    int listening = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return "not a stream socket";
    len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0)
        return "not listening";
    sockaddr_storage address{};
    if (!local_address(fd, address)) return std::string("getsockname: ") + std::strerror(errno);
    if (address.ss_family != AF_INET && address.ss_family != AF_INET6) return "not a TCP socket";
    if (!is_loopback(address))
        return "not bound to a loopback address (127.0.0.1 or ::1): the registry port serves "
               "only this machine's users";
    if (bound_port(fd) == 0) return "bound to no port";
    return "";
}

std::uint16_t bound_port(int fd) {
    sockaddr_storage address{};
    if (!local_address(fd, address)) return 0;
    if (address.ss_family == AF_INET) {
        sockaddr_in in{};
        std::memcpy(&in, &address, sizeof in);
        return ntohs(in.sin_port);
    }
    if (address.ss_family == AF_INET6) {
        sockaddr_in6 in6{};
        std::memcpy(&in6, &address, sizeof in6);
        return ntohs(in6.sin6_port);
    }
    return 0;
}

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

void reset_and_close(int fd) {
    const linger reset{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::close(fd);
}

struct PortService::Impl {
    // A TCP connection waiting for its user's daemon to register.
    struct Pending {
        uid_t uid = 0;
        UniqueFd fd{-1};
        Clock::time_point deadline;
    };
    // A registered daemon: its link, and what could not be handed yet.
    struct Link {
        Link(asio::io_context& io, int fd, uid_t owner, std::uint64_t number)
            : descriptor(io, fd), uid(owner), id(number) {}
        Descriptor descriptor;
        uid_t uid;
        std::uint64_t id;
        std::deque<UniqueFd> queue;
        bool writing = false;
    };
    // A link connection that has not sent its request line yet.
    struct Greeting {
        Greeting(asio::io_context& io, int fd, uid_t owner, Clock::time_point until)
            : descriptor(io, fd), uid(owner), deadline(until) {}
        Descriptor descriptor;
        uid_t uid;
        Clock::time_point deadline;
    };
    // A connection answered 503: read until its client closes, so that
    // closing it does not reset the answer away.
    struct Drain {
        Drain(asio::io_context& io, int fd, Clock::time_point until)
            : descriptor(io, fd), deadline(until) {}
        Descriptor descriptor;
        Clock::time_point deadline;
        std::size_t bytes = 0;
    };
    struct TcpListener {
        TcpListener(asio::io_context& io, int fd) : descriptor(io, fd), pause(io) {}
        Descriptor descriptor;
        asio::steady_timer pause;
    };

    asio::io_context& io;
    PortLimits limits;
    std::uint16_t port = 0;
    UniqueFd netlink{-1};
    std::vector<std::unique_ptr<TcpListener>> tcp;
    std::unique_ptr<TcpListener> link_listener;
    asio::steady_timer sweep_timer;
    bool sweeping = false;
    PortCounters counters;

    std::deque<Pending> pending;  // in arrival order: deadlines ascend
    std::unordered_map<uid_t, std::size_t> pending_of;
    std::unordered_map<uid_t, std::unique_ptr<Link>> links;
    std::size_t queued = 0;
    std::unordered_map<std::uint64_t, std::unique_ptr<Greeting>> greetings;
    std::unordered_map<uid_t, std::size_t> greetings_of;
    std::unordered_map<std::uint64_t, std::unique_ptr<Drain>> drains;
    std::uint64_t next_id = 0;

    Impl(asio::io_context& context, PortLimits bounds)
        : io(context), limits(bounds), sweep_timer(context) {}

    // ---- TCP: accept, look the owner up, deliver -------------------------

    void wait_tcp(TcpListener& listener) {
        listener.descriptor.async_wait(
            Descriptor::wait_read, [this, &listener](const boost::system::error_code& ec) {
                if (ec == asio::error::operation_aborted) return;
                if (ec) {
                    spdlog::error("registry port listener: {}", ec.message());
                    pause_tcp(listener);
                    return;
                }
                accept_tcp(listener);
            });
    }

    void pause_tcp(TcpListener& listener) {
        listener.pause.expires_after(kAcceptPause);
        listener.pause.async_wait([this, &listener](const boost::system::error_code& ec) {
            if (!ec) accept_tcp(listener);
        });
    }

    // Accepts up to accepts_per_turn connections, then lets the others run;
    // waits for readiness only once the backlog is empty (the reactor
    // reports edges).
    void accept_tcp(TcpListener& listener) {
        for (std::size_t i = 0; i < limits.accepts_per_turn; ++i) {
            // Blocking like a plain accept(): the daemon gets the descriptor as
            // it would have accepted it; this side uses MSG_DONTWAIT only.
            const int fd =
                ::accept4(listener.descriptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
            if (fd >= 0) {
                ++counters.accepted;
                on_connection(UniqueFd(fd));
                continue;
            }
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (would_block(errno)) {
                wait_tcp(listener);
                return;
            }
            static std::uint64_t failures = 0;
            if (worth_logging(++failures))
                spdlog::error("registry port: accept: {} ({} times)", std::strerror(errno),
                              failures);
            pause_tcp(listener);
            return;
        }
        asio::post(io, [this, &listener] { accept_tcp(listener); });
    }

    void on_connection(UniqueFd fd) {
        sockaddr_storage local{};
        sockaddr_storage peer{};
        std::optional<uid_t> uid;
        if (local_address(fd.get(), local) && peer_address(fd.get(), peer))
            uid = peer_uid(netlink.get(), local, peer);
        if (!uid) {
            ++counters.refused_unknown_owner;
            if (worth_logging(counters.refused_unknown_owner))
                spdlog::warn("reset a connection whose owner the kernel does not name ({} so far)",
                             counters.refused_unknown_owner);
            reset_and_close(fd.release());
            return;
        }
        deliver(*uid, std::move(fd));
    }

    void deliver(uid_t uid, UniqueFd fd) {
        const auto found = links.find(uid);
        if (found != links.end()) {
            hand(*found->second, std::move(fd));
        } else {
            hold(uid, std::move(fd));
        }
    }

    void refuse_full(uid_t uid, UniqueFd fd, std::string_view what) {
        ++counters.refused_full;
        if (worth_logging(counters.refused_full))
            spdlog::warn("reset a connection of uid {}: {} ({} such resets so far)", uid, what,
                         counters.refused_full);
        reset_and_close(fd.release());
    }

    // ---- registered daemons ----------------------------------------------

    void hand(Link& link, UniqueFd fd) {
        if (link.queue.empty()) {
            if (proto::send_handed_connection(link.descriptor.native_handle(), fd.get())) {
                ++counters.handed;
                return;  // the daemon has its copy; ours closes here
            }
            if (!would_block(errno)) {
                const uid_t uid = link.uid;
                end_link(uid, std::string("handing a connection failed: ") + std::strerror(errno));
                hold(uid, std::move(fd));
                return;
            }
        }
        if (link.queue.size() >= limits.queued_per_user || queued >= limits.queued_total) {
            refuse_full(link.uid, std::move(fd), "its daemon takes no more connections");
            return;
        }
        link.queue.push_back(std::move(fd));
        ++queued;
        wait_writable(link);
    }

    void wait_writable(Link& link) {
        if (link.writing) return;
        link.writing = true;
        link.descriptor.async_wait(
            Descriptor::wait_write,
            [this, uid = link.uid, id = link.id](const boost::system::error_code& ec) {
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

    void flush_queue(Link& link) {
        while (!link.queue.empty()) {
            if (proto::send_handed_connection(link.descriptor.native_handle(),
                                              link.queue.front().get())) {
                link.queue.pop_front();
                --queued;
                ++counters.handed;
                continue;
            }
            if (would_block(errno)) {
                wait_writable(link);
            } else {
                end_link(link.uid,
                         std::string("handing a connection failed: ") + std::strerror(errno));
            }
            return;
        }
    }

    Link* find_link(uid_t uid, std::uint64_t id) {
        const auto found = links.find(uid);
        return found != links.end() && found->second->id == id ? found->second.get() : nullptr;
    }

    // Ends the registration of `uid`: its link closes, and what was queued for
    // it waits for the next registration like any other connection.
    void end_link(uid_t uid, const std::string& why) {
        const auto found = links.find(uid);
        if (found == links.end()) return;
        std::unique_ptr<Link> link = std::move(found->second);
        links.erase(found);
        spdlog::info("registration of uid {} ended: {}", uid, why);
        queued -= link->queue.size();
        std::deque<UniqueFd> queue = std::move(link->queue);
        link.reset();  // closes the link; its waits complete as aborted and find nothing
        for (UniqueFd& fd : queue) hold(uid, std::move(fd));
    }

    // A registered link must stay silent: EOF, an error or any byte from the
    // daemon ends the registration.
    void watch(Link& link) {
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
            if (why != "the daemon closed its link") ++counters.bad_links;
            end_link(uid, why);
        });
    }

    // Why a registered link is no longer silent; empty while it is.
    static std::string silence_broken(int fd) {
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

    void register_daemon(std::unique_ptr<Greeting> greeting) {
        const uid_t uid = greeting->uid;
        if (links.count(uid) != 0) end_link(uid, "replaced by a newer registration");
        if (links.size() >= limits.registrations) {
            ++counters.bad_links;
            spdlog::warn("refused the registration of uid {}: {} daemons are registered", uid,
                         links.size());
            send_now(greeting->descriptor.native_handle(),
                     proto::port_reply_error("too many daemons are registered"));
            return;
        }
        if (!send_now(greeting->descriptor.native_handle(), proto::port_reply_ok(port))) {
            spdlog::info("uid {} left before its registration was confirmed", uid);
            return;
        }
        const int fd = greeting->descriptor.release();
        greeting.reset();
        auto link = std::make_unique<Link>(io, fd, uid, ++next_id);
        Link& registered = *link;
        links.emplace(uid, std::move(link));
        ++counters.registrations;
        spdlog::info("registered the daemon of uid {} ({} registered)", uid, links.size());
        // Bytes that came with the request line are already a broken silence.
        if (std::string why = silence_broken(fd); !why.empty()) {
            ++counters.bad_links;
            end_link(uid, why);
            return;
        }
        watch(registered);
        flush_pending(uid);
    }

    // ---- connections waiting for a registration ----------------------------

    void hold(uid_t uid, UniqueFd fd) {
        std::size_t& mine = pending_of[uid];
        if (mine >= limits.pending_per_user || pending.size() >= limits.pending_total) {
            if (mine == 0) pending_of.erase(uid);
            refuse_full(uid, std::move(fd), "too many connections wait for a daemon");
            return;
        }
        ++mine;
        pending.push_back(Pending{uid, std::move(fd), Clock::now() + limits.pending_wait});
        arm_sweep();
    }

    void flush_pending(uid_t uid) {
        const auto found = pending_of.find(uid);
        if (found == pending_of.end()) return;
        pending_of.erase(found);
        std::deque<Pending> theirs;
        std::deque<Pending> others;
        for (Pending& p : pending) (p.uid == uid ? theirs : others).push_back(std::move(p));
        pending = std::move(others);
        for (Pending& p : theirs) deliver(uid, std::move(p.fd));
    }

    void expire_pending(Clock::time_point now) {
        while (!pending.empty() && pending.front().deadline <= now) {
            Pending p = std::move(pending.front());
            pending.pop_front();
            if (--pending_of[p.uid] == 0) pending_of.erase(p.uid);
            answer_unregistered(p.uid, std::move(p.fd));
        }
    }

    void answer_unregistered(uid_t uid, UniqueFd fd) {
        ++counters.unregistered;
        if (worth_logging(counters.unregistered))
            spdlog::info("answered 503 to uid {}: no daemon registered ({} such answers so far)",
                         uid, counters.unregistered);
        if (drains.size() >= limits.draining) {
            reset_and_close(fd.release());
            return;
        }
        // What the client sent first (its request), then the answer; a client
        // still sending when the bound is reached is reset.
        std::size_t discarded = 0;
        if (!discard(fd.get(), discarded) ||
            !send_now(fd.get(), unregistered_response(uid, limits.pending_wait))) {
            reset_and_close(fd.release());
            return;
        }
        ::shutdown(fd.get(), SHUT_WR);
        const std::uint64_t id = ++next_id;
        auto drain =
            std::make_unique<Drain>(io, fd.release(), Clock::now() + limits.drain_deadline);
        drain->bytes = discarded;
        Drain& mine = *drain;
        drains.emplace(id, std::move(drain));
        arm_sweep();
        wait_drain(mine, id);
    }

    // Reads and drops what `fd` has now; false at its end, on an error or past
    // drain_bytes. `total` counts the bytes.
    bool discard(int fd, std::size_t& total) const {
        char buffer[4096];
        for (;;) {
            const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
            if (n > 0) {
                total += static_cast<std::size_t>(n);
                if (total > limits.drain_bytes) return false;
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            return n < 0 && would_block(errno);
        }
    }

    void wait_drain(Drain& drain, std::uint64_t id) {
        drain.descriptor.async_wait(
            Descriptor::wait_read, [this, id](const boost::system::error_code& ec) {
                const auto found = drains.find(id);
                if (found == drains.end()) return;
                Drain& current = *found->second;
                if (!ec && discard(current.descriptor.native_handle(), current.bytes)) {
                    wait_drain(current, id);
                    return;
                }
                drains.erase(found);
            });
    }

    // ---- the link socket: daemons registering, clients probing -------------

    void wait_link_listener() {
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

    void pause_link_listener() {
        link_listener->pause.expires_after(kAcceptPause);
        link_listener->pause.async_wait([this](const boost::system::error_code& ec) {
            if (!ec) accept_links();
        });
    }

    void accept_links() {
        for (std::size_t i = 0; i < limits.accepts_per_turn; ++i) {
            const int fd = ::accept4(link_listener->descriptor.native_handle(), nullptr, nullptr,
                                     SOCK_CLOEXEC);
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

    void on_link_connection(UniqueFd fd) {
        const std::optional<proto::PeerCredentials> peer = proto::peer_credentials(fd.get());
        if (!peer) return;
        std::size_t& mine = greetings_of[peer->uid];
        if (mine >= limits.greetings_per_user || greetings.size() >= limits.greetings_total) {
            if (mine == 0) greetings_of.erase(peer->uid);
            ++counters.bad_links;
            if (worth_logging(counters.bad_links))
                spdlog::warn("closed a link connection of uid {}: too many are in flight",
                             peer->uid);
            return;
        }
        ++mine;
        const std::uint64_t id = ++next_id;
        auto greeting = std::make_unique<Greeting>(io, fd.release(), peer->uid,
                                                   Clock::now() + limits.greeting_deadline);
        greetings.emplace(id, std::move(greeting));
        arm_sweep();
        read_greeting(id);  // the line usually came with the connection
    }

    std::unique_ptr<Greeting> take_greeting(std::uint64_t id) {
        const auto found = greetings.find(id);
        if (found == greetings.end()) return nullptr;
        std::unique_ptr<Greeting> greeting = std::move(found->second);
        greetings.erase(found);
        if (--greetings_of[greeting->uid] == 0) greetings_of.erase(greeting->uid);
        return greeting;
    }

    void bad_greeting(std::unique_ptr<Greeting> greeting, std::string_view why) {
        ++counters.bad_links;
        if (worth_logging(counters.bad_links))
            spdlog::warn("link connection of uid {}: {} ({} bad link connections so far)",
                         greeting->uid, why, counters.bad_links);
        send_now(greeting->descriptor.native_handle(), proto::port_reply_error(why));
    }

    // Takes the request line when all of it is there, and not one byte more
    // (peeked first, then read to its newline).
    void read_greeting(std::uint64_t id) {
        const auto found = greetings.find(id);
        if (found == greetings.end()) return;
        const int fd = found->second->descriptor.native_handle();
        char line[proto::kMaxPortLine];
        ssize_t n = 0;
        do {
            n = ::recv(fd, line, sizeof line, MSG_PEEK | MSG_DONTWAIT);
        } while (n < 0 && errno == EINTR);
        if (n < 0 && would_block(errno)) {
            found->second->descriptor.async_wait(Descriptor::wait_read,
                                                 [this, id](const boost::system::error_code& ec) {
                                                     if (ec == asio::error::operation_aborted)
                                                         return;
                                                     if (ec) {
                                                         take_greeting(id);
                                                         return;
                                                     }
                                                     read_greeting(id);
                                                 });
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
                found->second->descriptor.async_wait(
                    Descriptor::wait_read, [this, id](const boost::system::error_code& ec) {
                        if (ec == asio::error::operation_aborted) return;
                        if (ec) {
                            take_greeting(id);
                            return;
                        }
                        read_greeting(id);
                    });
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
        const std::optional<proto::PortVerb> verb = proto::parse_port_request(request);
        if (!verb) {
            bad_greeting(std::move(greeting), "not a hostkeeper-port 1 request");
            return;
        }
        if (*verb == proto::PortVerb::probe) {
            ++counters.probes;
            send_now(greeting->descriptor.native_handle(), proto::port_reply_ok(port));
            return;
        }
        register_daemon(std::move(greeting));
    }

    // ---- deadlines ---------------------------------------------------------

    void arm_sweep() {
        if (sweeping) return;
        sweeping = true;
        sweep_timer.expires_after(kSweepInterval);
        sweep_timer.async_wait([this](const boost::system::error_code& ec) {
            sweeping = false;
            if (ec) return;
            sweep();
        });
    }

    void sweep() {
        const Clock::time_point now = Clock::now();
        expire_pending(now);
        std::vector<std::uint64_t> late;
        for (const auto& [id, greeting] : greetings)
            if (greeting->deadline <= now) late.push_back(id);
        for (const std::uint64_t id : late) {
            std::unique_ptr<Greeting> greeting = take_greeting(id);
            ++counters.bad_links;
            if (worth_logging(counters.bad_links))
                spdlog::warn("link connection of uid {}: no request line in time", greeting->uid);
        }
        for (auto it = drains.begin(); it != drains.end();) {
            if (it->second->deadline <= now) {
                // Still open after the bound: reset, so no TIME_WAIT is left.
                reset_and_close(it->second->descriptor.release());
                it = drains.erase(it);
            } else {
                ++it;
            }
        }
        if (!pending.empty() || !greetings.empty() || !drains.empty()) arm_sweep();
    }
};

PortService::PortService(asio::io_context& io, const std::vector<int>& tcp_listeners,
                         int link_listener, PortLimits limits)
    : impl_(std::make_unique<Impl>(io, limits)) {
    // Owned from here on, whatever is thrown below.
    std::vector<UniqueFd> owned;
    owned.reserve(tcp_listeners.size());
    for (const int fd : tcp_listeners) owned.emplace_back(fd);
    UniqueFd link(link_listener);

    if (owned.empty() || owned.size() > 2)
        throw std::runtime_error("the registry port needs one or two TCP listeners, not " +
                                 std::to_string(owned.size()));
    for (const UniqueFd& fd : owned) {
        if (std::string problem = tcp_listener_problem(fd.get()); !problem.empty())
            throw std::runtime_error("TCP listener (fd " + std::to_string(fd.get()) +
                                     "): " + problem);
        const std::uint16_t port = bound_port(fd.get());
        if (impl_->port != 0 && port != impl_->port)
            throw std::runtime_error("the TCP listeners are on different ports (" +
                                     std::to_string(impl_->port) + " and " + std::to_string(port) +
                                     "): the registry port is one port");
        impl_->port = port;
    }
    impl_->netlink = UniqueFd(open_sock_diag());
    if (impl_->netlink.get() < 0)
        throw std::runtime_error(std::string("NETLINK_SOCK_DIAG socket: ") + std::strerror(errno));
    // Accepting never waits: the listeners are non-blocking (the accepted
    // connections are not: accept4 does not inherit the flag).
    for (UniqueFd& fd : owned) {
        const int flags = ::fcntl(fd.get(), F_GETFL);
        if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0)
            throw std::runtime_error(std::string("fcntl: ") + std::strerror(errno));
        impl_->tcp.push_back(std::make_unique<Impl::TcpListener>(io, fd.release()));
    }
    const int flags = ::fcntl(link.get(), F_GETFL);
    if (flags < 0 || ::fcntl(link.get(), F_SETFL, flags | O_NONBLOCK) != 0)
        throw std::runtime_error(std::string("fcntl: ") + std::strerror(errno));
    impl_->link_listener = std::make_unique<Impl::TcpListener>(io, link.release());
}

PortService::~PortService() = default;

void PortService::start() {
    for (auto& listener : impl_->tcp) impl_->accept_tcp(*listener);
    impl_->accept_links();
}

std::uint16_t PortService::port() const {
    return impl_->port;
}

const PortCounters& PortService::counters() const {
    return impl_->counters;
}

void PortService::log_counters() const {
    const PortCounters& c = impl_->counters;
    spdlog::info(
        "connections: {} accepted, {} handed, {} answered 503, {} reset (unknown owner), {} "
        "reset (over a bound); links: {} registrations ({} now), {} probes, {} refused or ended "
        "for what they sent",
        c.accepted, c.handed, c.unregistered, c.refused_unknown_owner, c.refused_full,
        c.registrations, impl_->links.size(), c.probes, c.bad_links);
}

}  // namespace hostkeeper::daemon::portd
