#include "daemon/fleet/fleet_address.hpp"

#include <cstdio>

#include "proto/error.hpp"
#include "proto/hostname.hpp"
#include "proto/text_rules.hpp"

namespace hostkeeper::daemon::fleet {

namespace {

bool lower_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool tag_char(char c) {
    return lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' || c == '-';
}

// The registry host as one component: "HOST" or "HOST__PORT".
std::string host_component(std::string_view registry_host) {
    std::string component(registry_host);
    const auto colon = component.rfind(':');
    if (colon != std::string::npos) component.replace(colon, 1, "__");
    if (!repository_component(component))
        throw FleetAddressError("'" + std::string(registry_host) +
                                "' is not a normalized registry hostname");
    return component;
}

// A namespace, type, name or system as one component (see the header).
std::string name_component(std::string_view part) {
    std::string lower = proto::ascii_lowercase(part);
    if (repository_component(lower)) return lower;
    std::string hex = "x";
    for (const char c : part) {
        char pair[3];
        std::snprintf(pair, sizeof pair, "%02x",
                      static_cast<unsigned>(static_cast<unsigned char>(c)));
        hex += pair;
    }
    return hex;
}

std::string checked_repository(std::string name) {
    if (name.size() > kMaxRepositoryName)
        throw FleetAddressError("the repository name '" + name.substr(0, 64) + "...' is over " +
                                std::to_string(kMaxRepositoryName) +
                                " characters: choose a shorter fleet prefix");
    return name;
}

}  // namespace

bool repository_component(std::string_view text) {
    // [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*
    if (text.empty() || !lower_alnum(text.front()) || !lower_alnum(text.back())) return false;
    std::size_t i = 0;
    while (i < text.size()) {
        if (lower_alnum(text[i])) {
            ++i;
            continue;
        }
        const char separator = text[i];
        std::size_t run = 0;
        while (i < text.size() && text[i] == separator) {
            ++run;
            ++i;
        }
        const bool allowed =
            (separator == '.' && run == 1) || (separator == '_' && run <= 2) || separator == '-';
        if (!allowed || i == text.size() || !lower_alnum(text[i])) return false;
    }
    return true;
}

FleetAddress parse_fleet_address(std::string_view text) {
    constexpr std::string_view scheme = "oci://";
    const std::string shown(text.substr(0, 200));
    if (text.substr(0, scheme.size()) != scheme)
        throw FleetAddressError("'" + shown + "' is not an OCI registry: write oci://HOST/PREFIX");
    std::string_view rest = text.substr(scheme.size());
    const auto slash = rest.find('/');
    const std::string_view authority = rest.substr(0, slash);
    if (authority.find_first_of("@?#") != std::string_view::npos)
        throw FleetAddressError(
            "'" + shown +
            "': write the registry as oci://HOST[:PORT]/PREFIX, "
            "without a user, query or fragment (credentials come from the keyring)");
    FleetAddress fleet;
    try {
        fleet.host = proto::normalize_hostname(authority);
    } catch (const proto::Error& e) {
        throw FleetAddressError("'" + shown + "': " + e.what());
    }
    std::string_view prefix = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
    while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
    if (prefix.empty())
        throw FleetAddressError("'" + shown +
                                "' names no repository prefix: write oci://HOST/PREFIX, for "
                                "example oci://" +
                                fleet.host + "/terraform-cache");
    std::string_view components = prefix;
    while (true) {
        const auto next = components.find('/');
        const std::string_view component = components.substr(0, next);
        if (!repository_component(component))
            throw FleetAddressError(
                "'" + shown + "': '" + std::string(component.substr(0, 100)) +
                "' cannot be part of a repository name (lowercase letters and digits, "
                "separated by '.', '_', '__' or dashes)");
        if (next == std::string_view::npos) break;
        components.remove_prefix(next + 1);
    }
    if (prefix.size() > kMaxRepositoryName / 2)
        throw FleetAddressError("'" + shown + "': the prefix is over " +
                                std::to_string(kMaxRepositoryName / 2) + " characters");
    fleet.prefix = std::string(prefix);
    return fleet;
}

std::string provider_repository(const FleetAddress& fleet, std::string_view registry_host,
                                std::string_view namespace_, std::string_view type) {
    return checked_repository(fleet.prefix + "/providers/" + host_component(registry_host) + "/" +
                              name_component(namespace_) + "/" + name_component(type));
}

std::string module_repository(const FleetAddress& fleet, std::string_view registry_host,
                              std::string_view namespace_, std::string_view name,
                              std::string_view system) {
    return checked_repository(fleet.prefix + "/modules/" + host_component(registry_host) + "/" +
                              name_component(namespace_) + "/" + name_component(name) + "/" +
                              name_component(system));
}

std::string version_tag(std::string_view version) {
    std::string tag(version);
    for (char& c : tag)
        if (c == '+') c = '_';
    bool ok = !tag.empty() && tag.size() <= 128 && tag.front() != '.' && tag.front() != '-';
    for (const char c : tag) ok = ok && tag_char(c);
    if (!ok)
        throw FleetAddressError("the version '" + std::string(version.substr(0, 100)) +
                                "' cannot be an OCI tag");
    return tag;
}

std::string platform_tag(std::string_view version, std::string_view os, std::string_view arch) {
    const auto word = [](std::string_view part) {
        if (part.empty()) return false;
        for (const char c : part)
            if (!lower_alnum(c)) return false;
        return true;
    };
    if (!word(os) || !word(arch))
        throw FleetAddressError("the platform '" + std::string(os.substr(0, 40)) + "_" +
                                std::string(arch.substr(0, 40)) + "' cannot be part of an OCI tag");
    return version_tag(std::string(version) + "_" + std::string(os) + "_" + std::string(arch));
}

}  // namespace hostkeeper::daemon::fleet
