#include "hostkeeper/proto/hostname.hpp"

#include <idn2.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <memory>

#include "hostkeeper/proto/error.hpp"

namespace hostkeeper::proto {
namespace {

constexpr std::size_t kMaxInput = 1024;

[[noreturn]] void reject(std::string_view input, const std::string& why) {
    throw Error(ErrorCode::bad_host, "invalid hostname \"" + std::string(input) + "\": " + why);
}

// Returns the port text ("" when none) and leaves the host part in `host`.
std::string_view split_port(std::string_view input, std::string_view& host) {
    const auto colon = input.rfind(':');
    if (colon == std::string_view::npos) {
        host = input;
        return {};
    }
    host = input.substr(0, colon);
    const std::string_view port = input.substr(colon + 1);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc{} || end != port.data() + port.size() ||
        port.front() == '+' || value == 0 || value > 65535) {
        reject(input, "port \"" + std::string(port) + "\" is not a number from 1 to 65535");
    }
    return port;
}

void check_characters(std::string_view input, std::string_view host) {
    for (const char c : host) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x80 && !(std::isalnum(u) != 0 || c == '-' || c == '.' || c == '_')) {
            reject(input, std::string("character '") + c + "' is not allowed in a hostname");
        }
    }
    std::size_t start = 0;
    while (true) {
        const auto dot = host.find('.', start);
        const auto label = host.substr(start, dot == std::string_view::npos ? host.npos : dot - start);
        if (label.empty()) reject(input, "it has an empty label");
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
}

}  // namespace

std::string normalize_hostname(std::string_view input) {
    if (input.empty()) throw Error(ErrorCode::bad_host, "hostname is empty");
    if (input.size() > kMaxInput) reject(input.substr(0, 64), "it is too long");
    if (input.find("://") != std::string_view::npos) {
        reject(input, "give the hostname alone, without a scheme such as \"https://\"");
    }
    std::string_view host;
    const std::string_view port = split_port(input, host);
    check_characters(input, host);

    // UTS #46 mapping (lowercase, NFC, ß kept) and IDNA2008 validation; STD3
    // rules refuse '_' and other characters DNS hostnames cannot carry.
    const std::string host_z(host);
    char* ascii = nullptr;
    const int rc = idn2_lookup_u8(reinterpret_cast<const uint8_t*>(host_z.c_str()),
                                  reinterpret_cast<uint8_t**>(&ascii),
                                  IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT | IDN2_USE_STD3_ASCII_RULES);
    if (rc != IDN2_OK) reject(input, idn2_strerror(rc));
    const std::unique_ptr<char, decltype(&idn2_free)> owned(ascii, &idn2_free);
    std::string normalized(ascii);
    if (normalized.empty()) reject(input, "it is empty");
    if (!port.empty() && port != "443") {
        normalized += ':';
        normalized += port;
    }
    return normalized;
}

}  // namespace hostkeeper::proto
