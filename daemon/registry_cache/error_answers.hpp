#pragma once
// The registry cache's error answers: a JSON body Terraform's registry
// clients read ({"errors": [...]}) and a reason phrase that repeats it, since
// Go shows the response's Status ("503 <reason>") and Terraform prints that.

#include <string>

#include "daemon/registry_cache/listener_messages.hpp"

namespace hostkeeper::daemon::registry_cache {

// `text` made fit for a status line: printable ASCII, at most 400 characters.
std::string reason_phrase(std::string text);

// {"errors": [message]} with `status` and `message` as its reason phrase.
ListenerResponse error_response(unsigned status, const std::string& message);

}  // namespace hostkeeper::daemon::registry_cache
