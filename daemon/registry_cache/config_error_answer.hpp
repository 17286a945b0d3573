#pragma once
// The registry port's answer while hostkeeperd cannot run with its
// configuration: every request hostkeeper-portd hands over is answered at
// once with 503 and the configuration error (file, line, key) as its reason
// phrase, which Terraform prints ("503 hostkeeperd cannot run with its
// configuration: ..."). Without it Terraform would wait for a daemon that
// never registers, and then hear only that none is running.

#include <string>

#include "daemon/registry_cache/listener_messages.hpp"

namespace hostkeeper::daemon::registry_cache {

// The answer for every request, `reason` being the configuration error.
ListenerResponse config_error_answer(const std::string& reason);

}  // namespace hostkeeper::daemon::registry_cache
