#include "helper/terraform_config/plaintext_credentials.hpp"

#include <algorithm>
#include <optional>

#include "helper/terraform_config/tool_locations.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/hostname.hpp"
#include "proto/json.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::helper::terraform_config {
namespace fs = std::filesystem;
using proto::Json;

namespace {

Json parse_document(std::string_view text, const fs::path& path) {
    Json document;
    try {
        document = proto::parse_json(text);
    } catch (const proto::JsonError& e) {
        throw proto::FileError(path.string() + " is " + e.what() + "; it was left as it is");
    }
    if (!document.is_object() ||
        (document.contains("credentials") && !document["credentials"].is_object())) {
        proto::scrub(document);
        throw proto::FileError(
            path.string() +
            " is not a credentials file ({\"credentials\": {\"HOST\": {...}}}); it was "
            "left as it is");
    }
    return document;
}

}  // namespace

CredentialsFile::CredentialsFile(fs::path path) : path_(std::move(path)) {
    auto text = proto::read_file_if_exists(path_, 4 << 20);
    if (!text) throw proto::FileError(path_.string() + " does not exist");
    const proto::ScrubGuard guard(*text);
    document_ = parse_document(*text, path_);
}

CredentialsFile::CredentialsFile(fs::path path, std::string_view text)
    : path_(std::move(path)), document_(parse_document(text, path_)) {}

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

CredentialsFile::Rewritten CredentialsFile::rewrite_without(
    const std::map<std::string, Json>& imported) const {
    Rewritten result;
    Json rest = document_;
    const proto::ScrubGuard rest_guard(rest);
    if (rest.contains("credentials")) {
        Json& credentials = rest["credentials"];
        for (const auto& [host, stored] : imported) {
            const auto it = credentials.find(host);
            if (it == credentials.end()) continue;  // gone meanwhile: nothing to remove
            if (*it != stored) {
                result.changed.push_back(host);  // written meanwhile: keep the new value
                continue;
            }
            proto::scrub(*it);
            credentials.erase(it);
            ++result.removed_hosts;
        }
        result.left_hosts = credentials.size();
    }
    if (result.removed_hosts == 0) return result;
    std::error_code ec;
    const bool symlink = fs::is_symlink(fs::symlink_status(path_, ec));
    if (!symlink && rest.size() <= 1 &&
        (rest.empty() || (rest.contains("credentials") && rest["credentials"].empty()))) {
        proto::remove_file(path_);
        result.removed_file = true;
        return result;
    }
    std::string text = rest.dump(2) + "\n";
    const proto::ScrubGuard text_guard(text);
    proto::write_file_atomically(path_, text, 0600);  // through a symlink: its target
    return result;
}

std::vector<fs::path> credentials_file_paths() {
    std::vector<fs::path> paths;
    for (const Tool tool : {Tool::terraform, Tool::opentofu}) {
        const fs::path path = locate(tool).credentials_json;
        if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
    }
    return paths;
}

namespace restore {

// The file's document, or an empty one when there is no file. The caller
// scrubs it.
Json read_document(const fs::path& path) {
    auto text = proto::read_file_if_exists(path, 4 << 20);
    if (!text) return Json{{"credentials", Json::object()}};
    const proto::ScrubGuard guard(*text);
    Json document;
    try {
        document = text->empty() ? Json::object() : proto::parse_json(*text);
    } catch (const proto::JsonError& e) {
        throw proto::FileError(path.string() + " is " + e.what() +
                               "; fix or move it, then run again (nothing was changed)");
    }
    if (!document.is_object() ||
        (document.contains("credentials") && !document["credentials"].is_object())) {
        proto::scrub(document);
        throw proto::FileError(path.string() +
                               " is not a credentials file ({\"credentials\": {\"HOST\": {...}}}); "
                               "fix or move it, then run again (nothing was changed)");
    }
    if (!document.contains("credentials")) document["credentials"] = Json::object();
    return document;
}

// The host a key of the file names, as Terraform compares them.
std::optional<std::string> comparable(const std::string& key) {
    try {
        return proto::normalize_hostname(key);
    } catch (const std::exception&) {
        return std::nullopt;  // not a hostname: names no host of ours
    }
}

bool has_entry(const Json& credentials, const std::string& host) {
    for (const auto& [key, value] : credentials.items()) {
        if (comparable(key) == host) return true;
    }
    return false;
}

}  // namespace restore

RestoreResult add_tokens_to_credentials_file(const fs::path& path,
                                             const std::vector<HostToken>& tokens) {
    Json document = restore::read_document(path);
    const proto::ScrubGuard document_guard(document);
    Json& credentials = document["credentials"];
    RestoreResult result;
    for (const auto& [host, token] : tokens) {
        if (restore::has_entry(credentials, host)) {
            result.kept.push_back(host);
            continue;
        }
        credentials[proto::display_hostname(host)] = Json{{"token", std::string(token.view())}};
        result.written.push_back(host);
    }
    if (result.written.empty()) return result;
    std::string text = document.dump(2) + "\n";
    const proto::ScrubGuard text_guard(text);
    if (path.has_parent_path()) fs::create_directories(path.parent_path());
    proto::write_file_atomically(path, text, 0600);
    return result;
}

}  // namespace hostkeeper::helper::terraform_config
