#pragma once
// One request on the registry cache's listener and its answer
// (daemon/http/listener_exchange.hpp), and a JSON answer.

#include "daemon/http/listener_exchange.hpp"
#include "proto/json.hpp"

namespace hostkeeper::daemon::registry_cache {

using http::ListenerRequest;
using http::ListenerResponse;

// `status` with `body` as JSON.
ListenerResponse json_response(unsigned status, const proto::Json& body);

}  // namespace hostkeeper::daemon::registry_cache
