#include "helper/client/printable_output.hpp"

#include <cstdarg>
#include <vector>

#include "proto/printable.hpp"

namespace hostkeeper::helper::client {

std::string printable_lines(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        proto::append_printable(out, text.substr(0, end));
        if (end == std::string_view::npos) break;
        out += '\n';
        text.remove_prefix(end + 1);
    }
    return out;
}

void print_printable(std::FILE* stream, const char* format, ...) {
    std::va_list args;
    va_start(args, format);
    std::va_list again;
    va_copy(again, args);
    const int length = std::vsnprintf(nullptr, 0, format, args);
    va_end(args);
    if (length > 0) {
        std::vector<char> text(static_cast<std::size_t>(length) + 1);
        (void)std::vsnprintf(text.data(), text.size(), format, again);
        const std::string out =
            printable_lines(std::string_view(text.data(), static_cast<std::size_t>(length)));
        (void)std::fwrite(out.data(), 1, out.size(), stream);
    }
    va_end(again);
}

}  // namespace hostkeeper::helper::client
