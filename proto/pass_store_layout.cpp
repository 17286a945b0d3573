#include "proto/pass_store_layout.hpp"

#include <cstdlib>
#include <exception>
#include <system_error>

#include "proto/hostname.hpp"

namespace hostkeeper::proto {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kBlanks = " \t\r\v\f";

std::string_view trim_blanks(std::string_view text) {
    const auto first = text.find_first_not_of(kBlanks);
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(kBlanks);
    return text.substr(first, last - first + 1);
}

}  // namespace

fs::path pass_store_dir(const std::optional<fs::path>& configured) {
    if (configured && !configured->empty()) return fs::absolute(*configured);
    const char* env = std::getenv("PASSWORD_STORE_DIR");
    if (env != nullptr && *env != '\0') return fs::absolute(env);
    const char* home = std::getenv("HOME");
    return fs::path(home != nullptr && *home != '\0' ? home : "/") / ".password-store";
}

std::string pass_entry_name(std::string_view host) {
    std::string name(host);
    const auto colon = name.rfind(':');
    if (colon != std::string::npos) name[colon] = '_';
    return std::string(kPassEntryFolder) + "/" + name;
}

std::optional<std::string> host_of_pass_entry_file(std::string_view file_name) {
    if (file_name.size() <= kPassEntrySuffix.size() ||
        file_name.substr(file_name.size() - kPassEntrySuffix.size()) != kPassEntrySuffix)
        return std::nullopt;
    std::string host(file_name.substr(0, file_name.size() - kPassEntrySuffix.size()));
    // hostkeeper writes a port after '_': "h:1.gpg" is not one of its names.
    if (host.find(':') != std::string::npos) return std::nullopt;
    const auto underscore = host.rfind('_');
    if (underscore != std::string::npos) host[underscore] = ':';
    try {
        // Only names hostkeeper itself would write: the normalized form.
        if (normalize_hostname(host) != host) return std::nullopt;
    } catch (const std::exception&) {
        return std::nullopt;
    }
    return host;
}

std::vector<std::string> parse_gpg_ids(std::string_view text) {
    std::vector<std::string> ids;
    while (!text.empty()) {
        const auto newline = text.find('\n');
        std::string_view line = text.substr(0, newline);
        text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
        line = line.substr(0, line.find('#'));
        line = trim_blanks(line);
        if (!line.empty()) ids.emplace_back(line);
    }
    return ids;
}

std::vector<std::string> split_pass_words(std::string_view text) {
    std::vector<std::string> words;
    while (!text.empty()) {
        const auto start = text.find_first_not_of(" \t\n");
        if (start == std::string_view::npos) break;
        text = text.substr(start);
        const auto end = text.find_first_of(" \t\n");
        words.emplace_back(text.substr(0, end));
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end);
    }
    return words;
}

std::optional<fs::path> gpg_id_file_for(const fs::path& store, const fs::path& folder) {
    const fs::path root = store.lexically_normal();
    fs::path current = folder.lexically_normal();
    std::error_code ec;
    while (true) {
        fs::path candidate = current / ".gpg-id";
        if (fs::is_regular_file(candidate, ec)) return candidate;
        if (current == root || !current.has_parent_path() || current.parent_path() == current)
            break;
        const fs::path relative = current.lexically_relative(root);
        if (relative.empty() || *relative.begin() == "..") break;
        current = current.parent_path();
    }
    return std::nullopt;
}

}  // namespace hostkeeper::proto
