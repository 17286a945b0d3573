#include "raw_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace hostkeeper::it {
namespace {
int remaining_ms(std::chrono::steady_clock::time_point until) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    return left.count() < 0 ? 0 : static_cast<int>(left.count());
}
}  // namespace

RawClient::RawClient(const std::filesystem::path& socket) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        const int error = errno;
        ::close(fd_);
        throw std::runtime_error("connect " + socket.string() + ": " + std::strerror(error));
    }
}

RawClient::~RawClient() {
    if (fd_ >= 0) ::close(fd_);
}

bool RawClient::send_bytes(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

bool RawClient::send_frame(const std::string& payload) {
    const auto n = static_cast<std::uint32_t>(payload.size());
    std::string frame{static_cast<char>(n >> 24U), static_cast<char>((n >> 16U) & 0xffU),
                      static_cast<char>((n >> 8U) & 0xffU), static_cast<char>(n & 0xffU)};
    frame += payload;
    return send_bytes(frame);
}

bool RawClient::read_exact(char* data, std::size_t size,
                           std::chrono::steady_clock::time_point until) {
    std::size_t done = 0;
    while (done < size) {
        pollfd pfd{fd_, POLLIN, 0};
        if (::poll(&pfd, 1, remaining_ms(until)) <= 0) return false;
        const ssize_t n = ::recv(fd_, data + done, size - done, 0);
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

std::optional<std::string> RawClient::read_frame(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    unsigned char header[4];
    if (!read_exact(reinterpret_cast<char*>(header), 4, until)) return std::nullopt;
    const std::size_t size = (std::size_t{header[0]} << 24U) | (std::size_t{header[1]} << 16U) |
                             (std::size_t{header[2]} << 8U) | header[3];
    std::string body(size, '\0');
    if (!read_exact(body.data(), size, until)) return std::nullopt;
    return body;
}

bool RawClient::closed_within(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    char buffer[65536];
    while (true) {
        pollfd pfd{fd_, POLLIN, 0};
        if (::poll(&pfd, 1, remaining_ms(until)) <= 0) return false;
        const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
        if (n < 0) return false;
    }
}

std::string request(const std::string& op, const std::string& extra) {
    return R"({"v":1,"op":")" + op + "\"" + extra + "}";
}

bool listening(const std::filesystem::path& socket) {
    try {
        const RawClient probe(socket);
        return true;
    } catch (const std::runtime_error&) {
        return false;
    }
}

}  // namespace hostkeeper::it
