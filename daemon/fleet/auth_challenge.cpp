#include "daemon/fleet/auth_challenge.hpp"

#include <cctype>
#include <string_view>

#include "proto/text_rules.hpp"

namespace hostkeeper::daemon::fleet {

namespace {

bool tchar(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool token68_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) != 0 || std::string_view("-._~+/").find(c) != std::string_view::npos;
}

// A cursor over one header value.
class Reader {
  public:
    explicit Reader(std::string_view text) : text_(text) {}

    bool done() const { return at_ >= text_.size(); }
    char peek() const { return done() ? '\0' : text_[at_]; }
    std::size_t where() const { return at_; }
    void rewind(std::size_t to) { at_ = to; }
    void skip_spaces() {
        while (!done() && (text_[at_] == ' ' || text_[at_] == '\t')) ++at_;
    }
    // Spaces and commas: empty list elements are allowed (RFC 9110 5.6.1).
    void skip_list_separators() {
        while (!done() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == ',')) ++at_;
    }
    std::string_view token() {
        const std::size_t start = at_;
        while (!done() && tchar(text_[at_])) ++at_;
        return text_.substr(start, at_ - start);
    }
    std::string_view token68() {
        const std::size_t start = at_;
        while (!done() && token68_char(text_[at_])) ++at_;
        while (!done() && text_[at_] == '=') ++at_;
        return text_.substr(start, at_ - start);
    }
    // A quoted-string's value, unescaped; the cursor is on its '"'.
    std::string quoted() {
        std::string value;
        ++at_;
        while (!done()) {
            const char c = text_[at_++];
            if (c == '"') return value;
            if (c == '\\') {
                if (done()) break;
                value.push_back(text_[at_++]);
                continue;
            }
            const auto u = static_cast<unsigned char>(c);
            if ((u < 0x20 && c != '\t') || u == 0x7f)
                throw ChallengeError("a control character in a quoted value at byte " +
                                     std::to_string(at_ - 1));
            value.push_back(c);
        }
        throw ChallengeError("a quoted value is not closed");
    }

  private:
    std::string_view text_;
    std::size_t at_ = 0;
};

// After a parameter name and its BWS: '=' and a value (token or
// quoted-string), or nullopt (the cursor back where it was) when what
// follows is not one.
std::optional<std::string> param_value(Reader& in) {
    const std::size_t start = in.where();
    if (in.peek() != '=') return std::nullopt;
    in.rewind(start + 1);
    in.skip_spaces();
    if (in.peek() == '"') return in.quoted();
    const std::string_view value = in.token();
    if (value.empty()) {
        in.rewind(start);
        return std::nullopt;
    }
    return std::string(value);
}

void add_param(Challenge& challenge, std::string_view name, std::string value) {
    if (challenge.params.size() >= kMaxChallengeParameters)
        throw ChallengeError("a challenge with over " + std::to_string(kMaxChallengeParameters) +
                             " parameters");
    challenge.params.insert_or_assign(proto::ascii_lowercase(name), std::move(value));
}

// One challenge's parameters (or token68), after its scheme and spaces. Stops
// before the next challenge's scheme.
void read_params(Reader& in, Challenge& challenge) {
    bool first = true;
    while (!in.done()) {
        const std::size_t start = in.where();
        if (!first) {
            in.skip_list_separators();
            if (in.done()) return;
        }
        const std::size_t name_at = in.where();
        const std::string_view name = in.token();
        in.skip_spaces();
        std::optional<std::string> value;
        if (!name.empty()) value = param_value(in);
        if (value) {
            add_param(challenge, name, std::move(*value));
            first = false;
            in.skip_spaces();
            if (!in.done() && in.peek() != ',')
                throw ChallengeError("unexpected text after a parameter at byte " +
                                     std::to_string(in.where()));
            continue;
        }
        if (!first) {
            in.rewind(start);  // the next challenge begins here
            return;
        }
        // The token68 form: the whole credentials in one word.
        in.rewind(name_at);
        challenge.token68 = std::string(in.token68());
        in.skip_spaces();
        if (challenge.token68.empty() || (!in.done() && in.peek() != ','))
            throw ChallengeError("unexpected text in a challenge at byte " +
                                 std::to_string(in.where()));
        return;
    }
}

}  // namespace

std::vector<Challenge> parse_challenges(const std::vector<std::string>& headers) {
    std::vector<Challenge> challenges;
    std::size_t total = 0;
    for (const std::string& header : headers) {
        total += header.size();
        if (total > kMaxChallengeText)
            throw ChallengeError("WWW-Authenticate headers over " +
                                 std::to_string(kMaxChallengeText) + " bytes");
        Reader in(header);
        in.skip_list_separators();
        while (!in.done()) {
            const std::string_view scheme = in.token();
            if (scheme.empty())
                throw ChallengeError("a challenge does not begin with a scheme at byte " +
                                     std::to_string(in.where()));
            if (challenges.size() >= kMaxChallenges)
                throw ChallengeError("over " + std::to_string(kMaxChallenges) + " challenges");
            Challenge challenge;
            challenge.scheme = proto::ascii_lowercase(scheme);
            const std::size_t after_scheme = in.where();
            in.skip_spaces();
            if (!in.done() && in.peek() != ',') {
                if (in.where() == after_scheme)
                    throw ChallengeError("unexpected text after a scheme at byte " +
                                         std::to_string(in.where()));
                read_params(in, challenge);
            }
            challenges.push_back(std::move(challenge));
            in.skip_list_separators();
        }
    }
    return challenges;
}

std::optional<BearerChallenge> bearer_challenge(const std::vector<Challenge>& challenges) {
    for (const Challenge& challenge : challenges) {
        if (challenge.scheme != "bearer") continue;
        const auto realm = challenge.params.find("realm");
        if (realm == challenge.params.end() || realm->second.empty()) continue;
        BearerChallenge bearer;
        bearer.realm = realm->second;
        if (const auto service = challenge.params.find("service");
            service != challenge.params.end())
            bearer.service = service->second;
        if (const auto scope = challenge.params.find("scope"); scope != challenge.params.end())
            bearer.scope = scope->second;
        return bearer;
    }
    return std::nullopt;
}

bool asks_basic(const std::vector<Challenge>& challenges) {
    for (const Challenge& challenge : challenges)
        if (challenge.scheme == "basic") return true;
    return false;
}

}  // namespace hostkeeper::daemon::fleet
