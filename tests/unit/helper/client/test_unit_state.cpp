// Reading the user manager's view of hostkeeperd.socket/.service
// (`systemctl --user show` output) and telling a failed unit from a healthy one.
#include <catch2/catch.hpp>

#include "helper/client/unit_state.hpp"

namespace test_unit_state {

using namespace hostkeeper::helper::client;

namespace {

// As systemd 252 prints it: its own property order, Id= not first.
const char* const kStartLimited =
    "Result=service-start-limit-hit\n"
    "Id=hostkeeperd.socket\n"
    "LoadState=loaded\n"
    "ActiveState=failed\n"
    "SubState=failed\n"
    "UnitFileState=enabled\n"
    "\n"
    "Result=exit-code\n"
    "ExecMainCode=1\n"
    "ExecMainStatus=218\n"
    "Id=hostkeeperd.service\n"
    "LoadState=loaded\n"
    "ActiveState=failed\n"
    "SubState=failed\n"
    "UnitFileState=indirect\n";

}  // namespace

TEST_CASE("systemctl show output: each block belongs to the unit its Id names, wherever Id is",
          "[unit_state]") {
    const UnitsState units = parse_units_state(kStartLimited);
    CHECK(units.socket.result == "service-start-limit-hit");
    CHECK(units.socket.active_state == "failed");
    CHECK(units.socket.unit_file_state == "enabled");
    CHECK(units.service.result == "exit-code");
    CHECK(units.service.exec_main_code == 1);
    CHECK(units.service.exec_main_status == 218);
    CHECK(units.service.unit_file_state == "indirect");
}

TEST_CASE("a start-limited socket is a problem named with systemd's exit status and a fix",
          "[unit_state]") {
    const auto problem = unit_problem(parse_units_state(kStartLimited));
    REQUIRE(problem);
    CHECK(problem->what ==
          "hostkeeperd.socket failed (service-start-limit-hit): hostkeeperd.service exit-code, "
          "status=218/CAPABILITIES");
    CHECK_THAT(problem->fix,
               Catch::Contains("user namespaces") &&
                   Catch::Contains(
                       "systemctl --user reset-failed hostkeeperd.socket hostkeeperd.service"));
}

TEST_CASE("a failed service behind a listening socket, and one killed by a signal",
          "[unit_state]") {
    UnitsState units;
    units.socket = {"loaded", "active", "listening", "success", "enabled", 0, 0};
    units.service = {"loaded", "failed", "failed", "signal", "indirect", 2, 11};
    const auto problem = unit_problem(units);
    REQUIRE(problem);
    CHECK(problem->what == "hostkeeperd.service failed (signal, signal SIGSEGV)");
    units.service = {"loaded", "activating", "auto-restart", "exit-code", "indirect", 1, 1};
    const auto restarting = unit_problem(units);
    REQUIRE(restarting);
    CHECK(restarting->what == "hostkeeperd.service keeps failing (exit-code, status=1)");
    CHECK_THAT(restarting->fix, Catch::Contains("config.toml"));
}

TEST_CASE("healthy, stopped after an idle exit, or not installed: no problem", "[unit_state]") {
    UnitsState units;
    units.socket = {"loaded", "active", "listening", "success", "enabled", 0, 0};
    units.service = {"loaded", "active", "running", "success", "indirect", 0, 0};
    CHECK_FALSE(unit_problem(units));
    units.service = {"loaded", "inactive", "dead", "success", "indirect", 1, 0};
    CHECK_FALSE(unit_problem(units));
    units.socket = {"not-found", "inactive", "dead", "success", "", 0, 0};
    units.service = {"not-found", "failed", "failed", "exit-code", "", 1, 203};
    CHECK_FALSE(unit_problem(units));
}

}  // namespace test_unit_state
