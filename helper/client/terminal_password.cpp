#include "helper/client/terminal_password.hpp"

#include <termios.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "proto/error.hpp"

namespace hostkeeper::helper::client {
using proto::Error;
using proto::ErrorCode;

namespace {

// The signals that end the process while echo is off; their handler puts
// the terminal back first.
constexpr std::array kEndingSignals{SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// What the handler restores: set before the handlers are installed, read
// only by them (async-signal-safe: tcsetattr, signal, raise).
struct termios g_saved_terminal {};
volatile std::sig_atomic_t g_terminal_fd = -1;

extern "C" void restore_terminal_and_end(int signal_number) {
    if (g_terminal_fd >= 0) ::tcsetattr(g_terminal_fd, TCSAFLUSH, &g_saved_terminal);
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
}

// Echo off (the newline still echoed) and the signal handlers in place,
// for as long as it lives.
class EchoOff {
  public:
    EchoOff(int fd, const struct termios& saved) : fd_(fd) {
        g_saved_terminal = saved;
        g_terminal_fd = fd;
        struct sigaction action {};
        action.sa_handler = restore_terminal_and_end;
        sigemptyset(&action.sa_mask);
        for (std::size_t i = 0; i < kEndingSignals.size(); ++i)
            ::sigaction(kEndingSignals[i], &action, &previous_[i]);
        struct sigaction ignore {};
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        ::sigaction(SIGTSTP, &ignore, &previous_stop_);
        struct termios quiet = saved;
        quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO | ECHOE | ECHOK);
        quiet.c_lflag |= ECHONL;
        ok_ = ::tcsetattr(fd, TCSAFLUSH, &quiet) == 0;
    }
    EchoOff(const EchoOff&) = delete;
    EchoOff& operator=(const EchoOff&) = delete;
    ~EchoOff() {
        ::tcsetattr(fd_, TCSAFLUSH, &g_saved_terminal);
        ::sigaction(SIGTSTP, &previous_stop_, nullptr);
        for (std::size_t i = 0; i < kEndingSignals.size(); ++i)
            ::sigaction(kEndingSignals[i], &previous_[i], nullptr);
        g_terminal_fd = -1;
    }
    bool ok() const { return ok_; }

  private:
    int fd_;
    bool ok_ = false;
    std::array<struct sigaction, kEndingSignals.size()> previous_{};
    struct sigaction previous_stop_ {};
};

}  // namespace

std::optional<proto::Secret> read_terminal_password(int fd, std::string_view prompt) {
    struct termios saved {};
    if (::tcgetattr(fd, &saved) != 0)
        throw Error(ErrorCode::bad_request, "standard input is not a terminal");
    // Room for the longest password and one byte more: the string never
    // grows, so no copy of it is left behind in freed memory.
    std::string typed;
    typed.reserve(kMaxTerminalPassword + 1);
    bool too_long = false;
    bool failed = false;
    {
        const EchoOff echo_off(fd, saved);
        if (!echo_off.ok())
            throw Error(
                ErrorCode::bad_request,
                std::string("cannot turn the terminal's echo off: ") + std::strerror(errno));
        std::fputs(std::string(prompt).c_str(), stderr);
        std::fflush(stderr);
        while (true) {
            char c = 0;
            const ssize_t n = ::read(fd, &c, 1);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                failed = true;
                break;
            }
            if (n == 0) {
                // End of input (Ctrl-D): the terminal echoed no newline.
                std::fputc('\n', stderr);
                break;
            }
            if (c == '\n') break;
            if (typed.size() < kMaxTerminalPassword) {
                typed.push_back(c);
            } else {
                too_long = true;
            }
            c = 0;
        }
    }
    proto::Secret password = proto::Secret::adopt(typed);
    if (failed) throw Error(ErrorCode::bad_request, "the terminal could not be read");
    if (too_long)
        throw Error(ErrorCode::too_large, "the password is longer than " +
                                              std::to_string(kMaxTerminalPassword) + " bytes");
    if (password.empty()) return std::nullopt;
    return password;
}

}  // namespace hostkeeper::helper::client
