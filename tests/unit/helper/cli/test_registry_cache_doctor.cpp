// hostkeeper status's registry cache line, built from hostkeeperd's status
// document as the design contract gives it: the listener, the hosts, the
// requests and the archive store (full, or taking archives).
#include <catch2/catch.hpp>
#include <utility>

#include "helper/cli/registry_cache_doctor.hpp"
#include "proto/json.hpp"
#include "registry_cache_status.hpp"

namespace test_registry_cache_doctor {

namespace cli = hostkeeper::helper::cli;
using hk_unit::contract_cache;
using hostkeeper::proto::Json;

namespace {

Json cache_with(Json archives) {
    return Json{{"enabled", true},        {"listen", "127.0.0.1:585"},
                {"held", true},           {"held_by", "hostkeeper-portd"},
                {"hosts", Json::array()}, {"requests", 3},
                {"refused", 0},           {"archives", std::move(archives)}};
}

}  // namespace

TEST_CASE("hostkeeper status's registry cache line", "[cli][registry_cache]") {
    CHECK(cli::registry_cache_status_line(Json{{"enabled", false}}) ==
          "registry cache listener: off");
    CHECK(cli::registry_cache_status_line(contract_cache()) ==
          "registry cache listener: 127.0.0.1:585 held (from hostkeeper-portd), 2 of 3 hosts "
          "routed, 12 requests (1 refused), 2 archives (2048 of 4096 bytes), 5 archive hits, 2 "
          "downloads");
    Json unheld = contract_cache();
    unheld["held"] = false;
    unheld["held_by"] = nullptr;
    unheld["error"] = "hostkeeper-portd closed the link";
    CHECK_THAT(cli::registry_cache_status_line(unheld),
               Catch::StartsWith("registry cache listener: 127.0.0.1:585 NOT held: "
                                 "hostkeeper-portd closed the link, "));
}

TEST_CASE("status and doctor: a second daemon of the user holds the port",
          "[cli][registry_cache]") {
    Json cache = contract_cache();
    CHECK_FALSE(cli::second_daemon(cache));
    cache["held"] = false;
    cache["held_by"] = nullptr;
    cache["listen"] = nullptr;
    cache["error"] = "another hostkeeperd of this user holds the registry port (pid 4242)";
    cache["other_daemon"] = Json{{"pid", 4242}, {"socket", "/run/user/1000/hostkeeper/socket"}};
    const auto second = cli::second_daemon(cache);
    REQUIRE(second);
    CHECK(second->what ==
          "a second hostkeeperd of yours runs: pid 4242 (socket /run/user/1000/hostkeeper/socket) "
          "holds the registry port and answers Terraform's requests through it; the one these "
          "clients reach does not (it keeps out of its way)");
    CHECK_THAT(second->fix, Catch::StartsWith("run one daemon: 'hostkeeper stop' stops the one "
                                              "these clients reach") &&
                                Catch::EndsWith("(or HOSTKEEPER_SOCKET=/run/user/1000/hostkeeper/"
                                                "socket)"));
    CHECK_THAT(
        cli::registry_cache_status_line(cache),
        Catch::StartsWith("registry cache listener: ? NOT held: a second hostkeeperd of "
                          "yours runs: pid 4242 (socket /run/user/1000/hostkeeper/socket)") &&
            Catch::Contains("; fix: run one daemon: 'hostkeeper stop'"));
    // Control characters from the daemon's answer are not printed.
    cache["other_daemon"] = Json{{"pid", 1}, {"socket", "/tmp/\x1b]0;x\x07/socket"}};
    const auto escaped = cli::second_daemon(cache);
    REQUIRE(escaped);
    CHECK(escaped->what.find('\x1b') == std::string::npos);
    CHECK(escaped->fix.find('\x07') == std::string::npos);
    // None while this daemon holds it.
    cache["held"] = true;
    CHECK_FALSE(cli::second_daemon(cache));
}

TEST_CASE("status: a full archive store is said, with how many were passed through",
          "[helper][registry-cache]") {
    const std::string problem =
        "the cache directory is full: 0 bytes free on /home/u/.cache/hostkeeper/archives; "
        "archives are passed through uncached";
    const std::string line =
        cli::registry_cache_status_line(cache_with(Json{{"count", 0},
                                                        {"bytes", 0},
                                                        {"max_bytes", 100},
                                                        {"hits", 0},
                                                        {"downloads", 0},
                                                        {"passed_through", 2},
                                                        {"store_problem", problem}}));
    CHECK_THAT(line, Catch::Contains(problem + " (2 so far)"));
}

TEST_CASE("status: a store that takes archives adds nothing about passing through",
          "[helper][registry-cache]") {
    const std::string line =
        cli::registry_cache_status_line(cache_with(Json{{"count", 1},
                                                        {"bytes", 5},
                                                        {"max_bytes", 100},
                                                        {"hits", 0},
                                                        {"downloads", 1},
                                                        {"passed_through", 0},
                                                        {"store_problem", nullptr}}));
    CHECK_THAT(line, !Catch::Contains("passed through"));
    CHECK_THAT(line, Catch::Contains("1 archives"));
}

}  // namespace test_registry_cache_doctor
