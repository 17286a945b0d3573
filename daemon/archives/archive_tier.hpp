#pragma once
// A second place archives may come from before their upstream URL, and go
// to after it: the fleet tier (daemon/fleet/). The archive store asks it on
// a miss and verifies what it gives exactly as an upstream download (a
// provider package against its key, the zh: hash its registry published);
// after a verified upstream download it offers the file to the tier, which
// keeps a copy in the background. A tier never fails a request: whatever
// goes wrong there is its own to count, log and show, and the archive comes
// from upstream.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "proto/json.hpp"

namespace hostkeeper::daemon::archives {

class OwnedFd;

// What an archive is, in registry terms: how a tier names it.
struct TierItem {
    enum class Kind { provider, module };
    Kind kind = Kind::provider;
    std::string host;        // the registry host, normalized
    std::string namespace_;  // provider or module namespace
    std::string name;        // provider type, or module name
    std::string system;      // a module's target system; "" for a provider
    std::string version;
    std::string os;    // a provider package's platform; "" for a module
    std::string arch;  // likewise
    // A module archive's upstream download location: what a tier's copy
    // must have been stored for. "" for a provider package.
    std::string location;
    std::string filename;  // the archive's file name, for its title
};

class ArchiveTier {
  public:
    ArchiveTier() = default;
    ArchiveTier(const ArchiveTier&) = delete;
    ArchiveTier& operator=(const ArchiveTier&) = delete;
    virtual ~ArchiveTier() = default;

    // The archive written into `fd` (emptied first): its size; nullopt when
    // the tier has none, or failed (said and counted by the tier). For a
    // provider package `sha256` is the hex its registry published; the
    // caller verifies the file. Never throws but for a write to `fd` that
    // failed (http::HttpError with its errno).
    virtual boost::asio::awaitable<std::optional<std::uint64_t>> fetch(const TierItem& item,
                                                                       const std::string& sha256,
                                                                       int fd) = 0;
    // An archive that did not verify after fetch(): counted and said.
    virtual void refused(const TierItem& item, const std::string& why) = 0;
    // An archive downloaded upstream and verified, open read-only as `file`
    // (`size` bytes; `sha256` its hex when known, else ""): the tier may
    // keep a copy. Returns at once.
    virtual void offer(const TierItem& item, OwnedFd file, std::uint64_t size,
                       std::string sha256) = 0;
    // What `hostkeeper status` shows of it (PROTOCOL.md: registry_cache.fleet).
    virtual proto::Json status() const = 0;
};

}  // namespace hostkeeper::daemon::archives
