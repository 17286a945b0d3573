// The fleet registry's credentials from Docker's client configuration.
#include <catch2/catch.hpp>
#include <string>

#include "daemon/fleet/docker_config.hpp"

namespace test_docker_config {

using namespace hostkeeper::daemon::fleet;
using Catch::Matchers::Contains;

TEST_CASE("Docker's auths give the fleet registry's USER:PASSWORD", "[fleet]") {
    // "fleet:s3cret" in base64, as docker login writes it.
    const std::string config = R"({"auths":{"oci.example:5000":{"auth":"ZmxlZXQ6czNjcmV0"},)"
                               R"("https://other.example":{"username":"u","password":"p:q"}}})";
    CHECK(docker_auth(config, "oci.example:5000")->view() == "fleet:s3cret");
    CHECK(docker_auth(config, "other.example")->view() == "u:p:q");
    CHECK_FALSE(docker_auth(config, "absent.example").has_value());
    CHECK_FALSE(docker_auth(R"({"credsStore":"desktop"})", "oci.example").has_value());
    CHECK_FALSE(docker_auth(R"({"auths":{"oci.example":{"identitytoken":"t"}}})", "oci.example")
                    .has_value());
}

TEST_CASE("a Docker configuration that does not read says why, never quoting a secret", "[fleet]") {
    CHECK_THROWS_WITH(docker_auth("not json s3cret", "h"), !Contains("s3cret"));
    CHECK_THROWS_WITH(docker_auth("[]", "h"), Contains("not a JSON object"));
    CHECK_THROWS_WITH(docker_auth(R"({"auths":[]})", "h"), Contains("auths is not an object"));
    CHECK_THROWS_WITH(docker_auth(R"({"auths":{"h":{"auth":"s3cret!!"}}})", "h"),
                      Contains("not base64") && !Contains("s3cret"));
    // Base64 of "nocolon": not USER:PASSWORD.
    CHECK_THROWS_WITH(docker_auth(R"({"auths":{"h":{"auth":"bm9jb2xvbg=="}}})", "h"),
                      Contains("not USER:PASSWORD") && !Contains("nocolon"));
    std::string deep(10000, '[');
    CHECK_THROWS(docker_auth(deep, "h"));
}

TEST_CASE("the credential helper Docker's configuration names for a host", "[fleet]") {
    const std::string both =
        R"({"credsStore":"pass","credHelpers":{"oci.example:5000":"ecr-login"}})";
    CHECK(docker_helper(both, "oci.example:5000") == "ecr-login");
    CHECK(docker_helper(both, "other.example") == "pass");
    CHECK_FALSE(docker_helper(R"({"auths":{}})", "oci.example").has_value());
    CHECK_FALSE(docker_helper(R"({"credsStore":""})", "oci.example").has_value());
    CHECK_THROWS_WITH(docker_helper(R"({"credsStore":"../../bin/sh"})", "h"),
                      Contains("no program name"));
    CHECK_THROWS_WITH(docker_helper(R"({"credHelpers":["x"]})", "h"), Contains("not an object"));
    CHECK_THROWS_WITH(docker_helper(R"({"credHelpers":{"h":1}})", "h"), Contains("not a name"));
}

TEST_CASE("a credential helper's answer gives USER:SECRET, never an identity token", "[fleet]") {
    CHECK(helper_credentials(R"({"ServerURL":"h","Username":"AWS","Secret":"s3cret"})").view() ==
          "AWS:s3cret");
    CHECK_THROWS_WITH(helper_credentials(R"({"Username":"<token>","Secret":"s3cret"})"),
                      Contains("identity token") && !Contains("s3cret"));
    CHECK_THROWS_WITH(helper_credentials(R"({"Username":"u"})"), Contains("Username"));
    CHECK_THROWS_WITH(helper_credentials("s3cret"), !Contains("s3cret"));
}

}  // namespace test_docker_config
