#pragma once
// The tokens runs brought (hostkeeper exec --registry-cache: the run's own
// TF_TOKEN_* variables), held in memory while each run lasts and scrubbed
// when it ends. They are used for the registry cache's upstream requests to
// their host and to check the token Terraform sends to the cache; they are
// never handed to a client, never written and never logged. A run's token
// comes first for its host: before a token_command and the keyring.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

class RunTokens {
  public:
    using RunId = std::uint64_t;

    // Run `run`'s token for `host` (normalized); a later one replaces it.
    void add(RunId run, const std::string& host, proto::Secret token);
    // Run `run` has ended: its tokens are scrubbed.
    void drop(RunId run);

    // The token for `host` of the latest run that brought one; nullopt when
    // no run holds one.
    std::optional<proto::Secret> token(const std::string& host) const;
    // Whether `authorization` ("Bearer TOKEN") carries a token some run
    // holds for `host`.
    bool carries(const std::string& host, std::string_view authorization) const;
    bool holds(const std::string& host) const;

    // How many runs hold tokens.
    std::size_t runs() const { return by_run_.size(); }

  private:
    std::map<RunId, std::map<std::string, proto::Secret>> by_run_;
};

}  // namespace hostkeeper::daemon::credentials
