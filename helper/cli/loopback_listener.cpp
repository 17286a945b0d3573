#include "helper/cli/loopback_listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "helper/cli/login_redirect.hpp"

namespace hostkeeper::helper::cli {
namespace {

using steady = std::chrono::steady_clock;

// A browser that connects and says nothing is given this long.
constexpr std::chrono::seconds kReadLimit{10};
// Ports tried at most, from the range's start.
constexpr int kMaxTries = 200;

int ms_until(steady::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
}

bool readable(int fd, steady::time_point deadline) {
    while (true) {
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, ms_until(deadline));
        if (ready > 0) return true;
        if (ready == 0 && steady::now() >= deadline) return false;
        if (ready < 0 && errno != EINTR) return false;
    }
}

}  // namespace

LoopbackListener::LoopbackListener(int first, int last) {
    for (int port = first; port <= last && port < first + kMaxTries; ++port) {
        proto::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (fd.get() < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<std::uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
            ::listen(fd.get(), 4) == 0) {
            listener_ = std::move(fd);
            port_ = port;
            return;
        }
    }
    throw std::runtime_error("no free port on 127.0.0.1 in " + std::to_string(first) + "-" +
                             std::to_string(last) + " (the host's login.v1 ports)");
}

std::optional<std::string> LoopbackListener::next_request(steady::time_point deadline) {
    while (readable(listener_.get(), deadline)) {
        connection_ = proto::UniqueFd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (connection_.get() < 0) continue;
        const steady::time_point until = std::min(deadline, steady::now() + kReadLimit);
        std::string head;
        char buffer[4096];
        while (head.find("\r\n\r\n") == std::string::npos && head.size() < kMaxRedirectHead &&
               readable(connection_.get(), until)) {
            const ssize_t n = ::read(connection_.get(), buffer, sizeof buffer);
            if (n <= 0) break;
            head.append(buffer, static_cast<std::size_t>(n));
        }
        if (head.find("\r\n") != std::string::npos) return head;
        connection_ = proto::UniqueFd(-1);  // nothing usable: wait for the next
    }
    return std::nullopt;
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
