#include "helper/cli/keyring_config.hpp"

#include <cstddef>
#include <optional>
#include <system_error>
#include <vector>

#include "proto/file_io.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;

namespace {

// One key/value pair or table header of a TOML text, by byte offsets: enough
// of TOML to find keyring.backend without disturbing anything else (strings,
// multi-line strings and arrays, comments, quoted and dotted keys).
struct Header {
    std::vector<std::string> name;
    bool array = false;        // [[name]]
    std::size_t line_end = 0;  // just past its newline (or the text's end)
};

struct Pair {
    std::vector<std::string> table;  // the table it is in; empty at the top level
    std::vector<std::string> key;    // dotted parts
    std::size_t value_begin = 0, value_end = 0;
    std::size_t line_end = 0;
    bool inline_table = false;
};

class Scanner {
  public:
    explicit Scanner(const std::string& text) : s_(text) {}

    void scan() {
        while (pos_ < s_.size()) expression();
    }

    std::vector<Header> headers;
    std::vector<Pair> pairs;

  private:
    bool at(std::string_view what) const { return s_.compare(pos_, what.size(), what) == 0; }
    void skip_blanks() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
    }
    void skip_line() {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
        if (pos_ < s_.size()) ++pos_;
    }

    // A string starting at pos_ (its opening quote); pos_ ends past it.
    std::string string_token() {
        const char quote = s_[pos_];
        const bool basic = quote == '"';
        const std::string triple(3, quote);
        const bool multi = at(triple);
        pos_ += multi ? 3 : 1;
        std::string out;
        while (pos_ < s_.size()) {
            if (multi ? at(triple) : s_[pos_] == quote) {
                pos_ += multi ? 3 : 1;
                // """a"""" is a string ending in a quote: up to two more.
                for (int i = 0; multi && i < 2 && pos_ < s_.size() && s_[pos_] == quote; ++i)
                    ++pos_;
                return out;
            }
            if (!multi && s_[pos_] == '\n') return out;  // unterminated: stop at the line's end
            if (basic && s_[pos_] == '\\' && pos_ + 1 < s_.size()) {
                out += s_[pos_ + 1];
                pos_ += 2;
                continue;
            }
            out += s_[pos_++];
        }
        return out;
    }

    // A (dotted) key; nullopt when there is none at pos_.
    std::optional<std::vector<std::string>> key() {
        std::vector<std::string> parts;
        for (;;) {
            skip_blanks();
            if (pos_ >= s_.size()) return std::nullopt;
            const char c = s_[pos_];
            if (c == '"' || c == '\'') {
                parts.push_back(string_token());
            } else {
                const std::size_t begin = pos_;
                while (pos_ < s_.size() &&
                       ((s_[pos_] >= 'A' && s_[pos_] <= 'Z') ||
                        (s_[pos_] >= 'a' && s_[pos_] <= 'z') ||
                        (s_[pos_] >= '0' && s_[pos_] <= '9') || s_[pos_] == '_' || s_[pos_] == '-'))
                    ++pos_;
                if (pos_ == begin) return std::nullopt;
                parts.push_back(s_.substr(begin, pos_ - begin));
            }
            skip_blanks();
            if (pos_ < s_.size() && s_[pos_] == '.') {
                ++pos_;
                continue;
            }
            return parts;
        }
    }

    // A value, across lines when it is an array, inline table or multi-line
    // string; pos_ ends just past its last character.
    void value() {
        const std::size_t begin = pos_;
        int depth = 0;
        while (pos_ < s_.size()) {
            const char c = s_[pos_];
            if (c == '"' || c == '\'') {
                string_token();
            } else if (c == '[' || c == '{') {
                ++depth;
                ++pos_;
            } else if (c == ']' || c == '}') {
                --depth;
                ++pos_;
            } else if (c == '#' || c == '\n') {
                if (depth <= 0) break;
                if (c == '#') {
                    while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
                } else {
                    ++pos_;
                }
            } else {
                ++pos_;
            }
        }
        while (pos_ > begin &&
               (s_[pos_ - 1] == ' ' || s_[pos_ - 1] == '\t' || s_[pos_ - 1] == '\r'))
            --pos_;
    }

