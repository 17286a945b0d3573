#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "proto/error.hpp"
#include "proto/messages.hpp"
#include "proto/version.hpp"

namespace test_messages {

using namespace hostkeeper::proto;

namespace {
ErrorCode code_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.code();
    }
    FAIL("no error thrown");
    return ErrorCode::internal;
}
}  // namespace

TEST_CASE("requests carry the protocol version and op", "[proto][messages]") {
    const Json request = make_request(Op::get);
    CHECK(request.dump() == R"({"v":1,"op":"get"})");
    CHECK(kProtocolVersion == 1);
    for (const Op op :
         {Op::hello, Op::get, Op::store, Op::forget, Op::status, Op::flush, Op::stop}) {
        CHECK(op_from_string(to_string(op)) == op);
    }
    CHECK_FALSE(op_from_string("delete").has_value());
}

TEST_CASE("payloads must be JSON objects", "[proto][messages]") {
    CHECK(parse_payload(R"({"v":1})").at("v") == 1);
    CHECK(code_of([] { parse_payload("{not json"); }) == ErrorCode::bad_request);
    CHECK(code_of([] { parse_payload("[1,2]"); }) == ErrorCode::bad_request);
    CHECK(code_of([] { parse_payload("\"text\""); }) == ErrorCode::bad_request);
    CHECK(code_of([] { parse_payload(std::string("\x00\xff\xfe", 3)); }) == ErrorCode::bad_request);
    CHECK(code_of([] { parse_payload(""); }) == ErrorCode::bad_request);
}

TEST_CASE("error responses round-trip into typed errors", "[proto][messages]") {
    const Json error = make_error(ErrorCode::keyring_locked, "unlock it");
    CHECK(error.dump() ==
          R"({"v":1,"ok":false,"error":{"code":"keyring_locked","message":"unlock it"}})");
    try {
        check_response(error);
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::keyring_locked);
        CHECK(std::string(e.what()) == "unlock it");
    }
    CHECK(check_response(make_ok()).at("ok") == true);
    CHECK(code_of([] { check_response(Json::object()); }) == ErrorCode::bad_request);
    CHECK(code_of([] { check_response(Json{{"ok", false}}); }) == ErrorCode::bad_request);
    // An unknown code from a newer daemon still carries its message.
    CHECK(code_of([] {
              check_response(
                  Json{{"ok", false}, {"error", {{"code", "new_thing"}, {"message", "m"}}}});
          }) == ErrorCode::internal);
}

TEST_CASE("every error code has a stable wire name", "[proto][messages]") {
    for (int i = 0; i <= static_cast<int>(ErrorCode::internal); ++i) {
        const auto code = static_cast<ErrorCode>(i);
        CHECK(error_code_from_string(to_string(code)) == code);
    }
}

TEST_CASE("credentials objects are validated as a helper's store input", "[proto][messages]") {
    const Json ok = parse_credentials(R"({"token":"abc","zeta":1,"alpha":[true]})");
    // Insertion order is kept: the object is stored as given.
    CHECK(ok.dump() == R"({"token":"abc","zeta":1,"alpha":[true]})");
    CHECK(code_of([] { parse_credentials("not json"); }) == ErrorCode::bad_request);
    CHECK(code_of([] { parse_credentials(R"(["token"])"); }) == ErrorCode::bad_request);
    CHECK(code_of([] { parse_credentials(R"({"token":42})"); }) == ErrorCode::bad_request);
    CHECK(code_of([] { parse_credentials(R"({"token":null})"); }) == ErrorCode::bad_request);
    CHECK(code_of([] { parse_credentials(R"({"other":"x"})"); }) == ErrorCode::bad_request);
    CHECK(code_of([] { parse_credentials(R"({"token":"abc")"); }) == ErrorCode::bad_request);
    const std::string big = R"({"token":")" + std::string(kMaxCredentialsSize, 'a') + R"("})";
    CHECK(code_of([&] { parse_credentials(big); }) == ErrorCode::too_large);
}

TEST_CASE("serialize refuses a message larger than a frame", "[proto][messages]") {
    Json message = make_request(Op::store);
    message["credentials"] = {{"token", std::string(70 * 1024, 'x')}};
    CHECK(code_of([&] { serialize(message); }) == ErrorCode::too_large);
}

TEST_CASE("the other spelling of a Docker registry's server URL", "[proto][messages]") {
    CHECK(other_docker_server("registry.example.com:5000") == "https://registry.example.com:5000");
    CHECK(other_docker_server("https://registry.example.com:5000") == "registry.example.com:5000");
    CHECK(other_docker_server("https://registry.example.com/") == "registry.example.com");
    CHECK(other_docker_server("localhost") == "https://localhost");
    CHECK_FALSE(other_docker_server("https://index.docker.io/v1/"));  // a path
    CHECK_FALSE(other_docker_server("registry.example.com/team"));
    CHECK_FALSE(other_docker_server("http://registry.example.com"));  // not https
    CHECK_FALSE(other_docker_server("https://"));
    CHECK_FALSE(other_docker_server("https:///"));
    CHECK_FALSE(other_docker_server(std::string(1020, 'r')));  // over 1024 with https://
    CHECK(other_docker_server(std::string(1016, 'r')) == "https://" + std::string(1016, 'r'));
}

}  // namespace test_messages
