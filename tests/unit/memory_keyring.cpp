#include "memory_keyring.hpp"

namespace hostkeeper::test {

void MemoryKeyring::check_failure() {
    if (failure_) throw proto::Error(*failure_, "injected failure");
}

std::optional<proto::Secret> MemoryKeyring::lookup(const std::string& host) {
    ++lookups;
    std::unique_lock lock(mutex_);
    gate_cv_.wait(lock, [this] { return !gate_closed_; });
    check_failure();
    if (lookup_failure_) throw proto::Error(*lookup_failure_, "injected lookup failure");
    const auto it = items_.find(host);
    if (it == items_.end()) return std::nullopt;
    if (garbled_lookup_ == host) return proto::Secret(std::string_view("{\"token\":\"garbled\"}"));
    return proto::Secret(it->second);
}

void MemoryKeyring::store(const std::string& host, const proto::Secret& credentials) {
    ++stores;
    std::unique_lock lock(mutex_);
    gate_cv_.wait(lock, [this] { return !gate_closed_; });
    check_failure();
    if (failing_store_ == host)
        throw proto::Error(proto::ErrorCode::keyring_error, "injected store failure");
    items_[host] = std::string(credentials.view());
}

bool MemoryKeyring::remove(const std::string& host) {
    ++removes;
    const std::lock_guard lock(mutex_);
    check_failure();
    if (failing_remove_ == host)
        throw proto::Error(proto::ErrorCode::keyring_error, "injected remove failure");
    return items_.erase(host) > 0;
}

void MemoryKeyring::put(const std::string& host, const std::string& text) {
    const std::lock_guard lock(mutex_);
    items_[host] = text;
}

bool MemoryKeyring::has(const std::string& host) {
    const std::lock_guard lock(mutex_);
    return items_.count(host) != 0;
}

std::string MemoryKeyring::text(const std::string& host) {
    const std::lock_guard lock(mutex_);
    return items_.at(host);
}

void MemoryKeyring::fail_with(std::optional<proto::ErrorCode> code) {
    const std::lock_guard lock(mutex_);
    failure_ = code;
}

void MemoryKeyring::close_gate() {
    const std::lock_guard lock(mutex_);
    gate_closed_ = true;
}

void MemoryKeyring::open_gate() {
    {
        const std::lock_guard lock(mutex_);
        gate_closed_ = false;
    }
    gate_cv_.notify_all();
}

std::vector<std::string> MemoryKeyring::hosts() {
    const std::lock_guard lock(mutex_);
    check_failure();
    std::vector<std::string> out;
    for (const auto& [host, text] : items_) out.push_back(host);
    return out;
}

std::vector<daemon::credentials::ItemInfo> MemoryKeyring::items() {
    std::vector<daemon::credentials::ItemInfo> out;
    for (std::string& host : hosts()) {
        std::string label = name_ + ": " + host;
        out.push_back({std::move(host), std::move(label), std::nullopt});
    }
    return out;
}

std::optional<daemon::credentials::DockerCredentials> MemoryKeyring::docker_lookup(
    const std::string& server) {
    const std::lock_guard lock(mutex_);
    check_failure();
    const auto it = docker_.find(server);
    if (it == docker_.end()) return std::nullopt;
    return daemon::credentials::DockerCredentials{server, it->second.first,
                                                  proto::Secret(it->second.second)};
}

void MemoryKeyring::docker_store(const daemon::credentials::DockerCredentials& credentials) {
    const std::lock_guard lock(mutex_);
    check_failure();
    if (failing_store_ == credentials.server)
        throw proto::Error(proto::ErrorCode::keyring_error, "injected store failure");
    docker_[credentials.server] = {credentials.username, std::string(credentials.secret.view())};
}

bool MemoryKeyring::docker_remove(const std::string& server) {
    const std::lock_guard lock(mutex_);
    check_failure();
    return docker_.erase(server) > 0;
}

std::vector<daemon::credentials::DockerItemInfo> MemoryKeyring::docker_items() {
    const std::lock_guard lock(mutex_);
    check_failure();
    std::vector<daemon::credentials::DockerItemInfo> out;
    for (const auto& [server, entry] : docker_)
        out.push_back({server, entry.first, name_ + " docker: " + server, std::nullopt});
    return out;
}

void MemoryKeyring::unlock() {
    const std::lock_guard lock(mutex_);
    check_failure();
}

void MemoryKeyring::fail_lookups_with(std::optional<proto::ErrorCode> code) {
    const std::lock_guard lock(mutex_);
    lookup_failure_ = code;
}

void MemoryKeyring::fail_store_of(std::optional<std::string> host) {
    const std::lock_guard lock(mutex_);
    failing_store_ = std::move(host);
}

void MemoryKeyring::fail_remove_of(std::optional<std::string> host) {
    const std::lock_guard lock(mutex_);
    failing_remove_ = std::move(host);
}

void MemoryKeyring::garble_lookup_of(std::optional<std::string> host) {
    const std::lock_guard lock(mutex_);
    garbled_lookup_ = std::move(host);
}

}  // namespace hostkeeper::test
