// hostkeeper-portd's answer to a user without a daemon (port_service.hpp).

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "daemon/portd/port_service.hpp"

namespace test_port_service {

using namespace hostkeeper::daemon::portd;

TEST_CASE("the 503 answer names the reason", "[portd]") {
    const std::string text = unregistered_response(1234, std::chrono::milliseconds(2000));
    CHECK(text.rfind("HTTP/1.1 503 hostkeeperd is not running for this user (run: hostkeeper "
                     "doctor)\r\n",
                     0) == 0);
    CHECK(text.find("Content-Type: application/json\r\n") != std::string::npos);
    CHECK(text.find("Connection: close\r\n") != std::string::npos);
    const std::size_t body = text.find("\r\n\r\n");
    REQUIRE(body != std::string::npos);
    const std::string json = text.substr(body + 4);
    CHECK(json.rfind(R"({"errors":["hostkeeperd is not running for uid 1234: )", 0) == 0);
    CHECK(json.find("run hostkeeper doctor") != std::string::npos);
    CHECK(text.find("Content-Length: " + std::to_string(json.size()) + "\r\n") !=
          std::string::npos);
}

}  // namespace test_port_service
