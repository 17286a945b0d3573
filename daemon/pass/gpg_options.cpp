#include "daemon/pass/gpg_options.hpp"

#include "daemon/pass/store_layout.hpp"

namespace hostkeeper::daemon::pass {

namespace {

// "--name=value" -> value, for an option spelt with '='.
std::optional<std::string> joined_value(std::string_view word, std::string_view name) {
    if (word.size() > name.size() + 1 && word.substr(0, name.size()) == name &&
        word[name.size()] == '=')
        return std::string(word.substr(name.size() + 1));
    return std::nullopt;
}

}  // namespace

GpgOptions parse_gpg_options(std::string_view text) {
    GpgOptions options;
    const std::vector<std::string> words = parse_store_key(text);
    for (std::size_t i = 0; i < words.size(); ++i) {
        const std::string& word = words[i];
        const bool has_next = i + 1 < words.size();
        if (word == "--armor" || word == "-a" || word == "--armour") {
            options.armor = true;
        } else if (word == "--always-trust") {
            options.trust_model = "always";
        } else if (word == "--trust-model" && has_next) {
            options.trust_model = words[++i];
        } else if (auto model = joined_value(word, "--trust-model")) {
            options.trust_model = std::move(*model);
        } else if (word == "--homedir" && has_next) {
            options.homedir = words[++i];
        } else if (auto dir = joined_value(word, "--homedir")) {
            options.homedir = std::move(*dir);
        } else {
            options.ignored.push_back(word);
        }
    }
    return options;
}

}  // namespace hostkeeper::daemon::pass
