#include "helper/cli/login_redirect.hpp"

#include <map>
#include <optional>

#include "proto/printable.hpp"

namespace hostkeeper::helper::cli {

namespace {

constexpr std::size_t kMaxShown = 200;

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The query's parameters; a name given twice is refused (which one counts
// would be a guess).
std::map<std::string, std::string> query_fields(std::string_view query) {
    std::map<std::string, std::string> out;
    while (!query.empty()) {
        const std::size_t amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        if (pair.empty()) continue;
        const std::size_t eq = pair.find('=');
        std::string name = form_decode(pair.substr(0, eq));
        std::string value =
            eq == std::string_view::npos ? std::string() : form_decode(pair.substr(eq + 1));
        if (!out.emplace(std::move(name), std::move(value)).second)
            throw RedirectError("the redirect names a parameter twice");
    }
    return out;
}

std::string shown(const std::string& text) {
    std::string out;
    proto::append_printable(out, std::string_view(text).substr(0, kMaxShown));
    return out;
}

std::optional<std::string> field(const std::map<std::string, std::string>& fields,
                                 const char* name) {
    const auto found = fields.find(name);
    if (found == fields.end()) return std::nullopt;
    return found->second;
}

}  // namespace

std::string form_decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '+') {
            out += ' ';
        } else if (c == '%') {
            const int high = i + 2 < text.size() ? hex_digit(text[i + 1]) : -1;
            const int low = i + 2 < text.size() ? hex_digit(text[i + 2]) : -1;
            if (high < 0 || low < 0) throw RedirectError("the redirect has a bad %-escape");
            out += static_cast<char>(high * 16 + low);
            i += 2;
        } else {
            out += c;
        }
    }
    return out;
}

RedirectRequest read_redirect(std::string_view head, std::string_view state) {
    const std::string_view line = head.substr(0, head.find("\r\n"));
    const std::size_t first = line.find(' ');
    const std::size_t last = line.rfind(' ');
    if (first == std::string_view::npos || last == first ||
        !line.substr(last + 1).starts_with("HTTP/"))
        throw RedirectError("the browser's request is not HTTP");
    if (line.substr(0, first) != "GET") throw RedirectError("the browser's request is not a GET");
    const std::string_view target = line.substr(first + 1, last - first - 1);
    const std::size_t question = target.find('?');
    if (target.substr(0, question) != "/login") return {};
    const auto fields = query_fields(
        question == std::string_view::npos ? std::string_view() : target.substr(question + 1));
    const auto given = field(fields, "state");
    if (!given || *given != state)
        throw RedirectError(
            "the redirect's state is not this login's (another login's, or a forged request)");
    if (const auto error = field(fields, "error")) {
        std::string message = "the authorization server refused the login: " + shown(*error);
        if (const auto detail = field(fields, "error_description"); detail && !detail->empty())
            message += ": " + shown(*detail);
        throw LoginRefused(message);
    }
    auto code = field(fields, "code");
    if (!code || code->empty()) throw RedirectError("the redirect brings no authorization code");
    return {true, std::move(*code)};
}

}  // namespace hostkeeper::helper::cli
