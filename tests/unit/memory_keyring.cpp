#include "memory_keyring.hpp"

namespace hostkeeper::test {

void MemoryKeyring::check_failure() {
    if (failure_) throw proto::Error(*failure_, "injected failure");
}

std::optional<daemon::credentials::StoredItem> MemoryKeyring::lookup(
    const daemon::credentials::ItemKey& key) {
    ++lookups;
    std::unique_lock lock(mutex_);
    gate_cv_.wait(lock, [this] { return !gate_closed_; });
    check_failure();
    if (lookup_failure_) throw proto::Error(*lookup_failure_, "injected lookup failure");
    const auto it = items_.find({key.kind, key.key});
    if (it == items_.end()) return std::nullopt;
    const std::string_view text = garbled_lookup_ == key.key
                                      ? std::string_view("{\"token\":\"garbled\"}")
                                      : std::string_view(it->second.text);
    return daemon::credentials::StoredItem{key, it->second.username, proto::Secret(text)};
}

void MemoryKeyring::store(const daemon::credentials::StoredItem& item) {
    ++stores;
    std::unique_lock lock(mutex_);
    gate_cv_.wait(lock, [this] { return !gate_closed_; });
    check_failure();
    if (failing_store_ == item.key.key)
        throw proto::Error(proto::ErrorCode::keyring_error, "injected store failure");
    // git items carry when they were stored (one second apart: the order of
    // the stores), which picks among several that match.
    std::optional<daemon::credentials::WallTime> stored;
    if (item.key.kind == daemon::credentials::ItemKind::git)
        stored = daemon::credentials::WallTime(std::chrono::seconds(++store_clock_));
    items_[{item.key.kind, item.key.key}] = {item.username, std::string(item.secret.view()),
                                             stored};
}

bool MemoryKeyring::remove(const daemon::credentials::ItemKey& key) {
    ++removes;
    const std::lock_guard lock(mutex_);
    check_failure();
    if (failing_remove_ == key.key)
        throw proto::Error(proto::ErrorCode::keyring_error, "injected remove failure");
    return items_.erase({key.kind, key.key}) > 0;
}

std::vector<daemon::credentials::ListedItem> MemoryKeyring::list(
    daemon::credentials::ItemKind kind) {
    const std::lock_guard lock(mutex_);
    ++lists;
    check_failure();
    const bool docker = kind == daemon::credentials::ItemKind::docker;
    const bool git = kind == daemon::credentials::ItemKind::git;
    std::vector<daemon::credentials::ListedItem> out;
    for (const auto& [key, entry] : items_) {
        if (key.first != kind) continue;
        out.push_back({key.second, docker ? std::optional(entry.username) : std::nullopt,
                       name_ +
                           (docker ? " docker: "
                            : git  ? " git: "
                                   : ": ") +
                           key.second,
                       entry.stored});
    }
    return out;
}

void MemoryKeyring::put(const std::string& host, const std::string& text) {
    const std::lock_guard lock(mutex_);
    items_[{daemon::credentials::ItemKind::terraform, host}] = {{}, text, std::nullopt};
}

bool MemoryKeyring::has(const std::string& host) {
    const std::lock_guard lock(mutex_);
    return items_.count({daemon::credentials::ItemKind::terraform, host}) != 0;
}

std::string MemoryKeyring::text(daemon::credentials::ItemKind kind, const std::string& key) {
    const std::lock_guard lock(mutex_);
    return items_.at({kind, key}).text;
}

std::size_t MemoryKeyring::count(daemon::credentials::ItemKind kind) {
    const std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [key, entry] : items_) n += key.first == kind ? 1 : 0;
    return n;
}

std::string MemoryKeyring::text(const std::string& host) {
    const std::lock_guard lock(mutex_);
    return items_.at({daemon::credentials::ItemKind::terraform, host}).text;
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
