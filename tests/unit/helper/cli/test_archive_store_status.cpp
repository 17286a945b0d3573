// hostkeeper status's registry cache line when the archive store cannot
// take archives: it says so, with what hostkeeperd reported.
#include <catch2/catch.hpp>

#include "helper/cli/registry_cache_doctor.hpp"
#include "proto/json.hpp"

namespace cli = hostkeeper::helper::cli;
using hostkeeper::proto::Json;

namespace {

Json cache_with(Json archives) {
    return Json{{"enabled", true},        {"listen", "127.0.0.1:585"},
                {"held", true},           {"held_by", "hostkeeper-portd"},
                {"hosts", Json::array()}, {"requests", 3},
                {"refused", 0},           {"archives", std::move(archives)}};
}

}  // namespace

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
