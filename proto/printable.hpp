#pragma once
// Text from elsewhere (a daemon's reason, a registry's message, a host name)
// made safe for one line of a terminal or of a line protocol: control
// characters (C0 and DEL: newlines, escape sequences) become spaces. Other
// bytes, UTF-8 among them, are kept.

#include <string>
#include <string_view>

namespace hostkeeper::proto {

// Appends `text` to `out`, each control character (below 0x20, or 0x7f) as a space.
void append_printable(std::string& out, std::string_view text);

}  // namespace hostkeeper::proto
