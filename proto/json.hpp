#pragma once
// JSON as it enters hostkeeper from outside (socket frames, the helper's
// stdin, keyring items, HTTP documents, the user's files): parsed with a
// nesting limit, so no input can choose how deep anything recurses later
// (scrubbing, serializing, comparing), and with errors that never quote the
// input (it may hold a token).

#include <cstddef>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

namespace hostkeeper::proto {

// Insertion-ordered, so a credentials object keeps the order it was given in.
using Json = nlohmann::ordered_json;

// Arrays and objects nested deeper than this are refused (PROTOCOL.md,
// "Limits"). Every document hostkeeper reads nests at most 6 levels.
inline constexpr std::size_t kMaxJsonDepth = 64;

// Not JSON, or nested too deeply. The message says which and where (line,
// column), never what was read there.
class JsonError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Parses `text`; throws JsonError. The parser itself does not recurse, and
// what it returns nests at most `max_depth` levels.
Json parse_json(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

}  // namespace hostkeeper::proto
