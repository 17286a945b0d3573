#pragma once
// Standard input and output as the helpers use them (Terraform's and
// Docker's): input read whole, up to a limit, and scrubbed when refused;
// output written whole. Raw reads and writes: no <iostream> (see
// helper_arguments.hpp) and no stdio buffer left holding a secret.

#include <cstddef>
#include <string>
#include <string_view>

namespace hostkeeper::helper::client {

// What either helper accepts on standard input.
inline constexpr std::size_t kMaxHelperInput = std::size_t{64} * 1024;

// Everything on `fd` up to EOF. More than `limit` bytes is Error{too_large}
// with `too_large_message`; a read error is Error{bad_request}. What was read
// is scrubbed before either is thrown.
std::string read_all_input(int fd, std::size_t limit, const std::string& too_large_message);

// All of `text` to `fd`; a write error is Error{internal}.
void write_all_output(int fd, std::string_view text);

}  // namespace hostkeeper::helper::client
