#include "daemon/registry_cache/document_snapshots.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdlib>
#include <exception>

#include "daemon/archives/package_hash.hpp"
#include "proto/file_io.hpp"
#include "proto/json.hpp"

namespace hostkeeper::daemon::registry_cache {
namespace fs = std::filesystem;
using proto::Json;

namespace {
constexpr std::size_t kMaxSnapshot = std::size_t{16} * 1024 * 1024;
}  // namespace

fs::path default_snapshot_dir() {
    return proto::xdg_base_dir("XDG_CACHE_HOME", ".cache") / "hostkeeper" / "documents";
}

fs::path DocumentSnapshots::file_of(const std::string& key) const {
    return dir_ / archives::sha256_hex(key);
}

// The file: one line of JSON (the key, status, content type, headers), then the body.
void DocumentSnapshots::save(const std::string& key, const ListenerResponse& response) {
    try {
        if (!fs::exists(dir_)) {
            fs::create_directories(dir_);
            fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace);
        }
        Json headers = Json::array();
        for (const auto& [name, value] : response.headers) headers.push_back({name, value});
        const Json meta = {{"key", key},
                           {"status", response.status},
                           {"content_type", response.content_type},
                           {"headers", std::move(headers)}};
        const std::string text = meta.dump() + "\n" + response.body;
        // Most answers are the same as last time: no write, no fsync, on the event loop.
        if (proto::read_file_if_exists(file_of(key), kMaxSnapshot) == text) return;
        proto::write_file_atomically(file_of(key), text, 0600);
    } catch (const std::exception& e) {
        if (!warned_) spdlog::warn("registry cache: cannot keep answers on disk: {}", e.what());
        warned_ = true;
    }
}

std::optional<ListenerResponse> DocumentSnapshots::load(const std::string& key) const {
    try {
        const std::optional<std::string> text =
            proto::read_file_if_exists(file_of(key), kMaxSnapshot);
        if (!text) return std::nullopt;
        const auto newline = text->find('\n');
        if (newline == std::string::npos) return std::nullopt;
        const Json meta = proto::parse_json(std::string_view(*text).substr(0, newline));
        if (meta.at("key") != key) return std::nullopt;  // a hash collision, or not ours
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

}  // namespace hostkeeper::daemon::registry_cache
