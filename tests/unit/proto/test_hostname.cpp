// Hostname normalization vectors: docs/specs/client-behaviour.md and
// credentials-helper-protocol.md, plus the rejection list.
#include <catch2/catch.hpp>
#include <string>

#include "proto/error.hpp"
#include "proto/hostname.hpp"

namespace test_hostname {

using hostkeeper::proto::Error;
using hostkeeper::proto::ErrorCode;
using hostkeeper::proto::normalize_hostname;

TEST_CASE("hostnames normalize as Terraform's svchost does", "[proto][hostname]") {
    const auto [input, expected] = GENERATE(table<const char*, const char*>({
        {"Bücher.Example.COM:443", "xn--bcher-kva.example.com"},
        {"bücher.example.com", "xn--bcher-kva.example.com"},
        {"BÜCHER.example.com:443", "xn--bcher-kva.example.com"},
        {"xn--bcher-kva.example.com", "xn--bcher-kva.example.com"},
        {"XN--BCHER-KVA.EXAMPLE.COM", "xn--bcher-kva.example.com"},
        {"faß.de", "xn--fa-hia.de"},
        {"app.terraform.io", "app.terraform.io"},
        {"App.Terraform.IO", "app.terraform.io"},
        {"tfe.corp.example:8443", "tfe.corp.example:8443"},
        {"registry.example.com:443", "registry.example.com"},
        {"localhost:65535", "localhost:65535"},
        {"localhost", "localhost"},
        {"127.0.0.1:5000", "127.0.0.1:5000"},
        {"127.0.0.1:05000", "127.0.0.1:5000"},
        {"example.com:0443", "example.com"},
        {"a-b.example", "a-b.example"},
        {"a--b.example", "a--b.example"},
        {"1abc.example", "1abc.example"},
    }));
    CAPTURE(input);
    CHECK(normalize_hostname(input) == expected);
}

TEST_CASE("invalid hostnames are refused with a reason", "[proto][hostname]") {
    const auto [input, reason] = GENERATE(table<const char*, const char*>({
        {"", "empty"},
        {"ex_ample.com", "not allowed"},
        {"https://app.terraform.io", "scheme"},
        {"http://app.terraform.io", "scheme"},
        {"example..com", "empty label"},
        {".example.com", "empty label"},
        {"example.com.", "empty label"},
        {"example.com:65536", "port"},
        {"example.com:0", "port"},
        {"example.com:", "port"},
        {"example.com:44x", "port"},
        {"example.com:+443", "port"},
        {"example.com/path", "not allowed"},
        {"user@example.com", "not allowed"},
        {"exa mple.com", "not allowed"},
        {"[::1]:8443", "not allowed"},
        {"-example.com", "hyphen"},
        {"example-.com", "hyphen"},
        {"exa$mple.com", "not allowed"},
        {"example.com:443:443", "not allowed"},
        {"a.b:1:2", "not allowed"},
        {"ab--cd.example", "hyphen"},
        {"abc--.example", "hyphen"},
        {"xn--zz.example", "punycode"},
        {"XN--ZZ.example", "punycode"},
    }));
    CAPTURE(input);
    try {
        (void)normalize_hostname(input);
        FAIL("accepted " << input);
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::bad_host);
        CHECK_THAT(e.what(), Catch::Contains(reason));
    }
}

TEST_CASE("a refused hostname is quoted as text, its control bytes named", "[proto][hostname]") {
    try {
        (void)normalize_hostname("ev\x1b]0;PWNED\x07il\r.example.com");
        FAIL("accepted a hostname with ESC, BEL and CR");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::bad_host);
        CHECK(std::string(e.what()) ==
              "invalid hostname \"ev ]0;PWNED il .example.com\": byte 0x1B is not allowed in a "
              "hostname");
    }
    try {
        (void)normalize_hostname(
            "a\xc2\x9b"
            "2J.example.com");
        FAIL("accepted a hostname with U+009B");
    } catch (const Error& e) {
        const std::string what = e.what();
        CHECK(what.find("\xc2\x9b") == std::string::npos);
        CHECK_THAT(what, Catch::StartsWith("invalid hostname \"a 2J.example.com\""));
    }
}

TEST_CASE("an over-long hostname is refused", "[proto][hostname]") {
    const std::string label(64, 'a');
    CHECK_THROWS_AS(normalize_hostname(label + ".example.com"), Error);
    std::string many;
    for (int i = 0; i < 60; ++i) many += "abcd.";
    CHECK_THROWS_AS(normalize_hostname(many + "com"), Error);
    CHECK_THROWS_AS(normalize_hostname(std::string(5000, 'a')), Error);
}

TEST_CASE("hostnames display in their Unicode form", "[proto][hostname]") {
    using hostkeeper::proto::display_hostname;
    CHECK(display_hostname("xn--bcher-kva.example.com") == "bücher.example.com");
    CHECK(display_hostname("xn--bcher-kva.example.com:8443") == "bücher.example.com:8443");
    CHECK(display_hostname("www.xn--fa-hia.de") == "www.faß.de");
    CHECK(display_hostname("app.terraform.io") == "app.terraform.io");
    CHECK(display_hostname("127.0.0.1:5000") == "127.0.0.1:5000");
    CHECK(display_hostname("a--b.example") == "a--b.example");
    // Not punycode: shown as it is, never an exception.
    CHECK(display_hostname("xn--.example") == "xn--.example");
    CHECK(display_hostname("") == "");
}

}  // namespace test_hostname
