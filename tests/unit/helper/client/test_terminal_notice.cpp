// The credentials helper's line for the user's terminal: its text, and that
// it reaches the controlling terminal when there is one (a real pseudo-
// terminal) and does nothing, without failing, when there is none (setsid).
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "helper/client/terminal_notice.hpp"

namespace test_terminal_notice {

using namespace hostkeeper::helper::client;

namespace {

const std::string kLine = "hostkeeper: no credentials for h.example: run `hostkeeper unlock`\n";

// Runs `child` in a forked process that is the leader of a new session: with
// `slave_path`, that pseudo-terminal is opened first and becomes the
// session's controlling terminal; without, the session has none. Returns the
// child's exit status (0: `child` returned true).
template <typename Child>
int in_new_session(const char* slave_path, Child child) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (::setsid() < 0) {
            ::_exit(10);
        }
        if (slave_path != nullptr && ::open(slave_path, O_RDWR) < 0) {  // becomes the ctty
            ::_exit(11);
        }
        ::_exit(child() ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status);
}

// The first line the master side of the pseudo-terminal reads (the kernel
// hands the slave's output over asynchronously, so this waits for a newline;
// the wait is bounded only so that a broken terminal cannot hang the test).
std::string read_master_line(int master) {
    std::string seen;
    char buffer[1024];
    pollfd ready{master, POLLIN, 0};
    while (seen.find('\n') == std::string::npos && ::poll(&ready, 1, 10000) > 0 &&
           (ready.revents & POLLIN) != 0) {
        const ssize_t n = ::read(master, buffer, sizeof buffer);
        if (n <= 0) {
            break;
        }
        seen.append(buffer, static_cast<std::size_t>(n));
    }
    return seen;
}

}  // namespace

TEST_CASE("the terminal line is one line, control characters made spaces", "[terminal_notice]") {
    CHECK(terminal_notice_line("h.example", "the keyring is locked") ==
          "hostkeeper: no credentials for h.example: the keyring is locked\n");
    const std::string line = terminal_notice_line("h.example", "first\nsecond\x1b[2Jthird\r");
    CHECK(line == "hostkeeper: no credentials for h.example: first second [2Jthird \n");
    const std::string long_line = terminal_notice_line("h.example", std::string(5000, 'x'));
    CHECK(long_line.size() < 500);
    CHECK(long_line.find('\n') == long_line.size() - 1);
    CHECK(long_line.substr(long_line.size() - 4) == "...\n");
    // C1 controls (U+009B, CSI, as UTF-8) and a lone 8-bit CSI byte.
    CHECK(terminal_notice_line("h.example",
                               "a\xc2\x9b"
                               "2Jb\x9b"
                               "2J") == "hostkeeper: no credentials for h.example: a 2Jb?2J\n");
}

TEST_CASE("without a controlling terminal nothing is written and nothing fails",
          "[terminal_notice]") {
    const int rc = in_new_session(nullptr, [] {
        if (::open("/dev/tty", O_WRONLY | O_NOCTTY) >= 0) {
            return false;  // the session has a terminal after all: not this case
        }
        tell_terminal(kLine);
        return true;
    });
    CHECK(rc == 0);
}

TEST_CASE("under a pseudo-terminal the line reaches the terminal, unless HOSTKEEPER_NO_TTY",
          "[terminal_notice]") {
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    REQUIRE(master >= 0);
    REQUIRE(::grantpt(master) == 0);
    REQUIRE(::unlockpt(master) == 0);
    const std::string slave = ::ptsname(master);

    SECTION("the line appears on the terminal, once") {
        REQUIRE(in_new_session(slave.c_str(), [] {
                    ::unsetenv(kNoTtyVariable);
                    tell_terminal(kLine);
                    return true;
                }) == 0);
        // The terminal's ONLCR turns "\n" into "\r\n".
        CHECK(read_master_line(master) ==
              "hostkeeper: no credentials for h.example: run `hostkeeper unlock`\r\n");
    }
    SECTION("HOSTKEEPER_NO_TTY=1 keeps it off the terminal") {
        REQUIRE(in_new_session(slave.c_str(), [] {
                    ::setenv(kNoTtyVariable, "1", 1);
                    tell_terminal(kLine);
                    // A line written after it shows the terminal works.
                    const int tty = ::open("/dev/tty", O_WRONLY | O_NOCTTY);
                    return tty >= 0 && ::write(tty, "marker\n", 7) == 7;
                }) == 0);
        CHECK(read_master_line(master) == "marker\r\n");
    }
    ::close(master);
}

}  // namespace test_terminal_notice
