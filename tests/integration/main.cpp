// Integration tests: run through tests/support/keyring-env.sh, one tag group
// per CTest test, so that each group gets a fresh keyring world.
#define CATCH_CONFIG_RUNNER
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
    if (std::getenv("HK_TEST_ROOT") == nullptr) {
        std::fprintf(
            stderr,
            "run me through tests/support/keyring-env.sh (I need a throw-away HOME and keyring)\n");
        return 2;
    }
    for (int i = 1; i < argc; ++i) {
        const std::string tag = argv[i];
        if ((tag == "[foreign-uid]" || tag == "[two-uids]" || tag == "[token-trust]") &&
            ::geteuid() != 0) {
            std::printf("SKIP: acting as another uid needs root; this test runs as uid %u\n",
                        ::geteuid());
            return 77;
        }
    }
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) != "[pass-cli]") continue;
        for (const char* tool : {"gpg", "gpg-agent", "gpg-connect-agent", "pass"}) {
            if (std::system((std::string("command -v ") + tool + " >/dev/null").c_str()) != 0) {
                std::printf("SKIP: %s is not installed (packaging/deps.sh test installs it)\n",
                            tool);
                return 77;
            }
        }
    }
    return Catch::Session().run(argc, argv);
}
