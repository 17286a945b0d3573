// What the pass backend reads from a password store that anyone with the
// store (a git pull, a synced folder) could have written: .gpg-id lines,
// $PASSWORD_STORE_KEY and $PASSWORD_STORE_GPG_OPTS words, an entry's file
// name (a host's, or a Docker server's or a git item's URL in base64url), and
// an entry's decrypted text (a host's credentials, a Docker credential's or a
// git item's JSON). None may crash; what is accepted must be what hostkeeper
// itself would write.
#include <string>

#include "daemon/pass/gpg_options.hpp"
#include "daemon/pass/store_layout.hpp"
#include "fuzz_support.hpp"
#include "proto/error.hpp"
#include "proto/git_credential.hpp"
#include "proto/json.hpp"
#include "proto/messages.hpp"

using namespace hostkeeper::daemon::pass;
using hostkeeper::daemon::credentials::ItemKind;

namespace {

// The "ServerURL" an entry's text names, if it is a JSON object with one.
std::string named_server(std::string_view text) {
    try {
        const hostkeeper::proto::Json json = hostkeeper::proto::parse_json(entry_text(text).view());
        const auto it = json.find("ServerURL");
        if (json.is_object() && it != json.end() && it->is_string()) return it->get<std::string>();
    } catch (const std::exception&) {
    }
    return {};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = hostkeeper::fuzz::text_of(data, size);

    for (const std::string& id : parse_gpg_ids(text)) {
        hostkeeper::fuzz::require(!id.empty(), "an empty gpg id");
        hostkeeper::fuzz::require(id.find_first_of("#\n") == std::string::npos,
                                  "a gpg id holds a comment or a line end");
        hostkeeper::fuzz::require(id.front() != ' ' && id.back() != ' ', "a gpg id is not trimmed");
    }
    for (const std::string& word : parse_store_key(text))
        hostkeeper::fuzz::require(!word.empty() && word.find_first_of(" \t\n") == std::string::npos,
                                  "a key word holds a blank");
    const GpgOptions options = parse_gpg_options(text);
    if (options.trust_model)
        hostkeeper::fuzz::require(!options.trust_model->empty(), "an empty trust model");

    if (const auto host = host_of_entry_file(text)) {
        hostkeeper::fuzz::require(entry_name(*host) + ".gpg" == "hostkeeper/" + std::string(text),
                                  "an accepted entry name does not round-trip");
    }

    if (const auto server = key_of_entry_file(ItemKind::docker, text)) {
        hostkeeper::fuzz::require(entry_name(ItemKind::docker, *server) + ".gpg" ==
                                      "hostkeeper/docker/" + std::string(text),
                                  "an accepted Docker entry name does not round-trip");
        hostkeeper::fuzz::require(hostkeeper::proto::docker_server_key(*server) == *server,
                                  "an accepted Docker server is not a server key");
    }
    try {
        // Read as the entry of the server it names, so that a valid entry reads.
        const auto docker = entry_item("e", {ItemKind::docker, named_server(text)}, text);
        hostkeeper::fuzz::require(
            docker.key.key.size() + docker.username.size() + docker.secret.size() <= text.size(),
            "a Docker entry read more than it held");
    } catch (const hostkeeper::proto::Error& e) {
        hostkeeper::fuzz::require(e.code() == hostkeeper::proto::ErrorCode::keyring_error,
                                  "a bad Docker entry is not keyring_error");
    }

    if (const auto url = key_of_entry_file(ItemKind::git, text)) {
        hostkeeper::fuzz::require(
            entry_name(ItemKind::git, *url) + ".gpg" == "hostkeeper/git/" + std::string(text),
            "an accepted git entry name does not round-trip");
        hostkeeper::fuzz::require(hostkeeper::proto::parse_git_item_key(*url).has_value(),
                                  "an accepted git entry's URL is not a git item key");
    }
    try {
        const std::string url = "https://u@h.example";
        const auto git = entry_item("e", {ItemKind::git, url}, text);
        hostkeeper::fuzz::require(git.key.key == url && git.username == "u",
                                  "a git entry read back another item");
        // What it holds besides the URL is written back with the URL.
        const hostkeeper::proto::Secret again = entry_text_of(git);
        hostkeeper::fuzz::require(
            entry_item("e", {ItemKind::git, url}, again.view()).secret.view() == git.secret.view(),
            "a git entry's text does not read back the same");
    } catch (const hostkeeper::proto::Error& e) {
        hostkeeper::fuzz::require(e.code() == hostkeeper::proto::ErrorCode::keyring_error,
                                  "a bad git entry is not keyring_error");
    }

    const hostkeeper::proto::Secret entry = entry_text(text);
    const std::string_view kept = entry.view();
    hostkeeper::fuzz::require(kept.size() <= text.size(), "entry text grew");
    if (!kept.empty())
        hostkeeper::fuzz::require(kept.back() != '\n' && kept.back() != '\r',
                                  "entry text keeps a line end");
    return 0;
}
