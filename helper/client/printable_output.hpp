#pragma once
// Output for the user's terminal that holds text from elsewhere (the daemon's
// reasons and states, which carry a command's standard error, a registry's
// message, a host name git or Terraform gave): every line passes the one
// printable filter (proto/printable.hpp), so such text shows as text and
// never drives the terminal; the line breaks of the output itself are kept.

#include <cstdio>
#include <string>
#include <string_view>

namespace hostkeeper::helper::client {

// `text` with each line (the text between two '\n') through
// proto::append_printable; the '\n' themselves are kept.
std::string printable_lines(std::string_view text);

// As std::fprintf(stream, format, ...), the formatted text through
// printable_lines. Nothing is said when the write fails.
[[gnu::format(printf, 2, 3)]] void print_printable(std::FILE* stream, const char* format, ...);

}  // namespace hostkeeper::helper::client
