#include "daemon/credentials/command_output.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "daemon/credentials/token_expiry.hpp"
#include "proto/json.hpp"

namespace hostkeeper::daemon::credentials {
namespace {

// A command's JSON document nests one level; a little room for unknown fields.
constexpr std::size_t kMaxOutputDepth = 8;
// The longest expires_in taken: ten years, as the settings' durations.
constexpr long long kMaxExpiresIn = 10LL * 365 * 86400;

// Whether `token` can be sent as a bearer token: not empty, printable ASCII
// without spaces.
bool usable_token(std::string_view token) {
    return !token.empty() &&
           std::all_of(token.begin(), token.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

CommandOutput from_json(std::string_view text) {
    proto::Json document;
    try {
        document = proto::parse_json(text, kMaxOutputDepth);
    } catch (const proto::JsonError& e) {
        throw CommandOutputError(std::string("printed JSON that cannot be read: ") + e.what());
    }
    const proto::ScrubGuard guard(document);
    if (!document.is_object())
        throw CommandOutputError("printed JSON that is not an object with a \"token\"");
    const auto token = document.find("token");
    if (token == document.end() || !token->is_string())
        throw CommandOutputError("printed a JSON object without a string \"token\"");
    if (!usable_token(token->get_ref<const std::string&>()))
        throw CommandOutputError(
            "printed a \"token\" that is empty or holds spaces or control characters");
    CommandOutput output;
    const auto at = document.find("expires_at");
    const auto in = document.find("expires_in");
    if (at != document.end() && in != document.end())
        throw CommandOutputError("printed both \"expires_at\" and \"expires_in\": give one");
    if (at != document.end()) {
        if (!at->is_string() || !(output.expires_at = parse_rfc3339(at->get<std::string>())))
            throw CommandOutputError(
                "printed an \"expires_at\" that is not an RFC 3339 date-time such as "
                "2026-11-28T10:00:00Z");
    }
    if (in != document.end()) {
        if (!in->is_number_integer() || in->get<long long>() < 1 ||
            in->get<long long>() > kMaxExpiresIn)
            throw CommandOutputError(
                "printed an \"expires_in\" that is not a whole number of seconds from 1 to "
                "315360000");
        output.expires_in = std::chrono::seconds(in->get<long long>());
    }
    output.token = proto::Secret(token->get_ref<const std::string&>());
    return output;
}

CommandOutput from_line(std::string_view text) {
    // Blank space around the line is not the token's.
    text.remove_prefix(text.find_first_not_of(" \t\r\n"));
    text.remove_suffix(text.size() - 1 - text.find_last_not_of(" \t\r\n"));
    if (text.find('\n') != std::string_view::npos)
        throw CommandOutputError(
            "printed more than one line: print the token alone, or a JSON object");
    if (!usable_token(text))
        throw CommandOutputError(
            "printed a line that is not a token (spaces or control characters)");
    return CommandOutput{proto::Secret(text), std::nullopt, std::nullopt};
}

}  // namespace

CommandOutput read_command_output(std::string_view text) {
    if (text.size() > kMaxCommandOutput) throw CommandOutputError("printed more than 64 KiB");
    const auto start = text.find_first_not_of(" \t\r\n");
    if (start == std::string_view::npos) throw CommandOutputError("printed no token");
    if (text[start] == '{' || text[start] == '[') return from_json(text);
    return from_line(text);
}

}  // namespace hostkeeper::daemon::credentials
