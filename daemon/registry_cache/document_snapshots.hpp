#pragma once
// The last good answer of each registry document the listener served, kept
// on disk so that a version used before installs again while the registry is
// unreachable, even after hostkeeperd restarted (the answer cache itself
// lives in memory). Only answers that hold nothing but the registry's
// metadata and the listener's own URLs are kept (a module location passed
// through as given may carry a signed URL: never written). One file per
// answer under DIR (0700), 0600, replaced atomically; the key includes the
// listener's base URL, so a new capability never serves old URLs.

#include <filesystem>
#include <optional>
#include <string>

#include "daemon/registry_cache/listener_messages.hpp"

namespace hostkeeper::daemon::registry_cache {

class DocumentSnapshots {
  public:
    explicit DocumentSnapshots(std::filesystem::path dir) : dir_(std::move(dir)) {}

    // Best effort: a failure is logged once and the answer simply not kept.
    void save(const std::string& key, const ListenerResponse& response);
    std::optional<ListenerResponse> load(const std::string& key) const;

  private:
    std::filesystem::path file_of(const std::string& key) const;

    std::filesystem::path dir_;
    bool warned_ = false;
};

// $XDG_CACHE_HOME/hostkeeper/documents, else ~/.cache/hostkeeper/documents.
std::filesystem::path default_snapshot_dir();

}  // namespace hostkeeper::daemon::registry_cache
