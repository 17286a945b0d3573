#include "proto/hostname.hpp"

#include <dlfcn.h>
#include <idn2.h>  // prototypes and flags only: libidn2 is loaded on first use

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "proto/error.hpp"
#include "proto/printable.hpp"

namespace hostkeeper::proto {
namespace {

constexpr std::size_t kMaxInput = 1024;

// The rejected text came from elsewhere (git's input, a URL, a command
// line): it is quoted through the printable filter.
[[noreturn]] void reject(std::string_view input, const std::string& why) {
    std::string message = "invalid hostname \"";
    append_printable(message, input);
    message += "\": ";
    append_printable(message, why);
    throw Error(ErrorCode::bad_host, message);
}

// One message for both checks; formatted rather than concatenated, so that
// the compiler keeps the text whole (lintian's spelling check reads binaries,
// and an inlined short std::string is stored in 8-byte pieces: "characte").
[[noreturn]] void reject_character(std::string_view input, char c) {
    char why[64];
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
        std::snprintf(why, sizeof why, "byte 0x%02X is not allowed in a hostname", byte);
    } else {
        std::snprintf(why, sizeof why, "character '%c' is not allowed in a hostname", c);
    }
    reject(input, why);
}

// Returns the port in canonical decimal ("" when none; "0443" gives "443")
// and leaves the host part in `host`.
std::string split_port(std::string_view input, std::string_view& host) {
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
    return std::to_string(value);
}

void check_characters(std::string_view input, std::string_view host) {
    for (const char c : host) {
        const auto u = static_cast<unsigned char>(c);
        // Checked before IDNA: libidn2's UTS #46 mapping silently drops some
        // ASCII characters ("ex_ample.com" would become "example.com").
        if (u < 0x80 && !(std::isalnum(u) != 0 || c == '-' || c == '.')) {
            reject_character(input, c);
        }
    }
    std::size_t start = 0;
    while (true) {
        const auto dot = host.find('.', start);
        const auto label =
            host.substr(start, dot == std::string_view::npos ? host.npos : dot - start);
        if (label.empty()) reject(input, "it has an empty label");
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
}

// libidn2 passes all-ASCII labels through without the STD3 checks, so the
// result is held to DNS hostname syntax (RFC 1123 letters, digits, hyphens).
void check_ldh(std::string_view input, const std::string& ascii) {
    if (ascii.empty()) reject(input, "it is empty");
    if (ascii.size() > 253) reject(input, "it is longer than 253 characters");
    std::size_t start = 0;
    while (start <= ascii.size()) {
        const auto dot = ascii.find('.', start);
        const std::string_view label = std::string_view(ascii).substr(
            start, dot == std::string::npos ? std::string::npos : dot - start);
        if (label.empty()) reject(input, "it has an empty label");
        if (label.size() > 63) reject(input, "a label is longer than 63 characters");
        if (label.front() == '-' || label.back() == '-')
            reject(input, "a label starts or ends with a hyphen");
        for (const char c : label) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
            if (!ok) reject_character(input, c);
        }
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
}

// True when IDNA would return `host` unchanged: lowercase letters, digits,
// hyphens and dots only, and no label with "--" in its third and fourth
// characters (A-labels such as "xn--bcher-kva" and the reserved "ab--cd" go
// through libidn2, which validates them). Terraform always passes hosts in
// this form, so the common case skips IDNA.
bool canonical_ascii(std::string_view host) {
    std::size_t label_start = 0;
    for (std::size_t i = 0; i < host.size(); ++i) {
        const char c = host[i];
        if (c == '.') {
            label_start = i + 1;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
        if (c == '-' && i == label_start + 3 && host[i - 1] == '-') return false;
    }
    return true;
}

// libidn2, loaded the first time a hostname needs IDNA. Terraform passes
// hosts already in canonical ASCII, which never get here: linked, libidn2
// and libunistring made every start of the credentials helper map two more
// libraries and resolve about 600 more symbols (docs/ARCHITECTURE.md,
// "Start-up").
struct Idn2 {
    decltype(&idn2_lookup_u8) lookup_u8 = nullptr;
    decltype(&idn2_strerror) strerror = nullptr;
    decltype(&idn2_free) free = nullptr;
    decltype(&idn2_to_unicode_8z8z) to_unicode = nullptr;
    std::string error;  // why it could not be loaded, when it could not
};

template <typename Function>
bool resolve(void* library, const char* name, Function& function) {
    // POSIX: a data pointer from dlsym converts to a function pointer.
    function = reinterpret_cast<Function>(::dlsym(library, name));
    return function != nullptr;
}

Idn2 load_idn2() {
    Idn2 idn2;
    // The SONAME libidn2 has had since 2.0 (Debian: libidn2-0), the one the
    // package depends on.
    void* library = ::dlopen("libidn2.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr || !resolve(library, "idn2_lookup_u8", idn2.lookup_u8) ||
        !resolve(library, "idn2_strerror", idn2.strerror) ||
        !resolve(library, "idn2_free", idn2.free) ||
        !resolve(library, "idn2_to_unicode_8z8z", idn2.to_unicode)) {
        const char* why = ::dlerror();
        idn2 = Idn2{};
        idn2.error = why != nullptr ? why : "libidn2.so.0 lacks idn2_lookup_u8";
    }
    return idn2;  // never unloaded
}

const Idn2& idn2() {
    static const Idn2 loaded = load_idn2();
    return loaded;
}

std::string idna_to_ascii(std::string_view input, std::string_view host) {
    const Idn2& idn = idn2();
    if (idn.lookup_u8 == nullptr) {
        throw Error(ErrorCode::internal, "cannot convert the internationalized hostname \"" +
                                             printable(input) + "\" without libidn2 (" + idn.error +
                                             ")");
    }
    // UTS #46 mapping (lowercase, NFC, ß kept) and IDNA2008 validation.
    const std::string host_z(host);
    char* ascii = nullptr;
    const int rc = idn.lookup_u8(reinterpret_cast<const uint8_t*>(host_z.c_str()),
                                 reinterpret_cast<uint8_t**>(&ascii),
                                 IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT | IDN2_USE_STD3_ASCII_RULES);
    if (rc != IDN2_OK) reject(input, idn.strerror(rc));
    const std::unique_ptr<char, decltype(idn.free)> owned(ascii, idn.free);
    return ascii;
}

// True when a label of `host` is an A-label ("xn--", any case): only those
// change in the Unicode form.
bool has_ace_label(std::string_view host) {
    std::size_t start = 0;
    while (start < host.size()) {
        const std::string_view label = host.substr(start, 4);
        if (label.size() == 4 && (label[0] | 0x20) == 'x' && (label[1] | 0x20) == 'n' &&
            label[2] == '-' && label[3] == '-') {
            return true;
        }
        const auto dot = host.find('.', start);
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return false;
}

}  // namespace

std::string display_hostname(std::string_view host) {
    const auto colon = host.rfind(':');
    const std::string_view name = host.substr(0, colon);
    const std::string_view port =
        colon == std::string_view::npos ? std::string_view() : host.substr(colon);
    if (!has_ace_label(name)) return std::string(host);
    const Idn2& idn = idn2();
    if (idn.to_unicode == nullptr) return std::string(host);
    const std::string name_z(name);
    char* unicode = nullptr;
    if (idn.to_unicode(name_z.c_str(), &unicode, 0) != IDN2_OK || unicode == nullptr)
        return std::string(host);
    const std::unique_ptr<char, decltype(idn.free)> owned(unicode, idn.free);
    return std::string(unicode) + std::string(port);
}

std::string normalize_hostname(std::string_view input) {
    if (input.empty()) throw Error(ErrorCode::bad_host, "hostname is empty");
    if (input.size() > kMaxInput) reject(input.substr(0, 64), "it is too long");
    if (input.find("://") != std::string_view::npos) {
        reject(input, "give the hostname alone, without a scheme such as \"https://\"");
    }
    std::string_view host;
    const std::string port = split_port(input, host);
    check_characters(input, host);

    std::string normalized = canonical_ascii(host) ? std::string(host) : idna_to_ascii(input, host);
    check_ldh(input, normalized);
    if (!port.empty() && port != "443") {
        normalized += ':';
        normalized += port;
    }
    return normalized;
}

}  // namespace hostkeeper::proto
