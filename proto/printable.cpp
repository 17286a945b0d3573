#include "proto/printable.hpp"

namespace hostkeeper::proto {

void append_printable(std::string& out, std::string_view text) {
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        out += byte < 0x20 || byte == 0x7f ? ' ' : c;
    }
}

}  // namespace hostkeeper::proto
