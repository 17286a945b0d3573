#pragma once
// Secret hygiene: a string that zeroes its memory when dropped, and scrub
// functions for buffers and JSON values that held a token.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hostkeeper::proto {

// Zero memory in a way the compiler may not elide.
void scrub(void* data, std::size_t size) noexcept;
// Zero a string's whole buffer (its capacity, not only its size) and empty it.
void scrub(std::string& text) noexcept;
// Zero every string (values, not keys) inside a JSON value and empty it.
void scrub(nlohmann::ordered_json& value) noexcept;

// Owns sensitive text (a serialized credentials object). Copies are explicit,
// moves leave nothing behind in the source, the destructor scrubs.
class Secret {
  public:
    Secret() = default;
    explicit Secret(std::string_view text) : text_(text) {}
    // Takes over `text` and scrubs whatever the source string kept.
    static Secret adopt(std::string& text);

    Secret(const Secret&) = delete;
    Secret& operator=(const Secret&) = delete;
    Secret(Secret&& other) noexcept;
    Secret& operator=(Secret&& other) noexcept;
    ~Secret() { scrub(text_); }

    Secret clone() const { return Secret(text_); }
    std::string_view view() const noexcept { return text_; }
    // For C APIs that take a NUL-terminated string and copy it.
    const char* c_str() const noexcept { return text_.c_str(); }
    bool empty() const noexcept { return text_.empty(); }
    std::size_t size() const noexcept { return text_.size(); }

  private:
    std::string text_;
};

// Scrubs a buffer when the scope ends, whatever way it ends.
template <typename T>
class ScrubGuard {
  public:
    explicit ScrubGuard(T& target) noexcept : target_(target) {}
    ScrubGuard(const ScrubGuard&) = delete;
    ScrubGuard& operator=(const ScrubGuard&) = delete;
    ~ScrubGuard() { scrub(target_); }

  private:
    T& target_;
};

}  // namespace hostkeeper::proto
