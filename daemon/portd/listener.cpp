#include "daemon/portd/listener.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "daemon/portd/socket_calls.hpp"

namespace hostkeeper::daemon::portd {

namespace asio = boost::asio;

namespace {

// How long accepting pauses when the process is out of descriptors.
constexpr std::chrono::milliseconds kAcceptPause{100};

}  // namespace

Listener::Listener(asio::io_context& io, proto::UniqueFd fd, std::size_t accepts_per_turn,
                   std::string name, std::uint64_t& failures, Accepted accepted)
    : io_(io),
      descriptor_(io, fd.release()),
      pause_(io),
      accepts_per_turn_(accepts_per_turn),
      name_(std::move(name)),
      failures_(failures),
      accepted_(std::move(accepted)) {}

void Listener::wait() {
    descriptor_.async_wait(Descriptor::wait_read, [this](const boost::system::error_code& ec) {
        if (ec == asio::error::operation_aborted) return;
        if (ec) {
            spdlog::error("{} listener: {}", name_, ec.message());
            pause();
            return;
        }
        accept();
    });
}

void Listener::pause() {
    pause_.expires_after(kAcceptPause);
    pause_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) accept();
    });
}

void Listener::accept() {
    for (std::size_t i = 0; i < accepts_per_turn_; ++i) {
        // Blocking like a plain accept(): a daemon handed the descriptor gets
        // it as it would have accepted it; this side uses MSG_DONTWAIT only.
        const int fd = ::accept4(descriptor_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
            accepted_(proto::UniqueFd(fd));
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (would_block(errno)) {
            wait();
            return;
        }
        if (worth_logging(++failures_))
            spdlog::error("{}: accept: {} ({} times)", name_, std::strerror(errno), failures_);
        pause();
        return;
    }
    asio::post(io_, [this] { accept(); });
}

}  // namespace hostkeeper::daemon::portd
