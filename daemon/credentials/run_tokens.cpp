#include "daemon/credentials/run_tokens.hpp"

#include <utility>

#include "daemon/credentials/bearer_check.hpp"

namespace hostkeeper::daemon::credentials {

void RunTokens::add(RunId run, const std::string& host, proto::Secret token) {
    by_run_[run].insert_or_assign(host, std::move(token));
}

void RunTokens::drop(RunId run) {
    by_run_.erase(run);  // each Secret scrubs itself
}

std::optional<proto::Secret> RunTokens::token(const std::string& host) const {
    for (auto run = by_run_.rbegin(); run != by_run_.rend(); ++run) {
        if (const auto it = run->second.find(host); it != run->second.end())
            return it->second.clone();
    }
    return std::nullopt;
}

bool RunTokens::carries(const std::string& host, std::string_view authorization) const {
    for (const auto& [run, tokens] : by_run_) {
        if (const auto it = tokens.find(host);
            it != tokens.end() && is_bearer_of(authorization, it->second))
            return true;
    }
    return false;
}

bool RunTokens::holds(const std::string& host) const {
    for (const auto& [run, tokens] : by_run_) {
        if (tokens.count(host) != 0) return true;
    }
    return false;
}

}  // namespace hostkeeper::daemon::credentials
