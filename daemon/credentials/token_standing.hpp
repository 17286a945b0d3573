#pragma once
// Whether a host's stored token may be handed out: not after a server
// refused it (HTTP 401 to a request the daemon sent with it) until new
// credentials are stored, they are forgotten, or a `check` finds the token
// valid again; and not after its "expires_at". Kept in memory only, never
// the token. Also logs one line per host each time its token's expiry
// comes within 30, 7 or 1 day, or passes, and tells the alert callback
// (desktop notifications), once per host and stage whoever looks first:
// a read, a request, or the daemon's expiry watch. A token hostkeeper
// renews itself is warned of only when its renewal is overdue: a rotated
// one (rotate = true) from a day before its expiry, one with a refresh
// token (hostkeeper login) once it has expired.

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "daemon/credentials/keyring.hpp"
#include "daemon/credentials/token_expiry.hpp"
#include "daemon/credentials/warned_stages.hpp"

namespace hostkeeper::daemon::credentials {

// A server's 401 to a request the daemon sent with the host's stored token.
struct TokenRejection {
    std::string url;
    long status = 401;
    std::chrono::steady_clock::time_point when;
    WallTime at;  // the same moment on the wall clock, to show
};

// Why a host's stored token is not handed out.
struct Withheld {
    enum class Reason { refused, expired };
    Reason reason = Reason::refused;
    std::string message;  // for the user: what happened and what to run
};
std::string_view to_string(Withheld::Reason reason) noexcept;

// Who renews a host's token before it expires.
enum class Renewal {
    person,    // someone runs terraform login
    rotated,   // someone runs hostkeeper rotate, which made this token
    rotation,  // the daemon rotates it (rotate = true)
    login,     // the daemon refreshes it (a refresh token from hostkeeper login)
};

// The stage a token expiring at `at` is warned of at `now` (ExpiryStage::later:
// none). A token the daemon renews itself is not warned of while its renewal
// is on time (a rotation: until its last day; a login refresh: until it has
// expired); and a token whose life began at `since` is warned of only in the
// second half of its life, so that a warning window never covers most of it.
ExpiryStage warned_stage(WallTime at, WallTime now, Renewal renewal,
                         std::optional<WallTime> since = std::nullopt);
// The command that gives `host` a new token renewed by `renewal`.
std::string renew_command(const std::string& host, Renewal renewal);

// What a host's stored expiry calls for now.
struct ExpiryAdvice {
    ExpiryStage stage = ExpiryStage::later;  // warned_stage(): later is no warning
    std::string renew;                       // renew_command()
};

// A host's token crossed a warning stage (within 30, 7, 1 day; expired).
struct ExpiryAlert {
    std::string host;
    ExpiryStage stage = ExpiryStage::later;
    WallTime at;   // its expiry
    WallTime now;  // when the stage was seen
    Renewal renewal = Renewal::person;
};

class TokenStanding {
  public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;
    using WallClock = std::function<WallTime()>;
    using Alert = std::function<void(const ExpiryAlert&)>;

    TokenStanding(Clock clock, WallClock wall_clock)
        : clock_(std::move(clock)), wall_clock_(std::move(wall_clock)) {}

    void rejected(const std::string& host, std::string url, long status);
    void accepted(const std::string& host);
    // Every refusal forgotten (a flush); how many there were.
    std::size_t forget_refusals() {
        const std::size_t n = rejected_.size();
        rejected_.clear();
        return n;
    }
    // New credentials for the host (their expiry, if any): a refusal is over.
    // `since`: when the token's life began, when known.
    void stored(const std::string& host, std::optional<WallTime> expires,
                Renewal renewal = Renewal::person, std::optional<WallTime> since = std::nullopt);
    void forgotten(const std::string& host);
    // The credentials as read from the keyring (their expiry, if any; else
    // one learned from the host).
    void read(const std::string& host, std::optional<WallTime> expires,
              Renewal renewal = Renewal::person, std::optional<WallTime> since = std::nullopt);
    // The expiry of the host's stored token as the host's API says it (the
    // stored object has none): kept in memory until new credentials are
    // stored or they are forgotten, and warned of as a stored one (at once,
    // when it is within a warning stage).
    void learned(const std::string& host, WallTime expires);

    // Why the host's token is not to be handed out, or nullopt. An expiry
    // comes first: a new token is needed then, whatever `check` says.
    std::optional<Withheld> withheld(const std::string& host);

    // Called on each stage logged (after the log line); none by default.
    void on_alert(Alert alert) { alert_ = std::move(alert); }
    // Stages warned of are recorded in `warned`, and a stage it holds is not
    // warned of again (warned_stages.hpp); set before the first read.
    void remember_warnings(WarnedStages& warned) { warned_ = &warned; }

    const std::map<std::string, TokenRejection>& rejections() const { return rejected_; }
    std::map<std::string, WallTime> expiries() const;
    std::optional<WallTime> expiry(const std::string& host) const;
    // For a host with a known expiry: the warning due now and what renews it.
    std::optional<ExpiryAdvice> advice(const std::string& host) const;
    WallTime wall_now() const { return wall_clock_(); }

  private:
    struct Known {
        WallTime at;
        ExpiryStage logged = ExpiryStage::later;  // the last stage a line was logged for
        Renewal renewal = Renewal::person;
        std::optional<WallTime> since;
    };
    // Logs (and alerts) the stage warned_stage() gives now, once per stage.
    void log_stage(const std::string& host, Known& known);

    Clock clock_;
    WallClock wall_clock_;
    Alert alert_;
    WarnedStages* warned_ = nullptr;
    std::map<std::string, TokenRejection> rejected_;
    std::map<std::string, Known> expiries_;
    std::map<std::string, WallTime> learned_;
};

}  // namespace hostkeeper::daemon::credentials
