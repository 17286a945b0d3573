#include <catch2/catch.hpp>
#include <string>

#include "proto/error.hpp"
#include "proto/json.hpp"
#include "proto/messages.hpp"
#include "proto/secret.hpp"

namespace test_json {

using namespace hostkeeper::proto;

namespace {
std::string nested_arrays(std::size_t depth) {
    return std::string(depth, '[') + std::string(depth, ']');
}

std::string nested_objects(std::size_t depth) {
    std::string text;
    for (std::size_t i = 0; i < depth; ++i) text += R"({"a":)";
    text += "1";
    text += std::string(depth, '}');
    return text;
}

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    FAIL("no error thrown");
    return {};
}
}  // namespace

TEST_CASE("JSON nested up to the limit is read, one level more is refused", "[proto][json]") {
    CHECK(parse_json(nested_arrays(kMaxJsonDepth)).is_array());
    CHECK(parse_json(nested_objects(kMaxJsonDepth)).is_object());
    CHECK(message_of([] { (void)parse_json(nested_arrays(kMaxJsonDepth + 1)); }) ==
          "JSON nested deeper than 64 levels");
    CHECK(message_of([] { (void)parse_json(nested_objects(kMaxJsonDepth + 1)); }) ==
          "JSON nested deeper than 64 levels");
    // Depth counts containers, not values: a wide document is fine.
    std::string wide = "[";
    for (int i = 0; i < 10000; ++i) wide += "[1],";
    wide += "[]]";
    CHECK(parse_json(wide).size() == 10001);
}

TEST_CASE("a frame of 32,768 nested arrays is refused without recursion", "[proto][json]") {
    // The largest request frame (64 KiB) nesting as deep as it can: this
    // overflowed the stack in scrub() before the limit.
    const std::string frame = nested_arrays(kMaxFrameSize / 2);
    REQUIRE(frame.size() == kMaxFrameSize);
    try {
        (void)parse_payload(frame);
        FAIL("accepted");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::bad_request);
        CHECK(std::string(e.what()) == "message is JSON nested deeper than 64 levels");
    }
    // A 16 MiB response (a fake daemon's) likewise.
    CHECK_THROWS_AS(parse_payload(nested_arrays(kMaxResponseFrameSize / 2)), Error);
    CHECK_THROWS_AS(parse_credentials(R"({"token":"t","x":)" + nested_arrays(100000) + "}"), Error);
}

TEST_CASE("JSON errors never quote the input", "[proto][json]") {
    const std::string token = "sekrit-token-4f2a";
    const std::string text = message_of([&] { (void)parse_json(R"({"token": ")" + token); });
    CHECK(text.rfind("not valid JSON (syntax error at byte ", 0) == 0);
    CHECK(text.find(token) == std::string::npos);
    const std::string store =
        message_of([&] { (void)parse_credentials(R"({"token":")" + token + R"(", oops})"); });
    CHECK(store.find(token) == std::string::npos);
}

TEST_CASE("scrub does not recurse as deep as a value nests", "[proto][json]") {
    // Built by hand, deeper than any parse would allow.
    Json deep = "sekrit";
    for (int i = 0; i < 200000; ++i) {
        Json outer = Json::array();
        outer.push_back(std::move(deep));
        deep = std::move(outer);
    }
    scrub(deep);
    const Json* inner = &deep;
    while (inner->is_array()) inner = &inner->front();
    CHECK(inner->get_ref<const std::string&>().empty());
}

TEST_CASE("a number out of a double's range is invalid JSON, not another kind of exception",
          "[proto][json]") {
    // nlohmann throws out_of_range (not parse_error) for it, quoting the number.
    CHECK(message_of([] { (void)parse_json("[1e999]"); }) ==
          "not valid JSON (a number is out of range)");
    try {
        (void)parse_payload(R"({"v":1e999,"op":"get"})");
        FAIL("accepted");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::bad_request);
    }
}

}  // namespace test_json
