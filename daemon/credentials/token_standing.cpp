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
                           Renewal renewal, std::optional<WallTime> since) {
    rejected_.erase(host);
    expiries_.erase(host);
    learned_.erase(host);
    read(host, expires, renewal, since);
}

void TokenStanding::forgotten(const std::string& host) {
    rejected_.erase(host);
    expiries_.erase(host);
    learned_.erase(host);
}

void TokenStanding::learned(const std::string& host, WallTime expires) {
    learned_[host] = expires;
    const auto known = expiries_.find(host);
    if (known == expiries_.end()) {
        read(host, expires);
    } else {
        read(host, expires, known->second.renewal, known->second.since);
    }
    log_stage(host, expiries_.at(host));
}

void TokenStanding::read(const std::string& host, std::optional<WallTime> expires, Renewal renewal,
                         std::optional<WallTime> since) {
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
        expiries_[host] = Known{*expires, warned, renewal, since};
    } else {
        known->second.renewal = renewal;
        known->second.since = since;
    }
}

std::optional<Withheld> TokenStanding::withheld(const std::string& host) {
    if (const auto known = expiries_.find(host); known != expiries_.end()) {
        log_stage(host, known->second);
        if (expiry_stage(known->second.at, wall_clock_()) == ExpiryStage::expired) {
            return Withheld{Withheld::Reason::expired,
                            "the stored token expired at " + rfc3339_text(known->second.at) +
                                " (its expires_at); get a new one: " +
                                renew_command(host, known->second.renewal)};
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
        case Renewal::rotated:
            break;
    }
    return ExpiryStage::within_30_days;
}

}  // namespace

ExpiryStage warned_stage(WallTime at, WallTime now, Renewal renewal,
                         std::optional<WallTime> since) {
    const ExpiryStage stage = expiry_stage(at, now);
    if (stage == ExpiryStage::expired) return stage;
    if (stage < first_warned(renewal)) return ExpiryStage::later;
    if (since && *since < at && at - now > (at - *since) / 2) return ExpiryStage::later;
    return stage;
}

std::string renew_command(const std::string& host, Renewal renewal) {
    switch (renewal) {
        case Renewal::login:
            return "hostkeeper login " + host;
        case Renewal::rotated:
        case Renewal::rotation:
            return "hostkeeper rotate " + host;
        case Renewal::person:
            break;
    }
    return "terraform login " + host;
}

void TokenStanding::log_stage(const std::string& host, Known& known) {
    const WallTime now = wall_clock_();
    const ExpiryStage stage = warned_stage(known.at, now, known.renewal, known.since);
    if (stage <= known.logged) return;
    known.logged = stage;
    const std::string renew = renew_command(host, known.renewal);
    if (stage == ExpiryStage::expired) {
        spdlog::warn("the stored token of {} expired at {}: it is not handed out; run {}", host,
                     rfc3339_text(known.at), renew);
    } else {
        spdlog::warn("the stored token of {} expires at {} (in {}): run {} before then", host,
                     rfc3339_text(known.at), time_left(known.at, now), renew);
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

std::optional<ExpiryAdvice> TokenStanding::advice(const std::string& host) const {
    const auto known = expiries_.find(host);
    if (known == expiries_.end()) return std::nullopt;
    const Known& k = known->second;
    return ExpiryAdvice{warned_stage(k.at, wall_clock_(), k.renewal, k.since),
                        renew_command(host, k.renewal)};
}

}  // namespace hostkeeper::daemon::credentials
