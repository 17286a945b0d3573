// The git item key parser (proto/git_credential.hpp): the URL a keyring
// item or a pass entry's name holds, read back for list and migrate; and the
// field checks of git_get, git_store and git_erase. The input is a key.
#include <string>

#include "fuzz_support.hpp"
#include "proto/error.hpp"
#include "proto/git_credential.hpp"

using namespace hostkeeper;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    if (const auto key = proto::parse_git_item_key(text)) {
        fuzz::require(proto::git_item_key(*key) == text, "a parsed key does not build back");
        fuzz::require(proto::git_host(key->host) == key->host, "a parsed host is not normalized");
        fuzz::require(proto::git_path(key->path) == key->path, "a parsed path is not a valid one");
        fuzz::require(proto::git_username(key->username) == key->username,
                      "a parsed username is not a valid one");
        fuzz::require(proto::parse_git_item_key(proto::git_item_key(*key)) == key,
                      "a key built from a parsed one parses differently");
    }
    // The same text as each field: valid, or a clear error of the documented kind.
    try {
        const std::string path = proto::git_path(text);
        fuzz::require(path.empty() || path.front() != '/', "a path keeps a leading slash");
        fuzz::require(proto::git_path(path) == path, "a checked path changes when checked again");
        const std::string username = proto::git_username(text);
        const proto::GitItemKey key{"h.example", path, username};
        fuzz::require(proto::parse_git_item_key(proto::git_item_key(key)) == key,
                      "a key built from valid fields does not parse back");
    } catch (const proto::Error& e) {
        fuzz::require(e.code() == proto::ErrorCode::bad_request,
                      "a git field error is not bad_request");
    }
    if (const auto expiry = proto::parse_git_expiry(text))
        fuzz::require(std::to_string(*expiry) == text || text.front() == '0',
                      "an expiry is not the decimal number it reads as");
    return 0;
}