    void expression() {
        skip_blanks();
        if (pos_ >= s_.size()) return;
        if (s_[pos_] == '#' || s_[pos_] == '\n' || s_[pos_] == '\r') {
            skip_line();
            return;
        }
        if (s_[pos_] == '[') {
            Header header;
            header.array = at("[[");
            pos_ += header.array ? 2 : 1;
            auto name = key();
            if (name && at(header.array ? "]]" : "]")) {
                header.name = std::move(*name);
                skip_line();
                header.line_end = pos_;
                table_ = header.array ? std::vector<std::string>{"[["} : header.name;
                headers.push_back(std::move(header));
            } else {
                skip_line();
            }
            return;
        }
        Pair pair;
        pair.table = table_;
        auto name = key();
        if (!name || pos_ >= s_.size() || s_[pos_] != '=') {
            skip_line();
            return;
        }
        ++pos_;
        skip_blanks();
        pair.key = std::move(*name);
        pair.value_begin = pos_;
        pair.inline_table = pos_ < s_.size() && s_[pos_] == '{';
        value();
        pair.value_end = pos_;
        skip_line();
        pair.line_end = pos_;
        pairs.push_back(std::move(pair));
    }

    const std::string& s_;
    std::size_t pos_ = 0;
    std::vector<std::string> table_;
};

const std::vector<std::string> kKeyring{"keyring"};
const std::vector<std::string> kBackend{"backend"};
const std::vector<std::string> kDotted{"keyring", "backend"};

// `text` with `line` inserted at `at`, which is a line's start or the text's
// end (then a newline is added first when the text lacks one).
std::string insert_line(const std::string& text, std::size_t at, const std::string& line) {
    std::string out = text.substr(0, at);
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out + line + "\n" + text.substr(at);
}

}  // namespace

fs::path daemon_config_path() {
    return proto::xdg_base_dir("XDG_CONFIG_HOME", ".config") / "hostkeeper" / "config.toml";
}

std::string with_keyring_backend(const std::string& text, std::string_view backend) {
    // Appended, not "\"" + std::string(...): g++ 12's -O3 -Wrestrict misfires on that.
    std::string quoted(1, '"');
    quoted.append(backend).push_back('"');
    Scanner scanner(text);
    scanner.scan();

    // Replace every existing assignment, from the last so offsets stay true.
    std::string out = text;
    bool replaced = false;
    std::optional<std::size_t> after_dotted;
    for (auto it = scanner.pairs.rbegin(); it != scanner.pairs.rend(); ++it) {
        const bool in_table = it->table == kKeyring && it->key == kBackend;
        const bool dotted = it->table.empty() && it->key == kDotted;
        if (it->table.empty() && it->key == kKeyring && it->inline_table) {
            throw proto::FileError("keyring is an inline table (keyring = {...}); set backend = " +
                                   quoted + " in it by hand");
        }
        if (in_table || dotted) {
            out.replace(it->value_begin, it->value_end - it->value_begin, quoted);
            replaced = true;
        }
        if (!after_dotted && it->table.empty() && it->key.size() > 1 && it->key[0] == "keyring")
            after_dotted = it->line_end;
    }
    if (replaced) return out;

    for (const auto& header : scanner.headers) {
        if (!header.array && header.name == kKeyring)
            return insert_line(text, header.line_end, "backend = " + quoted);
    }
    // Top-level keyring.* keys define the table: a [keyring] header after
    // them would define it twice.
    if (after_dotted) return insert_line(text, *after_dotted, "keyring.backend = " + quoted);

    std::string appended = text;
    if (!appended.empty() && appended.back() != '\n') appended += '\n';
    if (!appended.empty()) appended += '\n';
    return appended + "[keyring]\nbackend = " + quoted + "\n";
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
