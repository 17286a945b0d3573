#include "proto/registry_address.hpp"

#include <algorithm>
#include <vector>

#include "proto/error.hpp"
#include "proto/hostname.hpp"
#include "proto/text_rules.hpp"

namespace hostkeeper::proto {
namespace {

constexpr std::size_t kMaxName = 64;
constexpr std::string_view kModuleForm = "[HOSTNAME/]NAMESPACE/NAME/SYSTEM";
constexpr std::string_view kProviderForm = "[HOSTNAME/]NAMESPACE/TYPE";
constexpr std::string_view kModuleNameRule =
    "may contain only letters, digits, \"-\" and \"_\", and must start and end with a letter or "
    "digit (at most 64 characters)";
constexpr std::string_view kSystemRule =
    "may contain only lowercase letters and digits (at most 64 characters)";
constexpr std::string_view kProviderNameRule =
    "may contain only letters, digits and \"-\", and must start and end with a letter or digit "
    "(at most 64 characters)";

bool is_lower(char c) {
    return c >= 'a' && c <= 'z';
}
bool is_upper(char c) {
    return c >= 'A' && c <= 'Z';
}
bool is_lower_or_digit(char c) {
    return is_lower(c) || is_digit(c);
}

// Terraform's name rule: 1 to 64 characters, a letter or digit at each end,
// and `middle` ("-_" or "-") allowed in between; uppercase letters only when
// `upper`.
bool is_name(std::string_view s, std::string_view middle, bool upper) {
    const auto end_ok = [upper](char c) { return is_lower_or_digit(c) || (upper && is_upper(c)); };
    if (s.empty() || s.size() > kMaxName || !end_ok(s.front()) || !end_ok(s.back())) return false;
    return std::all_of(s.begin(), s.end(),
                       [&](char c) { return end_ok(c) || middle.find(c) != npos; });
}

// The address being parsed, for errors that quote it.
struct Address {
    std::string_view kind;  // "module" or "provider"
    std::string_view text;

    [[noreturn]] void reject(const std::string& why,
                             ErrorCode code = ErrorCode::bad_request) const {
        throw Error(code, "invalid " + std::string(kind) + " address " + quoted(text) + ": " + why);
    }

    void check_not_url() const {
        if (text.empty()) reject("it is empty");
        if (text.find("://") != npos)
            reject("a registry address has no scheme such as \"https://\"");
    }

    std::vector<std::string_view> split(std::string_view form) const {
        std::vector<std::string_view> parts;
        std::size_t start = 0;
        while (true) {
            const auto slash = text.find('/', start);
            parts.push_back(text.substr(start, slash == npos ? npos : slash - start));
            if (slash == npos) break;
            start = slash + 1;
        }
        if (std::any_of(parts.begin(), parts.end(), [](auto part) { return part.empty(); })) {
            reject("it has an empty part; the form is " + std::string(form));
        }
        return parts;
    }

