// Hostnames as users, Terraform and documents write them: every spelling of a
// host must normalize to one name that normalizes to itself and is plain DNS
// syntax with an optional port.
#include <algorithm>

#include "fuzz_support.hpp"
#include "proto/error.hpp"
#include "proto/hostname.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    std::string normalized;
    try {
        normalized = proto::normalize_hostname(text);
    } catch (const proto::Error& e) {
        fuzz::require(e.code() == proto::ErrorCode::bad_host,
                      "normalize_hostname threw other than bad_host");
        return 0;
    }
    fuzz::require(!normalized.empty(), "a normalized hostname is empty");
    fuzz::require(std::all_of(normalized.begin(), normalized.end(),
                              [](char c) {
                                  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                                         c == '-' || c == '.' || c == ':';
                              }),
                  "a normalized hostname holds a character outside [a-z0-9.:-]");
    fuzz::require(normalized.find(":443") == std::string::npos ||
                      normalized.size() > normalized.find(":443") + 4,
                  "a normalized hostname keeps :443");
    fuzz::require(proto::normalize_hostname(normalized) == normalized,
                  "a normalized hostname normalizes differently");
    return 0;
}
