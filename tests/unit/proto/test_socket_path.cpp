#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "proto/socket_path.hpp"

namespace test_socket_path {

using namespace hostkeeper::proto;
namespace fs = std::filesystem;

namespace {
EnvLookup env_of(std::map<std::string, std::string> values) {
    return [values = std::move(values)](const char* name) -> const char* {
        const auto it = values.find(name);
        return it == values.end() ? nullptr : it->second.c_str();
    };
}

struct TempDir {
    TempDir() {
        char pattern[] = "/tmp/hk-unit.XXXXXX";
        path = ::mkdtemp(pattern);
    }
    ~TempDir() { fs::remove_all(path); }
    fs::path path;
};
}  // namespace

TEST_CASE("socket path resolution order", "[proto][socket_path]") {
    // No runtime directory of the uid's: the variables decide.
    const fs::path none = "/nonexistent/run/user";
    CHECK(
        resolve_socket_location(
            env_of({{"HOSTKEEPER_SOCKET", "/x/y/s"}, {"XDG_RUNTIME_DIR", "/run/user/7"}}), 7, none)
            .socket == "/x/y/s");
    const auto xdg = resolve_socket_location(env_of({{"XDG_RUNTIME_DIR", "/run/user/7"}}), 7, none);
    CHECK(xdg.socket == "/run/user/7/hostkeeper/socket");
    CHECK(xdg.directory == "/run/user/7/hostkeeper");
    CHECK(resolve_socket_location(env_of({}), 1234, none).socket == "/tmp/hostkeeper-1234/socket");
    // Relative or empty values are not usable (XDG base directory spec).
    CHECK(resolve_socket_location(env_of({{"XDG_RUNTIME_DIR", "relative"}}), 5, none).socket ==
          "/tmp/hostkeeper-5/socket");
    CHECK(resolve_socket_location(env_of({{"HOSTKEEPER_SOCKET", ""}, {"XDG_RUNTIME_DIR", "/r"}}), 5,
                                  none)
              .socket == "/r/hostkeeper/socket");
}

TEST_CASE("the uid's own runtime directory comes before another XDG_RUNTIME_DIR",
          "[proto][socket_path]") {
    const TempDir tmp;
    const uid_t me = ::geteuid();
    const fs::path root = tmp.path / "run-user";
    const fs::path own = root / std::to_string(me);
    fs::create_directory(root);
    REQUIRE(::mkdir(own.c_str(), 0700) == 0);
    const auto podman = env_of({{"XDG_RUNTIME_DIR", "/tmp/podman-run-1000"}});
    CHECK(resolve_socket_location(podman, me, root).socket == own / "hostkeeper" / "socket");
    CHECK(resolve_socket_location(podman, me, root).directory == own / "hostkeeper");
    CHECK(resolve_socket_location(env_of({}), me, root).socket == own / "hostkeeper" / "socket");
    // HOSTKEEPER_SOCKET still decides.
    CHECK(resolve_socket_location(
              env_of({{"HOSTKEEPER_SOCKET", "/x/s"}, {"XDG_RUNTIME_DIR", "/tmp/podman-run-1000"}}),
              me, root)
              .socket == "/x/s");
    // Another uid's directory is not this uid's: the variable decides.
    CHECK(resolve_socket_location(podman, me + 1, root).socket ==
          "/tmp/podman-run-1000/hostkeeper/socket");
    // A directory others may enter is not taken.
    REQUIRE(::chmod(own.c_str(), 0755) == 0);
    CHECK(resolve_socket_location(podman, me, root).socket ==
          "/tmp/podman-run-1000/hostkeeper/socket");
    // Nor a symbolic link to a private directory.
    REQUIRE(::chmod(own.c_str(), 0700) == 0);
    fs::rename(own, root / "elsewhere");
    fs::create_directory_symlink(root / "elsewhere", own);
    CHECK(resolve_socket_location(podman, me, root).socket ==
          "/tmp/podman-run-1000/hostkeeper/socket");
    CHECK_FALSE(is_private_directory(own, me));
    CHECK(is_private_directory(root / "elsewhere", me));
}

TEST_CASE("the socket directory is created 0700 and checked", "[proto][socket_path]") {
    const TempDir tmp;
    const fs::path dir = tmp.path / "hostkeeper";
    ensure_private_directory(dir, ::geteuid());
    struct stat st {};
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777U) == 0700U);
    ensure_private_directory(dir, ::geteuid());  // idempotent

    ::chmod(dir.c_str(), 0777);
    CHECK_THROWS_WITH(check_private_directory(dir, ::geteuid()), Catch::Contains("chmod 700"));
    ::chmod(dir.c_str(), 0750);
    CHECK_THROWS_AS(check_private_directory(dir, ::geteuid()), UnsafeDirectory);
    ::chmod(dir.c_str(), 0700);
    CHECK_NOTHROW(check_private_directory(dir, ::geteuid()));

    // Owned by someone else.
    CHECK_THROWS_WITH(check_private_directory(dir, ::geteuid() + 1),
                      Catch::Contains("owned by uid"));

    // A symbolic link to a good directory is refused.
    const fs::path link = tmp.path / "link";
    fs::create_directory_symlink(dir, link);
    CHECK_THROWS_WITH(check_private_directory(link, ::geteuid()), Catch::Contains("symbolic link"));

    // A missing parent is an error, not a silent mkdir -p.
    CHECK_THROWS_AS(ensure_private_directory(tmp.path / "a" / "b", ::geteuid()),
                    fs::filesystem_error);
}

}  // namespace test_socket_path
