// daemon/credentials/stored_object: a stored secret read as a JSON object,
// with errors that name the item and never quote it.
#include <catch2/catch.hpp>

#include "daemon/credentials/stored_object.hpp"
#include "proto/error.hpp"

namespace test_stored_object {

namespace credentials = hostkeeper::daemon::credentials;
using hostkeeper::proto::Error;
using hostkeeper::proto::ErrorCode;
using hostkeeper::proto::Json;
using hostkeeper::proto::Secret;

TEST_CASE("a stored object is read, anything else named but never quoted", "[stored_object]") {
    const Json object = credentials::stored_object(Secret(R"({"password":"p1","n":2})"), "item X");
    CHECK(credentials::stored_string(object, "password", "item X") == "p1");
    for (const char* text : {"s3cret-not-json", "[\"s3cret\"]", "\"s3cret\"", ""}) {
        CHECK_THROWS_MATCHES(credentials::stored_object(Secret(text), "item X"), Error,
                             Catch::Predicate<Error>([](const Error& e) {
                                 return e.code() == ErrorCode::keyring_error &&
                                        std::string(e.what()) ==
                                            "item X does not hold a JSON object";
                             }));
    }
    CHECK_THROWS_WITH(credentials::stored_string(object, "n", "item X", ": not a Y"),
                      "item X has no string \"n\": not a Y");
    CHECK_THROWS_WITH(credentials::stored_string(object, "absent", "item X"),
                      "item X has no string \"absent\"");
}

}  // namespace test_stored_object
