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
            "token is stored (terraform login {}), hostkeeper check {} finds it valid, or "
            "hostkeeper flush forgets the refusal",
            host, status, url, host, host);
    }
    rejected_[host] = TokenRejection{std::move(url), status, clock_(), wall_clock_()};
}

void TokenStanding::accepted(const std::string& host) {
    rejected_.erase(host);
}

void TokenStanding::stored(const std::string& host, std::optional<WallTime> expires,
                           Renewal renewal) {
    rejected_.erase(host);
    expiries_.erase(host);
    learned_.erase(host);
    read(host, expires, renewal);
}

void TokenStanding::forgotten(const std::string& host) {
    rejected_.erase(host);
    expiries_.erase(host);
    learned_.erase(host);
}

void TokenStanding::learned(const std::string& host, WallTime expires) {
    learned_[host] = expires;
    const auto known = expiries_.find(host);
    read(host, expires, known != expiries_.end() ? known->second.renewal : Renewal::person);
    log_stage(host, expiries_.at(host), expiry_stage(expires, wall_clock_()));
}

void TokenStanding::read(const std::string& host, std::optional<WallTime> expires,
                         Renewal renewal) {
    if (!expires) {
        if (const auto learned = learned_.find(host); learned != learned_.end()) {
            expires = learned->second;
        } else {
            expiries_.erase(host);
            return;
        }
    }
    const auto known = expiries_.find(host);
    if (known == expiries_.end() || known->second.at != *expires) {
        const ExpiryStage warned =
            warned_ != nullptr ? warned_->warned(host, *expires) : ExpiryStage::later;
        expiries_[host] = Known{*expires, warned, renewal};
    } else {
        known->second.renewal = renewal;
    }
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

namespace {

// The first stage warned of for a token renewed by `renewal`: before it,
// the renewal is not overdue.
ExpiryStage first_warned(Renewal renewal) {
    switch (renewal) {
        case Renewal::rotation:
            return ExpiryStage::within_1_day;
        case Renewal::login:
            return ExpiryStage::expired;
        case Renewal::person:
            break;
    }
    return ExpiryStage::within_30_days;
}

// What to run for a new token of `host`.
std::string remedy(const std::string& host, Renewal renewal) {
    if (renewal == Renewal::login) return "hostkeeper login " + host;
    return "terraform login " + host;
}

}  // namespace

void TokenStanding::log_stage(const std::string& host, Known& known, ExpiryStage stage) {
    if (stage <= known.logged) return;
    known.logged = stage;
    const WallTime now = wall_clock_();
    if (stage < first_warned(known.renewal)) {
        spdlog::debug("hostkeeper renews the token of {} before it expires at {}", host,
                      rfc3339_text(known.at));
        return;
    }
    if (stage == ExpiryStage::expired) {
        spdlog::warn("the stored token of {} expired at {}: it is not handed out; run {}", host,
                     rfc3339_text(known.at), remedy(host, known.renewal));
    } else {
        spdlog::warn("the stored token of {} expires at {} (in {}): run {} before then", host,
                     rfc3339_text(known.at), time_left(known.at, now), remedy(host, known.renewal));
    }
    if (warned_ != nullptr) warned_->record(host, known.at, stage);
    if (alert_) alert_(ExpiryAlert{host, stage, known.at, now, known.renewal});
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
