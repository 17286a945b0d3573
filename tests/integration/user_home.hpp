#pragma once
// A throw-away home for one test of hostkeeper setup/import/doctor: HOME and
// XDG directories of its own, its own daemon socket (HOSTKEEPER_SOCKET), and
// a PATH without terraform or tofu unless the test puts a stand-in there.

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "harness.hpp"

namespace hostkeeper::it {

class UserHome {
  public:
    UserHome();
    UserHome(const UserHome&) = delete;
    UserHome& operator=(const UserHome&) = delete;
    ~UserHome();

    // hostkeeper ARGS... in this home.
    Result hostkeeper(const std::vector<std::string>& args) const;
    // The helper, as Terraform would run it, in this home.
    Result helper(const std::vector<std::string>& args,
                  const std::optional<std::string>& input = std::nullopt) const;

    // An executable stand-in for `command` (terraform, tofu) on this home's PATH.
    void put_on_path(const std::string& command) const;
    // Points HOSTKEEPER_SOCKET into a new directory with mode 0755 (which
    // clients and daemon refuse); returns the directory.
    std::filesystem::path use_unsafe_socket_directory();
    void write(const std::filesystem::path& path, const std::string& text,
               mode_t mode = 0600) const;

    std::filesystem::path root, home, config, data, state, bin_dir;
    std::filesystem::path socket;
    RunOptions options;  // env for every command; tests may add to it
};

std::filesystem::path helper_link(const std::filesystem::path& plugin_dir);
mode_t mode_of(const std::filesystem::path& path);

}  // namespace hostkeeper::it
