#include "plaintext_credentials.hpp"

#include <algorithm>

#include "file_io.hpp"
#include "hostkeeper/proto/secret.hpp"
#include "tool_locations.hpp"

namespace hostkeeper::client {
namespace fs = std::filesystem;
using proto::Json;

CredentialsFile::CredentialsFile(fs::path path) : path_(std::move(path)) {
    auto text = read_file_if_exists(path_, 4 << 20);
    if (!text) throw FileError(path_.string() + " does not exist");
    const proto::ScrubGuard guard(*text);
    try {
        document_ = Json::parse(*text);
    } catch (const Json::parse_error& e) {
        // Not e.what(): it quotes the input it last read, which may be part of a token.
        throw FileError(path_.string() + " is not valid JSON (at byte " + std::to_string(e.byte) +
                        "); it was left as it is");
    }
    if (!document_.is_object() ||
        (document_.contains("credentials") && !document_["credentials"].is_object())) {
        proto::scrub(document_);
        throw FileError(path_.string() +
                        " is not a credentials file ({\"credentials\": {\"HOST\": {...}}}); it was "
                        "left as it is");
    }
}

CredentialsFile::~CredentialsFile() {
    proto::scrub(document_);
}

std::vector<std::string> CredentialsFile::hosts() const {
    std::vector<std::string> out;
    if (!document_.contains("credentials")) return out;
    for (const auto& [host, value] : document_["credentials"].items()) out.push_back(host);
    return out;
}

const Json& CredentialsFile::credentials(const std::string& host) const {
    return document_.at("credentials").at(host);
}

bool CredentialsFile::rewrite_without(const std::set<std::string>& hosts) const {
    Json rest = document_;
    if (rest.contains("credentials")) {
        for (const auto& host : hosts) rest["credentials"].erase(host);
    }
    if (rest.size() <= 1 &&
        (rest.empty() || (rest.contains("credentials") && rest["credentials"].empty()))) {
        remove_file(path_);
        return true;
    }
    std::string text = rest.dump(2) + "\n";
    const proto::ScrubGuard text_guard(text);
    proto::scrub(rest);
    write_file_atomically(path_, text, 0600);
    return false;
}

std::vector<fs::path> credentials_file_paths() {
    std::vector<fs::path> paths;
    for (const Tool tool : {Tool::terraform, Tool::opentofu}) {
        const fs::path path = locate(tool).credentials_json;
        if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
    }
    return paths;
}

}  // namespace hostkeeper::client
