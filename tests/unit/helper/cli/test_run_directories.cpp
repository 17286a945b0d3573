// The runs' directories: a run's own is private and new; only those whose
// process is gone are removed, and only from private directories.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "helper/cli/run_directories.hpp"
#include "scratch_dir.hpp"

namespace test_run_directories {

namespace cli = hostkeeper::helper::cli;
namespace fs = std::filesystem;
using hostkeeper::test::ScratchDir;

namespace {

// The pid of a child that has exited and been waited for: no process has it.
pid_t gone_pid() {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    REQUIRE(child > 0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    return child;
}

}  // namespace

TEST_CASE("runs killed outright lose their directories, live ones keep them",
          "[cli][registry_run]") {
    ScratchDir scratch("hk-runs");
    const hostkeeper::proto::SocketLocation location{scratch.dir / "socket", scratch.dir};
    REQUIRE(::chmod(scratch.dir.c_str(), 0700) == 0);
    const fs::path own = cli::make_run_directory(location);
    const fs::path runs = cli::runs_directory(location);
    CHECK(own.parent_path() == runs);
    CHECK(own.filename().string().rfind("run-" + std::to_string(::getpid()) + "-", 0) == 0);
    CHECK((fs::status(own).permissions() & fs::perms::all) == fs::perms::owner_all);
    CHECK((fs::status(runs).permissions() & fs::perms::all) == fs::perms::owner_all);

    const fs::path killed = runs / ("run-" + std::to_string(gone_pid()) + "-abcdef");
    fs::create_directory(killed);
    std::ofstream(killed / "terraform.tfrc") << "host {}\n";
    const fs::path unnamed = runs / "run-x";
    fs::create_directory(unnamed);
    const fs::path other = runs / "notes";
    fs::create_directory(other);

    CHECK(cli::remove_stale_runs(runs) == 2);
    CHECK_FALSE(fs::exists(killed));
    CHECK_FALSE(fs::exists(unnamed));
    CHECK(fs::exists(own));
    CHECK(fs::exists(other));
    CHECK(cli::remove_stale_runs(runs) == 0);

    SECTION("nothing is removed from a directory others may write") {
        fs::create_directory(killed);
        REQUIRE(::chmod(runs.c_str(), 0777) == 0);
        CHECK(cli::remove_stale_runs(runs) == 0);
        CHECK(fs::exists(killed));
        REQUIRE(::chmod(runs.c_str(), 0700) == 0);
        REQUIRE(::chmod(scratch.dir.c_str(), 0755) == 0);
        CHECK(cli::remove_stale_runs(runs) == 0);
        CHECK(fs::exists(killed));
    }
    SECTION("a runs directory that is not there: nothing") {
        CHECK(cli::remove_stale_runs(scratch.dir / "absent" / "runs") == 0);
    }
}

}  // namespace test_run_directories
