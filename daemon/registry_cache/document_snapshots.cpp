#include "daemon/registry_cache/document_snapshots.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdlib>
#include <exception>
#include <string_view>
#include <system_error>

#include "daemon/archives/package_hash.hpp"
#include "proto/file_io.hpp"
#include "proto/json.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace fs = std::filesystem;
using proto::Json;

namespace {
constexpr std::size_t kMaxSnapshot = std::size_t{16} * 1024 * 1024;
constexpr std::size_t kMaxFailure = std::size_t{64} * 1024;
constexpr std::string_view kFailed = ".failed";

long long unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}
}  // namespace

DocumentSnapshots::Key::Key(std::string text)
    : text_(std::move(text)), stem_(archives::sha256_hex(text_)) {}

DocumentSnapshots::DocumentSnapshots(fs::path dir) : dir_(std::move(dir)) {
    std::error_code ec;
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() > kFailed.size() &&
            name.compare(name.size() - kFailed.size(), kFailed.size(), kFailed) == 0)
            failed_.insert(name.substr(0, name.size() - kFailed.size()));
    }
}

fs::path DocumentSnapshots::file_of(const Key& key) const {
    return dir_ / key.stem();
}

fs::path DocumentSnapshots::failure_file_of(const Key& key) const {
    return dir_ / (key.stem() + std::string(kFailed));
}

void DocumentSnapshots::create_dir() const {
    if (!fs::exists(dir_)) {
        fs::create_directories(dir_);
        fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace);
    }
}

// The file: one line of JSON (the key, status, content type, headers), then the body.
void DocumentSnapshots::save(const Key& key, const ListenerResponse& response) {
    try {
        Json headers = Json::array();
        for (const auto& [name, value] : response.headers) headers.push_back({name, value});
        const Json meta = {{"key", key.text()},
                           {"status", response.status},
                           {"content_type", response.content_type},
                           {"headers", std::move(headers)}};
        const std::string text = meta.dump() + "\n" + response.body;
        // Most answers are the same as last time: no write, no fsync, on the event loop.
        // The digest last written says so; the file is read back only for a key
        // not answered since the snapshots were made.
        std::string digest = archives::sha256_hex(text);
        const fs::path file = file_of(key);
        const auto last = written_.find(key.stem());
        const bool same = last != written_.end()
                              ? last->second == digest
                              : proto::read_file_if_exists(file, kMaxSnapshot) == text;
        if (!same) {
            create_dir();
            proto::write_file_atomically(file, text, 0600);
        }
        written_.insert_or_assign(key.stem(), std::move(digest));
    } catch (const std::exception& e) {
        if (!warned_) spdlog::warn("registry cache: cannot keep answers on disk: {}", e.what());
        warned_ = true;
    }
}

std::optional<ListenerResponse> DocumentSnapshots::load(const Key& key) const {
    try {
        const std::optional<std::string> text =
            proto::read_file_if_exists(file_of(key), kMaxSnapshot);
        if (!text) return std::nullopt;
        const auto newline = text->find('\n');
        if (newline == std::string::npos) return std::nullopt;
        const Json meta = proto::parse_json(std::string_view(*text).substr(0, newline));
        if (meta.at("key") != key.text()) return std::nullopt;  // a hash collision, or not ours
        ListenerResponse out;
        out.status = meta.at("status").get<unsigned>();
        out.content_type = meta.at("content_type").get<std::string>();
        for (const Json& header : meta.at("headers"))
            out.headers.emplace_back(header.at(0).get<std::string>(),
                                     header.at(1).get<std::string>());
        out.body = text->substr(newline + 1);
        return out;
    } catch (const std::exception& e) {
        spdlog::warn("registry cache: an answer kept on disk is unreadable: {}", e.what());
        return std::nullopt;
    }
}

void DocumentSnapshots::save_failure(const Key& key, const std::string& message,
                                     std::chrono::seconds retry_in) {
    if (retry_in.count() <= 0) return;
    try {
        create_dir();
        const Json failure = {
            {"key", key.text()}, {"message", message}, {"retry_at", unix_now() + retry_in.count()}};
        proto::write_file_atomically(failure_file_of(key), failure.dump(), 0600);
        failed_.insert(key.stem());
    } catch (const std::exception& e) {
        if (!warned_) spdlog::warn("registry cache: cannot keep answers on disk: {}", e.what());
        warned_ = true;
    }
}

std::optional<DocumentSnapshots::Failure> DocumentSnapshots::load_failure(const Key& key) const {
    if (failed_.count(key.stem()) == 0) return std::nullopt;
    try {
        const std::optional<std::string> text =
            proto::read_file_if_exists(failure_file_of(key), kMaxFailure);
        if (!text) return std::nullopt;
        const Json failure = proto::parse_json(*text);
        if (failure.at("key") != key.text()) return std::nullopt;  // a hash collision, or not ours
        const long long left = failure.at("retry_at").get<long long>() - unix_now();
        if (left <= 0) return std::nullopt;
        return Failure{failure.at("message").get<std::string>(), std::chrono::seconds(left)};
    } catch (const std::exception& e) {
        spdlog::warn("registry cache: a failure kept on disk is unreadable: {}", e.what());
        return std::nullopt;
    }
}

void DocumentSnapshots::answered(const Key& key, const ListenerResponse& response, bool keep) {
    forget_failure(key);
    if (keep) save(key, response);
}

void DocumentSnapshots::forget_failure(const Key& key) {
    if (failed_.erase(key.stem()) == 0) return;  // none kept is the usual case
    std::error_code ec;
    fs::remove(failure_file_of(key), ec);
}

}  // namespace hostkeeper::daemon::registry_cache
