#pragma once
// An in-memory Keyring for unit tests (every item kind alike): counts calls, can fail on demand,
// and can hold lookups at a gate so tests can make them overlap.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/credentials/keyring.hpp"
#include "proto/error.hpp"

namespace hostkeeper::test {

class MemoryKeyring final : public daemon::credentials::Keyring {
  public:
    std::optional<daemon::credentials::StoredItem> lookup(
        const daemon::credentials::ItemKey& key) override;
    void store(const daemon::credentials::StoredItem& item) override;
    bool remove(const daemon::credentials::ItemKey& key) override;
    std::vector<daemon::credentials::ListedItem> list(daemon::credentials::ItemKind kind) override;
    void unlock() override;
    std::string_view name() const override { return name_; }

    // Names the keyring ("memory" unless set), as a backend's name.
    explicit MemoryKeyring(std::string name = "memory") : name_(std::move(name)) {}

    // Seeds a host's item directly, as another program would.
    void put(const std::string& host, const std::string& text);
    bool has(const std::string& host);
    std::string text(const std::string& host);
    // Any kind's item text, and how many items of a kind there are.
    std::string text(daemon::credentials::ItemKind kind, const std::string& key);
    std::size_t count(daemon::credentials::ItemKind kind);

    // Every call throws this error until cleared.
    void fail_with(std::optional<proto::ErrorCode> code);
    // Lookups (only) throw this error until cleared: a locked keyring whose
    // items are still listed.
    void fail_lookups_with(std::optional<proto::ErrorCode> code);
    // Stores of this one key (a host, a Docker server) throw keyring_error until cleared.
    void fail_store_of(std::optional<std::string> host);
    // Removals of this one key throw keyring_error until cleared.
    void fail_remove_of(std::optional<std::string> host);
    // Lookups of this one key return this text instead of what is stored
    // (a keyring that garbles what it was given).
    void garble_lookup_of(std::optional<std::string> host);
    // Lookups and stores block until open_gate() while the gate is closed.
    void close_gate();
    void open_gate();

    std::atomic<int> lookups{0};
    std::atomic<int> stores{0};
    std::atomic<int> removes{0};
    std::atomic<int> lists{0};

  private:
    void check_failure();
    std::mutex mutex_;
    std::condition_variable gate_cv_;
    bool gate_closed_ = false;
    std::optional<proto::ErrorCode> failure_;
    std::optional<proto::ErrorCode> lookup_failure_;
    std::optional<std::string> failing_store_;
    std::optional<std::string> failing_remove_;
    std::optional<std::string> garbled_lookup_;
    std::string name_;
    struct Entry {
        std::string username;
        std::string text;
        std::optional<daemon::credentials::WallTime> stored;
    };
    long store_clock_ = 0;
    using Key = std::pair<daemon::credentials::ItemKind, std::string>;
    std::map<Key, Entry> items_;
};

}  // namespace hostkeeper::test
