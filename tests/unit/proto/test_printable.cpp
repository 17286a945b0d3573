// The one printable filter: C0, DEL and C1 controls become spaces, bytes that
// are not well-formed UTF-8 become '?', well-formed UTF-8 stays.
#include <catch2/catch.hpp>
#include <string>

#include "proto/printable.hpp"

namespace test_printable {

using hostkeeper::proto::append_printable;
using hostkeeper::proto::printable;

TEST_CASE("printable: C0 controls and DEL become spaces", "[proto]") {
    std::string out = "prefix ";
    append_printable(out,
                     "a\tb\nc\rd\x1b[2Je\x7f"
                     "f");
    CHECK(out == "prefix a b c d [2Je f");
    CHECK(printable(std::string(1, '\0') + "x") == " x");
    // A token command's hostile standard error: OSC title, BEL, erase screen.
    CHECK(printable("\x1b]0;PWNED\x07\x1b[2J") == " ]0;PWNED  [2J");
}

TEST_CASE("printable: well-formed UTF-8 stays", "[proto]") {
    const std::string text =
        "b\xc3\xbc"
        "cher \xe2\x82\xac \xf0\x9f\x94\x91 \xc2\xa0 \xef\xbf\xbd ~";
    CHECK(printable(text) == text);
    // The largest code point, U+10FFFF, and the first after C1, U+00A0.
    CHECK(printable("\xf4\x8f\xbf\xbf") == "\xf4\x8f\xbf\xbf");
}

TEST_CASE("printable: C1 controls in UTF-8 become one space each", "[proto]") {
    // U+009B is CSI, U+009D OSC, U+0085 NEL, U+0080 the first.
    CHECK(printable("a\xc2\x9b"
                    "2Jb") == "a 2Jb");
    CHECK(printable("\xc2\x9d"
                    "0;x\xc2\x9c") == " 0;x ");
    CHECK(printable("\xc2\x85\xc2\x80\xc2\x9f") == "   ");
}

TEST_CASE("printable: bytes that are not UTF-8 become '?'", "[proto]") {
    // The 8-bit CSI alone, and other stray bytes.
    CHECK(printable("a\x9b"
                    "2J") == "a?2J");
    CHECK(printable("\x80\xff\xfe\xc0\xc1\xf5") == "??????");
    // Overlong forms: "/" as C0 AF, NUL as E0 80 80, U+FFFF as F0 8F BF BF.
    CHECK(printable("\xc0\xaf") == "??");
    CHECK(printable("\xe0\x80\x80") == "???");
    CHECK(printable("\xf0\x8f\xbf\xbf") == "????");
    // A surrogate, and a code point above U+10FFFF.
    CHECK(printable("\xed\xa0\x80") == "???");
    CHECK(printable("\xf4\x90\x80\x80") == "????");
    // A sequence cut short, at the end and before ASCII.
    CHECK(printable("x\xe2\x82") == "x??");
    CHECK(printable("\xe2\x82x") == "??x");
    // A cut C1: the lead byte alone is not UTF-8.
    CHECK(printable("\xc2") == "?");
}

TEST_CASE("printable: the result is never longer than the text", "[proto]") {
    std::string every;
    for (int b = 0; b < 256; ++b) every += static_cast<char>(b);
    every += "\xc2\x9b\xe2\x82\xac\xf0\x9f\x94\x91";
    const std::string out = printable(every);
    CHECK(out.size() <= every.size());
    for (const char c : out) {
        const auto byte = static_cast<unsigned char>(c);
        CHECK(byte >= 0x20);
        CHECK(byte != 0x7f);
    }
    CHECK(out.find("\xc2\x9b") == std::string::npos);
}

}  // namespace test_printable
