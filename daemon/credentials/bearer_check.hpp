#pragma once
// The one question the registry cache's listener asks of a host's
// credentials: is a request's Authorization header "Bearer " and the token
// the daemon would hand out for the host now? How that token is kept
// (cached, refreshed, withheld) stays on the credentials side.

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

struct BearerAnswer {
    enum class Match {
        no_token,  // none is handed out for the host (none stored, or withheld)
        current,   // the header carries the host's token
        other,     // it carries something else, or nothing
    };
    Match match = Match::no_token;
    // Not empty: the keyring cannot say (locked, absent), and why; match is no_token.
    std::string problem;
};

class BearerCheck {
  public:
    BearerCheck() = default;
    BearerCheck(const BearerCheck&) = delete;
    BearerCheck& operator=(const BearerCheck&) = delete;
    virtual ~BearerCheck() = default;

    // `host` is normalized; `purpose` ("a registry cache request for HOST")
    // is for the log. `authorization` outlives the call.
    virtual boost::asio::awaitable<BearerAnswer> check_bearer(std::string host,
                                                              std::string_view authorization,
                                                              std::string purpose) = 0;
};

// Whether `authorization` is "Bearer " and `token`. Compared as SHA-256
// digests, in constant time: neither the content nor the length of the
// secret shows in how long a refusal takes.
bool is_bearer_of(std::string_view authorization, const proto::Secret& token);

}  // namespace hostkeeper::daemon::credentials
