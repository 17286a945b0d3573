// TF_TOKEN_* names: encoded as Terraform and OpenTofu decode them
// (collectCredentialsFromEnv: "__" -> "-", then "_" -> ".", then svchost),
// every encoding checked by decoding it back.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "helper/terraform_config/shadowing.hpp"
#include "helper/terraform_config/token_variables.hpp"

namespace test_token_variables {

using hostkeeper::helper::terraform_config::decode_token_variable;
using hostkeeper::helper::terraform_config::encode_token_variable;
using hostkeeper::helper::terraform_config::shell_portable;

TEST_CASE("TF_TOKEN names: hosts encode as Terraform decodes them",
          "[terraform_config][token_variables]") {
    const std::pair<const char*, const char*> cases[] = {
        {"app.terraform.io", "TF_TOKEN_app_terraform_io"},
        {"xn--bcher-kva.example.com", "TF_TOKEN_xn____bcher__kva_example_com"},
        {"my-registry.example.com", "TF_TOKEN_my__registry_example_com"},
        {"a--b.example", "TF_TOKEN_a____b_example"},
        {"ab-c---d.example", "TF_TOKEN_ab__c______d_example"},
        {"registry.example.com:8443", "TF_TOKEN_registry_example_com:8443"},
        {"127.0.0.1:5000", "TF_TOKEN_127_0_0_1:5000"},
        {"localhost", "TF_TOKEN_localhost"},
    };
    for (const auto& [host, name] : cases) {
        INFO(host);
        CHECK(encode_token_variable(host) == std::optional<std::string>(name));
        CHECK(decode_token_variable(name) == std::optional<std::string>(host));
    }
}

TEST_CASE("TF_TOKEN names: every spelling Terraform accepts decodes to the normalized host",
          "[terraform_config][token_variables]") {
    const std::pair<const char*, const char*> cases[] = {
        // Terraform's own documented examples for café.fr.
        {"TF_TOKEN_xn____caf__dma_fr", "xn--caf-dma.fr"},
        {"TF_TOKEN_xn--caf-dma_fr", "xn--caf-dma.fr"},
        {"TF_TOKEN_xn--caf-dma.fr", "xn--caf-dma.fr"},
        {"TF_TOKEN_café_fr", "xn--caf-dma.fr"},  // UTF-8 IDN given directly
        {"TF_TOKEN_App_Terraform_IO", "app.terraform.io"},
        {"TF_TOKEN_registry_example_com:443", "registry.example.com"},
        {"TF_TOKEN_registry_example_com:08443", "registry.example.com:8443"},
        {"TF_TOKEN_registry_example_com:+8443", "registry.example.com:8443"},  // Atoi's sign
    };
    for (const auto& [name, host] : cases) {
        INFO(name);
        CHECK(decode_token_variable(name) == std::optional<std::string>(host));
    }
}

TEST_CASE("TF_TOKEN names Terraform ignores decode to nothing",
          "[terraform_config][token_variables]") {
    for (const char* name :
         {"TF_TOKEN_", "TF_TOKEN__example_com", "TF_TOKEN_example_com_",
          "TF_TOKEN_a___b_example",     // "-_" then "-.": a label ends in "-"
          "TF_TOKEN_ab____cd_example",  // "ab--cd": hyphens in places 3 and 4
          "TF_TOKEN_xn____zz_example",  // not punycode
          "TF_TOKEN_example_com:99999", "TF_TOKEN_example_com:x", "TF_TOKEN_example_com:+",
          "TF_TOKEN_example_com:++1", "TF_TOKENS_example_com", "TF_OTHER", "tf_token_example_com",
          "TF_TOKEN_exa$mple_com"}) {
        INFO(name);
        CHECK_FALSE(decode_token_variable(name));
    }
}

TEST_CASE("hosts whose name would not decode back cannot be encoded",
          "[terraform_config][token_variables]") {
    // "a.-b" is "TF_TOKEN_a___b": Terraform reads "a-.b". Not normalized
    // spellings (upper case, Unicode, :443) would come back as another string.
    for (const char* host :
         {"a.-b", "a-.b.example", "", "-a.example", "App.Terraform.io", "bücher.example.com",
          "registry.example.com:443", "a..b", "a_b.example", "ab--cd.example"}) {
        INFO(host);
        CHECK_FALSE(encode_token_variable(host));
    }
}

TEST_CASE("names with a port are not shell names", "[terraform_config][token_variables]") {
    CHECK(shell_portable("TF_TOKEN_app_terraform_io"));
    CHECK(shell_portable("TF_TOKEN_xn____bcher__kva_example_com"));
    CHECK_FALSE(shell_portable("TF_TOKEN_registry_example_com:8443"));
    CHECK_FALSE(shell_portable("TF_TOKEN_xn--caf-dma.fr"));
    CHECK_FALSE(shell_portable("1ABC"));
    CHECK_FALSE(shell_portable(""));
}

TEST_CASE("shadowing decodes TF_TOKEN_* names with the same code",
          "[terraform_config][token_variables]") {
    ::setenv("TF_TOKEN_xn--bcher-kva_example_com", "not-read", 1);
    ::setenv("TF_TOKEN_ab____cd_example", "not-read", 1);
    const auto variables = hostkeeper::helper::terraform_config::token_variables();
    ::unsetenv("TF_TOKEN_xn--bcher-kva_example_com");
    ::unsetenv("TF_TOKEN_ab____cd_example");
    bool idn = false, ignored = false;
    for (const auto& v : variables) {
        if (v.name == "TF_TOKEN_xn--bcher-kva_example_com") {
            idn = v.host == std::optional<std::string>("xn--bcher-kva.example.com");
        }
        if (v.name == "TF_TOKEN_ab____cd_example") ignored = !v.host.has_value();
    }
    CHECK(idn);
    CHECK(ignored);
}

}  // namespace test_token_variables
