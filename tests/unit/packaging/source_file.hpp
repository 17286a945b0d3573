#pragma once
// A file of the source tree, whole: the documentation tests read the manual,
// the man pages and the example configuration with it.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

namespace hostkeeper::test {

inline std::string source_file(const std::string& path) {
    std::ifstream in(std::string(HK_SOURCE_DIR) + "/" + path);
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace hostkeeper::test
