// Output that holds text from elsewhere: each line through the printable
// filter, the output's own line breaks kept.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "helper/client/printable_output.hpp"

namespace test_printable_output {

using namespace hostkeeper::helper::client;

TEST_CASE("printable_lines: each line filtered, the line breaks kept", "[printable_output]") {
    CHECK(printable_lines("one\ntwo\n") == "one\ntwo\n");
    CHECK(printable_lines("FAILED: \x1b]0;PWNED\x07\x1b[2J\r\nnext") ==
          "FAILED:  ]0;PWNED  [2J \nnext");
    CHECK(printable_lines("\xc2\x9b"
                          "2J \x9b"
                          "2J \x7f\t") == " 2J ?2J   ");
    CHECK(printable_lines("") == "");
    CHECK(printable_lines("\n\n") == "\n\n");
}

TEST_CASE("print_printable: printf's text through the filter", "[printable_output]") {
    std::FILE* file = std::tmpfile();
    REQUIRE(file != nullptr);
    print_printable(file, "%s: %s (%d)\n", "host", "\x1b[2Jsaid\x07", 3);
    print_printable(file, "%s", "");
    std::rewind(file);
    char buffer[128] = {};
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, file);
    std::fclose(file);
    CHECK(std::string(buffer, n) == "host:  [2Jsaid  (3)\n");
}

}  // namespace test_printable_output
