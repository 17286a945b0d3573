#include "helper/terraform_config/token_variables.hpp"

#include <exception>

#include "proto/hostname.hpp"

namespace hostkeeper::helper::terraform_config {
namespace {

// strings.ReplaceAll: left to right, matches do not overlap.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(text.size());
    std::size_t start = 0;
    while (true) {
        const auto at = text.find(from, start);
        if (at == std::string_view::npos) break;
        out.append(text.substr(start, at - start));
        out.append(to);
        start = at + from.size();
    }
    out.append(text.substr(start));
    return out;
}

}  // namespace

std::optional<std::string> decode_token_variable(std::string_view name) {
    if (name.substr(0, kTokenVariablePrefix.size()) != kTokenVariablePrefix) return std::nullopt;
    std::string raw =
        replace_all(replace_all(name.substr(kTokenVariablePrefix.size()), "__", "-"), "_", ".");
    // svchost reads the port with strconv.Atoi, which takes a sign:
    // "host:+8443" is host:8443 to Terraform.
    if (const auto colon = raw.find(':');
        colon != std::string::npos && colon + 1 < raw.size() && raw[colon + 1] == '+') {
        raw.erase(colon + 1, 1);
    }
    try {
        return proto::normalize_hostname(raw);
    } catch (const std::exception&) {
        return std::nullopt;  // Terraform: "Ignore invalid hostnames"
    }
}

std::optional<std::string> encode_token_variable(std::string_view host) {
    if (host.empty()) return std::nullopt;
    std::string name(kTokenVariablePrefix);
    name += replace_all(replace_all(host, "-", "__"), ".", "_");
    const auto decoded = decode_token_variable(name);
    if (!decoded || *decoded != host) return std::nullopt;
    return name;
}

bool shell_portable(std::string_view name) {
    if (name.empty() || (name.front() >= '0' && name.front() <= '9')) return false;
    for (const char c : name) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) return false;
    }
    return true;
}

}  // namespace hostkeeper::helper::terraform_config
