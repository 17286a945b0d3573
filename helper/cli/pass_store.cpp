#include "helper/cli/pass_store.hpp"

#include <algorithm>
#include <system_error>

#include "proto/file_io.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kFolder = "hostkeeper";

bool hidden(const fs::path& path) {
    const std::string name = path.filename().string();
    return !name.empty() && name.front() == '.';
}

}  // namespace

PassEntries pass_entries(const fs::path& store) {
    PassEntries entries;
    const fs::path root = store / kFolder;
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(root, ec);
    if (fs::is_symlink(status)) {
        entries.links.push_back(root);
        return entries;
    }
    if (!fs::is_directory(status)) return entries;
    // Without follow_directory_symlink: a link to a folder is listed, not entered.
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const fs::path& path = it->path();
        std::error_code ignored;
        const fs::file_status own = it->symlink_status(ignored);
        if (hidden(path)) {
            if (fs::is_directory(own)) it.disable_recursion_pending();
            continue;
        }
        if (fs::is_symlink(own)) {
            if (path.extension() == ".gpg" || fs::is_directory(fs::status(path, ignored)))
                entries.links.push_back(path);
        } else if (path.extension() == ".gpg" && fs::is_regular_file(own)) {
            entries.files.push_back(path);
        }
    }
    std::sort(entries.files.begin(), entries.files.end());
    std::sort(entries.links.begin(), entries.links.end());
    return entries;
}

std::vector<fs::path> pass_entry_files(const fs::path& store) {
    return pass_entries(store).files;
}

std::optional<std::string> pass_entry_host(const fs::path& store, const fs::path& file) {
    if (file.parent_path() != store / kFolder || file.extension() != ".gpg") return std::nullopt;
    std::string host = file.stem().string();
    if (host.empty() || hidden(file)) return std::nullopt;
    const auto underscore = host.find('_');
    if (underscore != std::string::npos) {
        if (host.find('_', underscore + 1) != std::string::npos) return std::nullopt;
        host[underscore] = ':';
    }
    return host;
}

std::vector<fs::path> pass_gpg_id_files(const fs::path& store) {
    std::vector<fs::path> files;
    std::error_code ec;
    const fs::path root = store / kFolder;
    for (const fs::path& candidate : {root / ".gpg-id", store / ".gpg-id"}) {
        if (fs::is_regular_file(candidate, ec)) {
            files.push_back(candidate);
            break;
        }
    }
    std::vector<fs::path> below;
    if (fs::is_directory(root, ec)) {
        fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied,
                                            ec);
        for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
            const fs::path& path = it->path();
            std::error_code ignored;
            if (path.filename() == ".gpg-id") {
                if (path.parent_path() != root && it->is_regular_file(ignored))
                    below.push_back(path);
            } else if (hidden(path) && it->is_directory(ignored)) {
                it.disable_recursion_pending();
            }
        }
    }
    std::sort(below.begin(), below.end());
    files.insert(files.end(), below.begin(), below.end());
    return files;
}

std::vector<std::string> read_gpg_ids(const fs::path& file) {
    const auto text = proto::read_file_if_exists(file);
    if (!text) throw proto::FileError(file.string() + " does not exist");
    std::vector<std::string> ids;
    std::size_t begin = 0;
    while (begin < text->size()) {
        std::size_t end = text->find('\n', begin);
        if (end == std::string::npos) end = text->size();
        std::string line = text->substr(begin, end - begin);
        begin = end + 1;
        if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos) continue;
        const auto last = line.find_last_not_of(" \t\r");
        ids.push_back(line.substr(first, last - first + 1));
    }
    return ids;
}

std::vector<std::string> split_gpg_opts(std::string_view text) {
    std::vector<std::string> words;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
        const std::size_t begin = i;
        while (i < text.size() && text[i] != ' ' && text[i] != '\t' && text[i] != '\n') ++i;
        if (i > begin) words.emplace_back(text.substr(begin, i - begin));
    }
    return words;
}

std::optional<std::string> gpg_homedir_option(const std::vector<std::string>& options) {
    std::optional<std::string> homedir;
    for (std::size_t i = 0; i < options.size(); ++i) {
        if (options[i] == "--homedir" && i + 1 < options.size()) {
            homedir = options[++i];
        } else if (options[i].rfind("--homedir=", 0) == 0) {
            homedir = options[i].substr(10);
        }
    }
    return homedir;
}

}  // namespace hostkeeper::helper::cli
