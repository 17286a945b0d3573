#include "proto/error.hpp"

#include <array>
#include <utility>

namespace hostkeeper::proto {
namespace {

constexpr std::array<std::pair<ErrorCode, std::string_view>, 22> kNames{{
    {ErrorCode::bad_request, "bad_request"},
    {ErrorCode::bad_host, "bad_host"},
    {ErrorCode::too_large, "too_large"},
    {ErrorCode::unsupported_version, "unsupported_version"},
    {ErrorCode::unknown_op, "unknown_op"},
    {ErrorCode::keyring_locked, "keyring_locked"},
    {ErrorCode::keyring_unavailable, "keyring_unavailable"},
    {ErrorCode::no_default_collection, "no_default_collection"},
    {ErrorCode::keyring_error, "keyring_error"},
    {ErrorCode::timeout, "timeout"},
    {ErrorCode::discovery_failed, "discovery_failed"},
    {ErrorCode::registry_failed, "registry_failed"},
    {ErrorCode::not_found, "not_found"},
    {ErrorCode::unsupported_service, "unsupported_service"},
    {ErrorCode::verification_failed, "verification_failed"},
    {ErrorCode::busy, "busy"},
    {ErrorCode::forbidden, "forbidden"},
    {ErrorCode::config_error, "config_error"},
    {ErrorCode::token_command_failed, "token_command_failed"},
    {ErrorCode::login_failed, "login_failed"},
    {ErrorCode::internal, "internal"},
}};

}  // namespace

std::string_view to_string(ErrorCode code) noexcept {
    for (const auto& [c, name] : kNames) {
        if (c == code) return name;
    }
    return "internal";
}

std::optional<ErrorCode> error_code_from_string(std::string_view text) noexcept {
    for (const auto& [c, name] : kNames) {
        if (name == text) return c;
    }
    return std::nullopt;
}

}  // namespace hostkeeper::proto
