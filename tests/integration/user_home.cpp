#include "user_home.hpp"

#include <atomic>
#include <fstream>

namespace hostkeeper::it {
namespace fs = std::filesystem;

namespace {
std::atomic<int> homes{0};
}

UserHome::UserHome() {
    root = test_root() / "homes" / ("h" + std::to_string(homes++));
    home = root / "home";
    config = root / "config";
    data = root / "data";
    state = root / "state";
    bin_dir = root / "bin";
    for (const auto& dir : {home, config, data, state, bin_dir}) fs::create_directories(dir);
    socket = fresh_socket();
    options.env["HOME"] = home.string();
    options.env["XDG_CONFIG_HOME"] = config.string();
    options.env["XDG_DATA_HOME"] = data.string();
    options.env["XDG_STATE_HOME"] = state.string();
    options.env["HOSTKEEPER_SOCKET"] = socket.string();
    options.env["PATH"] = bin_dir.string() + ":/usr/bin:/bin";
    options.env["TF_CLI_CONFIG_FILE"] = std::nullopt;
}

UserHome::~UserHome() {
    hostkeeper({"stop"});
}

Result UserHome::hostkeeper(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{bin("hostkeeper")};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, options);
}

Result UserHome::helper(const std::vector<std::string>& args,
                        const std::optional<std::string>& input) const {
    std::vector<std::string> argv{bin("terraform-credentials-hostkeeper")};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions with_input = options;
    with_input.input = input;
    return run(argv, with_input);
}

void UserHome::put_on_path(const std::string& command) const {
    write(bin_dir / command, "#!/bin/sh\nexit 0\n", 0755);
}

fs::path UserHome::use_unsafe_socket_directory() {
    const fs::path dir = root / "open-run";
    fs::create_directories(dir);
    fs::permissions(dir, static_cast<fs::perms>(0755), fs::perm_options::replace);
    options.env["HOSTKEEPER_SOCKET"] = (dir / "socket").string();
    return dir;
}

void UserHome::write(const fs::path& path, const std::string& text, mode_t mode) const {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    fs::permissions(path, static_cast<fs::perms>(mode), fs::perm_options::replace);
}

fs::path helper_link(const fs::path& plugin_dir) {
    return plugin_dir / "terraform-credentials-hostkeeper";
}

mode_t mode_of(const fs::path& path) {
    struct stat st {};
    ::stat(path.c_str(), &st);
    return st.st_mode & 07777;
}

}  // namespace hostkeeper::it
