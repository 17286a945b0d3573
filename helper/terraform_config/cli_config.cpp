#include "helper/terraform_config/cli_config.hpp"

#include <algorithm>
#include <cctype>

#include "proto/file_io.hpp"

namespace hostkeeper::helper::terraform_config {
namespace fs = std::filesystem;

namespace {

bool is_ident_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
}

class Scanner {
  public:
    explicit Scanner(std::string_view text) : text_(text) {}

    CliConfigScan run() {
        while (pos_ < text_.size()) step();
        if (!closers_.empty())
            throw CliConfigError("a block opened on line " + std::to_string(open_line_) +
                                 " is never closed");
        return result_;
    }

  private:
    char peek(std::size_t ahead = 0) const {
        return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
    }

    void step() {
        const char c = text_[pos_];
        if (c == '\n') {
            ++line_;
            ++pos_;
            if (closers_.empty()) tokens_.clear();
        } else if (c == '#' || (c == '/' && peek(1) == '/')) {
            while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
        } else if (c == '/' && peek(1) == '*') {
            skip_block_comment();
        } else if (c == '"') {
            const std::size_t start = pos_;
            std::string value = read_string();
            if (closers_.empty()) string_at_top(std::move(value), start);
        } else if (c == '<' && peek(1) == '<' && skip_heredoc()) {
        } else if (c == '{' || c == '[' || c == '(') {
            if (closers_.empty()) {
                open_line_ = line_;
                open_block_ = nullptr;
                if (c == '{') open_block_ = block_opens(pos_ + 1);
            }
            closers_.push_back(c == '{' ? '}' : c == '[' ? ']' : ')');
            ++pos_;
        } else if (c == '}' || c == ']' || c == ')') {
            if (closers_.empty() || closers_.back() != c)
                throw CliConfigError("line " + std::to_string(line_) + ": unexpected '" + c + "'");
            closers_.pop_back();
            ++pos_;
            if (closers_.empty()) {
                if (open_block_ != nullptr) open_block_->end = pos_;
                open_block_ = nullptr;
                tokens_.clear();
            }
        } else if (is_ident_char(c)) {
            const std::size_t start = pos_;
            while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
            if (closers_.empty()) {
                tokens_.push_back(
                    {std::string(text_.substr(start, pos_ - start)), false, line_, start});
            }
        } else {
            if (closers_.empty() && c == '=') tokens_.push_back({"=", false, line_, pos_});
            ++pos_;
        }
    }

    // A string at the top level: a label, or the value of `name = "value"`.
    void string_at_top(std::string value, std::size_t offset) {
        if (tokens_.size() == 2 && !tokens_[0].quoted && tokens_[1].text == "=" &&
            !tokens_[1].quoted) {
            result_.attributes.push_back({tokens_[0].text, value, tokens_[0].line});
        }
        tokens_.push_back({std::move(value), true, line_, offset});
    }

    // The block a "{" at the top level opens (null for one that is not
    // reported); `body` is the offset just past the "{".
    HclBlock* block_opens(std::size_t body) {
        if (tokens_.empty() || tokens_.front().quoted) return nullptr;
        if (std::any_of(tokens_.begin(), tokens_.end(),
                        [](const Token& t) { return !t.quoted && t.text == "="; })) {
            return nullptr;  // an attribute whose value is an object
        }
        HclBlock block{tokens_.front().text,
                       tokens_.size() > 1 ? tokens_[1].text : "",
                       tokens_.front().line,
                       tokens_.front().offset,
                       body,
                       0};
        tokens_.clear();
        std::vector<HclBlock>* list = nullptr;
        if (block.type == "credentials_helper") list = &result_.helpers;
        if (block.type == "credentials") list = &result_.credentials;
        if (block.type == "host") list = &result_.hosts;
        if (list == nullptr) return nullptr;
        list->push_back(std::move(block));
        return &list->back();
    }

    void skip_block_comment() {
        const int start = line_;
        pos_ += 2;
        while (pos_ + 1 < text_.size() && !(text_[pos_] == '*' && text_[pos_ + 1] == '/')) {
            if (text_[pos_] == '\n') ++line_;
            ++pos_;
        }
        if (pos_ + 1 >= text_.size())
            throw CliConfigError("line " + std::to_string(start) + ": unterminated comment");
        pos_ += 2;
    }

    std::string read_string() {
        const int start = line_;
        std::string value;
        ++pos_;
        while (pos_ < text_.size() && text_[pos_] != '"') {
            if (text_[pos_] == '\n') break;
            if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
            value += text_[pos_++];
        }
        if (pos_ >= text_.size() || text_[pos_] != '"') {
            throw CliConfigError("line " + std::to_string(start) + ": unterminated string");
        }
        ++pos_;
        return value;
    }

    // <<ID or <<-ID then a newline: skips to the line that holds only ID.
    bool skip_heredoc() {
        std::size_t p = pos_ + 2;
        if (p < text_.size() && text_[p] == '-') ++p;
        const std::size_t id_start = p;
        while (p < text_.size() && is_ident_char(text_[p])) ++p;
        if (p == id_start || p >= text_.size() || text_[p] != '\n') return false;
        const std::string_view id = text_.substr(id_start, p - id_start);
        const int start = line_;
        pos_ = p;
        while (pos_ < text_.size()) {
            ++pos_;  // past the newline
            ++line_;
            const std::size_t end = std::min(text_.find('\n', pos_), text_.size());
            std::string_view content = text_.substr(pos_, end - pos_);
            while (!content.empty() && (content.front() == ' ' || content.front() == '\t'))
                content.remove_prefix(1);
            while (!content.empty() &&
                   (content.back() == ' ' || content.back() == '\t' || content.back() == '\r')) {
                content.remove_suffix(1);
            }
            pos_ = end;
            if (content == id) return true;
        }
        throw CliConfigError("line " + std::to_string(start) + ": unterminated heredoc <<" +
                             std::string(id));
    }

    struct Token {
        std::string text;
        bool quoted = false;
        int line = 0;
        std::size_t offset = 0;
    };

    std::string_view text_;
    std::size_t pos_ = 0;
    int line_ = 1;
    std::string closers_;  // the bracket each open one needs, innermost last
    int open_line_ = 0;
    HclBlock* open_block_ = nullptr;  // the reported block the open "{" began
    std::vector<Token> tokens_;
    CliConfigScan result_;
};

}  // namespace

CliConfigScan scan_cli_config(std::string_view text) {
    return Scanner(text).run();
}

std::vector<ScannedFile> scan_cli_config_files(const ToolPaths& paths) {
    std::vector<fs::path> files{paths.cli_config};
    if (!paths.cli_config_from_env) {
        std::error_code ec;
        std::vector<fs::path> extra;
        for (fs::directory_iterator it(paths.config_dir, ec), end; !ec && it != end;
             it.increment(ec)) {
            if (it->path().extension() == ".tfrc") extra.push_back(it->path());
        }
        std::sort(extra.begin(), extra.end());
        files.insert(files.end(), extra.begin(), extra.end());
    }
    std::vector<ScannedFile> scanned;
    for (const auto& file : files) {
        const auto text = proto::read_file_if_exists(file);
        if (!text) continue;
        try {
            scanned.push_back({file, scan_cli_config(*text), *text});
        } catch (const CliConfigError& e) {
            throw CliConfigError(file.string() + ": " + e.what());
        }
    }
    return scanned;
}

}  // namespace hostkeeper::helper::terraform_config
