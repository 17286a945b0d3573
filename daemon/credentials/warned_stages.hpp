#pragma once
// The warning stages the daemon has warned of (token_standing.hpp), kept in
// a file beside its socket, so that a daemon started again in the same
// login session (on demand, after its idle exit) does not log or notify a
// stage again. The runtime directory is emptied at logout, so each login
// session is reminded once per stage. The file holds host names, expiries
// and stages: never a token.
//
//   {"v":1,"hosts":{"HOST":{"expires_at":"RFC 3339","stage":"within_7_days"}}}

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "daemon/credentials/keyring.hpp"
#include "daemon/credentials/token_expiry.hpp"

namespace hostkeeper::daemon::credentials {

struct WarnedStage {
    WallTime expires;  // the expiry warned of, to the second
    ExpiryStage stage = ExpiryStage::later;
};
using WarnedHosts = std::map<std::string, WarnedStage>;

// `t` to the second, as the file keeps it.
inline WallTime to_second(WallTime t) {
    return std::chrono::floor<std::chrono::seconds>(t);
}

// The file's largest size; a larger one is not read.
inline constexpr std::size_t kMaxWarnedStagesFile = std::size_t{256} * 1024;

// The file's text read. Throws proto::Error bad_request naming what is wrong.
WarnedHosts parse_warned_stages(std::string_view text);
std::string warned_stages_text(const WarnedHosts& hosts);

class WarnedStages {
  public:
    // Reads `file`; one that is missing starts empty, and one that cannot be
    // read or parsed too (logged: at worst a stage is warned of again).
    explicit WarnedStages(std::filesystem::path file);

    // The last stage warned of for the host's token expiring at `expires`
    // (later: none, or another expiry's).
    ExpiryStage warned(const std::string& host, WallTime expires) const;
    // Records a stage warned of and rewrites the file (atomically; a failure
    // is logged and the stage kept in memory).
    void record(const std::string& host, WallTime expires, ExpiryStage stage);

  private:
    std::filesystem::path file_;
    WarnedHosts hosts_;
};

}  // namespace hostkeeper::daemon::credentials
