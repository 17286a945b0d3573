#pragma once
// The token of a host's stored credentials, as Terraform sends it: the
// "token" property of the credentials object. Discovery and the registry
// clients go on without one when the keyring cannot say (locked, absent):
// a host that needs it answers 401, which is reported.

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "daemon/credentials/token_lifecycle.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::upstream {

// `host` is normalized; `purpose` ("discovery of app.terraform.io") is for the
// log. When the keyring cannot say (locked, absent), the answer is nullopt and
// `problem`, if given, receives why. A withheld token (TokenLifecycle::
// withheld: refused, expired) is nullopt too, so the request goes without
// it; with `send_refused`, a refused one is given all the same.
boost::asio::awaitable<std::optional<proto::Secret>> bearer_token(
    credentials::TokenLifecycle& credentials, std::string host, std::string purpose,
    std::string* problem = nullptr, bool send_refused = false);

}  // namespace hostkeeper::daemon::upstream
