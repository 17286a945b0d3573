#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <ctime>

#include "daemon/registry_cache/client_start.hpp"

using hostkeeper::daemon::registry_cache::parent_start_time;

TEST_CASE("parent_start_time reads when a client's parent started", "[registry_cache]") {
    const double now = static_cast<double>(std::time(nullptr));
    const auto ours = parent_start_time(::getpid());  // when our parent (the test runner) started
    REQUIRE(ours.has_value());
    CHECK(*ours <= now + 1);
    CHECK(*ours > now - 30 * 24 * 3600.0);

    // A child's parent is this process: started after our own parent, and
    // before now.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    const auto mine = parent_start_time(child);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    REQUIRE(mine.has_value());
    CHECK(*mine >= *ours - 1);
    CHECK(*mine <= now + 1);

    CHECK_FALSE(parent_start_time(0x3ffffff).has_value());  // no such process
}
