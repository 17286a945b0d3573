#include "helper/client/connection.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "proto/error.hpp"
#include "proto/framing.hpp"
#include "proto/sealed_file.hpp"
#include "proto/secret.hpp"
#include "proto/socket_path.hpp"

namespace hostkeeper::helper::client {
namespace {

using proto::Error;
using proto::ErrorCode;

[[noreturn]] void throw_timeout(const Deadline& deadline) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g",
                  static_cast<double>(deadline.budget().count()) / 1000.0);
    throw Error(ErrorCode::timeout,
                std::string("gave up after ") + seconds +
                    " s waiting for hostkeeperd (the keyring may be waiting for an "
                    "unlock prompt; raise --timeout to wait longer)");
}

}  // namespace

std::optional<Connection> Connection::open(const std::filesystem::path& socket,
                                           const Deadline& deadline, int& error) {
    const std::optional<sockaddr_un> address = proto::unix_address(socket);
    if (!address) {
        error = ENAMETOOLONG;
        return std::nullopt;
    }

    // Never talk to a socket another user could have put there: its directory
    // must be ours and private (before connecting), and whoever listens must
    // be us (after). Both throw proto::UnsafeSocket with the fix.
    const uid_t me = ::geteuid();
    try {
        proto::check_private_directory(socket.parent_path(), me);
    } catch (const std::filesystem::filesystem_error& e) {
        error = e.code().value();  // ENOENT: no directory, so no daemon yet
        return std::nullopt;
    }
    while (true) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            error = errno;
            return std::nullopt;
        }
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof *address) == 0) {
            Connection connection(fd);
            proto::check_peer(fd, me, socket);
            return connection;
        }
        error = errno;
        ::close(fd);
        // EAGAIN: the daemon's accept backlog is full; it is alive, so wait.
        if (error != EAGAIN || deadline.expired()) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

Connection::~Connection() {
    if (fd_ >= 0) ::close(fd_);
}

void Connection::wait_for(short events, const Deadline& deadline) {
    pollfd pfd{fd_, events, 0};
    while (true) {
        const int rc = ::poll(&pfd, 1, deadline.remaining_ms());
        if (rc > 0) return;
        if (rc == 0) throw_timeout(deadline);
        if (errno != EINTR) throw ConnectionLost(std::string("poll: ") + std::strerror(errno));
    }
}

void Connection::write_all(const std::string& bytes, const Deadline& deadline) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            wait_for(POLLOUT, deadline);
        } else {
            throw ConnectionLost(std::string("hostkeeperd closed the connection: ") +
                                 std::strerror(errno));
        }
    }
}

namespace {

// recv, keeping the first descriptor passed with the bytes in `passed` and
// closing any other.
ssize_t receive(int fd, char* data, std::size_t size, proto::UniqueFd& passed) {
    iovec part{data, size};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * 4)> control{};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    const ssize_t n = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
    if (n < 0) return n;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int received = -1;
            std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof received);
            proto::UniqueFd owned(received);
            if (passed.get() < 0) passed = std::move(owned);
        }
    }
    return n;
}

// The reply with its passed document's fields in place of "document_fd"
// (PROTOCOL.md, Passed documents), as the daemon would have sent them inline.
proto::Json with_passed_document(proto::Json reply, const proto::UniqueFd& passed) {
    const auto named = reply.find("document_fd");
    if (named == reply.end()) return reply;
    const proto::Json* bytes = named->is_object() ? &(*named)["bytes"] : nullptr;
    if (bytes == nullptr || !bytes->is_number_unsigned())
        throw ConnectionLost("hostkeeperd sent a bad response: \"document_fd\" has no \"bytes\"");
    if (passed.get() < 0)
        throw ConnectionLost("hostkeeperd named a passed document but passed none");
    proto::Json document;
    try {
        document = proto::parse_payload(proto::read_passed_file(
            passed.get(), bytes->get<std::size_t>(), proto::kMaxResponseFrameSize));
    } catch (const std::exception& e) {
        throw ConnectionLost(std::string("hostkeeperd passed a bad document: ") + e.what());
    }
    // The document's members where "document_fd" stands, in their order.
    proto::Json whole = proto::Json::object();
    for (auto& [key, value] : reply.items()) {
        if (key != "document_fd") {
            whole[key] = std::move(value);
            continue;
        }
        for (auto& [name, member] : document.items()) {
            if (reply.contains(name))
                throw ConnectionLost("hostkeeperd passed a document that repeats \"" + name + "\"");
            whole[name] = std::move(member);
        }
    }
    return whole;
}

}  // namespace

bool Connection::read_exact(char* data, std::size_t size, const Deadline& deadline,
                            proto::UniqueFd* passed) {
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = passed == nullptr ? ::recv(fd_, data + done, size - done, 0)
                                            : receive(fd_, data + done, size - done, *passed);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
        } else if (n == 0) {
            if (done == 0) return false;
            throw ConnectionLost("hostkeeperd closed the connection in the middle of a response");
        } else if (errno == EAGAIN || errno == EINTR) {
            wait_for(POLLIN, deadline);
        } else if (errno == ECONNRESET) {
            throw ConnectionLost("hostkeeperd closed the connection without answering");
        } else {
            throw ConnectionLost(std::string("reading from hostkeeperd: ") + std::strerror(errno));
        }
    }
    return true;
}

proto::Json Connection::round_trip(const proto::Json& request, const Deadline& deadline) {
    std::string payload = proto::serialize(request);
    std::string frame = proto::encode_frame(payload);
    proto::scrub(payload);
    const proto::ScrubGuard frame_guard(frame);
    // A daemon that refuses us (busy, forbidden) writes one frame and hangs
    // up without reading: our write may then fail, but its answer is there.
    std::optional<ConnectionLost> write_failed;
    try {
        write_all(frame, deadline);
    } catch (const ConnectionLost& e) {
        write_failed = e;
    }

    proto::FrameHeader header{};
    // A document passed by reference comes with the frame's first byte.
    proto::UniqueFd passed(-1);
    if (!read_exact(reinterpret_cast<char*>(header.data()), header.size(), deadline, &passed)) {
        if (write_failed) throw ConnectionLost(*write_failed);
        throw ConnectionLost("hostkeeperd closed the connection without answering");
    }
    std::size_t size = 0;
    try {
        size = proto::decode_header(header, proto::kMaxResponseFrameSize);
    } catch (const Error& e) {
        throw ConnectionLost(std::string("hostkeeperd sent a bad response: ") + e.what());
    }
    std::string body(size, '\0');
    const proto::ScrubGuard body_guard(body);
    read_exact(body.data(), size, deadline);
    proto::Json reply;
    try {
        reply = proto::parse_payload(body);
    } catch (const Error& e) {
        throw ConnectionLost(std::string("hostkeeperd sent a bad response: ") + e.what());
    }
    return with_passed_document(std::move(reply), passed);
}

}  // namespace hostkeeper::helper::client
