// git-credential-hostkeeper's input: the key=value lines git writes to a
// credential helper (url= included), and `get`'s lines written from what was
// read, read back.
#include <string>

#include "fuzz_support.hpp"
#include "helper/git_credential_helper/git_credentials.hpp"
#include "proto/error.hpp"

using namespace hostkeeper;
namespace git = helper::git_credential_helper;

namespace {

bool has_line_break(std::string_view text) {
    return text.find_first_of(std::string_view("\n\r\0", 3)) != std::string_view::npos;
}

bool has_control(std::string_view text) {
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) return true;
    }
    return false;
}

// get's lines from an accepted credential read back as the same values.
void check_round_trip(const git::GitCredential& c) {
    const std::string_view password = c.password ? c.password->view() : std::string_view();
    std::optional<std::string_view> refresh;
    if (c.oauth_refresh_token) refresh = c.oauth_refresh_token->view();
    const std::string_view username = c.username ? std::string_view(*c.username) : "";
    std::string out;
    try {
        out = git::format_answer(username, password, c.password_expiry_utc, refresh);
    } catch (const proto::Error& e) {
        fuzz::require(e.code() == proto::ErrorCode::internal, "a refused answer is not internal");
        fuzz::require(has_line_break(username) || has_line_break(password) ||
                          (refresh && has_line_break(*refresh)),
                      "an answer without a line break was refused");
        return;
    }
    fuzz::require(!out.empty() && out.back() == '\n', "get's answer does not end in a newline");
    const git::GitCredential back = git::parse_credential(out);
    fuzz::require(back.username == username, "get's username does not read back");
    fuzz::require(back.password && back.password->view() == password,
                  "get's password does not read back");
    fuzz::require(back.password_expiry_utc == c.password_expiry_utc,
                  "get's password_expiry_utc does not read back");
    fuzz::require(static_cast<bool>(back.oauth_refresh_token) == static_cast<bool>(refresh) &&
                      (!refresh || back.oauth_refresh_token->view() == *refresh),
                  "get's oauth_refresh_token does not read back");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    try {
        const git::GitCredential c = git::parse_credential(text);
        fuzz::require(c.protocol.find_first_of(std::string_view("\n\0", 2)) == std::string::npos &&
                          c.host.find_first_of(std::string_view("\n\0", 2)) == std::string::npos &&
                          c.path.find_first_of(std::string_view("\n\0", 2)) == std::string::npos,
                      "an accepted field holds a newline or NUL");
        check_round_trip(c);
    } catch (const proto::Error& e) {
        fuzz::require(e.code() == proto::ErrorCode::bad_request,
                      "a git input error is not bad_request");
        const std::string_view message = e.what();
        fuzz::require(!message.empty() && !has_control(message),
                      "a git input error's message is empty or spans lines");
    }
    return 0;
}
