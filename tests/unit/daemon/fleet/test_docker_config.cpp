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

}  // namespace test_docker_config
