#pragma once
// A directory of its own below the temporary directory, removed with
// everything in it at the end.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <system_error>

namespace hostkeeper::test {

struct ScratchDir {
    // `prefix`: the directory's name up to its random part ("hk-thing").
    explicit ScratchDir(const std::string& prefix) {
        std::string pattern =
            (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        dir = pattern;
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    std::filesystem::path dir;
};

}  // namespace hostkeeper::test
