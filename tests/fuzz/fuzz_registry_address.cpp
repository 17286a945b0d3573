// Module and provider addresses as users write them. An address accepted
// prints as host/namespace/... and that parses back to the same address.
#include "fuzz_support.hpp"
#include "proto/error.hpp"
#include "proto/registry_address.hpp"

using namespace hostkeeper;

namespace {

bool expected(const proto::Error& e) {
    return e.code() == proto::ErrorCode::bad_request || e.code() == proto::ErrorCode::bad_host;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::text_of(data, size);
    try {
        const proto::ModuleAddress m = proto::parse_module_address(text);
        const proto::ModuleAddress back = proto::parse_module_address(m.to_string());
        fuzz::require(back.to_string() == m.to_string() && back.host == m.host &&
                          back.name_space == m.name_space && back.name == m.name &&
                          back.system == m.system,
                      "a module address does not parse back from its string");
    } catch (const proto::Error& e) {
        fuzz::require(expected(e), "parse_module_address threw an unexpected code");
    }
    try {
        const proto::ProviderAddress p = proto::parse_provider_address(text);
        const proto::ProviderAddress back = proto::parse_provider_address(p.to_string());
        fuzz::require(back.to_string() == p.to_string() && back.host == p.host &&
                          back.name_space == p.name_space && back.type == p.type,
                      "a provider address does not parse back from its string");
    } catch (const proto::Error& e) {
        fuzz::require(expected(e), "parse_provider_address threw an unexpected code");
    }
    const bool platform = proto::is_platform(text);
    try {
        fuzz::require(proto::check_platform(text) == text && platform,
                      "check_platform accepts a non-platform");
    } catch (const proto::Error& e) {
        fuzz::require(!platform && e.code() == proto::ErrorCode::bad_request,
                      "check_platform refuses a platform");
    }
    return 0;
}
