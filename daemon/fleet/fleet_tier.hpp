#pragma once
// The fleet tier: archives kept in an OCI registry that every runner of a
// fleet reaches (registry_cache.fleet), in OpenTofu's layouts
// (fleet_address.hpp). The archive store asks it on a miss and offers it
// what it downloads upstream (archives/archive_tier.hpp).
//
// Reading: a provider package by its platform's manifest (tag
// VERSION_OS_ARCH), taken only when its one zip layer has the digest the
// registry published (the store verifies the bytes again); a module archive
// by its version's manifest, taken only when the layer was stored for the
// same download location. Writing (registry_cache.fleet_push): in the
// background, at most kMaxPushes at once and kMaxQueuedPushes waiting (more
// are dropped and counted), the blob only when the registry lacks it (HEAD),
// then the config, the manifest and, for a provider, the version's index
// with this platform's entry. Two runners writing one version's index at
// once may each write their own platform's entry last; the platform
// manifests, which are what is read, are unaffected.
//
// Failures never reach a request: each is counted, logged once per cause
// until the tier works again, and kept for status and doctor (problem) with
// what to do about it.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "daemon/archives/archive_store.hpp"
#include "daemon/archives/archive_tier.hpp"
#include "daemon/fleet/fleet_address.hpp"
#include "daemon/fleet/oci_client.hpp"
#include "daemon/fleet/oci_manifest.hpp"
#include "daemon/http/http_client.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::fleet {

inline constexpr std::size_t kMaxPushes = 2;
inline constexpr std::size_t kMaxQueuedPushes = 64;
inline constexpr std::chrono::milliseconds kPushRetryPause{500};

struct FleetOptions {
    FleetAddress address;
    bool push = true;     // registry_cache.fleet_push
    bool modules = true;  // registry_cache.fleet_modules
};

struct FleetStats {
    std::string address;  // "oci://HOST/PREFIX"
    bool push = true;
    bool modules = true;
    std::uint64_t hits = 0;       // archives taken from the tier
    std::uint64_t misses = 0;     // asked, not there
    std::uint64_t pushes = 0;     // archives written to the tier
    std::uint64_t present = 0;    // offered, already there (HEAD)
    std::uint64_t refusals = 0;   // taken but did not verify: not used
    std::uint64_t failures = 0;   // calls that failed (down, slow, credentials, full)
    std::uint64_t dropped = 0;    // offers dropped: too many waiting
    std::uint64_t bytes_in = 0;   // archive bytes taken
    std::uint64_t bytes_out = 0;  // archive bytes written
    std::string problem;          // the last failure and its fix; "" once the tier works
};

class FleetTier final : public archives::ArchiveTier {
  public:
    FleetTier(boost::asio::any_io_executor io, http::HttpClient& http, FleetOptions options,
              CredentialLookup credentials);
    ~FleetTier() override;

    boost::asio::awaitable<std::optional<std::uint64_t>> fetch(const archives::TierItem& item,
                                                               const std::string& sha256,
                                                               int fd) override;
    void refused(const archives::TierItem& item, const std::string& why) override;
    void offer(const archives::TierItem& item, archives::OwnedFd file, std::uint64_t size,
               std::string sha256) override;

    FleetStats stats() const;
    proto::Json status() const override;

  private:
    struct Push {
        archives::TierItem item;
        archives::OwnedFd file;
        std::uint64_t size = 0;
        std::string sha256;
    };
    // The manifest's one layer, when it names what `item` and `sha256` ask for.
    boost::asio::awaitable<std::optional<Descriptor>> wanted_layer(const archives::TierItem& item,
                                                                   const std::string& repository,
                                                                   const std::string& sha256);
    // The same, of a manifest's text. Throws ManifestError.
    static std::optional<Descriptor> layer_for(const archives::TierItem& item,
                                               const std::string& manifest,
                                               const std::string& sha256);
    boost::asio::awaitable<std::optional<std::uint64_t>> take(archives::TierItem item,
                                                              std::string sha256, int fd);
    void next_push();
    boost::asio::awaitable<void> run_push(Push push);
    boost::asio::awaitable<void> write(Push& push);
    boost::asio::awaitable<void> write_provider_index(const archives::TierItem& item,
                                                      const std::string& repository,
                                                      const std::string& manifest);
    void failed(OciFailure cause, const std::string& message);
    void worked();
    static std::string fix_for(OciFailure cause);
    bool covers(const archives::TierItem& item) const;

    boost::asio::any_io_executor io_;
    FleetOptions options_;
    OciClient client_;
    boost::asio::thread_pool hashing_{1};
    std::deque<Push> queue_;
    std::size_t running_ = 0;
    std::set<OciFailure> logged_;
    FleetStats stats_;
};

}  // namespace hostkeeper::daemon::fleet
