// The registry port link's pauses while another daemon of the same user
// holds the registration: doubling from one second, capped at a minute.
#include <catch2/catch.hpp>
#include <chrono>
#include <vector>

#include "daemon/registry_cache/port_link.hpp"

namespace test_port_link_pause {

using hostkeeper::daemon::registry_cache::PortLink;
using std::chrono::seconds;

TEST_CASE("a daemon whose registration is held elsewhere backs off to a minute",
          "[registry_cache][port_link]") {
    std::vector<long long> pauses;
    seconds pause{0};
    for (int i = 0; i < 10; ++i) {
        pause = PortLink::next_held_pause(pause);
        pauses.push_back(pause.count());
    }
    CHECK(pauses == std::vector<long long>{1, 2, 4, 8, 16, 32, 60, 60, 60, 60});
    // In 100 s it asks at most 8 times (the tight loop asked thousands of times).
    long long elapsed = 0;
    int attempts = 1;
    for (seconds p{0}; elapsed < 100; ++attempts) {
        p = PortLink::next_held_pause(p);
        elapsed += p.count();
    }
    CHECK(attempts <= 8);
}

}  // namespace test_port_link_pause
