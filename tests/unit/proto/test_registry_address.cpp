// Module and provider registry addresses, as hashicorp/terraform-registry-address reads them.
#include <catch2/catch.hpp>
#include <string>

#include "proto/error.hpp"
#include "proto/registry_address.hpp"

namespace test_registry_address {

using Catch::Matchers::Contains;
using hostkeeper::proto::Error;
using hostkeeper::proto::ErrorCode;
using hostkeeper::proto::is_platform;
using hostkeeper::proto::kDefaultRegistryHost;
using hostkeeper::proto::ModuleAddress;
using hostkeeper::proto::parse_module_address;
using hostkeeper::proto::parse_provider_address;
using hostkeeper::proto::ProviderAddress;

namespace {

// `parse` must refuse `text` with `code` and a message that quotes the
// address and contains `reason`.
template <typename Parse>
void check_refused(Parse parse, const std::string& kind, const std::string& text, ErrorCode code,
                   const std::string& reason) {
    try {
        (void)parse(text);
    } catch (const Error& e) {
        CHECK(e.code() == code);
        CHECK_THAT(e.what(),
                   Contains("invalid " + kind + " address \"" + text + "\": ") && Contains(reason));
        return;
    }
    FAIL("accepted " << text);
}

}  // namespace

TEST_CASE("a module address without a host is on registry.terraform.io",
          "[proto][registry_address]") {
    const ModuleAddress m = parse_module_address("hashicorp/consul/aws");
    CHECK(m.host == kDefaultRegistryHost);
    CHECK(m.host == "registry.terraform.io");
    CHECK(m.name_space == "hashicorp");
    CHECK(m.name == "consul");
    CHECK(m.system == "aws");
    CHECK(m.to_string() == "registry.terraform.io/hashicorp/consul/aws");
}

TEST_CASE("a module address keeps the case of namespace and name", "[proto][registry_address]") {
    const ModuleAddress m = parse_module_address("Terraform-AWS-Modules/VPC_x/aws");
    CHECK(m.name_space == "Terraform-AWS-Modules");
    CHECK(m.name == "VPC_x");
    CHECK(m.to_string() == "registry.terraform.io/Terraform-AWS-Modules/VPC_x/aws");
}

TEST_CASE("a module address with a host normalizes it", "[proto][registry_address]") {
    const auto [input, expected] = GENERATE(table<const char*, const char*>({
        {"app.terraform.io/acme/vpc/aws", "app.terraform.io/acme/vpc/aws"},
        {"App.Terraform.IO/acme/vpc/aws", "app.terraform.io/acme/vpc/aws"},
        {"Bücher.Example.COM:443/acme/vpc/aws", "xn--bcher-kva.example.com/acme/vpc/aws"},
        {"tfe.corp.example:8443/acme/vpc/aws", "tfe.corp.example:8443/acme/vpc/aws"},
        {"127.0.0.1:5000/acme/hello/null", "127.0.0.1:5000/acme/hello/null"},
        {"registry.terraform.io/a/b/c", "registry.terraform.io/a/b/c"},
    }));
    CAPTURE(input);
    CHECK(parse_module_address(input).to_string() == expected);
}

TEST_CASE("module name parts at their limits", "[proto][registry_address]") {
    const std::string longest(64, 'a');
    CHECK(parse_module_address(longest + "/" + longest + "/" + longest).name == longest);
    CHECK(parse_module_address("a/b/c").name_space == "a");
    CHECK(parse_module_address("a-_b/0x9/k8s").name_space == "a-_b");
    const std::string too_long(65, 'a');
    CHECK_THROWS_WITH(parse_module_address(too_long + "/b/c"),
                      Contains("NAMESPACE \"" + too_long + "\""));
    CHECK_THROWS_WITH(parse_module_address("a/" + too_long + "/c"),
                      Contains("NAME \"" + too_long + "\""));
    CHECK_THROWS_WITH(parse_module_address("a/b/" + too_long),
                      Contains("SYSTEM \"" + too_long + "\""));
}

TEST_CASE("a bad module address names the bad part", "[proto][registry_address]") {
    const auto [input, reason] = GENERATE(table<const char*, const char*>({
        {"a b/vpc/aws",
         "invalid module address \"a b/vpc/aws\": NAMESPACE \"a b\" may contain only letters, "
         "digits, \"-\" and "
         "\"_\", and must start and end with a letter or digit (at most 64 characters)"},
        {"-acme/vpc/aws", "NAMESPACE \"-acme\" may contain only"},
        {"acme_/vpc/aws", "NAMESPACE \"acme_\" may contain only"},
        {"acme/vpc-/aws", "NAME \"vpc-\" may contain only"},
        {"acme/v.pc/aws", "NAME \"v.pc\" may contain only"},
        {"acme/vpc/AWS", "SYSTEM \"AWS\" may contain only lowercase letters and digits"},
        {"acme/vpc/a-ws", "SYSTEM \"a-ws\" may contain only lowercase letters and digits"},
        {"acme/vpc",
         "a module address has 3 or 4 parts separated by \"/\": [HOSTNAME/]NAMESPACE/NAME/SYSTEM"},
        {"h.example/acme/vpc/aws/x", "a module address has 3 or 4 parts"},
        {"acme", "a module address has 3 or 4 parts"},
        {"/acme/vpc/aws", "empty part"},
        {"acme/vpc/aws/", "empty part"},
        {"", "it is empty"},
        {"acme/vpc/aws//modules/sub",
         "\"//modules/sub\" selects a directory inside the package and is not part of a registry "
         "address"},
        {"acme/vpc/aws?ref=v1", "\"?ref=v1\": a registry address has no query string"},
        {"https://h.example/acme/vpc/aws", "no scheme"},
        {"app.terraform.io/vpc/aws", "NAMESPACE \"app.terraform.io\" looks like a hostname"},
    }));
    CAPTURE(input);
    check_refused(parse_module_address, "module", input, ErrorCode::bad_request, reason);
}

TEST_CASE("a bad module registry hostname is bad_host", "[proto][registry_address]") {
    const auto [input, reason] = GENERATE(table<const char*, const char*>({
        {"ex_ample.com/acme/vpc/aws",
         "invalid module address \"ex_ample.com/acme/vpc/aws\": hostname \"ex_ample.com\": invalid "
         "hostname "
         "\"ex_ample.com\": character '_' is not allowed"},
        {"example.com:99999/acme/vpc/aws", "hostname \"example.com:99999\": invalid hostname"},
        {"localhost:5000/acme/vpc/aws",
         "hostname \"localhost:5000\": a module registry hostname must contain a dot"},
        {"GitHub.com/acme/vpc/aws",
         "hostname \"GitHub.com\" is reserved for installing from version control"},
        {"bitbucket.org/acme/vpc/aws", "is reserved for installing from version control"},
    }));
    CAPTURE(input);
    check_refused(parse_module_address, "module", input, ErrorCode::bad_host, reason);
}

TEST_CASE("a provider address without a host is on registry.terraform.io",
          "[proto][registry_address]") {
    const ProviderAddress p = parse_provider_address("hashicorp/aws");
    CHECK(p.host == "registry.terraform.io");
    CHECK(p.name_space == "hashicorp");
    CHECK(p.type == "aws");
    CHECK(p.to_string() == "registry.terraform.io/hashicorp/aws");
}

TEST_CASE("a provider address folds namespace and type to lowercase", "[proto][registry_address]") {
    const auto [input, expected] = GENERATE(table<const char*, const char*>({
        {"HashiCorp/AWS", "registry.terraform.io/hashicorp/aws"},
        {"hashicorp/google-beta", "registry.terraform.io/hashicorp/google-beta"},
        {"Registry.Terraform.IO/Integrations/GitHub", "registry.terraform.io/integrations/github"},
        {"Bücher.example:443/Acme/Widget", "xn--bcher-kva.example/acme/widget"},
        {"tfe.corp.example:8443/acme/widget", "tfe.corp.example:8443/acme/widget"},
        {"localhost:5000/acme/widget", "localhost:5000/acme/widget"},
        {"0/1", "registry.terraform.io/0/1"},
    }));
    CAPTURE(input);
    CHECK(parse_provider_address(input).to_string() == expected);
}

TEST_CASE("a bad provider address names the bad part", "[proto][registry_address]") {
    const auto [input, reason] = GENERATE(table<const char*, const char*>({
        {"hashi_corp/aws",
         "invalid provider address \"hashi_corp/aws\": NAMESPACE \"hashi_corp\" may contain only "
         "letters, digits "
         "and \"-\", and must start and end with a letter or digit (at most 64 characters)"},
        {"hashicorp/-aws", "TYPE \"-aws\" may contain only letters, digits and \"-\""},
        {"hashicorp/a.ws", "TYPE \"a.ws\" may contain only"},
        {"hashicorp/aws-", "TYPE \"aws-\" may contain only"},
        {"hashicorp/bücher", "TYPE \"bücher\" has a character outside ASCII"},
        {"Bücher/aws", "NAMESPACE \"Bücher\" has a character outside ASCII"},
        {"hashicorp/terraform-provider-aws",
         "TYPE \"terraform-provider-aws\": use the type name without the terraform-provider- "
         "prefix, e.g. "
         "\"hashicorp/aws\""},
        {"HashiCorp/Terraform-Provider-AWS", "e.g. \"hashicorp/aws\""},
        {"tf.example/acme/terraform-provider-widget", "e.g. \"tf.example/acme/widget\""},
        {"hashicorp/terraform-aws", "TYPE \"terraform-aws\" starts with \"terraform-\""},
        {"aws",
         "a provider address has 2 or 3 parts separated by \"/\": [HOSTNAME/]NAMESPACE/TYPE; give "
         "the "
         "namespace too, e.g. \"hashicorp/aws\""},
        {"h.example/a/b/c", "a provider address has 2 or 3 parts"},
        {"hashicorp/", "empty part"},
        {"hashicorp//aws", "empty part"},
        {"", "it is empty"},
        {"https://h.example/a/b", "no scheme"},
    }));
    CAPTURE(input);
    check_refused(parse_provider_address, "provider", input, ErrorCode::bad_request, reason);
}

TEST_CASE("a bad provider hostname is bad_host", "[proto][registry_address]") {
    check_refused(parse_provider_address, "provider", "exa mple.com/acme/widget",
                  ErrorCode::bad_host,
                  "hostname \"exa mple.com\": invalid hostname \"exa mple.com\": character ' '");
}

TEST_CASE("platforms are OS_ARCH", "[proto][registry_address]") {
    CHECK(is_platform("linux_amd64"));
    CHECK(is_platform("darwin_arm64"));
    CHECK(is_platform("windows_386"));
    CHECK(is_platform("freebsd_arm"));
    CHECK_FALSE(is_platform(""));
    CHECK_FALSE(is_platform("linux"));
    CHECK_FALSE(is_platform("_amd64"));
    CHECK_FALSE(is_platform("linux_"));
    CHECK_FALSE(is_platform("_"));
    CHECK_FALSE(is_platform("linux_amd64_v2"));
    CHECK_FALSE(is_platform("Linux_amd64"));
    CHECK_FALSE(is_platform("linux-amd64"));
    CHECK_FALSE(is_platform("linux_amd 64"));
}

}  // namespace test_registry_address