    // normalize_hostname(), its error (and code) told as this address's.
    std::string hostname(std::string_view given) const {
        try {
            return normalize_hostname(given);
        } catch (const Error& e) {
            reject("hostname " + quoted(given) + ": " + e.what(), e.code());
        }
    }
};

// A provider NAMESPACE or TYPE, folded to lowercase.
std::string provider_part(const Address& address, std::string_view label, std::string_view given) {
    std::string folded(given);
    for (char& c : folded) {
        if (static_cast<unsigned char>(c) >= 0x80) {
            address.reject(std::string(label) + " " + quoted(given) +
                           " has a character outside ASCII; use letters, digits and \"-\"");
        }
        if (is_upper(c)) c = static_cast<char>(c - 'A' + 'a');
    }
    if (!is_name(folded, "-", false)) {
        address.reject(std::string(label) + " " + quoted(given) + " " +
                       std::string(kProviderNameRule));
    }
    return folded;
}

}  // namespace

std::string ModuleAddress::to_string() const {
    return host + '/' + name_space + '/' + name + '/' + system;
}

ModuleAddress parse_module_address(std::string_view text) {
    const Address address{"module", text};
    address.check_not_url();
    if (const auto subdir = text.find("//"); subdir != npos) {
        address.reject(
            quoted(text.substr(subdir)) +
            " selects a directory inside the package and is not part of a registry address");
    }
    if (const auto query = text.find('?'); query != npos) {
        address.reject(quoted(text.substr(query)) + ": a registry address has no query string");
    }
    const auto parts = address.split(kModuleForm);
    if (parts.size() != 3 && parts.size() != 4) {
        address.reject("a module address has 3 or 4 parts separated by \"/\": " +
                       std::string(kModuleForm));
    }
    ModuleAddress module;
    module.host = kDefaultRegistryHost;
    if (parts.size() == 4) {
        module.host = address.hostname(parts[0]);
        // As Terraform: a registry host has a dot, and these two mean git.
        if (module.host.substr(0, module.host.find(':')).find('.') == std::string::npos) {
            address.reject("hostname " + quoted(parts[0]) +
                               ": a module registry hostname must contain a dot (Terraform refuses "
                               "one without)",
                           ErrorCode::bad_host);
        }
        if (module.host == "github.com" || module.host == "bitbucket.org") {
            address.reject(
                "hostname " + quoted(parts[0]) +
                    " is reserved for installing from version control, not a module registry",
                ErrorCode::bad_host);
        }
    }
    const auto name_space = parts[parts.size() - 3];
    const auto name = parts[parts.size() - 2];
    const auto system = parts[parts.size() - 1];
    if (!is_name(name_space, "-_", true)) {
        if (parts.size() == 3 && name_space.find('.') != npos) {
            address.reject("NAMESPACE " + quoted(name_space) +
                           " looks like a hostname; after a hostname come three parts: "
                           "HOSTNAME/NAMESPACE/NAME/SYSTEM");
        }
        address.reject("NAMESPACE " + quoted(name_space) + " " + std::string(kModuleNameRule));
    }
    if (!is_name(name, "-_", true)) {
        address.reject("NAME " + quoted(name) + " " + std::string(kModuleNameRule));
    }
    if (system.size() > kMaxName || !std::all_of(system.begin(), system.end(), is_lower_or_digit)) {
        address.reject("SYSTEM " + quoted(system) + " " + std::string(kSystemRule));
    }
    module.name_space = name_space;
    module.name = name;
    module.system = system;
    return module;
}

std::string ProviderAddress::to_string() const {
    return host + '/' + name_space + '/' + type;
}

ProviderAddress parse_provider_address(std::string_view text) {
    const Address address{"provider", text};
    address.check_not_url();
    const auto parts = address.split(kProviderForm);
    if (parts.size() != 2 && parts.size() != 3) {
        address.reject("a provider address has 2 or 3 parts separated by \"/\": " +
                       std::string(kProviderForm) +
                       (parts.size() == 1 ? "; give the namespace too, e.g. \"hashicorp/" +
                                                std::string(parts[0]) + '"'
                                          : std::string()));
    }
    ProviderAddress provider;
    provider.host =
        parts.size() == 3 ? address.hostname(parts[0]) : std::string(kDefaultRegistryHost);
    provider.name_space = provider_part(address, "NAMESPACE", parts[parts.size() - 2]);
    provider.type = provider_part(address, "TYPE", parts[parts.size() - 1]);

    // As Terraform: "terraform-provider-" is the repository's name, not the
    // type's, and any "terraform-" prefix is redundant.
    constexpr std::string_view kRepositoryPrefix = "terraform-provider-";
    const std::string_view type = provider.type;
    if (type.substr(0, kRepositoryPrefix.size()) == kRepositoryPrefix &&
        is_name(type.substr(kRepositoryPrefix.size()), "-", false)) {
        const std::string host = parts.size() == 3 ? std::string(parts[0]) + '/' : std::string();
        address.reject("TYPE " + quoted(parts.back()) +
                       ": use the type name without the terraform-provider- prefix, e.g. \"" +
                       host + provider.name_space + '/' +
                       std::string(type.substr(kRepositoryPrefix.size())) + '"');
    }
    if (type.substr(0, 10) == "terraform-") {
        address.reject(
            "TYPE " + quoted(parts.back()) +
            " starts with \"terraform-\", which a provider type may not (it is redundant)");
    }
    return provider;
}

bool is_platform(std::string_view text) {
    const auto underscore = text.find('_');
    if (underscore == npos) return false;
    const auto part_ok = [](std::string_view part) {
        return !part.empty() && std::all_of(part.begin(), part.end(), is_lower_or_digit);
    };
    return part_ok(text.substr(0, underscore)) && part_ok(text.substr(underscore + 1));
}

std::string check_platform(std::string_view text) {
    if (!is_platform(text)) {
        throw Error(
            ErrorCode::bad_request,
            "\"" + std::string(text) + "\" is not a platform such as linux_amd64 (OS_ARCH)");
    }
    return std::string(text);
}

std::string this_platform() {
#if defined(__x86_64__)
    const char* arch = "amd64";
#elif defined(__aarch64__)
    const char* arch = "arm64";
#elif defined(__i386__)
    const char* arch = "386";
#elif defined(__arm__)
    const char* arch = "arm";
#elif defined(__riscv) && __riscv_xlen == 64
    const char* arch = "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const char* arch = "ppc64le";
#elif defined(__s390x__)
    const char* arch = "s390x";
#else
#error "unknown architecture: add its Go GOARCH name here"
#endif
    return std::string("linux_") + arch;
}

}  // namespace hostkeeper::proto
