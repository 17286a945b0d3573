// A host's /.well-known/terraform.json as the daemon reads it: the body, then
// (after the first NUL, when there is one) the final URL it came from. Every
// service kept is an absolute http(s) URL without user:password. The body
// is also read as TFE's account/details answer (`check`): never a crash.
#include <stdexcept>

#include "daemon/discovery/account_details.hpp"
#include "daemon/discovery/discovery_document.hpp"
#include "daemon/http/url.hpp"
#include "fuzz_support.hpp"

using namespace hostkeeper;
using proto::Json;

namespace {

void check_url(const Json& value) {
    fuzz::require(value.is_string(), "a resolved service is not a string");
    const daemon::http::UrlParts parts = daemon::http::parse_url(value.get<std::string>());
    fuzz::require(parts.scheme == "http" || parts.scheme == "https",
                  "a resolved service is not http(s)");
    fuzz::require(!parts.has_credentials, "a resolved service holds user:password");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto [body, url] = fuzz::split_at_nul(fuzz::text_of(data, size));
    const std::string user = daemon::discovery::account_username(body);
    fuzz::require(user.size() <= body.size(), "a user name longer than the answer");
    const std::string base =
        url.empty() ? daemon::discovery::discovery_url("example.com") : std::string(url);
    daemon::discovery::Services services;
    try {
        services = daemon::discovery::parse_discovery_document(body, base);
    } catch (const std::runtime_error&) {
        return 0;
    }
    for (const auto& [id, value] : services.services.items()) {
        fuzz::require(!services.invalid.contains(id), "a service is both valid and invalid");
        if (id == "login.v1") {
            fuzz::require(value.is_object(), "login.v1 is not an object");
            for (const char* key : {"authz", "token"}) {
                if (value.contains(key)) check_url(value.at(key));
            }
        } else {
            check_url(value);
        }
    }
    for (const auto& [id, why] : services.invalid.items()) {
        fuzz::require(why.is_string() && !why.get<std::string>().empty(),
                      "an invalid service has no reason");
    }
    // The daemon sends the answer over the socket.
    (void)proto::serialize(services.services, proto::kMaxResponseFrameSize);
    return 0;
}
