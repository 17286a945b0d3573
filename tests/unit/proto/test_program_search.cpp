#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "proto/program_search.hpp"
#include "scratch_dir.hpp"

namespace test_program_search {

namespace fs = std::filesystem;
using hostkeeper::proto::find_program;

namespace {

// A directory of its own, and executable or plain files in it.
struct Scratch : hostkeeper::test::ScratchDir {
    Scratch() : ScratchDir("hk-program-search") {}
    fs::path file(const std::string& sub, const std::string& name, fs::perms mode) const {
        fs::create_directories(dir / sub);
        fs::path path = dir / sub / name;
        std::ofstream(path) << "#!/bin/sh\n";
        fs::permissions(path, mode, fs::perm_options::replace);
        return path;
    }
};

constexpr auto kExecutable = fs::perms::owner_all;
constexpr auto kReadable = fs::perms::owner_read | fs::perms::owner_write;

}  // namespace

TEST_CASE("find_program takes the first directory holding an executable file of the name") {
    Scratch s;
    s.file("a", "tool", kReadable);  // not executable: skipped
    const fs::path second = s.file("b", "tool", kExecutable);
    s.file("c", "tool", kExecutable);
    fs::create_directories(s.dir / "d" / "tool");  // a directory: skipped
    const std::string path = (s.dir / "d").string() + ":" + (s.dir / "a").string() +
                             "::" + (s.dir / "b").string() + ":" + (s.dir / "c").string();
    CHECK(find_program("tool", path) == second);
    CHECK_FALSE(find_program("other", path).has_value());
    CHECK_FALSE(find_program("", path).has_value());
}

TEST_CASE("find_program returns a name with a slash as it is when executable") {
    Scratch s;
    const fs::path exe = s.file("a", "tool", kExecutable);
    const fs::path plain = s.file("a", "data", kReadable);
    CHECK(find_program(exe.string(), "") == exe);
    CHECK_FALSE(find_program(plain.string(), "/usr/bin").has_value());
    CHECK_FALSE(find_program((s.dir / "a" / "missing").string(), "").has_value());
}

TEST_CASE("find_program with absolute_only skips relative entries and relative names") {
    Scratch s;
    s.file("rel", "tool", kExecutable);
    const fs::path cwd = fs::current_path();
    fs::current_path(s.dir);
    const auto relative = find_program("tool", "rel");
    const auto skipped = find_program("tool", "rel", true);
    const auto relative_name = find_program("rel/tool", "", true);
    fs::current_path(cwd);
    CHECK(relative == fs::path("rel") / "tool");
    CHECK_FALSE(skipped.has_value());
    CHECK_FALSE(relative_name.has_value());
}

}  // namespace test_program_search
