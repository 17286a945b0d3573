#pragma once
// HCP Terraform's and Terraform Enterprise's "who am I" answer
// (GET tfe.v2 + account/details, JSON:API): the user's name and id. Pure:
// no I/O.

#include <string>
#include <string_view>

namespace hostkeeper::daemon::discovery {

// data.attributes.username of an account/details body, or "" when the body
// does not say (not JSON, another shape, not a string).
std::string account_username(std::string_view body);

// data.id of an account/details body ("user-..."), or "" as above.
std::string account_user_id(std::string_view body);

}  // namespace hostkeeper::daemon::discovery
