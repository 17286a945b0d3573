#define CATCH_CONFIG_RUNNER
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>

int main(int argc, char** argv) {
    // The daemon's components log; keep the test output to what failed.
    spdlog::set_level(spdlog::level::err);
    return Catch::Session().run(argc, argv);
}
