#include <catch2/catch.hpp>

#include "helper/terraform_config/cli_config.hpp"

namespace test_cli_config {

using namespace hostkeeper::helper::terraform_config;

TEST_CASE("the scanner finds top-level credentials_helper and credentials blocks with their lines",
          "[helper][cli_config]") {
    const auto scan = scan_cli_config(R"(plugin_cache_dir = "$HOME/.terraform.d/plugin-cache"
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
)");
    REQUIRE(scan.helpers.size() == 1);
    CHECK(scan.helpers[0].label == "hostkeeper");
    CHECK(scan.helpers[0].line == 14);
    REQUIRE(scan.credentials.size() == 1);
    CHECK(scan.credentials[0].label == "app.terraform.io");
    CHECK(scan.credentials[0].line == 6);
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
    CHECK_THROWS_WITH(scan_cli_config("/* never closed\n"),
                      Catch::Contains("unterminated comment"));
}

}  // namespace test_cli_config
