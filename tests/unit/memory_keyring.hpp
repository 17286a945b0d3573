#pragma once
// An in-memory Keyring for unit tests: counts calls, can fail on demand, and
// can hold lookups at a gate so tests can make them overlap.

#include <atomic>
#include <condition_variable>
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
    std::optional<proto::Secret> lookup(const std::string& host) override;
    void store(const std::string& host, const proto::Secret& credentials) override;
    bool remove(const std::string& host) override;
    std::vector<std::string> hosts() override;
    std::vector<daemon::credentials::ItemInfo> items() override;
    std::optional<daemon::credentials::DockerCredentials> docker_lookup(
        const std::string& server) override;
    void docker_store(const daemon::credentials::DockerCredentials& credentials) override;
    bool docker_remove(const std::string& server) override;
    std::vector<daemon::credentials::DockerItemInfo> docker_items() override;
    void unlock() override;
    std::string_view name() const override { return name_; }

    // Names the keyring ("memory" unless set), as a backend's name.
    explicit MemoryKeyring(std::string name = "memory") : name_(std::move(name)) {}

    // Seeds an item directly, as another program would.
    void put(const std::string& host, const std::string& text);
    bool has(const std::string& host);
    std::string text(const std::string& host);

    // Every call throws this error until cleared.
    void fail_with(std::optional<proto::ErrorCode> code);
    // Lookups (only) throw this error until cleared: a locked keyring whose
    // items are still listed.
    void fail_lookups_with(std::optional<proto::ErrorCode> code);
    // Stores of this one host (or Docker server) throw keyring_error until cleared.
    void fail_store_of(std::optional<std::string> host);
    // Removals of this one host throw keyring_error until cleared.
    void fail_remove_of(std::optional<std::string> host);
    // Lookups of this one host return this text instead of what is stored
    // (a keyring that garbles what it was given).
    void garble_lookup_of(std::optional<std::string> host);
    // Lookups and stores block until open_gate() while the gate is closed.
    void close_gate();
    void open_gate();

    std::atomic<int> lookups{0};
    std::atomic<int> stores{0};
    std::atomic<int> removes{0};

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
    std::map<std::string, std::string> items_;
    std::map<std::string, std::pair<std::string, std::string>> docker_;  // server: user, secret
};

}  // namespace hostkeeper::test
