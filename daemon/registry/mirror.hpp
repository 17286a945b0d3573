#pragma once
// A provider network mirror's base URL, checked as Terraform checks the
// network_mirror block's url: https, no user or password; a trailing slash
// added so that the endpoints resolve beneath it.

#include <string>

namespace hostkeeper::daemon::registry {

struct Mirror {
    std::string base;  // https://..../ (normalized, ends in "/")
    std::string host;  // whose credentials it gets: host, with ":PORT" unless 443
};

// Throws proto::Error{bad_request} naming what is wrong with `url`.
Mirror make_mirror(const std::string& url);

}  // namespace hostkeeper::daemon::registry
