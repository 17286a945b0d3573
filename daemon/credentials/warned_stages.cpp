#include "daemon/credentials/warned_stages.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

#include "proto/file_io.hpp"

namespace hostkeeper::daemon::credentials {

WarnedStages::WarnedStages(std::filesystem::path file) : file_(std::move(file)) {
    try {
        if (const auto text = proto::read_file_if_exists(file_, kMaxWarnedStagesFile))
            hosts_ = parse_warned_stages(*text);
    } catch (const std::exception& e) {
        spdlog::warn("{} not read, so an expiry may be warned of again: {}", file_.string(),
                     e.what());
    }
}

ExpiryStage WarnedStages::warned(const std::string& host, WallTime expires) const {
    const auto it = hosts_.find(host);
    if (it == hosts_.end() || it->second.expires != to_second(expires)) return ExpiryStage::later;
    return it->second.stage;
}

void WarnedStages::record(const std::string& host, WallTime expires, ExpiryStage stage) {
    hosts_[host] = WarnedStage{to_second(expires), stage};
    try {
        proto::write_file_atomically(file_, warned_stages_text(hosts_), 0600);
    } catch (const std::exception& e) {
        spdlog::warn("the expiry warnings given could not be written to {}: {}", file_.string(),
                     e.what());
    }
}

}  // namespace hostkeeper::daemon::credentials
