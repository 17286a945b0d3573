#include "helper/cli/keyring_config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cstddef>
#include <system_error>

#include "proto/file_io.hpp"
#include "proto/paths.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;

namespace {

// The byte offset of `position` in `text`: toml++ counts lines from 1 at each
// '\n' and columns from 1 in code points.
std::size_t offset_of(const std::string& text, const toml::source_position& position) {
    std::size_t at = 0;
    for (toml::source_index line = 1; line < position.line && at < text.size(); ++line) {
        const std::size_t newline = text.find('\n', at);
        if (newline == std::string::npos) return text.size();
        at = newline + 1;
    }
    for (toml::source_index column = 1; column < position.column && at < text.size(); ++column) {
        ++at;
        while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0U) == 0x80U) ++at;
    }
    return at;
}

// The offset just past the newline of the line `position` is on (or the text's end).
std::size_t next_line(const std::string& text, const toml::source_position& position) {
    const std::size_t newline = text.find('\n', offset_of(text, position));
    return newline == std::string::npos ? text.size() : newline + 1;
}

// `text` with `line` inserted at `at`, which is a line's start or the text's
// end (then a newline is added first when the text lacks one).
std::string insert_line(const std::string& text, std::size_t at, const std::string& line) {
    std::string out = text.substr(0, at);
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out + line + "\n" + text.substr(at);
}

std::string with_table_appended(const std::string& text, const std::string& quoted) {
    std::string appended = text;
    if (!appended.empty() && appended.back() != '\n') appended += '\n';
    if (!appended.empty()) appended += '\n';
    return appended + "[keyring]\nbackend = " + quoted + "\n";
}

// Where the last of `table`'s dotted keys (keyring.x = ..., keyring.x.y = ...)
// ends; tables with a header of their own ([keyring.sub]) are elsewhere.
toml::source_position last_dotted_end(const std::string& text, const toml::table& table) {
    toml::source_position end = table.source().end;
    for (const auto& [key, node] : table) {
        const toml::table* inner = node.as_table();
        if (inner == nullptr || inner->is_inline()) {
            end = std::max(end, node.source().end);
        } else if (const std::size_t at = offset_of(text, inner->source().begin);
                   at < text.size() && text[at] != '[') {
            end = std::max(end, last_dotted_end(text, *inner));
        }
    }
    return end;
}

// A table that a [keyring.sub] header created along the way begins where
// that sub-table does; a table with a [keyring] header of its own does not.
bool defined_by_its_tables(const toml::table& table) {
    return std::any_of(table.begin(), table.end(), [&](const auto& entry) {
        return entry.second.is_table() && entry.second.source().begin == table.source().begin;
    });
}

toml::table parsed(const std::string& text) {
    try {
        return toml::parse(text);
    } catch (const toml::parse_error& e) {
        throw proto::FileError("not valid TOML, line " + std::to_string(e.source().begin.line) +
                               ": " + std::string(e.description()) + "; left as it was");
    }
}

}  // namespace

fs::path daemon_config_path() {
    return proto::config_toml_path();
}

std::string with_keyring_backend(const std::string& text, std::string_view backend) {
    // Appended, not "\"" + std::string(...): g++ 12's -O3 -Wrestrict misfires on that.
    std::string quoted(1, '"');
    quoted.append(backend).push_back('"');
    const toml::table root = parsed(text);

    const toml::node* node = root.get("keyring");
    if (node == nullptr) return with_table_appended(text, quoted);
    const toml::table* keyring = node->as_table();
    if (keyring == nullptr) {
        throw proto::FileError("keyring is not a table; set backend = " + quoted +
                               " under [keyring] by hand");
    }
    if (keyring->is_inline()) {
        throw proto::FileError("keyring is an inline table (keyring = {...}); set backend = " +
                               quoted + " in it by hand");
    }
    if (const toml::node* value = keyring->get("backend")) {
        if (!value->is_value()) {
            throw proto::FileError("keyring.backend is not a string; set backend = " + quoted +
                                   " under [keyring] by hand");
        }
        const std::size_t begin = offset_of(text, value->source().begin);
        const std::size_t end = offset_of(text, value->source().end);
        return text.substr(0, begin) + quoted + text.substr(end);
    }
    const std::size_t begin = offset_of(text, keyring->source().begin);
    if (begin < text.size() && text[begin] == '[') {
        // [keyring.sub] alone: a [keyring] table may still follow it.
        if (defined_by_its_tables(*keyring)) return with_table_appended(text, quoted);
        return insert_line(text, next_line(text, keyring->source().begin), "backend = " + quoted);
    }
    // Top-level keyring.* keys define the table: a [keyring] header after
    // them would define it twice.
    return insert_line(text, next_line(text, last_dotted_end(text, *keyring)),
                       "keyring.backend = " + quoted);
}

void write_keyring_backend(const fs::path& path, std::string_view backend) {
    const std::string before = proto::read_file_if_exists(path).value_or("");
    const std::string after = with_keyring_backend(before, backend);
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) {
        throw proto::FileError("cannot create " + path.parent_path().string() + ": " +
                               ec.message());
    }
    proto::write_file_atomically(path, after, proto::mode_or(path, 0600));
}

}  // namespace hostkeeper::helper::cli
