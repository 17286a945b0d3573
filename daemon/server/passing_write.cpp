#include "daemon/server/passing_write.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>

namespace hostkeeper::daemon::server {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// One sendmsg of what `frame` still holds, `fd` attached: the bytes written,
// or -1 with errno.
ssize_t send_with_fd(int socket, const std::array<asio::const_buffer, 4>& frame, int fd) {
    std::array<iovec, 4> parts{};
    std::size_t count = 0;
    for (const asio::const_buffer& part : frame) {
        if (part.size() == 0) continue;
        // iovec's base is not const; sendmsg only reads it.
        parts[count++] = iovec{const_cast<void*>(part.data()), part.size()};
    }
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int))> control{};
    msghdr message{};
    message.msg_iov = parts.data();
    message.msg_iovlen = count;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
    return ::sendmsg(socket, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
}

}  // namespace

asio::awaitable<void> write_passing(asio::local::stream_protocol::socket& socket,
                                    std::array<asio::const_buffer, 4> frame, int fd,
                                    error_code& ec) {
    ssize_t sent = -1;
    while (sent < 0) {
        sent = send_with_fd(socket.native_handle(), frame, fd);
        if (sent >= 0) break;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            ec = error_code(errno, boost::system::system_category());
            co_return;
        }
        // Named first.
        auto writable = socket.async_wait(asio::socket_base::wait_write,
                                          asio::redirect_error(asio::use_awaitable, ec));
        co_await std::move(writable);
        if (ec) co_return;
    }
    // The descriptor went with the first byte; the rest, if any, as any write.
    auto left = static_cast<std::size_t>(sent);
    for (asio::const_buffer& part : frame) {
        const std::size_t taken = std::min(left, part.size());
        part += taken;
        left -= taken;
    }
    auto rest = asio::async_write(socket, frame, asio::redirect_error(asio::use_awaitable, ec));
    co_await std::move(rest);
}

}  // namespace hostkeeper::daemon::server
