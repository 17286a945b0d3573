#include "daemon/credentials/token_standing.hpp"

#include <spdlog/spdlog.h>

#include <utility>

namespace hostkeeper::daemon::credentials {

std::string_view to_string(Withheld::Reason reason) noexcept {
    return reason == Withheld::Reason::expired ? "expired" : "refused";
}

void TokenStanding::rejected(const std::string& host, std::string url, long status) {
    if (!rejected_.contains(host)) {
        spdlog::warn(
            "{} refused its stored token (HTTP {} from {}): it is not handed out until a new "
            "token is stored (terraform login {}) or hostkeeper check {} finds it valid",
            host, status, url, host, host);
    }
    rejected_[host] = TokenRejection{std::move(url), status, clock_(), wall_clock_()};
}

void TokenStanding::accepted(const std::string& host) {
    rejected_.erase(host);
}

void TokenStanding::stored(const std::string& host, std::optional<WallTime> expires) {
    rejected_.erase(host);
    expiries_.erase(host);
    learned_.erase(host);
    read(host, expires);
}

void TokenStanding::forgotten(const std::string& host) {
    rejected_.erase(host);
    expiries_.erase(host);
    learned_.erase(host);
}

void TokenStanding::learned(const std::string& host, WallTime expires) {
    learned_[host] = expires;
    read(host, expires);
    log_stage(host, expiries_.at(host), expiry_stage(expires, wall_clock_()));
}

void TokenStanding::read(const std::string& host, std::optional<WallTime> expires) {
    if (!expires) {
        if (const auto learned = learned_.find(host); learned != learned_.end()) {
            expires = learned->second;
        } else {
            expiries_.erase(host);
            return;
        }
    }
    const auto known = expiries_.find(host);
    if (known == expiries_.end() || known->second.at != *expires) expiries_[host] = Known{*expires};
}

std::optional<Withheld> TokenStanding::withheld(const std::string& host) {
    if (const auto known = expiries_.find(host); known != expiries_.end()) {
        const ExpiryStage stage = expiry_stage(known->second.at, wall_clock_());
        log_stage(host, known->second, stage);
        if (stage == ExpiryStage::expired) {
            return Withheld{Withheld::Reason::expired,
                            "the stored token expired at " + rfc3339_text(known->second.at) +
                                " (its expires_at); store a new one: terraform login " + host};
        }
    }
    const auto refusal = rejected_.find(host);
    if (refusal == rejected_.end()) return std::nullopt;
    const TokenRejection& r = refusal->second;
    return Withheld{Withheld::Reason::refused,
                    "the stored token was refused (HTTP " + std::to_string(r.status) + " from " +
                        r.url + " at " + rfc3339_text(r.at) + "); run terraform login " + host +
                        ", or hostkeeper check " + host + " once it is valid again"};
}

void TokenStanding::log_stage(const std::string& host, Known& known, ExpiryStage stage) {
    if (stage <= known.logged) return;
    known.logged = stage;
    const WallTime now = wall_clock_();
    if (stage == ExpiryStage::expired) {
        spdlog::warn(
            "the stored token of {} expired at {}: it is not handed out; run terraform "
            "login {}",
            host, rfc3339_text(known.at), host);
    } else {
        spdlog::warn(
            "the stored token of {} expires at {} (in {}): run terraform login {} before then",
            host, rfc3339_text(known.at), time_left(known.at, now), host);
    }
    if (alert_) alert_(ExpiryAlert{host, stage, known.at, now});
}

std::map<std::string, WallTime> TokenStanding::expiries() const {
    std::map<std::string, WallTime> out;
    for (const auto& [host, known] : expiries_) out.emplace(host, known.at);
    return out;
}

std::optional<WallTime> TokenStanding::expiry(const std::string& host) const {
    const auto known = expiries_.find(host);
    if (known == expiries_.end()) return std::nullopt;
    return known->second.at;
}

}  // namespace hostkeeper::daemon::credentials
