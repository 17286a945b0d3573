#include "helper/cli/loopback_listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "helper/cli/login_redirect.hpp"
#include "proto/sock_diag.hpp"

namespace hostkeeper::helper::cli {
namespace {

using steady = std::chrono::steady_clock;

// A connection that has not sent its request head is given this long.
constexpr std::chrono::seconds kReadLimit{10};
// Connections read at once; one more drops the longest waiting. A browser
// sends its request as it connects, so only connections that hold back
// their request are dropped.
constexpr std::size_t kMaxPending = 16;
// Ports tried at most, from the range's start.
constexpr int kMaxTries = 200;

int ms_until(steady::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
}

// Reads what `fd` has (it is readable) onto `head`, up to kMaxRedirectHead;
// true when the head is complete or no more will come.
bool read_some(int fd, std::string& head) {
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, std::min(sizeof buffer, kMaxRedirectHead - head.size()));
    if (n < 0) return errno != EINTR && errno != EAGAIN;
    head.append(buffer, static_cast<std::size_t>(n));
    return n == 0 || head.size() >= kMaxRedirectHead || head.find("\r\n\r\n") != std::string::npos;
}

}  // namespace

LoopbackListener::LoopbackListener(int first, int last) : netlink_(proto::open_sock_diag()) {
    if (netlink_.get() < 0)
        throw std::runtime_error(std::string("cannot ask the kernel who connects to the login's "
                                             "port (NETLINK_SOCK_DIAG): ") +
                                 std::strerror(errno));
    for (int port = first; port <= last && port < first + kMaxTries; ++port) {
        proto::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (fd.get() < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<std::uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
            ::listen(fd.get(), static_cast<int>(kMaxPending)) == 0) {
            listener_ = std::move(fd);
            port_ = port;
            return;
        }
    }
    throw std::runtime_error("no free port on 127.0.0.1 in " + std::to_string(first) + "-" +
                             std::to_string(last) + " (the host's login.v1 ports)");
}

std::optional<std::string> LoopbackListener::next_request(steady::time_point deadline) {
    while (true) {
        if (std::optional<std::string> head = take_finished()) return head;
        if (steady::now() >= deadline) return std::nullopt;
        std::vector<pollfd> polled{{listener_.get(), POLLIN, 0}};
        steady::time_point wake = deadline;
        for (const Pending& p : pending_) {
            polled.push_back({p.fd.get(), POLLIN, 0});
            wake = std::min(wake, p.until);
        }
        if (::poll(polled.data(), polled.size(), ms_until(wake)) < 0 && errno != EINTR)
            throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
        for (std::size_t i = 0; i < pending_.size(); ++i)
            if (polled[i + 1].revents != 0 && read_some(pending_[i].fd.get(), pending_[i].head))
                pending_[i].ended = true;
        if ((polled[0].revents & POLLIN) != 0) accept_one();
    }
}

// The first connection whose head is read in full or whose time ran out,
// made the one answer() answers; connections that sent nothing are closed.
std::optional<std::string> LoopbackListener::take_finished() {
    const steady::time_point now = steady::now();
    for (auto it = pending_.begin(); it != pending_.end();) {
        if (!it->ended && now < it->until) {
            ++it;
            continue;
        }
        Pending done = std::move(*it);
        it = pending_.erase(it);
        if (done.head.empty()) continue;
        connection_ = std::move(done.fd);
        return std::move(done.head);
    }
    return std::nullopt;
}

void LoopbackListener::accept_one() {
    proto::UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (fd.get() < 0) return;
    if (!from_this_user(fd.get())) {
        refuse_stranger(fd.get());
        return;
    }
    if (pending_.size() >= kMaxPending) pending_.erase(pending_.begin());
    pending_.push_back({std::move(fd), steady::now() + kReadLimit, {}, false});
}

bool LoopbackListener::from_this_user(int fd) {
    const std::optional<uid_t> owner = proto::connection_owner(netlink_.get(), fd);
    return owner && (*owner == ::geteuid() || *owner == 0);
}

void LoopbackListener::refuse_stranger(int fd) {
    const std::string body = "This port is another user's hostkeeper login.\n";
    const std::string refusal =
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    (void)::send(fd, refusal.data(), refusal.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (!std::exchange(told_stranger_, true))
        std::fprintf(stderr,
                     "hostkeeper: refused a connection to port %d from another user; still "
                     "waiting (further ones are not reported)\n",
                     port_);
}

void LoopbackListener::answer(int status, const std::string& title, const std::string& text) {
    const std::string body = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" +
                             title + "</title></head><body><h1>" + title + "</h1><p>" + text +
                             "</p></body></html>\n";
    const std::string reason = status == 200 ? "OK" : status == 404 ? "Not Found" : "Bad Request";
    std::string response = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                           "\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: " +
                           std::to_string(body.size()) +
                           "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n" + body;
    std::string_view rest = response;
    while (!rest.empty()) {
        const ssize_t n = ::send(connection_.get(), rest.data(), rest.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
    connection_ = proto::UniqueFd(-1);
}

}  // namespace hostkeeper::helper::cli
