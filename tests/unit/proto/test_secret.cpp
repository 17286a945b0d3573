#include <catch2/catch.hpp>

#include "proto/messages.hpp"
#include "proto/secret.hpp"

namespace test_secret {

using namespace hostkeeper::proto;

TEST_CASE("scrub zeroes a string's whole buffer", "[proto][secret]") {
    std::string text = "token-abcdefghijklmnopqrstuvwxyz";
    const char* data = text.data();
    const std::size_t capacity = text.capacity();
    scrub(text);
    CHECK(text.empty());
    // The buffer is still owned by `text` (clear keeps capacity): every byte is zero.
    REQUIRE(text.capacity() == capacity);
    for (std::size_t i = 0; i < capacity; ++i) CHECK(data[i] == '\0');
}

TEST_CASE("scrub empties every string value inside JSON", "[proto][secret]") {
    Json value = Json::parse(R"({"token":"abc","nested":{"list":["x","y"]},"n":1})");
    scrub(value);
    CHECK(value.dump() == R"({"token":"","nested":{"list":["",""]},"n":1})");
}

TEST_CASE("a moved-from Secret keeps nothing", "[proto][secret]") {
    Secret a("short");  // lives in the small-string buffer
    Secret b(std::move(a));
    CHECK(b.view() == "short");
    CHECK(a.empty());  // NOLINT(bugprone-use-after-move): checking exactly that
    Secret c = b.clone();
    CHECK(c.view() == "short");
    std::string source = "adopted-token-value-long-enough-for-heap";
    Secret d = Secret::adopt(source);
    CHECK(source.empty());
    CHECK(d.view() == "adopted-token-value-long-enough-for-heap");
    c = std::move(d);
    CHECK(c.view() == "adopted-token-value-long-enough-for-heap");
}

}  // namespace test_secret
