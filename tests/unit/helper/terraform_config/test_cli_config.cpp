#include <catch2/catch.hpp>
#include <string>
#include <string_view>

#include "helper/terraform_config/cli_config.hpp"

namespace test_cli_config {

using namespace hostkeeper::helper::terraform_config;

TEST_CASE("the scanner finds top-level credentials_helper and credentials blocks with their lines",
          "[helper][cli_config]") {
    const std::string text = R"(plugin_cache_dir = "$HOME/.terraform.d/plugin-cache"
# credentials_helper "commented" {}
// credentials "commented.example.com" {}
/* credentials_helper "also-commented" {
} */
credentials "app.terraform.io" {
  token = "x{y}"
}
provider_installation {
  direct {
    exclude = ["example.com/*/*"]
  }
}
credentials_helper hostkeeper {
  args = ["--timeout=60"]
}
host "example.com" {
  services = {
    "modules.v1" = "https://example.com/m/"
  }
}
)";
    const auto scan = scan_cli_config(text);
    REQUIRE(scan.helpers.size() == 1);
    CHECK(scan.helpers[0].label == "hostkeeper");
    CHECK(scan.helpers[0].line == 14);
    REQUIRE(scan.credentials.size() == 1);
    CHECK(scan.credentials[0].label == "app.terraform.io");
    CHECK(scan.credentials[0].line == 6);
    const HclBlock& block = scan.credentials[0];
    CHECK(text.substr(block.begin, block.end - block.begin) ==
          "credentials \"app.terraform.io\" {\n  token = \"x{y}\"\n}");
    const auto body = scan_cli_config(
        std::string_view(text).substr(block.body_begin, block.end - 1 - block.body_begin));
    REQUIRE(body.attributes.size() == 1);
    CHECK(body.attributes[0].name == "token");
    CHECK(body.attributes[0].value == "x{y}");
    REQUIRE(scan.attributes.size() == 1);  // nested attributes are not top-level
    CHECK(scan.attributes[0].name == "plugin_cache_dir");
}

TEST_CASE("the scanner skips heredocs and nested blocks", "[helper][cli_config]") {
    const auto scan = scan_cli_config(
        "note = <<EOT\ncredentials_helper \"inside\" {\nEOT\n"
        "outer {\n  credentials \"nested.example.com\" {}\n}\n"
        "credentials_helper \"x\" {}\n");
    REQUIRE(scan.helpers.size() == 1);
    CHECK(scan.helpers[0].label == "x");
    CHECK(scan.helpers[0].line == 7);
    CHECK(scan.credentials.empty());
}

TEST_CASE("unbalanced text is an error that names the line", "[helper][cli_config]") {
    CHECK_THROWS_WITH(scan_cli_config("a {\n b {\n}\n"), Catch::Contains("line 1"));
    CHECK_THROWS_WITH(scan_cli_config("x = \"open\n"), Catch::Contains("unterminated string"));
    CHECK_THROWS_WITH(scan_cli_config("}\n"), Catch::Contains("line 1"));
    CHECK_THROWS_WITH(scan_cli_config("a {\n  b = [1)\n}\n"),
                      Catch::Contains("line 2: unexpected ')'"));
    CHECK_THROWS_WITH(scan_cli_config("/* never closed\n"),
                      Catch::Contains("unterminated comment"));
}

}  // namespace test_cli_config
