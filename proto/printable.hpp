#pragma once
// Text from elsewhere (a daemon's reason, a command's standard error, a
// registry's or a login server's message, a host name, git's input, an HTTP
// reason phrase, a file name) made safe for one line of a terminal, of a log
// or of a line protocol. This is the one filter every such text passes
// before it is shown:
//   - C0 controls (0x00-0x1f: newlines, tabs, ESC, BEL, CR) and DEL (0x7f)
//     become a space each;
//   - C1 controls written as UTF-8 (U+0080-U+009F, the bytes C2 80 to C2 9F,
//     which some terminals take as ESC sequences: U+009B as CSI) become one
//     space each;
//   - a byte that is not part of well-formed UTF-8 (a lone 0x9b, the 8-bit
//     CSI; 0x80-0xff out of place; overlong forms, surrogates, code points
//     above U+10FFFF, a sequence cut short) becomes '?'.
// Everything else, well-formed UTF-8 among it, is kept. The result is never
// longer than the input, so a caller's length limit holds after filtering.

#include <string>
#include <string_view>

namespace hostkeeper::proto {

// Appends `text` to `out` with the replacements above.
void append_printable(std::string& out, std::string_view text);

// `text` with the replacements above.
std::string printable(std::string_view text);

}  // namespace hostkeeper::proto
