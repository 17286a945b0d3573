// Control characters become spaces; everything else, UTF-8 among it, is kept.
#include <catch2/catch.hpp>
#include <string>

#include "proto/printable.hpp"

namespace test_printable {

using hostkeeper::proto::append_printable;

TEST_CASE("printable: control characters become spaces, other bytes stay", "[proto]") {
    std::string out = "prefix ";
    append_printable(out,
                     "a\tb\nc\rd\x1b[2Je\x7f"
                     "f");
    CHECK(out == "prefix a b c d [2Je f");
    out.clear();
    append_printable(out,
                     "b\xc3\xbc"
                     "cher ~ \x80\xff");
    CHECK(out ==
          "b\xc3\xbc"
          "cher ~ \x80\xff");
    out.clear();
    append_printable(out, std::string(1, '\0') + "x");
    CHECK(out == " x");
}

}  // namespace test_printable
