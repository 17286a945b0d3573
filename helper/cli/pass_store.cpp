#include "helper/cli/pass_store.hpp"

#include <algorithm>
#include <system_error>

#include "proto/file_io.hpp"
#include "proto/pass_store_layout.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kFolder = proto::kPassEntryFolder;

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
    if (file.parent_path() != store / kFolder) return std::nullopt;
    return proto::host_of_pass_entry_file(file.filename().string());
}

std::vector<fs::path> pass_gpg_id_files(const fs::path& store) {
    std::vector<fs::path> files;
    std::error_code ec;
    const fs::path root = store / kFolder;
    if (auto governing = proto::gpg_id_file_for(store, root))
        files.push_back(std::move(*governing));
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
    return proto::parse_gpg_ids(*text);
}

std::vector<std::string> split_gpg_opts(std::string_view text) {
    return proto::split_pass_words(text);
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
