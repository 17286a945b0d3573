#include "proto/secret.hpp"

#include <string.h>  // explicit_bzero

#include <vector>

namespace hostkeeper::proto {

void scrub(void* data, std::size_t size) noexcept {
    if (data != nullptr && size > 0) explicit_bzero(data, size);
}

void scrub(std::string& text) noexcept {
    // Grow to capacity so the bytes past size() are addressable, then zero all.
    text.resize(text.capacity());
    scrub(text.data(), text.size());
    text.clear();
}

void scrub(nlohmann::ordered_json& value) noexcept {
    // Iterative: how deep a value nests must not decide how deep we recurse.
    std::vector<nlohmann::ordered_json*> pending{&value};
    while (!pending.empty()) {
        nlohmann::ordered_json* current = pending.back();
        pending.pop_back();
        if (current->is_string()) {
            scrub(current->get_ref<std::string&>());
        } else if (current->is_structured()) {
            for (auto& element : *current) pending.push_back(&element);
        }
    }
}

Secret Secret::adopt(std::string& text) {
    Secret secret(text);
    scrub(text);
    return secret;
}

Secret::Secret(Secret&& other) noexcept : text_(std::move(other.text_)) {
    // A moved-from short string keeps its characters in the small buffer.
    scrub(other.text_);
}

Secret& Secret::operator=(Secret&& other) noexcept {
    if (this != &other) {
        scrub(text_);
        text_ = std::move(other.text_);
        scrub(other.text_);
    }
    return *this;
}

}  // namespace hostkeeper::proto
