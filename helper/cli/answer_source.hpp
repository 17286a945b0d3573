#pragma once
// Where a discover, module or provider answer came from, in words: its
// `source`, `age_s` and `expires_in_s` (PROTOCOL.md), for `hostkeeper discover`,
// `hostkeeper module` and `hostkeeper provider`.

#include <string>

#include "proto/json.hpp"

namespace hostkeeper::helper::cli {

// "fetched now, fresh for 5m0s", "from cache, fetched 2m0s ago, fresh for 3m0s",
// "STALE, from cache, fetched 1d0h0m0s ago, expired" or
// "forced by configuration (no network)".
std::string source_text(const proto::Json& response);

}  // namespace hostkeeper::helper::cli
