#include "proto/printable.hpp"

#include <cstddef>

namespace hostkeeper::proto {
namespace {

// The length of the well-formed UTF-8 sequence that starts `text` at `at`
// (RFC 3629's table: no overlong forms, no surrogates, nothing above
// U+10FFFF); 0 when the byte there starts none.
std::size_t utf8_sequence(std::string_view text, std::size_t at) {
    const auto byte = [&](std::size_t i) {
        return i < text.size() ? static_cast<unsigned char>(text[i]) : 0U;
    };
    const unsigned lead = byte(at);
    const auto tail = [&](std::size_t i) { return byte(at + i) >= 0x80 && byte(at + i) <= 0xbf; };
    unsigned low = 0x80;
    unsigned high = 0xbf;
    std::size_t length = 0;
    if (lead >= 0xc2 && lead <= 0xdf) {
        length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        length = 3;
        if (lead == 0xe0) low = 0xa0;   // overlong below U+0800
        if (lead == 0xed) high = 0x9f;  // surrogates U+D800-U+DFFF
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        length = 4;
        if (lead == 0xf0) low = 0x90;   // overlong below U+10000
        if (lead == 0xf4) high = 0x8f;  // above U+10FFFF
    } else {
        return 0;
    }
    if (byte(at + 1) < low || byte(at + 1) > high) return 0;
    for (std::size_t i = 2; i < length; ++i) {
        if (!tail(i)) return 0;
    }
    return length;
}

}  // namespace

void append_printable(std::string& out, std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte < 0x20 || byte == 0x7f) {
            out += ' ';
            ++i;
        } else if (byte < 0x80) {
            out += text[i];
            ++i;
        } else if (const std::size_t length = utf8_sequence(text, i); length == 0) {
            out += '?';
            ++i;
        } else if (byte == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
            out += ' ';  // a C1 control, U+0080-U+009F
            i += length;
        } else {
            out.append(text.substr(i, length));
            i += length;
        }
    }
}

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    append_printable(out, text);
    return out;
}

}  // namespace hostkeeper::proto
